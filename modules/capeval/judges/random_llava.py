"""Seeded tiny LLaVA-1.5 models in both checkpoint layouts, to run FLEUR's whole path without downloading anything.

:func:`write_tiny_llava` writes, under ``folder``:

* ``vision/``: a CLIP vision model of LLaVA-1.5's architecture with small widths (``CLIPVisionModel``, 56-px images
  in 14-px patches: 16 image features) and CLIP's image preprocessing configuration scaled to 56 px;
* ``original/``: LLaVA's original layout (what ``liuhaotian/llava-v1.5-13b`` holds): ``config.json`` with
  ``model_type: "llava_llama"``, ``mm_vision_tower`` pointing at ``vision/``, ``mm_projector_type: "mlp2x_gelu"``,
  ``mm_vision_select_layer: -2``, ``image_aspect_ratio: "pad"``; ``model.safetensors`` with the original tensor
  names (``model.layers.*``, ``model.mm_projector.{0,2}.*``, ``lm_head.weight``); a SentencePiece ``tokenizer.model``
  (BPE, byte fallback, digits split, ``<unk>``/``<s>``/``</s>`` = 0/1/2 as Llama's) trained here on caption text
  and FLEUR's prompts;
* ``hf/``: the same weights in transformers' ``LlavaForConditionalGeneration`` layout as llava-hf's checkpoints are
  (``<image>`` and ``<pad>`` added to the tokenizer, the vocabulary padded to a multiple of 64 with rows drawn as the
  conversion script draws them), with ``preprocessor_config.json``.

The language model is briefly trained (seeded, Adam, 50 full-batch steps: under a minute on a CPU) to answer FLEUR's question about the bundled
example photos with a number (two decimals, one decimal, ``1.0``, a first decimal of 0, a repeated digit) or with
none, so that every branch of the score smoothing runs on real generations; the digit probabilities stay spread
(it is not trained to convergence). The scores mean nothing.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.dependencies import require

#: The answers the tiny model learns, by caption index (cycled): every branch of FLEUR's smoothing and a failure.
ANSWERS = ("0.73", "0.5", "1.0", "0.07", "0.66", "none", "0.38", "0.9")
#: Captions for the bundled photos (chelsea, astronaut, coffee), several per photo.
CAPTIONS = (
    ("a tabby cat looking at the camera", "a striped cat sitting", "a dog running on the grass"),
    ("a smiling woman astronaut in an orange suit", "an astronaut in front of a flag", "a plate of food"),
    ("a cup of coffee on a saucer", "coffee in a white cup", "two cats on a sofa"),
)
REFERENCES = (("a cat with grey stripes", "a striped cat sitting and staring"),
              ("an astronaut in front of an american flag", "a woman in a space suit smiles"),
              ("a cup of coffee on a saucer with a spoon", "coffee in a white cup on a table"))

VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=2, image_size=56,
              patch_size=14, projection_dim=32)
TEXT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            max_position_embeddings=1024, rms_norm_eps=1e-5)
#: CLIP's image mean and standard deviation (OpenAI), as LLaVA's CLIP image processor holds them.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def _training_text() -> list[str]:
    from capeval.judges.prompts import LLAVA_V1_SYSTEM, REF_FLEUR_INSTRUCTION, FLEUR_INSTRUCTION

    lines = [LLAVA_V1_SYSTEM, FLEUR_INSTRUCTION, REF_FLEUR_INSTRUCTION, "USER: ASSISTANT: Why? Tell me the reason.",
             "0.0 0.1 0.25 0.5 0.73 0.99 1.0 none 0 1 2 3 4 5 6 7 8 9"]
    lines += [c for group in CAPTIONS for c in group] + [r for group in REFERENCES for r in group]
    return lines * 4


def train_tokenizer(path: Path, vocab_size: int = 600) -> None:
    """A Llama-style SentencePiece BPE model trained on :func:`_training_text` (deterministic)."""
    import io

    spm = require("sentencepiece", what="building the tiny LLaVA's tokenizer")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(_training_text()), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        byte_fallback=True, split_digits=True, add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        character_coverage=1.0, remove_extra_whitespaces=False, normalization_rule_name="identity",
        allow_whitespace_only_pieces=True, num_threads=1, minloglevel=2)
    path.write_bytes(model.getvalue())


def _tokenizer_config() -> dict:
    return {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "add_bos_token": True, "add_eos_token": False, "legacy": False, "model_max_length": 2048}


def write_tiny_llava(folder: str | Path, *, seed: int = 0, steps: int = 50) -> dict[str, Path]:
    """Write the tiny models (see the module docstring) and return ``{"original", "hf", "vision"}`` folders."""
    torch, transformers = require("torch", "transformers", what="building the tiny LLaVA")
    from safetensors.torch import save_file

    from capeval.judges.llava_layout import load_original

    folder = Path(folder)
    paths = {name: folder / name for name in ("vision", "original", "hf")}
    for p in paths.values():
        p.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        vision = transformers.CLIPVisionModel(transformers.CLIPVisionConfig(**VISION)).eval()
        vision.save_pretrained(paths["vision"])
        image_processor_config = {
            "image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": VISION["image_size"]},
            "resample": 3, "do_center_crop": True, "crop_size": {"height": VISION["image_size"], "width": VISION["image_size"]},
            "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": list(CLIP_MEAN),
            "image_std": list(CLIP_STD), "do_convert_rgb": True}
        (paths["vision"] / "preprocessor_config.json").write_text(json.dumps(image_processor_config, indent=2))

        original = paths["original"]
        train_tokenizer(original / "tokenizer.model")
        (original / "tokenizer_config.json").write_text(json.dumps(_tokenizer_config(), indent=2))
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(original))
        vocab = len(tokenizer)
        config = {"architectures": ["LlavaLlamaForCausalLM"], "model_type": "llava_llama", "vocab_size": vocab,
                  "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
                  "initializer_range": 0.02, "tie_word_embeddings": False, "torch_dtype": "float32",
                  "pretraining_tp": 1, "rope_theta": 10000.0, "use_cache": True, **TEXT,
                  "mm_vision_tower": str(paths["vision"].resolve()), "mm_hidden_size": VISION["hidden_size"],
                  "mm_projector_type": "mlp2x_gelu", "mm_vision_select_layer": -2,
                  "mm_vision_select_feature": "patch", "mm_patch_merge_type": "flat", "image_aspect_ratio": "pad",
                  "mm_use_im_start_end": False, "mm_use_im_patch_token": False, "tune_mm_mlp_adapter": False,
                  "freeze_mm_mlp_adapter": False}
        (original / "config.json").write_text(json.dumps(config, indent=2))
        llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=vocab, bos_token_id=1, eos_token_id=2, pad_token_id=0, tie_word_embeddings=False, **TEXT))
        projector = torch.nn.Sequential(torch.nn.Linear(VISION["hidden_size"], TEXT["hidden_size"]), torch.nn.GELU(),
                                        torch.nn.Linear(TEXT["hidden_size"], TEXT["hidden_size"]))
        state = {k: v.contiguous() for k, v in llama.state_dict().items()}
        state.update({f"model.mm_projector.{k}": v.contiguous() for k, v in projector.state_dict().items()})
        save_file(state, str(original / "model.safetensors"), metadata={"format": "pt"})

        model, _ = load_original(original)
        _train(model, tokenizer, paths["vision"], transformers, torch, steps)
        trained = {k: v for k, v in model.state_dict().items()}
        state = _original_names(trained, vocab)
        save_file(state, str(original / "model.safetensors"), metadata={"format": "pt"})

    _write_hf(paths, state, vision, tokenizer, config, transformers, torch)
    return paths


def _original_names(state: dict, vocab: int) -> dict:
    """transformers-layout tensors of a model loaded by :func:`~capeval.judges.llava_layout.load_original` back in
    the original names (the placeholder's extra row dropped)."""
    out = {}
    for key, tensor in state.items():
        if key.startswith("model.language_model."):
            name = "model." + key[len("model.language_model."):]
        elif key.startswith("model.multi_modal_projector."):
            name = key.replace("model.multi_modal_projector.linear_1", "model.mm_projector.0").replace(
                "model.multi_modal_projector.linear_2", "model.mm_projector.2")
        elif key == "lm_head.weight":
            name = key
        else:
            continue
        if name in ("model.embed_tokens.weight", "lm_head.weight"):
            tensor = tensor[:vocab]
        out[name] = tensor.detach().contiguous().clone()
    return out


def _fleur_examples() -> list[tuple[Any, str, str]]:
    """``(photo, caption, answer)`` for every caption of :data:`CAPTIONS` (answers cycling through :data:`ANSWERS`)."""
    from capeval.io import example_images
    from capeval.models.images import read_item

    photos = [read_item(p, i).decode() for i, p in enumerate(example_images()[:3])]
    pairs = [(photo, caption) for photo, captions in zip(photos, CAPTIONS) for caption in captions]
    return [(photo, caption, ANSWERS[k % len(ANSWERS)]) for k, (photo, caption) in enumerate(pairs)]


def _train(model, tokenizer, vision_dir: Path, transformers, torch, steps: int) -> None:
    """Teach the tiny LLaVA :data:`ANSWERS` for FLEUR's prompt on the example photos."""
    from capeval.judges.judge import _clip_pil_processor, _llava_judge, llava_batch, llava_pixels
    from capeval.judges.prompts import fleur_instruction, llava_v1_prompt

    judge = _llava_judge(model, tokenizer, _clip_pil_processor(vision_dir), base_vocab=tokenizer.vocab_size)
    judge.pad_id = 0
    examples = _fleur_examples()
    batch = llava_batch(judge, [llava_v1_prompt(fleur_instruction(c)) for _, c, _ in examples],
                        [llava_pixels(judge, photo) for photo, _, _ in examples])
    targets = [tokenizer(a).input_ids[1:] + [tokenizer.eos_token_id] for _, _, a in examples]
    _fit(model, batch, targets, torch, steps)


def _fit(model, batch: dict, targets: list[list[int]], torch, steps: int) -> None:
    """Adam on the language model and projector (full batch, ``steps`` steps): each left-padded prompt of ``batch``
    followed by its target tokens."""
    width = max(len(t) for t in targets)
    ids = torch.cat([batch["input_ids"], torch.zeros(len(targets), width, dtype=torch.long)], 1)
    mask = torch.cat([batch["attention_mask"], torch.zeros(len(targets), width, dtype=torch.long)], 1)
    labels = torch.full_like(ids, -100)
    start = batch["input_ids"].shape[1]
    for i, t in enumerate(targets):
        ids[i, start:start + len(t)] = torch.tensor(t)
        mask[i, start:start + len(t)] = 1
        labels[i, start:start + len(t)] = torch.tensor(t)
    others = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
    model.train()
    for name, param in model.named_parameters():  # the vision tower stays as it is (LLaVA freezes it too)
        if "vision_tower" in name:
            param.requires_grad_(False)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels, **others).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


#: A ChatML-style template for the tiny chat judge: the image placeholder, then the text, in the user's turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>\n{% else %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def write_tiny_chat_judge(folder: str | Path, llava: dict[str, Path], *, seed: int = 0, steps: int = 50) -> Path:
    """A tiny vision-language model that is not LLaVA-1.5 (a Mistral language model behind the same tiny CLIP), with
    a processor and a ChatML-style chat template, trained like :func:`write_tiny_llava`'s on FLEUR's prompt through
    that template: what ``fleur_model=`` reads as "any transformers VLM". ``llava``: :func:`write_tiny_llava`'s
    folders (its tokenizer and vision tower are reused). Returns the folder."""
    torch, transformers = require("torch", "transformers", what="building the tiny chat judge")
    from capeval.judges.judge import Judge, chat_batch
    from capeval.judges.prompts import chat_messages, fleur_instruction

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(llava["original"]))
    tokenizer.add_tokens([transformers.AddedToken(t, special=True, normalized=False)
                          for t in ("<image>", "<|im_start|>", "<|im_end|>")], special_tokens=True)
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    vision = transformers.CLIPVisionModel.from_pretrained(str(llava["vision"]))
    image_processor = transformers.CLIPImageProcessor.from_pretrained(str(llava["vision"]))
    processor = transformers.LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                            patch_size=VISION["patch_size"], vision_feature_select_strategy="default",
                                            num_additional_image_tokens=1, chat_template=CHAT_TEMPLATE)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        text = transformers.MistralConfig(vocab_size=len(tokenizer), bos_token_id=1, eos_token_id=end,
                                          pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False, **TEXT)
        config = transformers.LlavaConfig(vision_config=vision.config.to_dict(), text_config=text.to_dict(),
                                          image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                                          projector_hidden_act="gelu", vision_feature_select_strategy="default",
                                          vision_feature_layer=-2)
        model = transformers.LlavaForConditionalGeneration(config)
        model.model.vision_tower.load_state_dict(vision.state_dict())
        judge = Judge(model=model, tokenizer=tokenizer, kind="chat", label="", fingerprint="", paper=False,
                      device=None, dtype=None, digit_tokens=[], stop_ids=[end], pad_id=tokenizer.pad_token_id,
                      processor=processor)
        examples = _fleur_examples()
        batch = chat_batch(judge, [chat_messages(fleur_instruction(c)) for _, c, _ in examples],
                           [photo for photo, _, _ in examples])
        targets = [tokenizer(a, add_special_tokens=False).input_ids + [end] for _, _, a in examples]
        _fit(model, batch, targets, torch, steps)
    model.generation_config = transformers.GenerationConfig(bos_token_id=1, eos_token_id=end,
                                                            pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def _write_hf(paths: dict, state: dict, vision, tokenizer, config: dict, transformers, torch) -> None:
    """The llava-hf layout of the same weights (tokenizer with ``<image>`` and ``<pad>``, vocabulary padded)."""
    from capeval.judges.llava_layout import hf_config, to_hf_state

    hf = paths["hf"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(paths["original"]))
    tokenizer.add_tokens([transformers.AddedToken("<image>", special=True, normalized=False)], special_tokens=True)
    tokenizer.add_special_tokens({"pad_token": "<pad>"})
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    converted = to_hf_state(state, vision.state_dict())
    llava_config = hf_config(config, vision.config, image_token_id=image_token_id)
    llava_config.text_config.vocab_size = converted["lm_head.weight"].shape[0]
    llava_config.pad_token_id = tokenizer.pad_token_id
    model = transformers.LlavaForConditionalGeneration.from_pretrained(None, config=llava_config, state_dict=converted,
                                                                       dtype=torch.float32)
    model.generation_config = transformers.GenerationConfig(bos_token_id=1, eos_token_id=2, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(hf)
    tokenizer.save_pretrained(hf)
    (hf / "preprocessor_config.json").write_text((paths["vision"] / "preprocessor_config.json").read_text())
