"""How close a measurement must be to its published number (:func:`tolerance_for`, on the printed scale) and the
status that makes (:func:`compare`): half a unit of the last printed digit, inclusive; SPICE against official SPICE
gets capeval's fidelity target; CLIP-based example scores printed to 4 decimals one unit."""
from __future__ import annotations

import math

from capeval.meta_evaluation.verify.metric_facts import clip_family
from capeval.meta_evaluation.verify.reasons import EXAMPLES, PRINTED_DECIMALS, SPICE_RULE
from capeval.meta_evaluation.verify.records import Row

#: Relative slack of the tolerance comparison (float rounding of numbers exactly half a unit away).
_SLACK = 1e-9

def _decimals(number: float) -> int:
    """Decimals of a JSON number as written (an integer: 0; ``21.0``: 1)."""
    if isinstance(number, int):
        return 0
    text = repr(float(number))
    return 0 if "e" in text or "." not in text else len(text.split(".")[1])


def printed_decimals(source: str, where: str, metric: str, field_: str | None, value: float) -> int:
    """The digits ``value`` is printed with: its own, or more where :data:`PRINTED_DECIMALS` says so."""
    declared = PRINTED_DECIMALS.get((source, where))
    if isinstance(declared, dict):  # per field (a category; THumB's "<system> <column>"), else per metric
        column = field_.rsplit(" ", 1)[-1] if field_ else None
        by_field = declared.get(field_ or "", declared.get(column or ""))
        declared = by_field if by_field is not None else declared.get(metric)
    return max(_decimals(value), declared or 0)


def tolerance_for(row: Row) -> tuple[float, str]:
    """``(tolerance, rule)`` of ``row`` on its printed scale (see the module docstring)."""
    half = 0.5 * 10 ** -row.decimals
    if row.metric == "spice" and row.source != "pycocoevalcap-here":
        if row.scale == 100 and row.statistic in ("tau_c", "tau_b", "corpus_score"):
            return 1.0, SPICE_RULE
        if row.scale == 1 and row.statistic == "corpus_score":
            return 0.005, SPICE_RULE
    if row.metric in clip_family() and row.benchmark in EXAMPLES and row.decimals >= 4:
        return 10 ** -row.decimals, ("one unit of the last printed digit: the clipscore README shows CPU float32 and "
                                     "GPU float16 runs a unit apart (0.8585 / 0.8584)")
    return half, "half a unit of the last printed digit"


def compare(row: Row) -> Row:
    """Set ``row.status`` from ``row.measured`` (``reproduced`` / ``differs``); a row without a measurement stays
    ``skipped``."""
    if row.measured is None or row.tolerance is None:
        row.status = "skipped"
        return row
    if not math.isfinite(row.measured):
        row.status, row.reason = "differs", "the measurement is not a finite number"
        return row
    slack = _SLACK * max(1.0, abs(row.published))
    row.status = "reproduced" if abs(row.measured - row.published) <= row.tolerance + slack else "differs"
    return row

