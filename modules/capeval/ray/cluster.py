"""Ray for capeval's Ray routes: the import, with the extra to install when it is missing; the connection (a Ray
this process already started, else ``ray.init(address=...)``); a task's error as the exception the task raised."""
from __future__ import annotations

from typing import Any

#: What to install for the Ray routes (``score_dataset(engine="ray")``, :mod:`capeval.ray`).
RAY_EXTRA = 'pip install "capeval[ray]"'


def require_ray(what: str = "capeval's Ray routes"):
    """The ``ray`` module; ``ImportError`` with the pip command when Ray (with Ray Data) is not installed."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise ImportError(f"{what} need Ray Data: {RAY_EXTRA}") from err
    return ray


def connect(address: str | None = None, what: str = "capeval's Ray routes"):
    """The ``ray`` module, connected: the Ray this process already started (``ray.init`` before the call: its
    settings are kept, ``address`` must then be ``None``), else ``ray.init(address=address)`` (``None``: Ray's own
    rule, ``$RAY_ADDRESS`` or a new local Ray; ``"auto"``: the cluster this machine belongs to; ``"ray://host:port"``:
    a remote one). Ray's start-up lines are kept to warnings."""
    ray = require_ray(what)
    if ray.is_initialized():
        if address is not None:
            raise ValueError(f"Ray is already started in this process; call without ray_address={address!r:.80} "
                             "(or ray.shutdown() first).")
        return ray
    import logging

    ray.init(address=address, logging_level=logging.WARNING, include_dashboard=False)
    return ray


def cluster_slots(ray, cpus_per_actor: float, gpus_per_actor: float) -> int:
    """How many actors of ``cpus_per_actor`` CPUs and ``gpus_per_actor`` GPUs the cluster holds at once (at least
    one); ``ValueError`` when it has no GPU and one is asked for."""
    resources = ray.cluster_resources()
    if gpus_per_actor > 0:
        gpus = float(resources.get("GPU", 0))
        if gpus < gpus_per_actor:
            raise ValueError(f"the Ray cluster has {gpus:g} GPU(s); an actor asks for {gpus_per_actor:g}.")
        return max(1, int(gpus // gpus_per_actor))
    return max(1, int(float(resources.get("CPU", 1)) // max(cpus_per_actor, 1e-9)))


def task_error(err: BaseException) -> BaseException:
    """The exception a Ray task raised, without Ray's wrapper (whose text holds the remote traceback): what capeval
    says in one line ("row 12 (id 'x'): ..."); any other error unchanged."""
    try:
        from ray.exceptions import RayTaskError
    except ImportError:
        return err
    cause: Any = getattr(err, "cause", None)
    if isinstance(err, RayTaskError) and isinstance(cause, Exception):
        return cause
    return err
