"""Functional THumB aggregation: ``capeval.thumb.score(precision, recall, ...)``.

The ``metrics/thumb`` evaluate module and ``capeval thumb report/collect`` are thin wrappers around it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.signature import build_signature
from capeval.thumb.aggregate import (
    DEFAULT_LEVEL,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    BootstrapSettings,
    bootstrap_mean_intervals,
    group_indices,
    strictly_best_worst,
)
from capeval.thumb.rubric import PENALTIES, Ratings, RubricWeights, validate_ratings
from capeval.validation import check_finite

#: Signature value of the strictly best/worst definition (both P and R ≥ / ≤ every other system, ties count).
BEST_WORST_FIELD = "both-pr,ties-count"


def score(
    precision: Sequence[float],
    recall: Sequence[float],
    fluency: Sequence[float] | None = None,
    conciseness: Sequence[float] | None = None,
    inclusive: Sequence[float] | None = None,
    *,
    systems: Sequence[str] | None = None,
    images: Sequence[str] | None = None,
    precision_weight: float = 0.5,
    fluency_scale: float = 1.0,
    conciseness_scale: float = 1.0,
    inclusive_scale: float = 1.0,
    bootstrap_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    confidence_level: float = DEFAULT_LEVEL,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Aggregate THumB 1.0 rubric scores of captions into per-caption totals and system statistics.

    Args:
        precision, recall: per caption, 1 to 5.
        fluency, conciseness, inclusive: per caption penalty, either THumB's signed values (≤ 0) or
            positive magnitudes; only the magnitude is used. ``None``: no such penalty for any caption.
        systems: per caption, the system (model) name; enables per-system results.
        images: per caption, the image id; enables image-level bootstrap and strictly best/worst counts.
        precision_weight: weight of P (recall gets ``1 − precision_weight``); THumB: 0.5.
        fluency_scale, conciseness_scale, inclusive_scale: multipliers of each penalty; THumB: 1.
        bootstrap_samples: bootstrap replicates for the confidence intervals (0: no intervals).
        seed: seed of the bootstrap generator (results are deterministic for a given seed).
        confidence_level: e.g. 0.9 for 90 % intervals (THumB's choice).
        progress: show a progress bar for the bootstrap (``None``: only on a terminal, after 1 s).

    Returns:
        ``{"total": mean total over all captions, "total_ci": (low, high) | None,
        "per_caption": {"total": [float per caption]},
        "systems": {name: {"n", "precision", "recall", "fluency", "conciseness", "inclusive", "total",
        "precision_ci", "recall_ci", "total_ci", "strictly_best", "strictly_worst", "images_compared"}},
        "signature": str}``. Scores are on THumB's scale (P, R in 1–5; total ≤ 5, penalties as mean
        magnitudes ≥ 0). ``systems`` is ``{}`` without system labels; the strictly best/worst entries
        are ``None`` without image labels; the intervals are ``None`` when ``bootstrap_samples=0``.

    Raises:
        ValueError: naming the caption for missing / out-of-range values, duplicates of one
            (system, image) pair, and bad settings.

    Example:
        >>> from capeval import thumb
        >>> r = thumb.score([5, 3, 4, 4], [5, 3, 3, 4], fluency=[-0.1, 0, 0, 0],
        ...                 systems=["human", "model", "human", "model"], images=["a", "a", "b", "b"],
        ...                 bootstrap_samples=100)
        >>> [round(t, 2) for t in r["per_caption"]["total"]], round(r["total"], 3)
        ([4.9, 3.0, 3.5, 4.0], 3.85)
        >>> r["systems"]["human"]["strictly_best"], r["systems"]["model"]["strictly_best"]
        (1, 1)
    """
    ratings = validate_ratings(precision, recall, fluency, conciseness, inclusive, systems, images)
    weights = RubricWeights(precision_weight, fluency_scale, conciseness_scale, inclusive_scale)
    boot = BootstrapSettings(bootstrap_samples, seed, confidence_level)
    totals = ratings.totals(weights)
    check_finite(totals, "per_caption['total']")
    n = len(ratings)
    units, unit = _resampling_units(ratings)
    result: dict[str, Any] = {
        "total": float(totals.mean()),
        "total_ci": _intervals(totals, units, np.zeros(n, dtype=np.int64), 1, boot, progress)[0],
        "per_caption": {"total": [float(t) for t in totals]},
        "systems": {},
    }
    if ratings.systems is not None:
        result["systems"] = _system_results(ratings, totals, units, boot, progress)
    result["signature"] = _signature(ratings, weights, boot, unit)
    return result


def _resampling_units(ratings: Ratings) -> tuple[np.ndarray, str]:
    """The bootstrap's resampling unit of each caption: its image's index with image labels ("image"),
    else the caption's own index ("caption")."""
    if ratings.images is not None:
        _, units = group_indices(ratings.images)
        return units, "image"
    return np.arange(len(ratings)), "caption"


def _intervals(values: np.ndarray, units: np.ndarray, groups: np.ndarray, n_groups: int, boot: BootstrapSettings,
               progress: bool | None) -> list[tuple[float, float] | None]:
    """Bootstrap confidence interval (low, high) of the mean of ``values`` in each of ``n_groups`` groups, on
    the values' own scale; ``None`` per group when ``boot.samples`` is 0."""
    if boot.samples == 0:
        return [None] * n_groups
    ci = bootstrap_mean_intervals(values, units, groups, n_groups, boot, progress_bar=progress)
    return [(float(lo), float(hi)) for lo, hi in ci]


def _system_results(ratings: Ratings, totals: np.ndarray, units: np.ndarray, boot: BootstrapSettings,
                    progress: bool | None) -> dict[str, dict[str, Any]]:
    """Per system: caption count, mean P / R / penalties / total, their intervals and, with image labels,
    the strictly best / worst counts (``None`` without image labels)."""
    names, codes = group_indices(ratings.systems)
    best_worst = None
    if ratings.images is not None:
        best_worst = strictly_best_worst(
            ratings.precision, ratings.recall, ratings.systems, ratings.images, describe=ratings.describe
        )
    total_ci = _intervals(totals, units, codes, len(names), boot, progress)
    precision_ci = _intervals(ratings.precision, units, codes, len(names), boot, progress)
    recall_ci = _intervals(ratings.recall, units, codes, len(names), boot, progress)
    systems: dict[str, dict[str, Any]] = {}
    for g, name in enumerate(names):
        mask = codes == g
        entry: dict[str, Any] = {
            "n": int(mask.sum()),
            "precision": float(ratings.precision[mask].mean()),
            "recall": float(ratings.recall[mask].mean()),
        }
        for penalty in PENALTIES:
            entry[penalty] = float(getattr(ratings, penalty)[mask].mean())
        entry["total"] = float(totals[mask].mean())
        entry["precision_ci"] = precision_ci[g]
        entry["recall_ci"] = recall_ci[g]
        entry["total_ci"] = total_ci[g]
        entry["strictly_best"] = best_worst.best[name] if best_worst else None
        entry["strictly_worst"] = best_worst.worst[name] if best_worst else None
        entry["images_compared"] = best_worst.compared[name] if best_worst else None
        systems[name] = entry
    return systems


def _signature(ratings: Ratings, weights: RubricWeights, boot: BootstrapSettings, unit: str) -> str:
    """The result's signature: the rubric weights, the bootstrap settings and, with both system and image
    labels, the strictly best / worst definition."""
    fields = [
        ("thumb", weights.signature_field()),
        ("boot", boot.signature_field(unit) if boot.samples else "none"),
    ]
    if ratings.systems is not None and ratings.images is not None:
        fields.append(("best", BEST_WORST_FIELD))
    return build_signature({}, fields)
