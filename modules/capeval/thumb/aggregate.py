"""System-level THumB aggregation: means, bootstrap confidence intervals, strictly best / worst.

* **Means** are over a system's captions (Table 2 of Kasai et al. 2022). Penalties are reported as
  mean magnitudes (≥ 0), as in the paper's ``Flu.↓ Con.↓ Inc.↓`` columns.
* **Confidence intervals**: bootstrap resampling of *images* with replacement (Koehn 2004): each of
  ``samples`` replicates draws as many images as there are, and a system's replicate mean is the mean
  of its captions on the drawn images (an image drawn twice counts twice). The interval is the
  ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of the replicate means (90 %: 5th and 95th
  percentiles). Without image labels every caption is its own unit.
* **Strictly best / worst** (Table 3): on an image, a system is *strictly best* when its P and its R
  are both ≥ those of every other system that captioned the image (best in *both* P and R; the
  "strictly" refers to "both", not to a strict inequality), and *strictly worst* when both are ≤.
  Ties count for every tied system, so an image where all captions share P and R counts as best
  and worst for each. Images with fewer than two systems are skipped. This definition reproduces
  the paper's "# Best" row exactly (327/180/161/112/74); see ``docs/benchmarks/thumb.md`` for the
  "# Worst" row.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from capeval.progress import progress

#: Default number of bootstrap replicates (Koehn 2004 uses 1,000).
DEFAULT_SAMPLES = 1000
#: Default seed of the bootstrap random generator.
DEFAULT_SEED = 12345
#: Default confidence level (THumB reports 90 % intervals).
DEFAULT_LEVEL = 0.90


@dataclass(frozen=True)
class BootstrapSettings:
    """Bootstrap settings. ``samples`` ≥ 1 (0 disables intervals), ``level`` in (0, 1)."""

    samples: int = DEFAULT_SAMPLES
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL

    def __post_init__(self) -> None:
        if isinstance(self.samples, bool) or not isinstance(self.samples, (int, np.integer)) or self.samples < 0:
            raise ValueError(f"bootstrap_samples must be an integer ≥ 0 (0 = no intervals); got {self.samples!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed must be an integer ≥ 0; got {self.seed!r}.")
        if isinstance(self.level, bool) or not isinstance(self.level, (int, float)) or not 0.0 < self.level < 1.0:
            raise ValueError(f"confidence_level must be in (0, 1), e.g. 0.9 for 90 %; got {self.level!r}.")

    def signature_field(self, unit: str) -> str:
        return f"n={self.samples},seed={self.seed},ci={self.level:g},unit={unit}"


def group_indices(labels: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Return (distinct labels in order of first appearance, integer code per item)."""
    order: dict[str, int] = {}
    codes = np.empty(len(labels), dtype=np.int64)
    for i, label in enumerate(labels):
        codes[i] = order.setdefault(label, len(order))
    return list(order), codes


def bootstrap_mean_intervals(
    values: np.ndarray,
    units: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    settings: BootstrapSettings,
    progress_bar: bool | None = None,
) -> np.ndarray:
    """Bootstrap intervals of the mean of ``values`` within each group, resampling units.

    Args:
        values: float per item (e.g. per-caption totals).
        units: integer resampling unit per item (image code, or item index), codes 0..U-1.
        groups: integer group per item (system code; all zeros for one overall group), 0..G-1.
        n_groups: G.
        settings: number of replicates, seed and level.

    Returns:
        ``(G, 2)`` array of (low, high). Replicates in which a group has no item are left out of that
        group's quantiles (impossible when every group covers every unit).

    Raises:
        ValueError: when a group has no usable replicate.
    """
    n_units = int(units.max()) + 1
    sums = np.zeros((n_groups, n_units))
    counts = np.zeros((n_groups, n_units))
    np.add.at(sums, (groups, units), values)
    np.add.at(counts, (groups, units), 1.0)
    rng = np.random.default_rng(settings.seed)
    means = np.empty((n_groups, settings.samples))
    chunk = 200
    starts = range(0, settings.samples, chunk)
    for start in progress(starts, total=len(starts), desc="bootstrap", enabled=progress_bar):
        stop = min(start + chunk, settings.samples)
        draw = rng.integers(0, n_units, size=(stop - start, n_units))
        # Multiplicity of each unit in each replicate, then weighted sums per group.
        weights = np.zeros((stop - start, n_units))
        np.add.at(weights, (np.arange(stop - start)[:, None], draw), 1.0)
        rep_sums = weights @ sums.T  # (chunk, G)
        rep_counts = weights @ counts.T
        with np.errstate(invalid="ignore", divide="ignore"):
            means[:, start:stop] = (rep_sums / rep_counts).T
    alpha = (1.0 - settings.level) / 2.0
    out = np.empty((n_groups, 2))
    for g in range(n_groups):
        valid = means[g][np.isfinite(means[g])]
        if valid.size == 0:
            raise ValueError(f"group {g} has no captions in any bootstrap replicate; cannot compute an interval.")
        out[g] = np.quantile(valid, [alpha, 1.0 - alpha])
    return out


@dataclass
class BestWorst:
    """Strictly best / worst counts per system and how many images were compared per system."""

    best: dict[str, int]
    worst: dict[str, int]
    compared: dict[str, int]


def strictly_best_worst(
    precision: np.ndarray,
    recall: np.ndarray,
    systems: Sequence[str],
    images: Sequence[str],
    describe=None,
) -> BestWorst:
    """Count, per system, the images on which it is strictly best / strictly worst (see module doc).

    Raises:
        ValueError: when one system has two captions for the same image (naming both captions).
    """
    names, _ = group_indices(systems)
    per_image: dict[str, dict[str, int]] = {}
    for i, (system, image) in enumerate(zip(systems, images)):
        slot = per_image.setdefault(image, {})
        if system in slot:
            first = slot[system]
            what = (describe(first), describe(i)) if describe else (f"caption {first}", f"caption {i}")
            raise ValueError(
                f"{what[1]}: system {system!r} already has {what[0]} for image {image!r}; strictly best/worst "
                "counts need one caption per system and image (remove the duplicate or give distinct images)."
            )
        slot[system] = i
    best = dict.fromkeys(names, 0)
    worst = dict.fromkeys(names, 0)
    compared = dict.fromkeys(names, 0)
    for slot in per_image.values():
        if len(slot) < 2:
            continue
        idx = np.fromiter(slot.values(), dtype=np.int64)
        p, r = precision[idx], recall[idx]
        p_max, p_min, r_max, r_min = p.max(), p.min(), r.max(), r.min()
        for system, i in slot.items():
            compared[system] += 1
            if precision[i] >= p_max and recall[i] >= r_max:
                best[system] += 1
            if precision[i] <= p_min and recall[i] <= r_min:
                worst[system] += 1
    return BestWorst(best, worst, compared)
