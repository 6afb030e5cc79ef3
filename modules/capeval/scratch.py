"""Temporary work folders that a killed process does not leave behind for long.

``tempfile.TemporaryDirectory`` removes its folder when the block ends, also on an error or Ctrl-C, but a process
killed with SIGKILL (the kernel's out-of-memory killer, a cluster taking a node's worker back, ``kill -9``) leaves it,
and capeval's work folders can be large (``capeval score``'s index of a million captions, a CIDEr-D document-frequency
table). :func:`scratch_folder` is that block, whose folder also holds an owner lock: an exclusive ``flock`` on
:data:`OWNER_LOCK` inside it, which the kernel releases when its process ends however it ends (a forked child that
inherits it keeps it held). The first :func:`scratch_folder` of a prefix in a process removes the folders of that
prefix in the same parent folder whose lock nobody holds (their process is gone), when they belong to this user,
are real folders (not links) and are over :data:`STALE_AFTER_S` old. A folder without the lock (made by another
program, or an earlier capeval) is never removed. Where ``fcntl`` is missing (Windows) nothing is swept.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: The lock file inside each scratch folder, held (``flock``, exclusive) by the process that made the folder.
OWNER_LOCK = ".capeval-owner.lock"
#: Seconds a folder must be unchanged before it can be swept (a folder just made has its lock taken within it).
STALE_AFTER_S = 60.0

_SWEPT: set[tuple[str, str]] = set()


def _fcntl():
    try:
        import fcntl
    except ImportError:  # Windows: no flock, nothing swept
        return None
    return fcntl


def _hold_lock(folder: Path) -> int | None:
    """The descriptor of ``folder``'s owner lock, held by this process (``None`` without ``fcntl``)."""
    fcntl = _fcntl()
    if fcntl is None:
        return None
    fd = os.open(folder / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _abandoned(path: str) -> bool:
    """Whether the scratch folder ``path`` has an owner lock that no process holds (taken and let go at once)."""
    fcntl = _fcntl()
    try:
        fd = os.open(os.path.join(path, OWNER_LOCK), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: its process runs
    finally:
        os.close(fd)
    return True


def sweep(prefix: str, parent: str | os.PathLike | None = None) -> list[Path]:
    """Remove the abandoned scratch folders named ``prefix*`` in ``parent`` (default: ``tempfile.gettempdir()``);
    the folders removed."""
    if _fcntl() is None:
        return []
    parent = str(parent) if parent is not None else tempfile.gettempdir()
    removed = []
    now, uid = time.time(), os.getuid()
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(prefix)]
    except OSError:
        return []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or now - info.st_mtime < STALE_AFTER_S:
            continue
        if _abandoned(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


@contextlib.contextmanager
def scratch_folder(prefix: str, parent: str | os.PathLike | None = None) -> Iterator[Path]:
    """A new folder ``<parent>/<prefix><random>`` (default parent: ``tempfile.gettempdir()``, i.e. ``$TMPDIR``) for
    the block, removed when it ends; its owner lock held meanwhile. Sweeps the prefix's abandoned folders first
    (once per process, prefix and parent)."""
    key = (prefix, str(parent))
    if key not in _SWEPT:
        _SWEPT.add(key)
        sweep(prefix, parent)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    lock = None
    try:
        lock = _hold_lock(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if lock is not None:
            os.close(lock)
