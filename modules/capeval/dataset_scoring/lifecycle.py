"""The worker processes of ``score_dataset(processes=N)``: spawned, each dying with its parent, stopped by SIGTERM
then SIGKILL, their failures written where the parent reads them."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time



#: The pid of the process that spawned this worker (``None`` outside :func:`spawn`'s workers): a worker whose
#: parent is gone (its ``getppid()`` changed) stops before its next chunk.
_PARENT: int | None = None
#: How long :func:`spawn` waits for a worker to stop after SIGTERM before it kills it (seconds).
STOP_GRACE_S = 5.0


class Stopped(SystemExit):
    """SIGTERM in a worker: it unwinds (its ``finally`` clean-up runs) and exits with 143, without a traceback."""


def _stop_quietly(signum, frame):
    raise Stopped(128 + signum)


def become_worker(parent: int) -> None:
    """A spawned worker's first steps: Ctrl-C is the parent's to handle (the worker ignores SIGINT: a Ctrl-C at the
    terminal reaches every process of the group), SIGTERM (sent by the parent) ends it quietly, and it dies with its
    parent. The parent started it with SIGINT and SIGTERM blocked (so that a signal during its start-up cannot print
    a traceback): unblocked here, after the handlers are set."""
    global _PARENT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_quietly)
    from capeval.workers import die_with_parent

    die_with_parent(signal.SIGKILL)
    _PARENT = parent
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    check_parent()  # the parent died before the death signal was set


def check_parent() -> None:
    """In a worker whose parent is gone (killed: the worker was handed to another process), stop at once (the chunks
    are written atomically: nothing is half-written; the same call resumes)."""
    if _PARENT is not None and os.getppid() != _PARENT:
        os._exit(1)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM blocked in this thread (they stay pending and arrive when the block ends): the processes
    started meanwhile inherit the block, so they cannot be interrupted before they set their own handlers."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def stop_workers(workers: list) -> None:
    """Stop the workers still running: SIGTERM (each unwinds and exits quietly), then SIGKILL after
    :data:`STOP_GRACE_S`; every one joined."""
    alive = [w for w in workers if w.pid is not None and w.is_alive()]
    for w in alive:
        w.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for w in alive:
        w.join(max(0.0, deadline - time.monotonic()))
    for w in alive:
        if w.is_alive():
            w.kill()
            w.join()
