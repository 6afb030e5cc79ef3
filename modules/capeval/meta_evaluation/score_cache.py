"""Per-(metric, settings, data) score cache, so adding a metric to a benchmark run never recomputes the others.

Entries live in one SQLite file under ``capeval.paths.cache_dir("scores")``. The key is a SHA-256 over
the metric spec, its options, the implementation fingerprint (capeval version + the metric's source
files) and the exact predictions and references, so any change to code, settings or data misses. For a
metric that reads images the key also holds :func:`image_fingerprint` (every path with its file's size and
modification time), so replacing an image file misses too.

Payloads are stored as standard JSON. A non-finite float (the ``NaN`` of an item a judge metric left without a
score, :attr:`capeval.metric.CaptionMetric.unscored_items`) is written as ``{"$float": "nan"}`` (``"inf"``,
``"-inf"``) and read back as that float, so a cached payload returns exactly what was put; payloads written by
earlier versions with Python's bare ``NaN`` token still read.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.paths import cache_file


def data_fingerprint(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> str:
    h = hashlib.sha256()
    for pred, refs in zip(predictions, references):
        h.update(pred.encode("utf-8"))
        h.update(b"\x00")
        for ref in refs:
            h.update(ref.encode("utf-8"))
            h.update(b"\x01")
        h.update(b"\x02")
    h.update(str(len(predictions)).encode())
    return h.hexdigest()


def image_fingerprint(images: Sequence[Any]) -> str | None:
    """A SHA-256 over the image paths with their file size (bytes) and modification time (ns), in order.

    ``images``: paths (``str`` / ``os.PathLike``), or ``datasets.Image`` dicts (their ``bytes`` hashed, else
    their ``path`` as a path). A missing file counts as ``missing`` (a later file there changes the key).
    ``None`` when an entry is anything else (an in-memory image): such items are not cached.
    """
    h = hashlib.sha256()
    for item in images:
        if isinstance(item, dict):
            item = item.get("bytes") if item.get("bytes") is not None else item.get("path")
        if isinstance(item, (bytes, bytearray, memoryview)):
            h.update(b"bytes:" + hashlib.sha256(item).digest())
        elif isinstance(item, (str, os.PathLike)):
            path = os.fsdecode(item)
            try:
                st = os.stat(path)
                stamp = f"{st.st_size}:{st.st_mtime_ns}"
            except OSError:
                stamp = "missing"
            h.update(f"path:{path}|{stamp}".encode("utf-8", "surrogateescape"))
        else:
            return None
        h.update(b"\x00")
    h.update(str(len(images)).encode())
    return h.hexdigest()


def file_fingerprint(paths: Sequence[str | Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(str(x) for x in paths):
        try:
            h.update(Path(p).read_bytes())
        except OSError:
            h.update(p.encode())
    return h.hexdigest()[:16]


#: The key of the one-entry object that stands for a non-finite float in a stored payload.
FLOAT_TAG = "$float"


def _encode(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``{FLOAT_TAG: "nan" | "inf" | "-inf"}``."""
    if isinstance(value, float) and not math.isfinite(value):
        return {FLOAT_TAG: "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return value


def _decode(obj: dict) -> Any:
    """``json.loads``' object hook: ``{FLOAT_TAG: "nan"}`` back to ``float("nan")`` (``inf``, ``-inf``)."""
    if len(obj) == 1 and FLOAT_TAG in obj and obj[FLOAT_TAG] in ("nan", "inf", "-inf"):
        return float(obj[FLOAT_TAG])
    return obj


def dumps(payload: Any) -> str:
    """``payload`` as standard JSON (no bare ``NaN`` / ``Infinity``), non-finite floats tagged (:func:`loads`)."""
    try:
        return json.dumps(payload, allow_nan=False)
    except ValueError:  # a non-finite float somewhere: tag them
        return json.dumps(_encode(payload), allow_nan=False)


def loads(text: str) -> Any:
    """The payload :func:`dumps` wrote, non-finite floats restored."""
    return json.loads(text, object_hook=_decode)


def make_key(**parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


_SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, created REAL NOT NULL, payload TEXT NOT NULL)"


class ScoreCache:
    """A small SQLite key → JSON store, safe for concurrent processes (WAL, busy timeout).

    It heals itself (:class:`capeval.sqlite_retry.HealingDatabase`): a file damaged anywhere is moved aside and
    rebuilt; a payload that does not decode is a miss (recomputed and replaced); a file that cannot be written
    (read-only, disk full) is still read and new payloads are kept in memory for the process; each with one warning
    naming the file and ``CAPEVAL_CACHE_DIR``. Never an exception."""

    def __init__(self, path: str | Path | None = None) -> None:
        from capeval.sqlite_retry import HealingDatabase

        self.path = Path(path) if path else cache_file("scores", "scores.sqlite")
        #: payloads that could not be written (read-only file, full disk), for the rest of the process
        self._memory: dict[str, str] = {}
        self._db = HealingDatabase(self.path, _SCHEMA, "SELECT key, payload FROM scores LIMIT 1",
                                   "benchmark score cache", "scores")

    @property
    def _con(self) -> sqlite3.Connection | None:
        return self._db.conn

    def get(self, key: str) -> dict | None:
        """The stored payload, or ``None`` when absent or damaged (then it is recomputed and replaced)."""
        if key in self._memory:
            text = self._memory[key]
        else:
            row = self._db.read(lambda conn: conn.execute("SELECT payload FROM scores WHERE key = ?",
                                                          (key,)).fetchone())
            if row is None:
                return None
            text = row[0]
        try:
            payload = loads(text)
        except (TypeError, ValueError):
            return None
        return payload if isinstance(payload, dict) else None

    def put(self, key: str, payload: dict) -> None:
        text = dumps(payload)
        if not self._db.write(lambda conn: conn.execute("INSERT OR REPLACE INTO scores VALUES (?, ?, ?)",
                                                        (key, time.time(), text))):
            self._memory[key] = text

    def close(self) -> None:
        self._db.close()
