"""What every process capeval starts does about its parent (it stops when the parent dies) and about the GPUs (each
worker of several takes its own).

Used by score-dataset's workers, LCEval's feature workers and the launcher of ``capeval score --processes``.
"""
from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

__all__ = ["die_with_parent", "take_own_gpu"]

#: Where the NVIDIA driver lists the machine's GPUs (one folder each), read to count them without importing torch.
NVIDIA_GPU_FOLDER = "/proc/driver/nvidia/gpus"


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


def take_own_gpu(rank: int, environ: MutableMapping[str, str] | None = None,
                 gpu_folder: str = NVIDIA_GPU_FOLDER) -> str | None:
    """In worker ``rank`` (0-based) of several, before anything imports torch: make GPU ``rank mod n`` of the ``n``
    this process may use its only visible one (``CUDA_VISIBLE_DEVICES``), so that N workers on a machine with N GPUs
    each score on their own instead of all on the first. The GPUs it may use: those ``CUDA_VISIBLE_DEVICES`` lists
    when it is set, else every GPU the driver lists in ``gpu_folder`` (counted without importing torch, so text-only
    workers stay light). Returns the device chosen, or ``None`` (no GPU, or one: nothing to change)."""
    environ = os.environ if environ is None else environ
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        devices = [d.strip() for d in listed.split(",") if d.strip()]
    else:
        try:
            devices = [str(i) for i in range(len(os.listdir(gpu_folder)))]
        except OSError:
            devices = []
    if len(devices) < 2:
        return None
    chosen = devices[rank % len(devices)]
    environ["CUDA_VISIBLE_DEVICES"] = chosen
    return chosen


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, else the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_size(most: int) -> int:
    """Processes for a pool capeval starts itself: :func:`usable_cpus`, at most ``most``; 1 in a ``multiprocessing``
    child (a worker of a pool that already runs one per CPU)."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return 1
    return max(1, min(most, usable_cpus()))
