"""Polos (Wada et al. 2024, CVPR): a score in (0, 1) learned from Polaris' human judgments, rebuilt from the released
checkpoint as keio-smilab24/Polos computes it (``polos/models/estimators/polos_estimator.py``, ``estimator_base.py``,
``validate/metrics.py``; COMET's ``ScalarMixWithDropout`` and ``FeedForward``).

The network, for a batch of items ``(candidate c, references r_1..r_k, image v)``:

1. **Text (SimCSE).** Each text is tokenized by the encoder's own tokenizer (``princeton-nlp/sup-simcse-roberta-base``,
   no truncation), the batch is padded and run through the RoBERTa encoder; its 13 hidden layers are mixed by learned
   softmax weights and a scale ``gamma``, **each layer first normalised with the mean and variance of all non-padding
   values of the whole batch** (COMET's masked layer norm, ``eps`` 1e-12); the sentence vector is the first token's
   row (``pool: cls``; ``avg`` = the masked mean, also read).
2. **Image and text (CLIP ViT-B/32)**, unnormalised ``encode_image(v)``, ``encode_text("A photo depicts " + text)``
   (OpenAI's tokenizer cut at 77 tokens, end-of-text kept; the reference image preprocessing).
3. For each reference position ``j``: ``x = [r, c, |c−r|, c·r, v, t_c, |v−t_c|, v·t_c, |t_r−t_c|, t_r·t_c]``
   (SimCSE ``c``, ``r``; CLIP ``v``, ``t_c``, ``t_r``), a feed-forward network (Linear-Tanh-Linear-Tanh-Linear, the
   hidden sizes read from the weights), a sigmoid. The score is the maximum over ``j``.

Two properties of the reference are kept, because its published numbers come from them:

* **The batch matters.** Step 1's normalisation statistics are those of the batch: an item's score depends on the
  other items scored with it. The reference evaluates in input order, 32 items per batch (``validate/metrics.py``:
  ``model.predict(data, batch_size=32)``), which is the default here (``polos_batch_size``); ``polos_batch_size=1``
  gives scores that depend on nothing else (and differ from the paper's).
* **References per batch.** The reference's collation transposes the reference lists with ``zip``: a batch uses the
  first ``m`` references of every item, ``m`` = the fewest references any item of that batch has.

The checkpoint as distributed (``reprod.zip``: ``reprod.ckpt`` + ``hparams.yaml``, a PyTorch Lightning checkpoint)
is read with ``torch.load(weights_only=True)`` (``argparse.Namespace`` the one class allowed besides tensors and
containers: Lightning stores hyper-parameters in one), or a ``.safetensors`` file of the same state dict beside an
``hparams.yaml``. The state dict holds every weight (the RoBERTa encoder, the CLIP, the mixing and feed-forward
layers); the encoder's configuration and tokenizer come from ``hparams.pretrained_model`` (Hub id, through the Hugging
Face cache, or ``polos_text_model=`` a folder).
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from capeval.advice import OPTION, Setting, about, with_words, words
from capeval.dependencies import default_device, require

#: The prompt the reference puts before every CLIP text.
POLOS_PREFIX = "A photo depicts "
#: Items per batch in the reference's evaluation (validate/metrics.py).
DEFAULT_BATCH_SIZE = 32
#: The reference's checkpoint (keio-smilab24/Polos README, ``polos/models/__init__.py``).
CHECKPOINT_URL = "https://polos-polaris.s3.ap-northeast-1.amazonaws.com/reprod.zip"
#: The text encoder the released model was trained from (its ``hparams.yaml``: ``pretrained_model``).
DEFAULT_TEXT_MODEL = "princeton-nlp/sup-simcse-roberta-base"
#: COMET's masked layer norm epsilon.
LAYER_NORM_EPS = 1e-12
SUPPORTED_POOLS = ("cls", "avg")


@dataclass
class PolosCheckpoint:
    """What a Polos checkpoint holds, split by part: ``encoder`` (the RoBERTa state dict), ``clip`` (OpenAI-format
    CLIP state dict, empty when the file has none), ``mix`` (the layer-mixing logits) and ``gamma``, ``ff`` (the
    feed-forward layers' ``(weight, bias)`` in order), and the ``hparams`` that shape the computation."""

    path: Path
    encoder: dict
    clip: dict
    mix: Any
    gamma: Any
    ff: list
    hparams: dict
    fingerprint: str = ""

    @property
    def text_model(self) -> str:
        return str(self.hparams.get("pretrained_model") or DEFAULT_TEXT_MODEL)

    @property
    def pool(self) -> str:
        return str(self.hparams.get("pool", "avg"))

    @property
    def layer(self) -> Any:
        value = self.hparams.get("layer", "mix")
        return value if value == "mix" else int(value)

    @property
    def activation(self) -> str:
        return str(self.hparams.get("activations", "Tanh"))

    @property
    def final_activation(self) -> str | None:
        value = self.hparams.get("final_activation", "Sigmoid")
        return str(value) if value not in (False, None, "False", "false", "") else None


def _checkpoint_file(path: Path, option: str) -> Path:
    if path.is_file():
        return path
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix in (".ckpt", ".safetensors"))
        if len(found) == 1:
            return found[0]
        raise about(ValueError, option, f"{path} must hold exactly one .ckpt or .safetensors file (found "
                         f"{[p.name for p in found]}).")
    raise about(FileNotFoundError, option, f"no such file or folder {path}.")


def _read_yaml(path: Path, option: str) -> dict:
    yaml = require("yaml", what="Polos checkpoints (hparams.yaml)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise about(ValueError, option, f"{path} is not a plain YAML file ({str(err)[:200]}).") from None
    if not isinstance(data, dict):
        raise about(ValueError, option, f"{path} does not hold a mapping of hyper-parameters.")
    return data


def _as_dict(value: Any) -> dict:
    if isinstance(value, dict):
        return dict(value)
    if hasattr(value, "__dict__"):
        return dict(vars(value))
    return {}


def read_checkpoint(spec: str | os.PathLike, *, option: str = "polos_model") -> PolosCheckpoint:
    """The parts of the Polos checkpoint ``spec`` (a ``.ckpt`` / ``.safetensors`` file or a folder holding one, with
    its ``hparams.yaml`` beside it or the hyper-parameters inside the ``.ckpt``).

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming ``option`` and the file for anything else that is
    not such a checkpoint (a pickle that would run code, another model, hyper-parameters capeval cannot follow).
    """
    import argparse

    from capeval.vision_language.checkpoints import read_weights

    path = _checkpoint_file(Path(spec).expanduser(), option)
    extra: dict = {}
    loaded = read_weights(path, option, allowed=(argparse.Namespace,),
                          hint="give the Lightning checkpoint as distributed, or its state dict as a safetensors "
                               "file with hparams.yaml beside it")
    if path.suffix == ".safetensors":
        state = loaded
    else:
        if not isinstance(loaded, dict):
            raise about(ValueError, option, f"{path} holds a {type(loaded).__name__}, not a checkpoint.")
        state = loaded.get("state_dict", loaded)
        extra = _as_dict(loaded.get("hyper_parameters", {}))
        extra = _as_dict(extra.get("hparams", extra)) if "hparams" in extra else extra
    if not isinstance(state, dict):
        raise about(ValueError, option, f"{path} holds no state dict.")
    yaml_file = path.parent / "hparams.yaml"
    hparams = _read_yaml(yaml_file, option) if yaml_file.is_file() else extra
    if not hparams:
        raise about(ValueError, option, f"{path} carries no hyper-parameters and no hparams.yaml lies beside it; Polos "
                         "needs them (pretrained_model, layer, pool, activations), as the reference's load_checkpoint "
                         "does.")
    return _split(path, state, hparams, option)


def _split(path: Path, state: dict, hparams: dict, option: str) -> PolosCheckpoint:
    torch = require("torch")
    model = hparams.get("model", "PolosEstimator")
    if model != "PolosEstimator":
        raise about(ValueError, option, f"{path} is a {model} checkpoint; capeval reads PolosEstimator checkpoints.")
    if str(hparams.get("encoder_model", "BERT")) != "BERT":
        raise about(ValueError, option, f"{path} uses encoder_model={hparams.get('encoder_model')!r}; capeval reads the "
                         "Hugging Face encoders (encoder_model: BERT) the released Polos uses.")
    encoder = {k[len("encoder.model."):]: v for k, v in state.items() if k.startswith("encoder.model.")}
    clip = {k[len("clip."):]: v for k, v in state.items() if k.startswith("clip.")}
    mix_keys = sorted((k for k in state if k.startswith("scalar_mix.scalar_parameters.")),
                      key=lambda k: int(k.rsplit(".", 1)[1]))
    ff_names = sorted({k.rsplit(".", 1)[0] for k in state if k.startswith("ff.0.ff.linear_")},
                      key=lambda k: int(k.rsplit("_", 1)[1]))
    if not encoder or not ff_names:
        raise about(ValueError, option, f"{path} is not a Polos checkpoint (no encoder.model.* or ff.0.ff.linear_* "
                         f"weights; first keys: {list(state)[:5]}).")
    layer = hparams.get("layer", "mix")
    if layer == "mix" and not mix_keys:
        raise about(ValueError, option, f"{path} says layer: mix but holds no scalar_mix weights.")
    pool = str(hparams.get("pool", "avg"))
    if pool not in SUPPORTED_POOLS:
        raise about(ValueError, option, f"{path} uses pool: {pool}; capeval follows the reference for "
                         f"{' and '.join(SUPPORTED_POOLS)} (the released Polos uses cls).")
    ff = [(state[f"{name}.weight"].float(), state[f"{name}.bias"].float()) for name in ff_names]
    mix = torch.cat([state[k].float().reshape(-1) for k in mix_keys]) if mix_keys else None
    gamma = state["scalar_mix.gamma"].float().reshape(-1) if "scalar_mix.gamma" in state else None
    digest = hashlib.sha256()
    for name in sorted(state):
        value = state[name]
        if torch.is_tensor(value) and not name.startswith("scalar_mix.dropout_"):
            value = value.detach().to("cpu", dtype=torch.float32 if value.is_floating_point() else value.dtype)
            digest.update(f"{name}:{tuple(value.shape)}:".encode())
            digest.update(value.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    return PolosCheckpoint(path, encoder, clip, mix, gamma, ff, hparams, digest.hexdigest()[:16])


def _activation(name: str, option: str):
    torch = require("torch")
    module = getattr(torch.nn, name, None)
    if module is None or not isinstance(module, type):
        raise about(ValueError, option, f"unknown activation {name!r} in the checkpoint's hyper-parameters.")
    return module()


@dataclass
class PolosModel:
    """A loaded Polos: the text ``encoder`` and its ``tokenizer``, the feed-forward ``head`` (sigmoid included), the
    layer-mixing ``mix`` weights (softmax applied) and ``gamma``, the ``clip`` backend, where it runs."""

    checkpoint: PolosCheckpoint
    encoder: Any
    tokenizer: Any
    head: Any
    mix: Any
    gamma: Any
    clip: Any
    device: Any
    label: str
    max_tokens: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def fingerprint(self) -> str:
        return self.checkpoint.fingerprint

    def tokenize(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Each text's token ids (the encoder tokenizer's own specials, no truncation) cut to :attr:`max_tokens`, and
        the positions that were cut."""
        ids, cut = [], []
        for i, text in enumerate(texts):
            row = self.tokenizer(text, truncation=False)["input_ids"]
            if len(row) > self.max_tokens:
                row, _ = row[:self.max_tokens], cut.append(i)
            ids.append(row)
        return ids, cut

    def sentence_embeddings(self, ids: list[list[int]]):
        """``[B, H]`` float32 sentence vectors of one batch (the batch-wide layer norm of the module docstring)."""
        torch = require("torch")
        from capeval.models.inference import ieee_float32

        pad = self.tokenizer.pad_token_id
        lengths = torch.tensor([len(row) for row in ids])
        width = int(lengths.max())
        tokens = torch.full((len(ids), width), pad, dtype=torch.long)
        for i, row in enumerate(ids):
            tokens[i, :len(row)] = torch.tensor(row, dtype=torch.long)
        mask = torch.arange(width)[None, :] < lengths[:, None]
        with torch.inference_mode(), ieee_float32():
            tokens, mask = tokens.to(self.device), mask.to(self.device)
            layers = self.encoder(tokens, mask, output_hidden_states=True, return_dict=True).hidden_states
            layer = self.checkpoint.layer
            if layer == "mix":
                broadcast = mask.float().unsqueeze(-1)
                count = mask.float().sum() * layers[0].shape[-1]
                mixed = 0
                for weight, hidden in zip(self.mix, layers):
                    masked = hidden * broadcast
                    mean = masked.sum() / count
                    variance = (((masked - mean) * broadcast) ** 2).sum() / count
                    mixed = mixed + weight * ((hidden - mean) / torch.sqrt(variance + LAYER_NORM_EPS))
                embeddings = self.gamma * mixed
            else:
                embeddings = layers[layer]
            if self.checkpoint.pool == "cls":
                out = embeddings[:, 0, :]
            else:  # avg: padding rows zeroed, divided by the number of real tokens
                kept = embeddings.float().masked_fill(tokens.eq(pad).unsqueeze(-1), 0.0).type_as(embeddings)
                out = kept.sum(1) / mask.unsqueeze(-1).expand(embeddings.size()).float().sum(1)
        return out.float()

    def head_scores(self, features):
        """``[B, F]`` concatenated features -> ``[B]`` scores in (0, 1)."""
        torch = require("torch")
        from capeval.models.inference import ieee_float32

        with torch.inference_mode(), ieee_float32():
            return self.head(features.to(self.device)).reshape(-1).float().cpu()


def _text_parts(text_model: str, option: str):
    transformers = require("transformers", what="Polos (its SimCSE text encoder)")
    from capeval.vision_language.backends import _fetch_hint

    try:
        config = transformers.AutoConfig.from_pretrained(text_model)
        tokenizer = transformers.AutoTokenizer.from_pretrained(text_model)
    except (OSError, ValueError) as err:
        raise with_words(OSError, words(
            option, OPTION, f": the text encoder's configuration and tokenizer ({text_model!r}, the checkpoint's "
            f"pretrained_model) could not be read ({str(err)[:200]}); {_fetch_hint(text_model)} (the weights "
            "themselves come from the Polos checkpoint), or pass ", Setting(shown="<folder>", option="polos_text_model"),
            ".")) from None
    return transformers, config, tokenizer


def build_model(checkpoint: PolosCheckpoint, *, text_model: str | None = None, device: Any = None,
                option: str = "polos_model") -> PolosModel:
    """The :class:`PolosModel` of ``checkpoint``: its encoder built from ``text_model`` (default: the checkpoint's
    ``pretrained_model``)'s configuration and loaded with the checkpoint's weights, its CLIP from the checkpoint (or
    OpenAI's ViT-B/32 through the Hugging Face cache when the file holds none, as the reference's ``clip.load``)."""
    torch = require("torch", what="Polos")
    target = default_device(device)
    source = text_model or checkpoint.text_model
    transformers, config, tokenizer = _text_parts(source, option)
    encoder = transformers.AutoModel.from_config(config)
    encoder_state = {k: v.float() if v.is_floating_point() else v for k, v in checkpoint.encoder.items()}
    missing, unexpected = encoder.load_state_dict(encoder_state, strict=False)
    ignorable = ("embeddings.position_ids", "embeddings.token_type_ids")
    missing = [k for k in missing if not k.endswith(ignorable)]
    unexpected = [k for k in unexpected if not k.endswith(ignorable)]
    if missing or unexpected:
        raise about(ValueError, option, f"the checkpoint's encoder weights do not fit {source!r}'s architecture (missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}).")
    encoder.float().eval().to(target)
    layers = []
    for i, (weight, bias) in enumerate(checkpoint.ff):
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
        linear.weight.data.copy_(weight)
        linear.bias.data.copy_(bias)
        layers.append(linear)
        if i < len(checkpoint.ff) - 1:
            layers.append(_activation(checkpoint.activation, option))
    if checkpoint.final_activation:
        layers.append(_activation(checkpoint.final_activation, option))
    layers.append(torch.nn.Sigmoid())
    head = torch.nn.Sequential(*layers).float().eval().to(target)
    clip = _clip_backend(checkpoint, target, option)
    hidden = int(config.hidden_size)
    expected = 4 * hidden + 6 * _clip_width(clip)
    if checkpoint.ff[0][0].shape[1] != expected:
        raise about(ValueError, option, f"the feed-forward input is {checkpoint.ff[0][0].shape[1]} wide, but the encoder "
                         f"({hidden}) and CLIP give {expected}.")
    mix = gamma = None
    if checkpoint.layer == "mix":
        layers_out = int(config.num_hidden_layers) + 1
        if checkpoint.mix.numel() != layers_out:
            raise about(ValueError, option, f"{checkpoint.mix.numel()} mixing weights for an encoder with {layers_out} "
                             "hidden states.")
        mix = torch.softmax(checkpoint.mix, dim=0).to(target)
        gamma = checkpoint.gamma.to(target)
    offset = int(config.pad_token_id) + 1 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta",
                                                                                    "camembert") else 0
    max_tokens = int(config.max_position_embeddings) - offset
    label = f"{checkpoint.path.parent.name}/{checkpoint.path.name}"
    return PolosModel(checkpoint, encoder, tokenizer, head, mix, gamma, clip, target, label, max_tokens)


def _clip_width(clip) -> int:
    model = clip.model
    projection = getattr(model, "text_projection", None)
    if projection is not None:
        return int(projection.weight.shape[0] if hasattr(projection, "weight") else projection.shape[1])
    return int(model.config.projection_dim)


def _clip_backend(checkpoint: PolosCheckpoint, device, option: str):
    torch = require("torch")
    from capeval.vision_language.backends import CLIP_MEAN, CLIP_STD, ClipBackend, _side, load_clip, weights_fingerprint
    from capeval.vision_language.checkpoints import REQUIRED_KEYS, build_openai_clip

    if not checkpoint.clip:
        return load_clip("ViT-B/32", device=device, option=option)
    missing = [k for k in REQUIRED_KEYS if k not in checkpoint.clip]
    if missing:
        raise about(ValueError, option, f"the checkpoint's clip.* weights are not an OpenAI-format CLIP (missing {missing}).")
    model = build_openai_clip(checkpoint.clip).to(device, dtype=torch.float32)
    return ClipBackend("openai", f"{checkpoint.path.name}:clip", weights_fingerprint(model), model,
                       _side(model.visual.image_size), CLIP_MEAN, CLIP_STD, int(model.context_length), device,
                       "float32")




def load_polos(spec: str | os.PathLike, *, text_model: str | None = None, device: Any = None,
               option: str = "polos_model") -> PolosModel:
    """:func:`read_checkpoint` + :func:`build_model`, once per process for a (file, text model, device)."""
    from capeval.vision_language.backends import _cache_key

    key = (_cache_key(spec), text_model, str(default_device(device)))
    from capeval.loaded_models import load_once

    return load_once("polos", key, lambda: build_model(read_checkpoint(spec, option=option), text_model=text_model,
                                                       device=device, option=option))


def clear_loaded() -> None:
    """Forget loaded Polos models (:func:`capeval.clear_loaded_models` forgets every kind)."""
    from capeval.loaded_models import forget

    forget("polos")


@dataclass
class PolosScores:
    """Per item: ``scores`` (float64, in (0, 1)), ``references_used`` (how many of its references the batch rule
    kept), and the texts cut: ``cut_candidates`` / ``cut_references`` ((item, reference) pairs) for the encoder."""

    scores: Any
    references_used: list[int]
    cut_candidates: list[int]
    cut_references: list[tuple[int, int]]


def polos_scores(model: PolosModel, candidates: Sequence[str], references: Sequence[Sequence[str]],
                 images: Sequence[Any], *, batch_size: int = DEFAULT_BATCH_SIZE, progress: bool | None = None,
                 desc: str = "polos") -> PolosScores:
    """Polos of each ``(candidate, references, image)``, batched in input order as the reference batches them."""
    np = require("numpy")
    torch = require("torch")
    from capeval.progress import progress as progress_bar
    from capeval.vision_language.features import image_features, text_features

    n = len(candidates)
    if not (len(references) == len(images) == n):
        raise ValueError(f"polos: {n} candidates, {len(references)} reference lists and {len(images)} images.")
    clip = model.clip
    size = 64 if clip.device.type == "cpu" else 256
    vision = image_features(clip, images, batch_size=64, progress=progress, desc=f"{desc} images", normalize=False)
    text_c, _ = text_features(clip, candidates, prefix=POLOS_PREFIX, batch_size=size, progress=progress,
                              desc=f"{desc} captions", normalize=False)
    flat = [r for refs in references for r in refs]
    starts = np.cumsum([0] + [len(refs) for refs in references])
    text_r, _ = text_features(clip, flat, prefix=POLOS_PREFIX, batch_size=size, progress=progress,
                              desc=f"{desc} references", normalize=False)
    scores = np.zeros(n, dtype=np.float64)
    used = [0] * n
    cut_c: list[int] = []
    cut_r: list[tuple[int, int]] = []
    with progress_bar(None, total=n, desc=f"{desc} batches", enabled=progress) as bar:
        for lo in range(0, n, batch_size):
            hi = min(n, lo + batch_size)
            items = range(lo, hi)
            ids, cut = model.tokenize([candidates[i] for i in items])
            cut_c += [lo + k for k in cut]
            c = model.sentence_embeddings(ids).cpu()
            v = torch.from_numpy(vision[lo:hi])
            tc = torch.from_numpy(text_c[lo:hi])
            keep = min(len(references[i]) for i in items)
            best = None
            for j in range(keep):
                ref_ids, cut = model.tokenize([references[i][j] for i in items])
                cut_r += [(lo + k, j) for k in cut]
                r = model.sentence_embeddings(ref_ids).cpu()
                tr = torch.from_numpy(text_r[[starts[i] + j for i in items]])
                x = torch.cat((r, c, torch.abs(c - r), c * r, v, tc, torch.abs(v - tc), v * tc,
                               torch.abs(tr - tc), tr * tc), dim=1)
                s = model.head_scores(x)
                best = s if best is None else torch.maximum(best, s)
            scores[lo:hi] = best.double().numpy()
            for i in items:
                used[i] = keep
            bar.update(hi - lo)
    return PolosScores(scores, used, cut_c, cut_r)


__all__ = ["CHECKPOINT_URL", "DEFAULT_BATCH_SIZE", "DEFAULT_TEXT_MODEL", "POLOS_PREFIX", "PolosCheckpoint",
           "PolosModel", "PolosScores", "build_model", "clear_loaded", "load_polos", "polos_scores",
           "read_checkpoint"]
