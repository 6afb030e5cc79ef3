"""A loaded caption judge (a vision-language model that answers FLEUR's question) and its batched greedy generation.

Two kinds of judge:

* **LLaVA-1.5** (``kind="llava-1.5"``: the paper's ``llava-hf/llava-1.5-13b-hf`` / ``liuhaotian/llava-v1.5-13b``, or
  any checkpoint of that architecture in either layout, :mod:`capeval.judges.llava_layout`). Its inputs are built as
  the original LLaVA code builds them for FLEUR: the ``llava_v1`` prompt (:mod:`capeval.judges.prompts`) tokenized as
  ``llava.mm_utils.tokenizer_image_token`` does (the text before and after ``<image>`` tokenized separately, one
  beginning-of-sequence token kept, the placeholder in between; transformers' model then needs the placeholder
  repeated once per image feature, 576 for 336-px images), the image padded to a square with the image processor's
  mean colour (``expand2square(image, tuple(int(x * 255) for x in image_mean))``) and then preprocessed by CLIP's
  image processor (transformers' PIL implementation, the one LLaVA's transformers ran). llava-hf's checkpoints pad
  the vocabulary to 32,064 rows (the conversion script's ``<image>``, ``<pad>`` and padding rows); the original model
  has 32,000, so the logits of the added rows are set to ``-inf`` before the softmax and the argmax, as if they were
  not there.
* **Any other transformers vision-language model** (``kind="chat"``: Qwen2.5-VL, SmolVLM, LLaVA-OneVision, ...):
  the same instruction as one user turn through the model's own chat template and processor.

Decoding is plain greedy decoding (``do_sample=False``, ``num_beams=1``, ``max_new_tokens`` 512 as the reference),
until the model's end-of-sequence token; a judge's own generation defaults (sampling, repetition penalties) are not
applied, so every judge is read the same way. What is kept of each step is the softmax over the vocabulary of the
step's logits, in the judge's dtype (the reference's ``softmax`` runs on float16 scores), at the ten digit tokens.

Batches: prompts are left-padded and generated together (``fleur_batch_size``); with padding the logits can differ
from a one-at-a-time run in the last bits (measured in the tests: within 1e-5 in float32); ``fleur_batch_size=1`` is
the reference's procedure, one prompt per ``generate``.
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import OPTION, Setting, about, with_words, words
from capeval.judges.answers import digit_token_ids
from capeval.judges.llava_layout import HF_MODEL_TYPE, is_original_layout, load_original, read_config
from capeval.judges.prompts import IMAGE_PLACEHOLDER, chat_messages, llava_prompt
from capeval.dependencies import default_device, require

#: The paper's judge: transformers' conversion of ``liuhaotian/llava-v1.5-13b``.
DEFAULT_JUDGE = "llava-hf/llava-1.5-13b-hf"
#: Names under which the paper's model is known (results then say "FLEUR", otherwise "FLEUR prompt, judge <id>").
PAPER_JUDGES = frozenset({"llava-hf/llava-1.5-13b-hf", "liuhaotian/llava-v1.5-13b"})
#: Above this many parameters a judge is refused on the CPU unless forced (LLaVA-1.5-7B has 7.1 billion: at fp32 on a
#: CPU it needs 28 GB and minutes per caption).
CPU_PARAMETER_LIMIT = 3_000_000_000
#: The reference's ``max_new_tokens``.
MAX_NEW_TOKENS = 512
DTYPE_NAMES = ("auto", "float32", "float16", "bfloat16")


@dataclass
class Judge:
    """A judge ready to generate: the model, its tokenizer and image preprocessing, and what FLEUR reads."""

    model: Any
    tokenizer: Any
    kind: str  # "llava-1.5" or "chat"
    label: str  # the spec the user gave (Hub id or folder name)
    fingerprint: str
    paper: bool  # the paper's judge (LLaVA-1.5-13B)
    device: Any
    dtype: Any
    digit_tokens: list[int]
    stop_ids: list[int]
    pad_id: int
    processor: Any = None  # the chat kind's processor
    image_processor: Any = None  # the LLaVA kind's CLIP image processor
    image_token_id: int | None = None
    image_tokens: int = 0
    pad_color: tuple[int, ...] = ()
    base_vocab: int | None = None  # LLaVA: logits of ids at or above this are masked
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).replace("torch.", "")




def _resolve_folder(spec: str | os.PathLike, option: str) -> Path:
    path = Path(os.path.expanduser(str(spec)))
    if path.is_dir():
        return path
    if path.exists() or str(spec).startswith((".", "/", "~")) or str(spec).count("/") != 1:
        raise about(FileNotFoundError, option, f"{spec} is neither a folder nor a Hub model id (owner/name).")
    hub = require("huggingface_hub", what="loading a judge from the Hub")
    try:
        return Path(hub.snapshot_download(repo_id=str(spec)))
    except Exception as err:  # offline and not cached, a typo, a gated repo
        from capeval.hub_cli import download_command

        raise about(FileNotFoundError, option, f"the Hub model {spec} is not in the Hugging Face cache and could not be "
                                f"downloaded ({type(err).__name__}); download it with: {download_command(str(spec))}, "
                                "or pass a folder.") from err


def _fingerprint(folder: Path) -> str:
    """sha256 over ``config.json`` and each weight file's name, size, first and last MiB (the files are GBs)."""
    digest = hashlib.sha256()
    config = folder / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    for f in sorted(folder.iterdir()):
        if f.suffix in (".safetensors", ".bin") and f.is_file():
            size = f.stat().st_size
            digest.update(f"{f.name}:{size}".encode())
            with open(f, "rb") as handle:
                digest.update(handle.read(1 << 20))
                if size > 2 << 20:
                    handle.seek(-(1 << 20), os.SEEK_END)
                    digest.update(handle.read(1 << 20))
    return digest.hexdigest()


def _torch_dtype(name: str, device):
    torch = require("torch")
    if name not in DTYPE_NAMES:
        raise ValueError(f"fleur_dtype must be one of {list(DTYPE_NAMES)}, got {name!r:.60}.")
    if name == "auto":  # the reference's float16 on a GPU; float32 on the CPU, where float16 matmuls are slow
        return torch.float16 if device.type == "cuda" else torch.float32
    return getattr(torch, name)


def _parameter_count(config_obj, model_class) -> int:
    torch = require("torch")
    with torch.device("meta"):
        model = model_class._from_config(config_obj) if hasattr(model_class, "_from_config") else model_class(config_obj)
    return sum(p.numel() for p in model.parameters())


def _refuse_on_cpu(count: int, label: str, force: bool, option: str = "fleur_model",
                   force_option: str | None = None) -> None:
    if count > CPU_PARAMETER_LIMIT and not force:
        raise with_words(RuntimeError, words(
            option, OPTION, f": {label} has {count / 1e9:.1f} billion parameters; on the CPU that is tens of GB "
            f"of memory and minutes per caption (capeval refuses judges over {CPU_PARAMETER_LIMIT / 1e9:g} billion "
            "there). Run it on a GPU, or pass ", Setting(True, option=force_option or option.replace("_model", "_force_cpu")),
            " to run it anyway."))


def _clip_pil_processor(folder_or_id: str):
    """CLIP's image processor, PIL implementation (transformers 5's ``CLIPImageProcessorPil``; the plain class in
    earlier versions, which was the PIL one), configured from ``folder_or_id``'s ``preprocessor_config.json``."""
    transformers = require("transformers")
    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    return cls.from_pretrained(str(folder_or_id))


def load_judge(spec: str | os.PathLike | None = None, *, device: Any = None, dtype: str = "auto",
               device_map: str | None = None, force_cpu: bool = False, vision_tower: str | None = None,
               adapter: str | os.PathLike | None = None, option: str = "fleur_model",
               force_option: str | None = None) -> Judge:
    """The judge ``spec`` (default :data:`DEFAULT_JUDGE`), loaded once per process, device and dtype.

    spec: a Hub model id or a folder: transformers' layout of any image-text-to-text model, or LLaVA's original
        layout (``model_type: "llava_llama"``; its CLIP vision tower from ``vision_tower`` or its
        ``mm_vision_tower``).
    device: ``"cuda"``, ``"cpu"``, ... (default: CUDA when available); ignored with ``device_map``.
    dtype: ``"auto"`` (float16 on a GPU as the reference, float32 on the CPU) or a torch dtype name.
    device_map: passed to ``from_pretrained`` (``"auto"`` spreads a model over several GPUs).
    force_cpu: run a judge over :data:`CPU_PARAMETER_LIMIT` parameters on the CPU anyway.
    adapter: a LLaVA LoRA adapter (Hub id or folder) merged into the model (:mod:`capeval.judges.lora`).
    option / force_option: the caller's names of ``spec`` and ``force_cpu``, as errors say them (default
        ``fleur_model`` and the same with ``_force_cpu`` for ``_model``).
    """
    spec = str(spec if spec is not None else DEFAULT_JUDGE)
    target = default_device(device)
    torch_dtype = _torch_dtype(dtype, target)
    key = (spec, str(target), str(torch_dtype), device_map, vision_tower, None if adapter is None else str(adapter))
    from capeval.loaded_models import load_once

    return load_once("judge", key, lambda: _load(spec, target, torch_dtype, device_map, force_cpu, vision_tower,
                                                 option, adapter, force_option))


def _load(spec, target, torch_dtype, device_map, force_cpu, vision_tower, option, adapter=None,
          force_option=None) -> Judge:
    torch, transformers = require("torch", "transformers", what="the FLEUR judge")
    folder = _resolve_folder(spec, option)
    raw = read_config(folder)
    if not raw:
        raise about(ValueError, option, f"{spec} has no config.json; it is not a transformers model folder.")
    label = spec
    paper = spec.rstrip("/") in PAPER_JUDGES
    on_cpu = device_map is None and target.type == "cpu"
    if is_original_layout(raw):
        if on_cpu:
            llama = transformers.LlamaConfig(**{k: v for k, v in raw.items() if k in transformers.LlamaConfig().to_dict()})
            _refuse_on_cpu(_parameter_count(llama, transformers.LlamaForCausalLM), label, force_cpu, option,
                           force_option)
        model, tower = load_original(folder, vision_tower, dtype=torch_dtype)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        judge = _llava_judge(model, tokenizer, _clip_pil_processor(tower), base_vocab=raw["vocab_size"])
    else:
        try:
            config = transformers.AutoConfig.from_pretrained(str(folder))
            model_class = transformers.AutoModelForImageTextToText._model_mapping[type(config)]
        except (KeyError, ValueError) as err:
            kind = raw.get("model_type") or "model"
            raise about(ValueError, option, f"{spec} is a {kind} ({', '.join(raw.get('architectures') or ['no architecture'])}), "
                             "not a vision-language model that answers about an image (transformers' "
                             "image-text-to-text models: LLaVA, Qwen2.5-VL, SmolVLM, ...).") from err
        if on_cpu:
            _refuse_on_cpu(_parameter_count(config, model_class), label, force_cpu, option, force_option)
        kwargs = {"dtype": torch_dtype}
        if device_map is not None:
            kwargs["device_map"] = device_map
        model = model_class.from_pretrained(str(folder), **kwargs).eval()
        if _is_llava_15(config):
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
            judge = _llava_judge(model, tokenizer, _clip_pil_processor(folder), base_vocab=tokenizer.vocab_size)
        else:
            processor = transformers.AutoProcessor.from_pretrained(str(folder))
            tokenizer = getattr(processor, "tokenizer", None)
            if tokenizer is None or not getattr(processor, "chat_template", None) and not getattr(tokenizer, "chat_template", None):
                raise about(ValueError, option, f"{spec} ships no chat template; capeval needs one to ask it FLEUR's question.")
            judge = Judge(model=model, tokenizer=tokenizer, kind="chat", label="", fingerprint="", paper=False,
                          device=None, dtype=None, digit_tokens=[], stop_ids=[], pad_id=0, processor=processor)
    judge.model.requires_grad_(False)
    fingerprint = _fingerprint(folder)
    if adapter is not None:
        from capeval.judges.lora import adapter_fingerprint, merge_adapter

        adapter_option = option.replace("_model", "_adapter")
        adapter_folder = _resolve_folder(adapter, adapter_option)
        if judge.kind != "llava-1.5":
            raise ValueError(f"{adapter_option}: capeval merges LLaVA LoRA adapters into LLaVA-1.5 judges; {spec} is "
                             "not one.")
        merge_adapter(judge.model, adapter_folder)
        fingerprint = hashlib.sha256((fingerprint + adapter_fingerprint(adapter_folder)).encode()).hexdigest()
        label = f"{label}+{adapter}"
    if device_map is None:
        judge.model.to(target)
    judge.label, judge.paper, judge.fingerprint = label, paper, fingerprint
    judge.device = next(judge.model.parameters()).device
    judge.dtype = torch_dtype
    tok = judge.tokenizer
    judge.digit_tokens = digit_token_ids(tok.encode)
    generation = getattr(judge.model, "generation_config", None)
    stops = getattr(generation, "eos_token_id", None) if generation is not None else None
    stops = stops if stops is not None else tok.eos_token_id
    judge.stop_ids = [stops] if isinstance(stops, int) else list(stops)
    judge.pad_id = tok.pad_token_id if tok.pad_token_id is not None else judge.stop_ids[0]
    return judge


def _is_llava_15(config) -> bool:
    """transformers' LLaVA with a Llama language model and a CLIP vision tower (LLaVA-1.5's architecture)."""
    return (getattr(config, "model_type", None) == HF_MODEL_TYPE
            and getattr(config.text_config, "model_type", None) == "llama"
            and getattr(config.vision_config, "model_type", None) == "clip_vision_model")


def _llava_judge(model, tokenizer, image_processor, base_vocab: int) -> Judge:
    config = model.config
    vision = config.vision_config
    tokens = (vision.image_size // vision.patch_size) ** 2
    if getattr(config, "vision_feature_select_strategy", "default") == "full":
        tokens += 1
    image_token_id = getattr(config, "image_token_id", None)
    if image_token_id is None:
        image_token_id = config.image_token_index
    return Judge(model=model, tokenizer=tokenizer, kind="llava-1.5", label="", fingerprint="", paper=False,
                 device=None, dtype=None, digit_tokens=[], stop_ids=[], pad_id=0, image_processor=image_processor,
                 image_token_id=image_token_id, image_tokens=tokens,
                 pad_color=tuple(int(x * 255) for x in image_processor.image_mean), base_vocab=base_vocab)


# -- inputs --------------------------------------------------------------------------------------------------------


def expand_to_square(image, colour: tuple[int, ...]):
    """LLaVA's ``expand2square``: a non-square image centred on a square canvas of ``colour`` (its longer side)."""
    Image = require("PIL.Image", what="the FLEUR judge")
    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    canvas = Image.new(image.mode, (side, side), colour)
    canvas.paste(image, ((side - width) // 2, (side - height) // 2))
    return canvas


#: Longest side (pixels) of an elongated image before it is padded to a square: above it, an image whose aspect ratio
#: exceeds :data:`PAD_MAX_ASPECT` is first reduced by an integer factor (Pillow's box ``reduce``), so the square
#: canvas holds at most 4096² pixels (a 20000×1 strip would otherwise build a 20000² canvas, 1.2 GB, before the
#: processor shrinks it to 336²).
PAD_MAX_SIDE = 4096
#: Aspect ratio (longer side / shorter side) above which an image counts as elongated for :data:`PAD_MAX_SIDE`;
#: photos (a large 6000×4000 one included) are padded as LLaVA pads them, pixel for pixel.
PAD_MAX_ASPECT = 16


def bounded_for_padding(image):
    """``image``, or for an elongated image whose longer side exceeds :data:`PAD_MAX_SIDE`, the same reduced by the
    smallest integer factor that brings that side within it (a deviation from LLaVA's procedure only for such
    strips: the processor would shrink their canvas to 336² anyway)."""
    width, height = image.size
    side = max(width, height)
    if side <= PAD_MAX_SIDE or side <= PAD_MAX_ASPECT * min(width, height):
        return image
    factor = -(-side // PAD_MAX_SIDE)
    return image.reduce(factor)


def llava_pixels(judge: Judge, image):
    """An RGB ``PIL`` image as LLaVA-1.5's ``(3, H, W)`` pixel tensor (padded to a square, CLIP-preprocessed;
    elongated images bounded first: :func:`bounded_for_padding`)."""
    square = expand_to_square(bounded_for_padding(image), judge.pad_color)
    return judge.image_processor.preprocess(square, return_tensors="pt")["pixel_values"][0]


def llava_input_ids(judge: Judge, prompt: str) -> list[int]:
    """``tokenizer_image_token`` for transformers' LLaVA: each side of the one ``<image>`` tokenized alone, the
    second side's beginning-of-sequence token dropped, the placeholder repeated once per image feature."""
    parts = prompt.split(IMAGE_PLACEHOLDER)
    if len(parts) != 2:
        raise ValueError(f"the prompt holds {len(parts) - 1} '<image>' placeholders; LLaVA's prompt has one.")
    before, after = (judge.tokenizer(part).input_ids for part in parts)
    offset = 1 if before and before[0] == judge.tokenizer.bos_token_id else 0
    return before + [judge.image_token_id] * judge.image_tokens + after[offset:]


@dataclass
class Generated:
    """One prompt's generation: ``ids`` the generated tokens up to and including the first stop token,
    ``digit_probs`` a ``(len(ids), 10)`` CPU tensor in the judge's dtype (see the module docstring)."""

    ids: list[int]
    digit_probs: Any
    stopped: bool


def _vocab_mask(base_vocab: int):
    transformers = require("transformers")

    class OriginalVocabulary(transformers.LogitsProcessor):
        """Logits of ids at or above ``base_vocab`` (tokens added after the original vocabulary) set to -inf."""

        def __call__(self, input_ids, scores):
            scores[:, base_vocab:] = float("-inf")
            return scores

    return OriginalVocabulary()


def generate(judge: Judge, inputs: dict, max_new_tokens: int = MAX_NEW_TOKENS,
             stop_strings: tuple[str, ...] = ()) -> list[Generated]:
    """Greedy generation for a left-padded batch of model inputs (``input_ids``, ``attention_mask``, pixels...),
    until the end-of-sequence token or, with ``stop_strings``, until the generated ids end with one's token ids.

    That is what LLaVA's ``KeywordsStoppingCriteria`` (``###`` for the ``llava_v0`` template) does in practice: it
    compares the last ids with ``tokenizer(keyword).input_ids`` (without ``<s>``), and its second test, the keyword in
    the decoded text of the last ``min(len(output) - len(prompt), 3)`` ids, never fires with LLaVA 1.2's ``generate``
    (which returns the new ids alone, fewer than the prompt's: the offset is negative and the slice empty). So a
    ``###`` generated without the space its own tokenization starts with does not stop the reference, nor capeval."""
    torch, transformers = require("torch", "transformers", what="the FLEUR judge")
    config = transformers.GenerationConfig(do_sample=False, num_beams=1, max_new_tokens=max_new_tokens,
                                           eos_token_id=judge.stop_ids, pad_token_id=judge.pad_id,
                                           output_scores=True, return_dict_in_generate=True)
    sequences = [_keyword_ids(judge.tokenizer, k) for k in stop_strings]
    extra = {"stopping_criteria": transformers.StoppingCriteriaList([_ends_with(sequences, inputs["input_ids"]
                                                                                .shape[1])])} if sequences else {}
    processors = transformers.LogitsProcessorList()
    if judge.kind == "llava-1.5" and judge.base_vocab is not None:
        vocab = judge.model.get_output_embeddings().weight.shape[0]
        if vocab > judge.base_vocab:
            processors.append(_vocab_mask(judge.base_vocab))
    inputs = {k: (v.to(judge.device) if k != cache_keyword() and hasattr(v, "to") else v) for k, v in inputs.items()}
    if "pixel_values" in inputs and inputs["pixel_values"].is_floating_point():
        inputs["pixel_values"] = inputs["pixel_values"].to(judge.dtype)
    with judge.lock, torch.inference_mode():
        out = judge.model.generate(**inputs, generation_config=config, logits_processor=processors, **extra)
    prompt_length = inputs["input_ids"].shape[1]
    new = out.sequences[:, prompt_length:].cpu()
    digits = torch.tensor(judge.digit_tokens, device=out.scores[0].device)
    # the reference's softmax runs on the model dtype's scores (float16 on a GPU); transformers 5 hands float32
    # copies of those logits, which convert back exactly
    probs = torch.stack([torch.softmax(s.to(judge.dtype), dim=-1).index_select(1, digits) for s in out.scores], 1).cpu()
    stops = set(judge.stop_ids)
    results = []
    for row in range(new.shape[0]):
        ids = new[row].tolist()
        end = next((k for k, t in enumerate(ids) if t in stops), None)
        if sequences:  # the first step whose ids end with a keyword's (the row is padded after it)
            said = next((k for k in range(len(ids)) if any(
                len(q) <= k + 1 and ids[k + 1 - len(q):k + 1] == q for q in sequences)), None)
            end = said if end is None or (said is not None and said < end) else end
        kept = ids if end is None else ids[:end + 1]
        results.append(Generated(kept, probs[row, :len(kept)], end is not None))
    return results


@functools.lru_cache(maxsize=1)
def cache_keyword() -> str:
    """``generate``'s name for a prefilled key-value cache: ``cache`` from transformers 5, ``past_key_values`` before
    (looked up on first use, not at import)."""
    try:
        from importlib.metadata import version

        return "cache" if int(version("transformers").split(".")[0]) >= 5 else "past_key_values"
    except Exception:  # noqa: BLE001 - no transformers: the judge cannot load anyway
        return "past_key_values"


#: Images whose shared prompt prefix is computed together (their key-value caches held at once: for LLaVA-1.5-13B in
#: float16, 0.8 MB per token, about 0.56 GB per 690-token prefix).
PREFIX_IMAGES = 8


def generate_shared(judge: Judge, prompts: list[str], image_keys: list[str], pixels_of, batch_size: int,
                    max_new_tokens: int = MAX_NEW_TOKENS, progress=None,
                    stop_strings: tuple[str, ...] = ()) -> list[Generated]:
    """LLaVA-1.5 generation with each image's shared prompt prefix computed once.

    The prompts of one image (its captions) share their tokens up to the candidate (the system text, the image's
    features, the instruction; for RefFLEUR the references too): that prefix's keys and values are computed once per
    image, for :data:`PREFIX_IMAGES` images at a time (prefixes cut to one length, the shortest common prefix of
    those images, so they batch without padding), and each prompt generates from a copy of its image's cache,
    ``batch_size`` prompts of equal remaining length at a time, so no prompt is padded. Mathematically the same
    computation as one prompt per ``generate``; numerically the same up to the last bits (other matrix shapes).
    ``pixels_of(key)``: the pixel tensor of an image key (called once per image, when its chunk comes); returns one
    :class:`Generated` per prompt, in order.
    """
    torch, transformers = require("torch", "transformers", what="the FLEUR judge")
    ids = [llava_input_ids(judge, p) for p in prompts]
    results: list[Generated | None] = [None] * len(prompts)
    keys = list(dict.fromkeys(image_keys))
    for start in range(0, len(keys), PREFIX_IMAGES):
        chunk = keys[start:start + PREFIX_IMAGES]
        members = {k: [i for i, key in enumerate(image_keys) if key == k] for k in chunk}
        length = min(_common_prefix([ids[i] for i in rows]) for rows in members.values())
        length = min(length, min(len(ids[i]) for rows in members.values() for i in rows) - 1)
        prefix_ids = torch.tensor([ids[rows[0]][:length] for rows in members.values()], device=judge.device)
        pixels = torch.stack([pixels_of(k) for k in chunk]).to(judge.device, judge.dtype)
        with judge.lock, torch.inference_mode():
            out = judge.model(input_ids=prefix_ids, pixel_values=pixels, use_cache=True)
            prefix = out.cache if cache_keyword() == "cache" else out.past_key_values
        row_of = {k: r for r, k in enumerate(chunk)}
        items = [i for rows in members.values() for i in rows]
        by_length: dict[int, list[int]] = {}
        for i in items:
            by_length.setdefault(len(ids[i]), []).append(i)
        for size, group in sorted(by_length.items()):
            for g in range(0, len(group), batch_size):
                part = group[g:g + batch_size]
                rows = torch.tensor([row_of[image_keys[i]] for i in part], device=judge.device)
                cache = transformers.DynamicCache()
                for layer, stored in enumerate(prefix.layers):
                    cache.update(stored.keys.index_select(0, rows), stored.values.index_select(0, rows), layer)
                inputs = {"input_ids": torch.tensor([ids[i] for i in part]),
                          "attention_mask": torch.ones((len(part), size), dtype=torch.long), cache_keyword(): cache}
                for i, generated in zip(part, generate(judge, inputs, max_new_tokens, stop_strings)):
                    results[i] = generated
                if progress is not None:
                    progress.update(len(part))
        del prefix, out
    return results  # type: ignore[return-value]


def _common_prefix(rows: list[list[int]]) -> int:
    """The length of the longest token prefix all ``rows`` share."""
    first = rows[0]
    n = min(len(r) for r in rows)
    for k in range(n):
        if any(r[k] != first[k] for r in rows[1:]):
            return k
    return n


def _keyword_ids(tokenizer, keyword: str) -> list[int]:
    """``KeywordsStoppingCriteria``'s ids of ``keyword``: ``tokenizer(keyword).input_ids``, ``<s>`` dropped."""
    ids = tokenizer(keyword).input_ids
    return ids[1:] if len(ids) > 1 and ids[0] == tokenizer.bos_token_id else ids


def _ends_with(sequences: list[list[int]], prompt_length: int):
    """A stopping criterion: each row done once its generated ids end with one of ``sequences``."""
    transformers = require("transformers")

    class EndsWith(transformers.StoppingCriteria):
        """Each row done once its generated ids end with one of ``sequences``."""

        def __init__(self, sequences: list[list[int]], prompt_length: int):
            self.sequences, self.prompt_length = sequences, prompt_length

        def __call__(self, input_ids, scores, **kwargs):
            torch = require("torch")
            done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            new = input_ids[:, self.prompt_length:]
            for q in self.sequences:
                if new.shape[1] >= len(q):
                    done |= (new[:, -len(q):] == torch.tensor(q, device=new.device)).all(dim=1)
            return done

    return EndsWith(sequences, prompt_length)


def llava_batch(judge: Judge, prompts: list[str], pixels: list) -> dict:
    """Model inputs for LLaVA-1.5 prompts (each with one ``<image>``) and their pixel tensors, left-padded."""
    torch = require("torch")
    rows = [llava_input_ids(judge, p) for p in prompts]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), judge.pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r)
        mask[i, width - len(r):] = 1
    return {"input_ids": ids, "attention_mask": mask, "pixel_values": torch.stack(pixels)}


def chat_batch(judge: Judge, conversations: list[list[dict]], images: list) -> dict:
    """Model inputs for conversations through the judge's chat template and processor, left-padded."""
    texts = [judge.processor.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations]
    tokenizer = judge.processor.tokenizer
    tokenizer.padding_side = "left"
    return dict(judge.processor(text=texts, images=[[im] for im in images], return_tensors="pt", padding=True))


def prompt_for(judge: Judge, instruction: str, conversation: str = "llava_v1"):
    """What :func:`batch_inputs` needs for one instruction: LLaVA's prompt string in ``conversation``'s template
    (:data:`~capeval.judges.prompts.CONVERSATIONS`), or a chat conversation for other judges."""
    return llava_prompt(instruction, conversation) if judge.kind == "llava-1.5" else chat_messages(instruction)


def batch_inputs(judge: Judge, prompts: list, images: list) -> dict:
    """Model inputs for prompts from :func:`prompt_for` (or longer conversations) and RGB ``PIL`` images."""
    if judge.kind == "llava-1.5":
        return llava_batch(judge, prompts, [llava_pixels(judge, im) for im in images])
    return chat_batch(judge, prompts, images)


def decode(judge: Judge, ids: list[int], *, special: bool) -> str:
    """The text of generated ids (``special=True`` keeps special tokens, as the reference's parsing reads them)."""
    return judge.tokenizer.decode(ids, skip_special_tokens=not special)
