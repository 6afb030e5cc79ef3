"""SQLite cache of LCEval feature vectors: one row per (settings, candidate, references).

The key of an item is a SHA-1 of its raw candidate and raw references (in order); the settings key names the
feature code version, the tokenizer, the word vectors and the parser model, so changing any of them never serves
stale features. WAL mode and a busy timeout make it safe for several processes at once; damage, a read-only file and a
full disk are healed or worked around (:class:`FeatureCache`), never raised.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from capeval.paths import cache_file

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
    """``item key -> float64 vector`` for one ``settings`` string.

    It heals itself (:class:`capeval.sqlite_retry.HealingDatabase`): a file damaged anywhere is moved aside and
    rebuilt; a row of the wrong length or with a NaN / inf is a miss (computed again and replaced); a file that cannot
    be written (read-only, disk full) is still read and the new vectors are kept in memory for the process; each with
    one warning naming the file and ``CAPEVAL_CACHE_DIR``. Never an exception."""

    def __init__(self, settings: str, width: int, path: str | Path | None = None) -> None:
        from capeval.sqlite_retry import HealingDatabase

        self.settings, self.width = settings, width
        self.path = Path(path) if path is not None else cache_file("lceval", "features.sqlite")
        #: vectors that could not be written (read-only file, full disk), for the rest of the process
        self._memory: dict[str, np.ndarray] = {}
        self._db = HealingDatabase(self.path, _SCHEMA, "SELECT settings, item, vector FROM features LIMIT 1",
                                   "LCEval feature cache", "features")

    @property
    def _conn(self) -> sqlite3.Connection | None:
        return self._db.conn

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``keys`` that are cached (a damaged row counts as missing)."""
        unique = list(dict.fromkeys(keys))
        found = {k: self._memory[k].copy() for k in unique if k in self._memory}
        unique = [k for k in unique if k not in found]
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            wanted = set(chunk)
            rows = self._db.read(lambda conn: conn.execute(
                f"SELECT item, vector FROM features WHERE settings = ? AND item IN ({','.join('?' * len(chunk))})",
                [self.settings, *chunk]).fetchall())
            for key, blob in rows or ():  # None: the file failed (healed); the rest are computed again
                if key in wanted and isinstance(blob, bytes) and len(blob) == 8 * self.width:
                    vec = np.frombuffer(blob, dtype="<f8")
                    if np.all(np.isfinite(vec)):
                        found[key] = vec.copy()
        return found

    def put_many(self, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store vectors (one transaction); kept in memory when the file cannot take them."""
        items = [(key, np.asarray(vec, dtype="<f8").copy()) for key, vec in items]
        rows = [(self.settings, key, vec.tobytes()) for key, vec in items]
        if not rows:
            return

        def write(conn):
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO features VALUES (?, ?, ?)", rows)

        if not self._db.write(write):
            self._memory.update(items)

    def close(self) -> None:
        self._db.close()
