"""SQLite cache of parsed captions: text -> proposed tuples, per parser version and spaCy model.

One database file under ``capeval.paths.cache_dir("spice")``. WAL journal mode and a busy timeout make
it safe for several processes at once (readers never block; a writer waits for the other writer);
``sqlite3.OperationalError: database is locked`` is retried with back-off. Keys are
``(parser_key, text)`` where ``parser_key`` names the parser version and the spaCy model and version,
so upgrading either never serves stale parses.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from capeval.paths import cache_dir
from capeval.sqlite_retry import retry_locked

RawTuple = tuple[str, ...]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS parses (
    parser TEXT NOT NULL,
    text TEXT NOT NULL,
    tuples TEXT NOT NULL,
    PRIMARY KEY (parser, text)
) WITHOUT ROWID
"""


class ParseCache:
    """Persistent ``text -> list of tuples`` store for one ``parser_key``."""

    def __init__(self, parser_key: str, path: str | Path | None = None, *, retries: int = 8) -> None:
        self.parser_key = parser_key
        self.path = Path(path) if path is not None else cache_dir("spice") / "parses.sqlite"
        self.retries = retries
        try:
            self._open()
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError) and ("locked" in str(err) or "busy" in str(err)):
                raise
            self.close()  # not a database / malformed: rebuild from scratch
            from capeval.paths import quarantine_cache_file

            quarantine_cache_file(self.path, f"is not a usable SQLite database ({err})")
            self._open()

    def _open(self) -> None:
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
        self._retry(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
        self._retry(lambda: self._conn.execute("PRAGMA synchronous=NORMAL"))
        self._retry(lambda: self._conn.execute(_SCHEMA))
        self._retry(lambda: self._conn.execute("SELECT parser, text, tuples FROM parses LIMIT 1").fetchall())

    def _retry(self, action):
        return retry_locked(action, self.retries)

    def get_many(self, texts: Sequence[str]) -> dict[str, list[RawTuple]]:
        """Cached tuples for those of ``texts`` that are in the cache."""
        found: dict[str, list[RawTuple]] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._retry(
                lambda: self._conn.execute(
                    f"SELECT text, tuples FROM parses WHERE parser = ? AND text IN ({marks})",
                    [self.parser_key, *chunk],
                ).fetchall()
            )
            for text, payload in rows:
                tuples = _decode(payload)
                if tuples is not None:  # a damaged row is parsed again and overwritten
                    found[text] = tuples
        return found

    def put_many(self, items: Iterable[tuple[str, list[RawTuple]]]) -> None:
        """Store parses (one transaction; existing rows are replaced)."""
        rows = [(self.parser_key, text, json.dumps([list(t) for t in tuples])) for text, tuples in items]
        if not rows:
            return

        def write():
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany("INSERT OR REPLACE INTO parses (parser, text, tuples) VALUES (?, ?, ?)", rows)

        self._retry(write)

    def __len__(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM parses WHERE parser = ?", [self.parser_key]).fetchone()[0]

    def clear(self) -> None:
        """Remove this parser's entries."""
        self._retry(lambda: self._conn.execute("DELETE FROM parses WHERE parser = ?", [self.parser_key]))

    def close(self) -> None:
        try:
            self._conn.close()
        except (sqlite3.Error, AttributeError):
            pass


def _decode(payload) -> list[RawTuple] | None:
    """The stored tuples, or ``None`` when the row does not hold a JSON list of lists of strings."""
    try:
        value = json.loads(payload)
    except (TypeError, ValueError):
        return None
    if not isinstance(value, list) or not all(
        isinstance(t, list) and all(isinstance(e, str) for e in t) for t in value
    ):
        return None
    return [tuple(t) for t in value]
