"""Processes seen from outside (Linux ``/proc``, psutil when installed), for the tests and probes that stop a run of
several processes: used by tests/dataset_scoring/test_hostile.py and benchmarks/hostile_probes.py."""
from __future__ import annotations

import time
from pathlib import Path


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (psutil when installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            return [c.pid for c in psutil.Process(pid).children()]
        except psutil.NoSuchProcess:
            return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid``."""
    out, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        out += kids
        todo += kids
    return out


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def cmdline(pid: int) -> bytes:
    """``pid``'s command line (``b""`` once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """Those of ``pids`` still running after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while [p for p in pids if running(p)] and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if running(p)]
