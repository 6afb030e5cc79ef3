"""Shares of a large METEOR call computed in forked processes beside the calling one (Linux).

:meth:`capeval.meteor.scorer.PythonMeteorScorer.statistics` hands contiguous shares of the pairs it has to align to
children started with ``fork`` once its language data is loaded: a child starts in milliseconds with the paraphrase
table, synonyms and stemmer already in memory (shared with the parent, copy on write; the child freezes what it
inherited out of its garbage collector's passes, which would otherwise write to every inherited object and copy its
page), computes its share with the same code and sends the statistics lines back through a pipe. A statistics line
is a function of its pair alone, so the lines are the same whichever process computes them.

Forking is used only where it is safe and useful: on Linux, when the calling process runs no other thread (a fork
copies only the calling thread, and a lock another thread held would stay locked in the child; tqdm's monitor thread,
which progress bars start, is the one exception: the lock it takes is tqdm's, which a child never uses), when it is not
itself a daemonic ``multiprocessing`` child, and not under a distributed launch (``WORLD_SIZE`` > 1: the launch
already runs a process per CPU). A child that fails or dies leaves its share to the caller, which computes it
itself; a child stops when its parent dies (:func:`capeval.workers.die_with_parent`).
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

__all__ = ["MAX_PROCESSES", "ForkedShares", "can_fork", "default_processes"]

#: The most processes (the caller included) a call uses by default: the per-caption work splits evenly, but each
#: child repeats the sentence set-up of the references its share shares with the others.
MAX_PROCESSES = 4


#: The name of tqdm's monitor thread (progress bars): it only ever holds tqdm's own lock, which a child never takes.
_TQDM_MONITOR = "tqdm_monitor"


def can_fork() -> bool:
    """Whether this process may fork workers now (see the module docstring)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if multiprocessing.current_process().daemon:
        return False
    current = threading.current_thread()
    if any(thread is not current and not (thread.daemon and thread.name == _TQDM_MONITOR)
           for thread in threading.enumerate()):
        return False
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) <= 1
    except ValueError:
        return False


def default_processes() -> int:
    """Processes a large call uses when the scorer was not told: the CPUs this process may run on, at most
    :data:`MAX_PROCESSES`; 1 in a ``multiprocessing`` child (a worker of a pool that already runs one per CPU)."""
    from capeval.workers import pool_size

    return pool_size(MAX_PROCESSES)


def _run_share(compute: Callable[[Sequence[int]], list[str]], share: Sequence[int], send) -> None:
    """In the child: the share's lines through the pipe (``None`` when computing them failed)."""
    from capeval.workers import die_with_parent

    die_with_parent(signal.SIGKILL)
    gc.freeze()  # this single-threaded child's inherited objects: out of its collector's passes
    try:
        lines = compute(share)
    except BaseException:  # noqa: BLE001 - the parent computes the share itself and meets the error there
        lines = None
    send.send(lines)
    send.close()


class ForkedShares:
    """One forked child per share, each computing ``compute(share)`` (a list of statistics lines, one per index).

    Start them (the constructor returns at once), do the caller's own share, then read :meth:`results`.
    """

    def __init__(self, compute: Callable[[Sequence[int]], list[str]], shares: Sequence[Sequence[int]]) -> None:
        context = multiprocessing.get_context("fork")
        self._children = []
        for share in shares:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=_run_share, args=(compute, share, send), daemon=True,
                                    name="capeval-meteor-share")
            child.start()
            send.close()
            self._children.append((share, child, receive))

    def results(self) -> Iterator[tuple[Sequence[int], list[str] | None]]:
        """``(share, lines)`` per child in order; ``lines`` is ``None`` when the child failed or died."""
        for share, child, receive in self._children:
            try:
                lines = receive.recv()
            except (EOFError, OSError):
                lines = None
            receive.close()
            child.join()
            if lines is not None and len(lines) != len(share):
                lines = None
            yield share, lines

    def close(self) -> None:
        """Stop every child still running (the caller is leaving early: an error, or an interrupt)."""
        for _, child, receive in self._children:
            if child.is_alive():
                child.kill()
            child.join()
            receive.close()
        self._children = []
