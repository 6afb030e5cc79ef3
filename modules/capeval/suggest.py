"""The closest valid names to a misspelt one, for error messages (``unknown metric 'bleu4'; did you mean 'bleu_4'?``)."""
from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(given: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``valid`` closest to ``given`` (case, ``-`` and ``_`` ignored; a name that starts with or
    contains ``given`` counts as close), best first; ``[]`` when none is close."""
    names = list(dict.fromkeys(str(v) for v in valid))
    key = _fold(str(given))
    if not key:
        return []
    folded = {_fold(name): name for name in reversed(names)}
    found = [folded[k] for k in difflib.get_close_matches(key, list(folded), n=n, cutoff=0.6)]
    for name in names:
        if len(found) >= n:
            break
        if name not in found and len(key) >= 3 and (_fold(name).startswith(key) or key in _fold(name)):
            found.append(name)
    return found


def did_you_mean(given: str, valid: Iterable[str]) -> str:
    """``"; did you mean 'bleu_4'?"`` (or ``"'a' or 'b'"``), or ``""`` when no valid name is close."""
    found = closest(given, valid)
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(name) for name in found) + "?"


def _fold(name: str) -> str:
    return name.lower().replace("-", "_").replace(" ", "_")
