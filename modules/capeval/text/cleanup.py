"""Caption clean-up applied before tokenisation.

``thumb`` is the minimal post-processing of THumB 1.0 (Kasai et al. 2022, §2.2.3), the default for
every capeval metric:

1. remove spaces at the start and end of the caption;
2. upper-case the first letter;
3. add a period at the end if there is none, and remove a space before that final period.

``none`` leaves the text untouched (pycocoevalcap's behaviour). The choice is recorded in every
score signature as ``clean:thumb`` / ``clean:none``.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_SPACE_BEFORE_FINAL_PERIOD = re.compile(r"\s+\.$")


def thumb_cleanup(text: str) -> str:
    """THumB minimal post-processing of one caption (see module docstring)."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if not text.endswith("."):
        text += "."
    return _SPACE_BEFORE_FINAL_PERIOD.sub(".", text)


def no_cleanup(text: str) -> str:
    return text


CLEANUPS: dict[str, Callable[[str], str]] = {"thumb": thumb_cleanup, "none": no_cleanup}


def get_cleanup(name: str | None) -> Callable[[str], str]:
    key = "none" if name is None else str(name).lower()
    if key not in CLEANUPS:
        raise ValueError(f"Unknown cleanup {name!r}; choose one of {sorted(CLEANUPS)}.")
    return CLEANUPS[key]


def clean_all(texts: Sequence[str], name: str | None) -> list[str]:
    fn = get_cleanup(name)
    return [fn(t) for t in texts]
