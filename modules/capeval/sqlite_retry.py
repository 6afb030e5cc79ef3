"""Retrying SQLite statements that another process holds a lock against (the caches shared by processes).

A busy timeout covers most waits, but some statements (``PRAGMA journal_mode=WAL`` while another connection
opens the same file, schema changes) can fail at once with ``database is locked``; they are retried here with
exponential back-off (0.05 s doubling to 2 s, ``retries`` times: about 10 s with the default 8).
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["connect_or_rebuild", "connect_shared", "is_locked", "retry_locked"]

T = TypeVar("T")


def retry_locked(action: Callable[[], T], retries: int = 8) -> T:
    """``action()``, retried while SQLite answers ``locked`` / ``busy``; any other error, or the last one, is raised."""
    delay = 0.05
    for attempt in range(retries + 1):
        try:
            return action()
        except sqlite3.OperationalError as err:
            if ("locked" not in str(err) and "busy" not in str(err)) or attempt == retries:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
    raise AssertionError("unreachable")  # pragma: no cover


def is_locked(err: BaseException) -> bool:
    """Whether ``err`` is SQLite's ``locked`` / ``busy`` (another process holds the file), not damage."""
    return isinstance(err, sqlite3.OperationalError) and ("locked" in str(err) or "busy" in str(err))


def connect_shared(path, schema: str | Sequence[str], probe: str) -> sqlite3.Connection:
    """A connection to the cache database ``path`` shared by processes: autocommit (callers open their own
    transactions), a 60 s busy timeout, WAL mode, ``schema`` (one statement or several) created; ``probe`` (a SELECT)
    is run once so that a file that is not a database of this shape fails here (``sqlite3.DatabaseError``), not on
    first use."""
    conn = sqlite3.connect(str(path), timeout=60.0, isolation_level=None, check_same_thread=False)
    try:
        # another process opening the same file at this moment can make these fail at once with "locked"
        retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        for statement in [schema] if isinstance(schema, str) else schema:
            retry_locked(lambda: conn.execute(statement))
        retry_locked(lambda: conn.execute(probe).fetchall())
    except BaseException:
        conn.close()
        raise
    return conn


#: OperationalError messages that mean "cannot be written or reached here", not a damaged file: never rebuilt.
_ACCESS_ERRORS = ("unable to open", "readonly", "read-only", "disk i/o", "permission")


def connect_or_rebuild(path, schema: str | Sequence[str], probe: str) -> sqlite3.Connection:
    """:func:`connect_shared`; a file that is not a usable database of this shape is moved aside
    (:func:`capeval.paths.quarantine_cache_file`, with a warning) and a new one created. ``locked`` / ``busy`` and
    access errors (read-only, no permission, cannot open) are raised: the caller decides (wait, or keep to memory)."""
    try:
        return connect_shared(path, schema, probe)
    except sqlite3.DatabaseError as err:
        text = str(err).lower()
        if is_locked(err) or (isinstance(err, sqlite3.OperationalError) and any(e in text for e in _ACCESS_ERRORS)):
            raise
        from capeval.paths import quarantine_cache_file

        quarantine_cache_file(Path(path), f"is not a usable SQLite database ({err})")
        return connect_shared(path, schema, probe)
