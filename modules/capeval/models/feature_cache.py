"""On-disk cache of image features: one safetensors file per (image content, encoder settings, kind).

Layout: ``<cache dir>/image_features/<sha256(settings)[:16]>/`` holds ``settings.txt`` (the full settings
string), ``<key[:2]>/<key>.<kind>.safetensors`` (one tensor ``features``; the metadata repeats the settings,
the kind and the key) and ``tmp/``.

Safety: an entry is written to ``tmp/`` and moved into place with ``os.replace`` (atomic on one file
system), so readers, concurrent writers of the same key (the last one wins; both wrote the same values) and a
``kill -9`` mid-write never leave a partial entry. Temporary files older than :data:`STALE_SECONDS` are
removed when a cache is opened for writing. On reading, an entry that does not parse, or whose metadata,
dtype, shape or values (NaN/inf) are wrong, is deleted with a warning and recomputed.

A cache folder that cannot be created or written (read-only, full, no permission) is not an error: the cache keeps
its entries in memory for the rest of the process instead, with one :class:`CacheUnwritableWarning` naming the
folder. The settings string names the encoder's weights by their digest too (:mod:`capeval.models.image_encoder`),
so a model swapped under the same name never reads the old model's features.
"""
from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from capeval.dependencies import require
from capeval.paths import CacheUnwritableWarning, cache_dir, cache_root
from capeval.validation import warn_at_caller

#: Temporary files older than this (seconds) were left by a killed process and are removed.
STALE_SECONDS = 600


__all__ = ["CacheUnwritableWarning", "FeatureCache"]  # the warning is capeval.paths' (shared by every cache)


class FeatureCache:
    """Features of one encoder configuration (``settings``), keyed by image content hash and kind."""

    def __init__(self, settings: str, root: str | os.PathLike | None = None):
        self.settings = settings
        digest = hashlib.sha256(settings.encode("utf-8")).hexdigest()[:16]
        self._memory: dict[tuple[str, str], object] | None = None
        try:
            base = Path(root) if root is not None else cache_dir("image_features")
        except OSError as err:  # the cache root itself cannot be created
            base = cache_root() / "image_features"
            self._to_memory(base, err)
        self.dir = base / digest
        self._tmp = self.dir / "tmp"
        self._prepared = False

    @property
    def in_memory(self) -> bool:
        """Whether the entries live in memory (the folder could not be written)."""
        return self._memory is not None

    def _to_memory(self, folder: Path, err: OSError) -> None:
        if self._memory is None:
            self._memory = {}
            warn_at_caller(f"capeval feature cache: {folder} cannot be written ({type(err).__name__}: {err}); keeping "
                           "image features in memory for this process (set CAPEVAL_CACHE_DIR to a writable folder to "
                           "keep them across runs).", CacheUnwritableWarning)

    def path(self, key: str, kind: str) -> Path:
        return self.dir / key[:2] / f"{key}.{kind}.safetensors"

    def get(self, key: str, kind: str, check: Callable | None = None):
        """The cached tensor, or ``None`` when absent or invalid (an invalid entry is deleted with a warning).

        ``check(tensor)`` returns an error string (or ``None``) for encoder-specific shape checks.
        """
        if self._memory is not None and (key, kind) in self._memory:
            return self._memory[(key, kind)]
        path = self.path(key, kind)
        if not path.exists():
            return None
        safe_open = require("safetensors").safe_open
        torch = require("torch")
        problem = None
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                tensor = f.get_tensor("features")
        except FileNotFoundError:
            return None  # removed by another process in between
        except Exception as err:  # noqa: BLE001 - any parse failure means a corrupt entry
            problem = f"unreadable ({type(err).__name__}: {err})"
        else:
            if (meta.get("settings"), meta.get("kind"), meta.get("key")) != (self.settings, kind, key):
                problem = "metadata does not match its key"
            elif tensor.dtype != torch.float32:
                problem = f"dtype {tensor.dtype}, expected float32"
            elif not torch.isfinite(tensor).all():
                problem = "non-finite values"
            elif check is not None:
                problem = check(tensor)
        if problem is None:
            return tensor
        warn_at_caller(f"capeval feature cache: removing invalid entry {path} ({problem}); recomputing.",
                       RuntimeWarning)
        try:
            path.unlink()
        except (FileNotFoundError, PermissionError):
            pass
        return None

    def put(self, key: str, kind: str, tensor) -> Path | None:
        """Write ``tensor`` atomically (temporary file + ``os.replace``); return its path (``None`` when the folder
        cannot be written and the entry went to memory)."""
        tensor = tensor.detach().to("cpu", copy=False).contiguous()
        if self._memory is not None:
            self._memory[(key, kind)] = tensor
            return None
        save = require("safetensors.torch").save
        path = self.path(key, kind)
        tmp = self._tmp / f"{key}.{kind}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            data = save({"features": tensor}, metadata={"settings": self.settings, "kind": kind, "key": key})
            self._write(tmp, data)
            os.replace(tmp, path)
        except OSError as err:
            try:
                tmp.unlink()
            except OSError:
                pass
            self._to_memory(self.dir, err)
            self._memory[(key, kind)] = tensor
            return None
        return path

    @staticmethod
    def _write(tmp: Path, data: bytes) -> None:
        with open(tmp, "xb") as f:
            f.write(data)

    def _prepare(self) -> None:
        if self._prepared:
            return
        self._tmp.mkdir(parents=True, exist_ok=True)
        settings_file = self.dir / "settings.txt"
        if not settings_file.exists():
            tmp = self._tmp / f"settings.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
            tmp.write_text(self.settings + "\n", encoding="utf-8")
            os.replace(tmp, settings_file)
        self.remove_stale_temp_files()
        self._prepared = True

    def remove_stale_temp_files(self, older_than: float = STALE_SECONDS) -> int:
        """Delete temporary files older than ``older_than`` seconds (left by killed writers); return how many."""
        removed = 0
        cutoff = time.time() - older_than
        try:
            entries = list(os.scandir(self._tmp))
        except FileNotFoundError:
            return 0
        for entry in entries:
            try:
                if entry.name.endswith(".tmp") and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                pass
        return removed
