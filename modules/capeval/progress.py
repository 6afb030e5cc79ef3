"""Progress bars: shown on a terminal only for work that lasts more than a second.

Third-party bars (transformers' "Loading weights", huggingface_hub's downloads) follow the same rule off a terminal:
:func:`quiet_third_party_bars` turns them off when stderr is not a terminal, unless ``HF_HUB_DISABLE_PROGRESS_BARS``
says otherwise.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterable
from contextvars import ContextVar
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str = "", enabled: bool | None = None,
             initial: int = 0):
    """Wrap ``iterable`` in a tqdm bar.

    ``enabled=None`` (default) shows the bar only when stderr is a terminal and the loop has run for
    more than one second; ``True`` forces it on, ``False`` off. ``initial``: work done before this run (e.g. a
    resumed job's rows): the bar starts there, and its rate and ETA count only what this run does.
    """
    return tqdm(
        iterable,
        total=total,
        initial=initial,
        desc=desc,
        disable=None if enabled is None else not enabled,
        delay=1.0 if enabled is None else 0.0,
        leave=False,
        dynamic_ncols=True,
    )


def write(line: str, file=None) -> None:
    """Print ``line`` on ``file`` (default stderr) on a line of its own: an open progress bar is cleared first and
    drawn again below it, so that a warning never lands inside a bar's line."""
    tqdm.write(line, file=sys.stderr if file is None else file)


def working(desc: str, *, enabled: bool | None = None):
    """A line for one long step of unknown length (``with working("building ..."):``): ``desc`` alone, no count,
    rate or ETA. ``enabled=None`` (default): on a terminal a line cleared when the step ends; elsewhere (logs, CI)
    ``desc`` written once as a line of its own, so that a step known to take seconds is never silent. ``True``: the
    cleared line even off a terminal; ``False``: nothing."""
    if enabled is False or (enabled is None and _QUIET.get()):
        return contextlib.nullcontext()
    if enabled is None and not _stderr_is_terminal():
        write(f"capeval: {desc}")  # as announce() writes it
        return contextlib.nullcontext()
    return tqdm(total=None, desc=desc, bar_format="{desc}", disable=None if enabled is None else not enabled,
                leave=False, dynamic_ncols=True)


#: Seconds a one-time step (loading a model, building a table) runs before :func:`announce` says so.
ANNOUNCE_AFTER = 2.0
#: While set (``capeval ... --quiet``), :func:`announce` says nothing.
_QUIET: ContextVar[bool] = ContextVar("capeval_quiet", default=False)


@contextlib.contextmanager
def quiet(on: bool = True):
    """Within this block (``on=True``), one-time work is not announced (``--quiet``)."""
    token = _QUIET.set(bool(on))
    try:
        yield
    finally:
        _QUIET.reset(token)


def is_quiet() -> bool:
    """Whether this call runs under :func:`quiet` (``--quiet``): status notes are left out."""
    return _QUIET.get()


@contextlib.contextmanager
def announce(desc: str, *, enabled: bool | None = None, after: float = ANNOUNCE_AFTER):
    """One line ``capeval: <desc>`` on stderr when the step inside this block is still running after ``after``
    seconds, on a terminal or not (a log shows why a call paused); a step that ends sooner says nothing.
    ``enabled=False`` (``progress=False``) or :func:`quiet` (``--quiet``) silence it; ``True`` prints at once."""
    if enabled is False or _QUIET.get():
        yield
        return
    if enabled:
        write(f"capeval: {desc}")
        yield
        return
    timer = threading.Timer(after, write, args=(f"capeval: {desc}",))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def quiet_third_party_bars() -> bool:
    """Turn off transformers' and huggingface_hub's progress bars when stderr is not a terminal (logs, ``--json -``
    pipelines, CI); a user's own ``HF_HUB_DISABLE_PROGRESS_BARS`` wins. Returns whether they are now off."""
    if _stderr_is_terminal() or os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") is not None:
        return os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS", "").lower() in ("1", "true", "yes", "on")
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when huggingface_hub / transformers are imported
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    return True
