"""SQLite cache of parsed captions: text -> proposed tuples, per parser version and spaCy model.

One database file under ``capeval.paths.cache_dir("spice")``. WAL journal mode and a busy timeout make
it safe for several processes at once (readers never block; a writer waits for the other writer);
``sqlite3.OperationalError: database is locked`` is retried with back-off; damage, a read-only file and a full disk
are healed or worked around (:class:`ParseCache`), never raised. Keys are
``(parser_key, text)`` where ``parser_key`` names the parser version and the spaCy model and version,
so upgrading either never serves stale parses.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

from capeval.paths import cache_file
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
    """Persistent ``text -> list of tuples`` store for one ``parser_key``.

    It heals itself (:class:`capeval.sqlite_retry.HealingDatabase`): a file damaged anywhere (met when opening it or
    on any later read or write) is moved aside and rebuilt; a row that does not decode is a miss (parsed again and
    replaced); a file that cannot be written (read-only, disk full) is still read and the new parses are kept in
    memory for the process; each with one warning naming the file and ``CAPEVAL_CACHE_DIR``. Never an exception."""

    def __init__(self, parser_key: str, path: str | Path | None = None, *, retries: int = 8) -> None:
        from capeval.sqlite_retry import HealingDatabase

        self.parser_key = parser_key
        self.path = Path(path) if path is not None else cache_file("spice", "parses.sqlite")
        self.retries = retries
        #: parses that could not be written (read-only file, full disk), for the rest of the process
        self._memory: dict[str, list[RawTuple]] = {}
        self._db = HealingDatabase(self.path, _SCHEMA, "SELECT parser, text, tuples FROM parses LIMIT 1",
                                   "SPICE parse cache", "parses")

    @property
    def _conn(self) -> sqlite3.Connection | None:
        return self._db.conn

    def _retry(self, action):
        return retry_locked(action, self.retries)

    def get_many(self, texts: Sequence[str]) -> dict[str, list[RawTuple]]:
        """Cached tuples for those of ``texts`` that are in the cache."""
        unique = list(dict.fromkeys(texts))
        found = {t: self._memory[t] for t in unique if t in self._memory}
        unique = [t for t in unique if t not in found]
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            wanted = set(chunk)
            marks = ",".join("?" * len(chunk))
            rows = self._db.read(lambda conn: conn.execute(
                f"SELECT text, tuples FROM parses WHERE parser = ? AND text IN ({marks})",
                [self.parser_key, *chunk]).fetchall())
            for text, payload in rows or ():  # None: the file failed (healed); the rest are parsed again
                tuples = _decode(payload)
                if tuples is not None and text in wanted:  # a damaged row is parsed again and overwritten
                    found[text] = tuples
        return found

    def put_many(self, items: Iterable[tuple[str, list[RawTuple]]]) -> None:
        """Store parses (one transaction; existing rows are replaced); kept in memory when the file cannot take
        them."""
        items = [(text, [tuple(t) for t in tuples]) for text, tuples in items]
        rows = [(self.parser_key, text, json.dumps([list(t) for t in tuples])) for text, tuples in items]
        if not rows:
            return

        def write(conn):
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO parses (parser, text, tuples) VALUES (?, ?, ?)", rows)

        if not self._db.write(write):
            self._memory.update(items)

    def __len__(self) -> int:
        row = self._db.read(lambda conn: conn.execute("SELECT COUNT(*) FROM parses WHERE parser = ?",
                                                      [self.parser_key]).fetchone())
        return (row[0] if row else 0) + len(self._memory)

    def clear(self) -> None:
        """Remove this parser's entries."""
        self._memory.clear()
        self._db.write(lambda conn: conn.execute("DELETE FROM parses WHERE parser = ?", [self.parser_key]))

    def close(self) -> None:
        self._db.close()


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
