"""What every process capeval starts does about its parent: it stops when the parent dies.

Used by score-dataset's workers, LCEval's feature workers and the launcher of ``capeval score --processes``.
"""
from __future__ import annotations

import sys

__all__ = ["die_with_parent"]


def die_with_parent(signum: int) -> bool:
    """Linux: ask the kernel to send this process ``signum`` when its parent dies, even by SIGKILL
    (``prctl(PR_SET_PDEATHSIG)``), so that a worker or launcher never runs on beside a restarted run. ``False`` where
    that is unavailable (other systems: callers check ``os.getppid()`` between units of work instead)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(1, int(signum), 0, 0, 0) == 0  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False
