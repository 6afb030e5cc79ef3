"""Numbers printed in Kasai et al. (NAACL 2022), Tables 2 and 3, for side-by-side comparison.

These are the *published* values (read from the paper), used only to show the paper next to what
capeval computes from the THumB 1.0 file (``capeval thumb report --paper``) and in the tests that
reproduce the tables. Penalties are magnitudes (the paper's ``Flu.↓ Con.↓ Inc.↓``); ``total_ci`` is
the printed ± half-width of the 90 % bootstrap interval.
"""
from __future__ import annotations

#: Table 2, THumB 1.0 columns: system → P, R, Flu., Con., Inc., Total, ± 90 % CI half-width.
TABLE2: dict[str, dict[str, float]] = {
    "Human": {"precision": 4.82, "recall": 4.35, "fluency": 0.019, "conciseness": 0.02, "inclusive": 0.00,
              "total": 4.56, "total_ci": 0.03},
    "VinVL-large": {"precision": 4.54, "recall": 3.97, "fluency": 0.005, "conciseness": 0.00, "inclusive": 0.00,
                    "total": 4.25, "total_ci": 0.04},
    "VinVL-base": {"precision": 4.47, "recall": 3.95, "fluency": 0.001, "conciseness": 0.00, "inclusive": 0.00,
                   "total": 4.21, "total_ci": 0.04},
    "Unified-VLP": {"precision": 4.35, "recall": 3.77, "fluency": 0.004, "conciseness": 0.00, "inclusive": 0.00,
                    "total": 4.06, "total_ci": 0.04},
    "Up-Down": {"precision": 4.29, "recall": 3.50, "fluency": 0.014, "conciseness": 0.00, "inclusive": 0.00,
                "total": 3.88, "total_ci": 0.05},
}

#: Table 3: system → (# strictly best, # strictly worst) over the 500 images.
TABLE3: dict[str, tuple[int, int]] = {
    "Human": (327, 65),
    "VinVL-large": (180, 128),
    "VinVL-base": (161, 150),
    "Unified-VLP": (112, 190),
    "Up-Down": (74, 269),
}

#: Decimal places the paper prints per Table 2 column.
TABLE2_DIGITS = {"precision": 2, "recall": 2, "fluency": 3, "conciseness": 2, "inclusive": 2, "total": 2}
