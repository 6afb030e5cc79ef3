"""THumB 1.0 rubric: per-caption validation and totals (Kasai et al. 2022, §2.2).

Every caption gets two main scores and three penalties:

* ``precision`` (P) and ``recall`` (R): 1 to 5 (the paper uses integers; averaged annotations such as
  4.5 are accepted here, anything outside [1, 5] is rejected);
* ``fluency``, ``conciseness`` and ``inclusive`` penalties: points deducted from the average of P and R.
  The THumB file stores them as signed values ≤ 0 (``"Fl": -0.1``); annotation sheets and most people
  write positive magnitudes (``0.1``). Both are accepted: **only the magnitude counts** (``-0.1`` and
  ``0.1`` are the same 0.1-point penalty). A magnitude above :data:`MAX_PENALTY` is rejected.

The default total is THumB's: ``total = (P + R) / 2 − fluency − conciseness − inclusive``
(equal to the file's ``human_score`` on all 2,500 rows). An application can re-weight it
(:class:`RubricWeights`):
``total = w·P + (1 − w)·R − s_flu·fluency − s_con·conciseness − s_inc·inclusive``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Range of the two main scores (inclusive).
SCORE_MIN, SCORE_MAX = 1.0, 5.0
#: Largest accepted penalty magnitude (a penalty can never exceed the best possible average score).
MAX_PENALTY = 5.0
#: Rubric items in sheet / result order.
MAIN_SCORES = ("precision", "recall")
PENALTIES = ("fluency", "conciseness", "inclusive")
RUBRIC_ITEMS = MAIN_SCORES + PENALTIES


def _fmt_number(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class RubricWeights:
    """How per-caption rubric scores are combined into a total.

    Attributes:
        precision_weight: weight ``w`` of P in ``w·P + (1 − w)·R``; in [0, 1]; THumB: 0.5.
        fluency_scale, conciseness_scale, inclusive_scale: multipliers (≥ 0) of each penalty
            magnitude; THumB: 1.0 each (0 ignores that penalty).
    """

    precision_weight: float = 0.5
    fluency_scale: float = 1.0
    conciseness_scale: float = 1.0
    inclusive_scale: float = 1.0

    def __post_init__(self) -> None:
        w = self.precision_weight
        if not isinstance(w, (int, float)) or isinstance(w, bool) or not math.isfinite(w) or not 0.0 <= w <= 1.0:
            raise ValueError(f"precision_weight must be a number in [0, 1] (recall gets 1 − it); got {w!r}.")
        for name in ("fluency_scale", "conciseness_scale", "inclusive_scale"):
            s = getattr(self, name)
            if not isinstance(s, (int, float)) or isinstance(s, bool) or not math.isfinite(s) or s < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0; got {s!r}.")

    @property
    def recall_weight(self) -> float:
        return 1.0 - self.precision_weight

    @property
    def is_thumb_default(self) -> bool:
        return self == RubricWeights()

    def signature_field(self) -> str:
        """e.g. ``p=0.5,r=0.5,flu=1,con=1,inc=1``."""
        return (
            f"p={_fmt_number(self.precision_weight)},r={_fmt_number(self.recall_weight)},"
            f"flu={_fmt_number(self.fluency_scale)},con={_fmt_number(self.conciseness_scale)},"
            f"inc={_fmt_number(self.inclusive_scale)}"
        )


@dataclass
class Ratings:
    """Validated rubric scores of ``n`` captions (numpy float arrays of length ``n``).

    Penalties are stored as magnitudes ≥ 0. ``systems`` / ``images`` are string lists or ``None``.
    """

    precision: np.ndarray
    recall: np.ndarray
    fluency: np.ndarray
    conciseness: np.ndarray
    inclusive: np.ndarray
    systems: list[str] | None = None
    images: list[str] | None = None

    def __len__(self) -> int:
        return len(self.precision)

    def describe(self, index: int) -> str:
        """``caption 7 (system 'Up-Down', image '974')`` for error messages."""
        return describe_caption(index, self.systems, self.images)

    def totals(self, weights: RubricWeights | None = None) -> np.ndarray:
        """Per-caption totals (see module docstring); same length as the ratings."""
        w = weights or RubricWeights()
        return (
            w.precision_weight * self.precision
            + w.recall_weight * self.recall
            - w.fluency_scale * self.fluency
            - w.conciseness_scale * self.conciseness
            - w.inclusive_scale * self.inclusive
        )


def describe_caption(index: int, systems: Sequence[Any] | None, images: Sequence[Any] | None) -> str:
    parts = []
    if systems is not None and index < len(systems):
        parts.append(f"system {systems[index]!r}")
    if images is not None and index < len(images):
        parts.append(f"image {images[index]!r}")
    return f"caption {index}" + (f" ({', '.join(parts)})" if parts else "")


def _as_list(values: Any, name: str) -> list[Any]:
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be a list with one value per caption, got a single string {values!r}.")
    if isinstance(values, np.ndarray):
        return values.tolist()
    try:
        return list(values)
    except TypeError:
        raise ValueError(f"{name} must be a list with one value per caption, got {type(values).__name__}.") from None


def _number(value: Any, name: str, where: str) -> float:
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"{where}: {name} is missing; every caption needs a {name} value.")
    if isinstance(value, bool):
        raise ValueError(f"{where}: {name} is a boolean ({value!r}); expected a number.")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{where}: {name} is {value!r}, not a number.") from None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} is a {type(value).__name__} ({value!r}), not a number.") from None
    if math.isnan(number):
        raise ValueError(f"{where}: {name} is NaN (a missing value?); every caption needs a {name} value.")
    if math.isinf(number):
        raise ValueError(f"{where}: {name} is {number}; expected a finite number.")
    return number


def _labels(values: Any, name: str, n: int) -> list[str] | None:
    if values is None:
        return None
    items = _as_list(values, name)
    if len(items) != n:
        raise ValueError(f"{name} has {len(items)} entries but there are {n} captions; give one per caption.")
    out = []
    for i, v in enumerate(items):
        if v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip()):
            raise ValueError(f"caption {i}: {name[:-1]} is missing (empty, None or NaN).")
        out.append(str(v))
    return out


def validate_ratings(
    precision: Sequence[Any],
    recall: Sequence[Any],
    fluency: Sequence[Any] | None = None,
    conciseness: Sequence[Any] | None = None,
    inclusive: Sequence[Any] | None = None,
    systems: Sequence[Any] | None = None,
    images: Sequence[Any] | None = None,
) -> Ratings:
    """Check one list per rubric item and return :class:`Ratings`.

    Args:
        precision, recall: one value per caption in [1, 5].
        fluency, conciseness, inclusive: one penalty per caption, signed (≤ 0, as in the THumB file)
            or as a positive magnitude; only the magnitude is used; ``None`` = no penalty for any caption.
        systems, images: optional labels per caption (converted to ``str``).

    Raises:
        ValueError: naming the caption (index, system and image when known) and the problem, for
            missing, non-numeric, NaN or out-of-range values and for length mismatches.
    """
    p_raw = _as_list(precision, "precision")
    n = len(p_raw)
    if n == 0:
        raise ValueError("No captions given: precision is empty.")
    sys_labels = _labels(systems, "systems", n)
    img_labels = _labels(images, "images", n)
    columns: dict[str, list[Any]] = {"precision": p_raw, "recall": _as_list(recall, "recall")}
    for name, values in (("fluency", fluency), ("conciseness", conciseness), ("inclusive", inclusive)):
        columns[name] = [0.0] * n if values is None else _as_list(values, name)
    for name, values in columns.items():
        if len(values) != n:
            raise ValueError(
                f"{name} has {len(values)} entries but precision has {n}; give one value per caption for every "
                "rubric item."
            )
    arrays: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        out = np.empty(n, dtype=np.float64)
        for i, raw in enumerate(values):
            where = describe_caption(i, sys_labels, img_labels)
            value = _number(raw, name, where)
            if name in MAIN_SCORES:
                if not SCORE_MIN <= value <= SCORE_MAX:
                    raise ValueError(
                        f"{where}: {name} is {value:g}, outside the THumB range [1, 5] "
                        "(1 = worst, 5 = best; integers in the paper)."
                    )
            else:
                value = abs(value)
                if value > MAX_PENALTY:
                    raise ValueError(
                        f"{where}: {name} penalty is {value:g}, larger than {MAX_PENALTY:g} (the largest possible "
                        "average of P and R); penalties are points deducted, e.g. 0.1 or -0.1."
                    )
            out[i] = value
        arrays[name] = out
    return Ratings(**arrays, systems=sys_labels, images=img_labels)
