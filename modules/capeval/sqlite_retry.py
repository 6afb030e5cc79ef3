"""Retrying SQLite statements that another process holds a lock against (the caches shared by processes).

A busy timeout covers most waits, but some statements (``PRAGMA journal_mode=WAL`` while another connection
opens the same file, schema changes) can fail at once with ``database is locked``; they are retried here with
exponential back-off (0.05 s doubling to 2 s, ``retries`` times: about 10 s with the default 8).
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["retry_locked"]

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
