"""Numbers as the leaderboard reads them: a finite float or nothing, and the digits a published number is printed
with."""
from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """A finite float, or None (missing, not a number, NaN, ±inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def printed_decimals(number: float) -> int:
    """Decimals of ``number`` as written (``51.2``: 1; ``0.224``: 3; an integer-valued float: 1)."""
    text = repr(float(number))
    return 0 if "e" in text or "." not in text else len(text.split(".")[1])
