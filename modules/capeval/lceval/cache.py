"""SQLite cache of LCEval feature vectors: one row per (settings, candidate, references).

The key of an item is a SHA-1 of its raw candidate and raw references (in order); the settings key names the
feature code version, the tokenizer, the word vectors and the parser model, so changing any of them never serves
stale features. WAL mode and a busy timeout make it safe for several processes at once.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["FeatureCache", "item_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS features (
    settings TEXT NOT NULL,
    item TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (settings, item)
) WITHOUT ROWID
"""


def item_key(candidate: str, references: Sequence[str]) -> str:
    """SHA-1 hex of ``[candidate, [references...]]`` as JSON (order matters: it is what the features saw)."""
    return hashlib.sha1(json.dumps([candidate, list(references)], ensure_ascii=False).encode("utf-8")).hexdigest()


class FeatureCache:
    """``item key -> float64 vector`` for one ``settings`` string."""

    def __init__(self, settings: str, width: int, path: str | Path | None = None) -> None:
        from capeval.paths import cache_dir
        from capeval.sqlite_retry import connect_or_rebuild

        self.settings, self.width = settings, width
        self.path = Path(path) if path is not None else cache_dir("lceval") / "features.sqlite"
        self._conn = connect_or_rebuild(self.path, _SCHEMA, "SELECT settings, item, vector FROM features LIMIT 1")

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``keys`` that are cached (a damaged row counts as missing)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            rows = self._conn.execute(
                f"SELECT item, vector FROM features WHERE settings = ? AND item IN ({','.join('?' * len(chunk))})",
                [self.settings, *chunk]).fetchall()
            for key, blob in rows:
                if isinstance(blob, bytes) and len(blob) == 8 * self.width:
                    vec = np.frombuffer(blob, dtype="<f8")
                    if np.all(np.isfinite(vec)):
                        found[key] = vec.copy()
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = [(self.settings, key, np.asarray(vec, dtype="<f8").tobytes()) for key, vec in items]
        if rows:
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO features VALUES (?, ?, ?)", rows)

    def close(self) -> None:
        try:
            self._conn.close()
        except (sqlite3.Error, AttributeError):
            pass
