"""Numbers printed in Kasai et al. (NAACL 2022), Tables 2 and 3, for side-by-side comparison.

Read from capeval's table of published numbers (``capeval/data/published.json``, shared with
``capeval bench``): used only to show the paper next to what capeval computes from the THumB 1.0 file
(``capeval thumb report --paper``) and in the tests that reproduce the tables. Penalties are
magnitudes (the paper's ``Flu.↓ Con.↓ Inc.↓``); ``total_ci`` is the printed ± half-width of the 90 %
bootstrap interval.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

#: Decimal places the paper prints per Table 2 column.
TABLE2_DIGITS = {"precision": 2, "recall": 2, "fluency": 3, "conciseness": 2, "inclusive": 2, "total": 2}


@lru_cache(maxsize=1)
def _tables() -> dict[str, Any]:
    """``TABLE2`` and ``TABLE3``, read from the table of published numbers on first use (not at import)."""
    from capeval.published import published

    rubric = next(e for e in published("thumb", statistic="rubric") if e["source"] == "kasai2022")
    best_worst = next(e for e in published("thumb", statistic="strictly_best_worst") if e["source"] == "kasai2022")
    return {
        # Table 2, THumB 1.0 columns: system → P, R, Flu., Con., Inc., Total, ± 90 % CI half-width.
        "TABLE2": {system: dict(values) for system, values in rubric["values"].items()},
        # Table 3: system → (# strictly best, # strictly worst) over the 500 images.
        "TABLE3": {s: (v["best"], v["worst"]) for s, v in best_worst["values"].items()},
    }


def __getattr__(name: str) -> Any:
    """``TABLE2`` (system → P, R, Flu., Con., Inc., Total, ± 90 % CI half-width) and ``TABLE3`` (system → (# strictly
    best, # strictly worst)): read when first asked for."""
    if name in ("TABLE2", "TABLE3"):
        return _tables()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
