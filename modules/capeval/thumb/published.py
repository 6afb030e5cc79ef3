"""Numbers printed in Kasai et al. (NAACL 2022), Tables 2 and 3, for side-by-side comparison.

Read from capeval's table of published numbers (``capeval/data/published.json``, shared with
``capeval bench``): used only to show the paper next to what capeval computes from the THumB 1.0 file
(``capeval thumb report --paper``) and in the tests that reproduce the tables. Penalties are
magnitudes (the paper's ``Flu.↓ Con.↓ Inc.↓``); ``total_ci`` is the printed ± half-width of the 90 %
bootstrap interval.
"""
from __future__ import annotations

from capeval.published import published

_RUBRIC = next(e for e in published("thumb", statistic="rubric") if e["source"] == "kasai2022")
_BEST_WORST = next(e for e in published("thumb", statistic="strictly_best_worst") if e["source"] == "kasai2022")

#: Table 2, THumB 1.0 columns: system → P, R, Flu., Con., Inc., Total, ± 90 % CI half-width.
TABLE2: dict[str, dict[str, float]] = {system: dict(values) for system, values in _RUBRIC["values"].items()}

#: Table 3: system → (# strictly best, # strictly worst) over the 500 images.
TABLE3: dict[str, tuple[int, int]] = {s: (v["best"], v["worst"]) for s, v in _BEST_WORST["values"].items()}

#: Decimal places the paper prints per Table 2 column.
TABLE2_DIGITS = {"precision": 2, "recall": 2, "fluency": 3, "conciseness": 2, "inclusive": 2, "total": 2}
