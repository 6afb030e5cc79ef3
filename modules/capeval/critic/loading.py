"""Naming and loading critics: a name or folder becomes a folder (:mod:`capeval.model_store` for catalog names), a
folder becomes a loaded ``(model, vocab)`` kept per process, and a folder's weight files become the digest that
cache keys and signatures carry.

Nothing here scores: :mod:`.scoring` runs one critic, :mod:`.stack` several critics (and a sentence cosine) combined.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from capeval.advice import Setting, with_words, words
from capeval.catalog import DEFAULTS
from capeval.critic.vocab import CriticVocab

#: The default critic of each context: the ``critic``, ``critic_ref`` and ``critic_img`` metrics' defaults in the catalog.
SHIPPED = {"image+reference": DEFAULTS["critic"], "reference": DEFAULTS["critic_ref"],
           "image": DEFAULTS["critic_img"]}


def critic_folder(path: str | os.PathLike | None = None, context: str = "image+reference") -> Path:
    """The folder of a critic: ``path`` (a folder, or the name of a shipped critic such as ``critic-flickr8k-caption``),
    or the shipped critic of ``context``."""
    from capeval.model_store import has_weights, model_dir, not_a_model

    if path is not None:
        if isinstance(path, str) and has_weights(path) and not Path(path).exists():
            return model_dir(path)
        if isinstance(path, str) and not Path(path).exists() and _looks_like_a_name(path):
            raise not_a_model(path, "critic")
        return Path(path)
    if context not in SHIPPED:
        raise ValueError(f"context must be one of {sorted(SHIPPED)}, got {context!r}.")
    return model_dir(SHIPPED[context])


def _looks_like_a_name(text: str) -> bool:
    """A bare name (``critic-nope``), not a path: no separator, no leading ``.`` or ``~``."""
    return os.sep not in text and "/" not in text and not text.startswith((".", "~"))


def member_folder(name: str, base: str | os.PathLike | None = None) -> Path:
    """The folder of a critic that a combiner or ensemble file at ``base`` names: ``name`` relative to ``base`` when
    it names a folder there, else a shipped critic's name or a path as given (:func:`critic_folder`)."""
    if base is not None and not Path(name).is_absolute() and (Path(base) / name).is_dir():
        return Path(base) / name
    return critic_folder(name)


_WEIGHT_FILES = ("config.json", "model.safetensors", "vocab.json", "combiner.json", "ensemble.json")
_DIGESTS: dict[tuple, str] = {}


def weights_digest(*folders: str | os.PathLike) -> str:
    """sha256 (first 16 hex digits) of the weight, vocabulary, combiner and ensemble files of ``folders``: what
    changes a critic's scores (cache keys and signatures). Kept per (file, size, modification time): cache keys and
    signatures ask for the same megabytes of weights again and again."""
    files = [(name, Path(folder) / name) for folder in folders for name in _WEIGHT_FILES]
    files = [(name, path) for name, path in files if path.is_file()]
    stats = [path.stat() for _, path in files]
    key = tuple((name, str(path.resolve()), st.st_size, st.st_mtime_ns) for (name, path), st in zip(files, stats))
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        for name, path in files:
            digest.update(name.encode() + path.read_bytes())
        _DIGESTS[key] = digest.hexdigest()[:16]
    return _DIGESTS[key]


def load_critic(path: str | os.PathLike | None = None, context: str = "image+reference", device: Any = None):
    """``(model, vocab)`` from a ``capeval critic train`` folder (default: the shipped critic of ``context``).

    Loaded critics are kept per folder and device and reused by later calls."""
    from capeval.dependencies import default_device

    folder = critic_folder(path, context)
    if (folder / "ensemble.json").is_file() or (folder / "combiner.json").is_file():
        raise with_words(FileNotFoundError, words(
            "critic_model", f"{folder} is a critic stack (ensemble.json / combiner.json), not one critic: score it "
            "with the critic metrics (", Setting(shown="FOLDER"), ") or capeval.critic.stack.stack_scores."))
    if not (folder / "config.json").is_file() or not (folder / "vocab.json").is_file():
        raise FileNotFoundError(f"{folder} holds no critic (config.json and vocab.json); train one with "
                                "`capeval critic train` or omit the path for the shipped critic.")
    device = default_device(device)
    key = (str(folder.resolve()), str(device))
    from capeval.loaded_models import load_once

    def load() -> tuple[Any, CriticVocab]:
        from capeval.progress import announce

        with announce(f"loading the critic {folder.name} (once per process)"):
            from capeval.critic.model import CriticModel

            model = CriticModel.from_pretrained(folder).float().to(device).eval()  # shipped weights are float16
            return model, CriticVocab.load(folder)

    return load_once("critic", key, load)


def model_label(folder: str | os.PathLike, *extra_folders: str | os.PathLike) -> str:
    """``critic-flickr8k`` for a catalog model's folder, else ``<folder name>@<first 10 hex digits of the digest of
    its files and extra_folders'>`` (a stack's members): how signatures and logs name a critic without a path."""
    from capeval.model_store import catalog_name_of

    return catalog_name_of(folder) or f"{Path(folder).name}@{weights_digest(folder, *extra_folders)[:10]}"


__all__ = ["SHIPPED", "critic_folder", "load_critic", "member_folder", "model_label", "weights_digest"]
