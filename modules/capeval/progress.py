"""Progress bars: shown on a terminal only for work that lasts more than a second."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str = "", enabled: bool | None = None):
    """Wrap ``iterable`` in a tqdm bar.

    ``enabled=None`` (default) shows the bar only when stderr is a terminal and the loop has run for
    more than one second; ``True`` forces it on, ``False`` off.
    """
    return tqdm(
        iterable,
        total=total,
        desc=desc,
        disable=None if enabled is None else not enabled,
        delay=1.0 if enabled is None else 0.0,
        leave=False,
        dynamic_ncols=True,
    )
