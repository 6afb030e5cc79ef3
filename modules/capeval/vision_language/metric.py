"""CLIP-S, RefCLIP-S, PAC-S and RefPAC-S as capeval metrics (``clip_s``, ``ref_clip_s``, ``pac_s``, ``ref_pac_s``).

Per caption (formulas in :mod:`capeval.vision_language.scores`): ``clip_s`` = 2.5·max(cos(image, "A photo depicts " +
candidate), 0), in [0, 2.5]; ``ref_clip_s`` = the harmonic mean of ``clip_s`` and the largest cosine between the
candidate and its references (same prefix): in [0, 1.43] when that cosine is ≥ 0 (the harmonic mean of a value in
[0, 2.5] and one in [0, 1]), unbounded where it is negative and close to minus the image-text score, 0 where the
reference would divide by zero (both 0); ``pac_s`` /
``ref_pac_s`` the same with ``w = 2.0`` and the PAC-S fine-tuned CLIP. Corpus value: the mean. Captions and references
are read as given (the CLIP tokenizer cleans and lower-cases them itself); an empty prediction (``empty="zero"``)
scores 0.

Options (routed by name; the two metrics of a family share them):

* ``clip_model`` (default ``"openai/clip-vit-base-patch32"``, the paper's ViT-B/32) / ``pac_model`` (default: the PAC-S
  ViT-B/32 checkpoint ``clip_ViT-B-32.pth`` as distributed, looked for in
  ``<capeval cache>/models/pac-s-clip-vit-b-32/``): a Hub id, an OpenAI name (``ViT-B/32``), ``open_clip:<name>/<tag>``,
  a folder or a checkpoint file (:mod:`capeval.vision_language.backends`);
* ``clip_device`` / ``pac_device``: default CUDA when available;
* ``clip_dtype`` / ``pac_dtype``: ``"float32"`` (default, the reference's CPU path) or ``"float16"`` (GPU only;
  clipscore.py's GPU path: OpenAI's mixed precision, numpy float16 scoring, :mod:`capeval.vision_language.half`);
* ``clip_batch_size`` / ``pac_batch_size``: images per forward pass (default 64, the reference's; texts as many on the
  CPU, 4× as many on a GPU). No effect on the scores beyond float rounding;
* ``clip_prefix`` / ``pac_prefix``: the prompt (default ``"A photo depicts "``; a space is appended if missing).

Signature field: ``clip_s:model=openai/clip-vit-base-patch32#<weights sha256[:8]>,w=2.5,prefix=A%20photo%20depicts%20,
dtype=float32,img=clip-reference-1``. Texts over 77 CLIP tokens are cut as the reference cuts them (end-of-text kept),
with one :class:`CaptionTruncatedWarning` per call naming how many and which (the first 10).
"""
from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar
from urllib.parse import quote

import numpy as np

from capeval.advice import OPTION, Setting, with_words, words
from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.validation import OptionError, warn_at_caller
from capeval.vision_language.scores import CLIP_S_WEIGHT, PAC_S_WEIGHT
from capeval.vision_language.tokenizer import CONTEXT_LENGTH
from capeval.vision_language.tokenizer import DEFAULT_PREFIX

#: The default models: the paper's CLIP ViT-B/32 (Hub id) and the PAC-S ViT-B/32 checkpoint (a catalog name).
DEFAULT_CLIP_MODEL = "openai/clip-vit-base-patch32"
DEFAULT_PAC_MODEL = "pac-s-clip-vit-b-32"
#: The PAC-S checkpoint's file name as distributed (aimagelab/pacscore's README: ``checkpoints/clip_ViT-B-32.pth``).
PAC_CHECKPOINT_NAME = "clip_ViT-B-32.pth"
#: Texts named in the truncation warning.
WARN_FIRST = 10


class CaptionTruncatedWarning(UserWarning):
    """A caption or reference was longer than CLIP's 77-token context and was cut as the reference cuts it."""


def default_pac_checkpoint():
    """Where the default ``pac_model`` is looked for: ``<capeval cache>/models/pac-s-clip-vit-b-32/clip_ViT-B-32.pth``."""
    from capeval.paths import cache_root

    return cache_root() / "models" / DEFAULT_PAC_MODEL / PAC_CHECKPOINT_NAME


def _catalog_hub_id(value: Any) -> str | None:
    """The Hub repo of the catalog model named ``value`` (``longclip-l`` → ``BeichenZhang/LongCLIP-L``) when it is
    a CLIP-S model with one and no file or folder of that name exists; else ``None``."""
    import os

    from capeval.catalog import MODELS

    if not isinstance(value, str) or os.path.exists(value):
        return None
    entry = MODELS.get(value)
    return entry.hub_id if entry is not None and entry.metric == "clip_s" and entry.hub_id else None


def resolve_model(family: str, value: Any) -> Any:
    """The model spec a family's option means: the default for ``None``; for PAC-S, the catalog name → its file."""
    if family == "clip":
        if value is None:
            return DEFAULT_CLIP_MODEL
        return _catalog_hub_id(value) or value
    if value is None or (isinstance(value, str) and value == DEFAULT_PAC_MODEL):
        path = default_pac_checkpoint()
        if not path.is_file():
            raise with_words(FileNotFoundError, words(
                "pac_model", OPTION, f": the PAC-S checkpoint is not at {path}. Download {PAC_CHECKPOINT_NAME} (CLIP "
                "ViT-B/32) from the link in aimagelab/pacscore's README and put it there, or pass ",
                Setting(shown="<path to the .pth>"), " (or a Hub repo id holding it)."))
        return path
    return value


#: Encode the texts in a second thread while the images decode: ``None`` = on a GPU only (on the CPU both encoders already
#: use every core); tests force it on.
OVERLAP_TEXTS: bool | None = None
_TRUNCATION_WARNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Per batch: ``{(weights fingerprint, dtype, prefix): (image features, candidate features)}`` of the call in progress.
_BATCH_FEATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def warn_truncated(batch: CaptionBatch, prefix: str, context_length: int, with_references: bool) -> None:
    """One :class:`CaptionTruncatedWarning` per batch naming the texts cut at ``context_length`` tokens (pointing at
    the line that called :func:`capeval.score`)."""
    from capeval.vision_language.tokenizer import encode_texts

    # the references too when another metric of the call reads them: one warning for the whole call
    with_references = with_references or bool(set(getattr(batch, "metric_names", ())) & {"ref_clip_s", "ref_pac_s", "polos"})
    seen = _TRUNCATION_WARNED.setdefault(batch, set())
    labels = [f"predictions[{i}]" for i in encode_texts(batch.raw_predictions, prefix, context_length).truncated]
    if with_references:
        flat = [(i, j, r) for i, refs in enumerate(batch.raw_references) for j, r in enumerate(refs)]
        cut = encode_texts([r for _, _, r in flat], prefix, context_length).truncated
        labels += [f"references[{flat[k][0]}][{flat[k][1]}]" for k in cut]
    new = [label for label in labels if label not in seen]
    if not new:
        return
    seen.update(new)
    shown = ", ".join(new[:WARN_FIRST]) + (f" and {len(new) - WARN_FIRST} more" if len(new) > WARN_FIRST else "")
    cutters = "clipscore.py and PAC-S cut" if context_length == CONTEXT_LENGTH else "Long-CLIP's tokenize cuts"
    warn_at_caller(f"{len(new)} text(s) longer than the model's {context_length}-token context were cut to "
                   f"{context_length} tokens (the end-of-text token kept), as {cutters} them: {shown}.",
                   CaptionTruncatedWarning)


class _VisionLanguageMetric(CaptionMetric):
    """A CLIP-based score of one family (``clip`` or ``pac``), with or without the references."""

    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    external_weights: ClassVar[bool] = True
    family: ClassVar[str] = "clip"
    weight: ClassVar[float] = CLIP_S_WEIGHT
    with_references: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        prefix = self.config[f"{self.family}_prefix"]
        if not isinstance(prefix, str):  # the declaration takes any string, "" included, and lets a path through
            raise ValueError(f"{self.family}_prefix must be a string, got {type(prefix).__name__} ({prefix!r:.60}).")

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import require

        require("torch", "torchvision", "open_clip", "transformers", what=f"the {cls.name} metric")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """The weights' fingerprint (the model is loaded once per process to compute it)."""
        return cls._backend_for({**cls.option_defaults(), **options}).fingerprint

    @classmethod
    def _backend_for(cls, config: dict[str, Any]):
        from capeval.vision_language.backends import load_clip

        from capeval.vision_language.features import reference_transform
        from capeval.vision_language.tokenizer import warm_up

        f = cls.family
        spec = resolve_model(f, config.get(f"{f}_model"))
        backend = load_clip(spec, device=config.get(f"{f}_device"), dtype=config.get(f"{f}_dtype") or "float32",
                            option=f"{f}_model")
        warm_up()  # the tokenizer's tables and the preprocessing's imports belong to loading, not to scoring
        reference_transform(backend.resolution, backend.mean, backend.std)
        return backend

    def _backend(self):
        return self._backend_for(self.config)

    def signature_value(self, backend) -> str:
        from capeval.vision_language.features import PREPROCESS_VERSION
        from capeval.vision_language.tokenizer import normalize_prefix

        prefix = quote(normalize_prefix(self.config[f"{self.family}_prefix"]), safe="")
        refs = ",refs=max" if self.with_references else ""
        # a text context other than CLIP's 77 tokens (Long-CLIP's 248) changes the scores of longer texts
        context = f",ctx={backend.context_length}" if backend.context_length != CONTEXT_LENGTH else ""
        return (f"model={backend.label}#{backend.fingerprint[:8]},w={self.weight:g},prefix={prefix},"
                f"dtype={backend.dtype},img={PREPROCESS_VERSION}{context}{refs}")

    def prepare(self, batch: CaptionBatch) -> list[float]:
        """Each caption's score (independent of the others: ``--processes N`` splits captions and images)."""
        from capeval.vision_language.features import image_features, text_features
        from capeval.vision_language.scores import harmonic_mean, image_text_scores, reference_scores

        if batch.images is None:
            raise OptionError(words("images", f"{self.name} needs ", Setting(shown=""), " (one per prediction)."))
        f = self.family
        backend = self._backend()
        size = self.config[f"{f}_batch_size"]
        # texts per pass: as many as images on the CPU (measured: 256-text batches ran 1.8x slower there), 4x on a GPU
        text_size = size if backend.device.type == "cpu" else 4 * size
        prefix = self.config[f"{f}_prefix"]
        # features this call already computed for the other metric of the family (clip_s with ref_clip_s): reused
        memo = _BATCH_FEATURES.setdefault(batch, {})
        key = (backend.fingerprint, backend.dtype, prefix)
        flat = [r for refs in batch.raw_references for r in refs]
        # the references too when this metric or another of the family in this call reads them
        with_references = self.with_references or f"ref_{f}_s" in set(getattr(batch, "metric_names", ()))

        def reference_texts():
            return text_features(backend, flat, prefix=prefix, batch_size=text_size, progress=batch.progress,
                                 desc=f"{self.name} references")[0]

        def texts():
            candidates = text_features(backend, batch.raw_predictions, prefix=prefix, batch_size=text_size,
                                       progress=batch.progress, desc=f"{self.name} captions")[0]
            return candidates, reference_texts() if with_references else None

        if key in memo and with_references and memo[key][2] is None:
            memo[key] = (*memo[key][:2], reference_texts())
        if key not in memo:
            overlap = OVERLAP_TEXTS if OVERLAP_TEXTS is not None else backend.device.type != "cpu"
            if not overlap:  # on the CPU both encoders already use every core
                pictures = image_features(backend, batch.images, batch_size=size, progress=batch.progress,
                                          desc=f"{self.name} images")
                candidates, references = texts()
            else:  # on a GPU the texts are tokenized and encoded while the images decode in their threads
                with ThreadPoolExecutor(1) as pool:
                    pending = pool.submit(texts)
                    pictures = image_features(backend, batch.images, batch_size=size, progress=batch.progress,
                                              desc=f"{self.name} images")
                    candidates, references = pending.result()
            memo[key] = (pictures, candidates, references)
        pictures, candidates, references = memo[key]
        scores = image_text_scores(pictures, candidates, self.weight)
        if self.with_references:
            owners = [i for i, refs in enumerate(batch.raw_references) for _ in refs]
            if candidates.dtype == np.float16:  # clipscore.py's GPU path (capeval.vision_language.half)
                from capeval.vision_language.half import reference_scores_float16

                scores = harmonic_mean(scores, reference_scores_float16(candidates, references, owners))
            else:
                scores = harmonic_mean(scores, reference_scores(candidates, references, owners))
        empty = [i for i, p in enumerate(batch.raw_predictions) if not p.strip()]
        scores[empty] = 0.0
        return [float(s) for s in scores]

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        backend = self._backend()
        prepared = self._prepared
        if prepared is not None and len(prepared) != len(batch):
            raise ValueError(f"{self.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
        per = [float(s) for s in (prepared if prepared is not None else self.prepare(batch))]
        # after the scoring, which tokenized these texts already (on a GPU beside the images' decoding)
        warn_truncated(batch, self.config[f"{self.family}_prefix"], backend.context_length, self.with_references)
        return MetricOutput(corpus={self.name: float(np.mean(per)) if per else 0.0}, per_caption={self.name: per},
                            signature=self.signature_value(backend))


#: Each family's model option: its default and what it may name.
_MODEL_HELP = {
    "clip": f"the CLIP to score with: a Hub id (default: {DEFAULT_CLIP_MODEL}, read from the Hugging Face cache; "
            "HF_HUB_OFFLINE is honoured), an OpenAI name (ViT-B/32, mapped to the same weights' Hub id), "
            "open_clip:NAME/TAG, a transformers or open_clip folder or an OpenAI-format checkpoint file (.pt, .pth "
            "or .safetensors, read as weights only); enters the signature with a hash of its weights",
    "pac": f"the PAC-S checkpoint ({PAC_CHECKPOINT_NAME} as distributed, or any OpenAI-format CLIP checkpoint; read as "
           "weights only), a Hub repo holding it, or any model clip_model takes (default: "
           f"{DEFAULT_PAC_MODEL}, looked for at <capeval cache>/models/{DEFAULT_PAC_MODEL}/{PAC_CHECKPOINT_NAME}, the "
           "cache folder being $CAPEVAL_CACHE_DIR, else ~/.cache/capeval; when it is missing a FileNotFoundError says "
           "where to put it); enters the signature with a hash of its weights",
}
_FAMILY_OPTIONS: dict[str, dict[str, Option]] = {}


def _options(family: str, default_model: str | None) -> dict[str, Option]:
    """The options of ``family`` (``clip``, ``pac``), declared once: both metrics of a family share these objects."""
    if family not in _FAMILY_OPTIONS:
        from capeval.vision_language.backends import DTYPES

        _FAMILY_OPTIONS[family] = {
            f"{family}_model": Option(default=default_model, kind="model", none=True, metavar="ID|NAME|DIR|FILE",
                                      help=_MODEL_HELP[family]),
            f"{family}_device": Option(default=None, kind="device",
                                       help="device: cpu, cuda, cuda:1 ... (default: CUDA when available)"),
            f"{family}_dtype": Option(default="float32", kind="str", choices=DTYPES,
                                      help="arithmetic: float32 (default, the reference's) or float16 (GPU only; "
                                           "the reference's GPU path); enters the signature"),
            f"{family}_batch_size": Option(default=64, kind="int", minimum=1,
                                           help="images per forward pass (default 64, the reference's; texts as many "
                                                "on the CPU, 4x as many on a GPU; no effect on the scores beyond float "
                                                "rounding)"),
            f"{family}_prefix": Option(default=DEFAULT_PREFIX, kind="any", python_types=(str,), metavar="TEXT",
                                       help=f"the prompt before every caption and reference (default "
                                            f"\"{DEFAULT_PREFIX}\"; a space is appended if missing; \"\" for "
                                            "none); enters the signature"),
        }
    return _FAMILY_OPTIONS[family]


class ClipS(_VisionLanguageMetric):
    """CLIP-S (Hessel et al. 2021): 2.5·max(cos(image, caption), 0), reference-free."""

    name = "clip_s"
    reads_references = False
    options: ClassVar[dict[str, Any]] = _options("clip", DEFAULT_CLIP_MODEL)


class RefClipS(_VisionLanguageMetric):
    """RefCLIP-S: the harmonic mean of CLIP-S and the best candidate-reference cosine."""

    name = "ref_clip_s"
    with_references = True
    options: ClassVar[dict[str, Any]] = _options("clip", DEFAULT_CLIP_MODEL)


class PacS(_VisionLanguageMetric):
    """PAC-S (Sarto et al. 2023): 2.0·max(cos, 0) with the positive-augmented CLIP."""

    name = "pac_s"
    reads_references = False
    family = "pac"
    weight = PAC_S_WEIGHT
    options: ClassVar[dict[str, Any]] = _options("pac", DEFAULT_PAC_MODEL)

    @classmethod
    def weights_hint(cls) -> str | None:
        return (f"download {PAC_CHECKPOINT_NAME} from the link in aimagelab/pacscore's README into "
                f"{default_pac_checkpoint().parent}/ (or pass --pac-model FILE)")


class RefPacS(_VisionLanguageMetric):
    """RefPAC-S: the harmonic mean of PAC-S and the best candidate-reference cosine (PAC-S's CLIP)."""

    name = "ref_pac_s"
    family = "pac"
    weight = PAC_S_WEIGHT
    with_references = True
    options: ClassVar[dict[str, Any]] = _options("pac", DEFAULT_PAC_MODEL)
    weights_hint = PacS.weights_hint


DEFAULT_POLOS_MODEL = "polos"


def polos_checkpoint_places() -> list:
    """Where the default ``polos_model`` is looked for, in order: ``<capeval cache>/models/polos/`` and the reference's
    own cache, ``~/.cache/torch/yuigawada/reprod/`` (each a folder holding ``reprod.ckpt`` and ``hparams.yaml``)."""
    from pathlib import Path

    from capeval.paths import cache_root

    return [cache_root() / "models" / DEFAULT_POLOS_MODEL, Path.home() / ".cache" / "torch" / "yuigawada" / "reprod"]


def resolve_polos_model(value: Any) -> Any:
    """The checkpoint ``polos_model`` means: the default (``None`` or ``"polos"``) → the first folder of
    :func:`polos_checkpoint_places` holding a ``.ckpt``; anything else as given."""
    if value is not None and not (isinstance(value, str) and value == DEFAULT_POLOS_MODEL):
        return value
    places = polos_checkpoint_places()
    for place in places:
        if place.is_dir() and any(p.suffix == ".ckpt" for p in place.iterdir()):
            return place
    from capeval.vision_language.polos import CHECKPOINT_URL

    raise with_words(FileNotFoundError, words(
        "polos_model", OPTION, f": the Polos checkpoint is not in {places[0]} (nor in the reference's cache "
        f"{places[1]}). Download {CHECKPOINT_URL} (keio-smilab24/Polos README), unzip it and put reprod/'s files "
        "(reprod.ckpt, hparams.yaml) in the first folder, or pass ", Setting(shown="<that folder or the .ckpt>"), "."))


class Polos(CaptionMetric):
    """Polos (Wada et al. 2024): SimCSE + CLIP features of the candidate, its references and the image, a feed-forward
    network trained on Polaris' human judgments; in (0, 1), the maximum over the references
    (:mod:`capeval.vision_language.polos`: the batch rule, the checkpoint).

    Options: ``polos_model`` (default: the released checkpoint, looked for where :func:`polos_checkpoint_places`
    says; or a folder / ``.ckpt`` / ``.safetensors``), ``polos_text_model`` (the SimCSE encoder's configuration and
    tokenizer: default the checkpoint's ``pretrained_model``, a Hub id read through the Hugging Face cache, or a
    folder), ``polos_device``, ``polos_batch_size`` (default 32, the reference's evaluation: scores depend on the batch,
    see the module). Signature field: ``polos:model=<folder/file>#<sha256[:8]>,text=<encoder>,batch=32,
    refs=batch-min,prefix=A%20photo%20depicts%20,img=clip-reference-1``. No per-item :meth:`prepare`: a score depends
    on its batch, so ``capeval score --processes N`` computes Polos in the main process, on the whole input in order.
    """

    name = "polos"
    chunk_multiple_of: ClassVar[str | None] = "polos_batch_size"

    @classmethod
    def weights_hint(cls) -> str | None:
        from capeval.vision_language.polos import CHECKPOINT_URL

        return (f"download {CHECKPOINT_URL}, unzip it and put reprod/'s files in {polos_checkpoint_places()[0]}/ "
                "(or pass --polos-model DIR)")

    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    external_weights: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {
        "polos_model": Option(
            default=DEFAULT_POLOS_MODEL, kind="model", none=True, metavar="DIR|FILE",
            help="the released checkpoint's folder (reprod.ckpt + hparams.yaml) or the .ckpt / .safetensors file "
                 "(a .safetensors state dict needs hparams.yaml beside it), read as weights only (default: polos, "
                 "looked for in capeval's cache folder, $CAPEVAL_CACHE_DIR else ~/.cache/capeval, under "
                 "models/polos/, then in the reference's ~/.cache/torch/yuigawada/reprod/; when it is missing a "
                 "FileNotFoundError says where to download it); enters the signature with a hash of its weights"),
        "polos_text_model": Option(
            default=None, kind="model", metavar="ID|DIR",
            help="the SimCSE encoder's configuration and tokenizer: a Hub id or a folder (default: the checkpoint's "
                 "pretrained_model, princeton-nlp/sup-simcse-roberta-base, from the Hugging Face cache); the "
                 "encoder's weights always come from the checkpoint"),
        "polos_device": Option(default=None, kind="device",
                               help="device: cpu, cuda, cuda:1 ... (default: CUDA when available)"),
        "polos_batch_size": Option(
            default=32, kind="int", minimum=1,
            help="items per batch, in input order (default 32, the reference's evaluation; a Polos score depends "
                 "slightly on the other items of its batch, through the layer-norm statistics and each item's number "
                 "of references; 1 makes each score depend on its own item only, but differs from the paper's); "
                 "enters the signature"),
    }

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import require

        require("torch", "torchvision", "open_clip", "transformers", what="the polos metric")

    @classmethod
    def _model_for(cls, config: dict[str, Any]):
        from capeval.vision_language.features import reference_transform
        from capeval.vision_language.polos import load_polos
        from capeval.vision_language.tokenizer import warm_up

        model = load_polos(resolve_polos_model(config.get("polos_model")), text_model=config.get("polos_text_model"),
                           device=config.get("polos_device"))
        warm_up()
        reference_transform(model.clip.resolution, model.clip.mean, model.clip.std)
        return model

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        return cls._model_for({**cls.option_defaults(), **options}).fingerprint

    def signature_value(self, model) -> str:
        from capeval.vision_language.features import PREPROCESS_VERSION
        from capeval.vision_language.polos import POLOS_PREFIX

        text = self.config["polos_text_model"] or model.checkpoint.text_model
        return (f"model={model.label}#{model.fingerprint[:8]},text={text},batch={self.config['polos_batch_size']},"
                f"refs=batch-min,prefix={quote(POLOS_PREFIX, safe='')},img={PREPROCESS_VERSION}")

    def _scores(self, batch: CaptionBatch):
        from capeval.vision_language.polos import polos_scores

        if batch.images is None:
            raise OptionError(words("images", f"{self.name} needs ", Setting(shown=""), " (one per prediction)."))
        model = self._model_for(self.config)
        return model, polos_scores(model, batch.raw_predictions, batch.raw_references, batch.images,
                                   batch_size=self.config["polos_batch_size"], progress=batch.progress)

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        from capeval.vision_language.polos import POLOS_PREFIX

        model, result = self._scores(batch)
        warn_truncated(batch, POLOS_PREFIX, model.clip.context_length, True)
        if result.cut_candidates or result.cut_references:
            labels = ([f"predictions[{i}]" for i in result.cut_candidates]
                      + [f"references[{i}][{j}]" for i, j in result.cut_references])
            shown = ", ".join(labels[:WARN_FIRST]) + (f" and {len(labels) - WARN_FIRST} more"
                                                      if len(labels) > WARN_FIRST else "")
            warn_at_caller(f"{len(labels)} text(s) longer than the Polos text encoder's {model.max_tokens} tokens were "
                           f"cut to {model.max_tokens} (the reference would fail on them): {shown}.",
                           CaptionTruncatedWarning)
        per = [float(s) for s in result.scores]
        empty = [i for i, p in enumerate(batch.raw_predictions) if not p.strip()]
        for i in empty:
            per[i] = 0.0
        return MetricOutput(corpus={self.name: float(np.mean(per)) if per else 0.0}, per_caption={self.name: per},
                            signature=self.signature_value(model))


__all__ = ["CaptionTruncatedWarning", "ClipS", "DEFAULT_CLIP_MODEL", "DEFAULT_PAC_MODEL", "DEFAULT_POLOS_MODEL",
           "PAC_CHECKPOINT_NAME", "PacS", "Polos", "RefClipS", "RefPacS", "default_pac_checkpoint",
           "polos_checkpoint_places", "resolve_model", "resolve_polos_model", "warn_truncated"]
