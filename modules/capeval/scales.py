"""Readable scales for the learned metrics: a fixed, strictly increasing map of their raw probabilities.

The learned metrics (the critics, LCEval) output P(human-written), and a well-trained one puts nearly every fluent,
relevant caption near 1: on COCO human captions scored against their own image's other captions, half of
``critic_ref``'s raw scores lie within .04 of 1 and half of ``lceval``'s within .07 (BENCHMARKS.md, "Score scales"), so
two captioners' corpus means differ in the third decimal. The readable scale spreads them out:

* **Meaning.** A readable score ``r`` in [0, 1] is, approximately, the share of *human* captions of images no
  benchmark uses that score below this caption when each is scored against its own image's other four captions (and,
  for a metric that reads the image, with its image): 0.5 is the median human caption, 0.9 beats nine in ten of them.
  The human captions, per metric, are named in the map (``fitted_on``): COCO train2014 captions for the metrics that
  read only text, Flickr8k dev images and their captions for those that read the image.
* **The map.** Fitted once (:func:`fit_scale`) from the quantiles of those raw scores at :data:`LEVELS`: the knots
  ``(logit(raw quantile), logit(level))``, joined by straight lines in log-odds, continued past the outer knots with the
  outer segments' slopes capped at 1 (so a tail never stretches what the raw scores left close together), and taken back
  through the logistic function. Raw 0 (a caption with no word) stays 0, raw 1 stays 1.
* **Monotone.** Strictly increasing on [0, 1]: every ranking, Kendall τ and pairwise accuracy of the raw scores is the
  readable scores' too (tested with float32 neighbours; checked on 2,000 Karpathy-test candidates' scores by
  ``benchmarks/fit_scales.py check``; computed in float64 through log-odds, two raw values only a few float64 ulps
  apart may meet). Pearson's r is not invariant under a non-affine map, so the benchmarks
  (:mod:`capeval.meta_evaluation.scorers`) read the raw scores unless told otherwise.
* **Choice.** The option ``<family>_scale`` (``critic_scale``, ``lceval_scale``, ``lceval_plus_scale``;
  ``--scale`` on the CLI): ``"auto"`` (default: the readable scale when the configured model is the shipped default
  the map was fitted for, identified by its weights' digest, else raw), ``"readable"`` (an error when there is no map),
  ``"raw"`` (the model's probabilities as before). The signature always says which (``scale=raw`` or
  ``scale=readable@<digest of the map>``). The corpus value is the mean of the per-caption values on the chosen scale:
  a mean of a non-linear map, so two corpora's means can come out in a different order on the two scales (measured:
  BENCHMARKS.md, "Readable scales"), while per-caption rankings never do.

The maps of the shipped defaults are ``capeval/data/readable_scales.json``, written by
``benchmarks/fit_scales.py`` (its command and the quantiles it measured are in BENCHMARKS.md, "Readable scales").
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

#: The option values: ``auto`` (readable when the configured model has a shipped map, else raw), ``readable``, ``raw``.
SCALE_CHOICES = ("auto", "readable", "raw")
DEFAULT_SCALE = "auto"
#: The quantile levels the shipped maps were fitted at.
LEVELS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995)
#: Steepest slope (in log-odds per log-odds) of the map beyond its outer knots.
TAIL_SLOPE_CAP = 1.0
#: Where the shipped maps are.
SCALES_FILE = Path(__file__).resolve().parent / "data" / "readable_scales.json"


def _logit(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def _expit(v: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(v)


@dataclass(frozen=True)
class ReadableScale:
    """One metric's map from raw probability to the readable scale (see the module docstring).

    ``levels``: the quantile levels, in (0, 1), strictly increasing; ``raw``: the raw scores' quantiles at those levels,
    in (0, 1), strictly increasing; ``metric`` / ``model`` / ``weights``: what the map was fitted for (the metric name,
    the catalog model and its weights' digest); ``fitted_on``: the captions, in words; ``n``: how many."""

    metric: str
    model: str
    weights: str
    levels: tuple[float, ...]
    raw: tuple[float, ...]
    fitted_on: str = ""
    n: int = 0

    def __post_init__(self) -> None:
        levels, raw = np.asarray(self.levels, dtype=float), np.asarray(self.raw, dtype=float)
        if levels.shape != raw.shape or len(levels) < 2:
            raise ValueError(f"a readable scale needs at least two knots, as many levels as raw quantiles "
                             f"({len(levels)} vs {len(raw)}).")
        for name, values in (("levels", levels), ("raw", raw)):
            if not (np.all(values > 0) and np.all(values < 1) and np.all(np.diff(values) > 0)):
                raise ValueError(f"a readable scale's {name} must be strictly increasing inside (0, 1).")

    @property
    def digest(self) -> str:
        """sha256 (first 8 hex digits) of the knots: the map's identity in signatures."""
        text = json.dumps([list(self.levels), list(self.raw)], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    @property
    def label(self) -> str:
        return f"readable@{self.digest}"

    def _segments(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        u, v = _logit(np.asarray(self.raw)), _logit(np.asarray(self.levels))
        slopes = np.diff(v) / np.diff(u)
        return u, v, min(float(slopes[0]), TAIL_SLOPE_CAP), min(float(slopes[-1]), TAIL_SLOPE_CAP)

    def __call__(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        """The readable values (float64, in [0, 1]) of raw ``scores`` in [0, 1]; ``ValueError`` for any other value."""
        raw = np.asarray(scores, dtype=np.float64)
        if raw.size and not (np.all(np.isfinite(raw)) and raw.min() >= 0.0 and raw.max() <= 1.0):
            bad = int(np.flatnonzero(~(np.isfinite(raw) & (raw >= 0) & (raw <= 1)))[0])
            raise ValueError(f"{self.metric}'s readable scale maps probabilities in [0, 1]; item {bad} is "
                             f"{raw.flat[bad]!r}.")
        u_knots, v_knots, low_slope, high_slope = self._segments()
        out = raw.copy()
        inside = (raw > 0) & (raw < 1)
        u = _logit(raw[inside])
        v = np.interp(u, u_knots, v_knots)
        below, above = u < u_knots[0], u > u_knots[-1]
        v[below] = v_knots[0] + low_slope * (u[below] - u_knots[0])
        v[above] = v_knots[-1] + high_slope * (u[above] - u_knots[-1])
        out[inside] = _expit(v)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "model": self.model, "weights": self.weights, "fitted_on": self.fitted_on,
                "n": self.n, "levels": list(self.levels), "raw": list(self.raw), "digest": self.digest}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ReadableScale":
        scale = cls(metric=data["metric"], model=data["model"], weights=data["weights"],
                    levels=tuple(float(x) for x in data["levels"]), raw=tuple(float(x) for x in data["raw"]),
                    fitted_on=data.get("fitted_on", ""), n=int(data.get("n", 0)))
        if data.get("digest") not in (None, scale.digest):
            raise ValueError(f"readable scale of {scale.metric}: the knots do not match the recorded digest "
                             f"{data['digest']} (a damaged file).")
        return scale


def fit_scale(raw_scores: Sequence[float] | np.ndarray, *, metric: str, model: str, weights: str,
              fitted_on: str = "", levels: Sequence[float] = LEVELS) -> ReadableScale:
    """The map whose knots are ``raw_scores``' quantiles (numpy's linear interpolation) at ``levels``: raw scores of
    human captions, each against its own image's other captions. Knots at raw 0 or 1, or not above the previous one
    (saturated probabilities), are left out; ``ValueError`` if fewer than two remain."""
    raw = np.asarray(raw_scores, dtype=np.float64)
    if raw.ndim != 1 or len(raw) < 2 or not np.all(np.isfinite(raw)):
        raise ValueError("fit_scale needs at least two finite raw scores.")
    quantiles = np.quantile(raw, np.asarray(levels, dtype=float))
    kept_levels, kept_raw = [], []
    for level, q in zip(levels, quantiles):
        if 0.0 < q < 1.0 and (not kept_raw or q > kept_raw[-1]):
            kept_levels.append(float(level))
            kept_raw.append(float(q))
    return ReadableScale(metric=metric, model=model, weights=weights, levels=tuple(kept_levels), raw=tuple(kept_raw),
                         fitted_on=fitted_on, n=len(raw))


def check_scale(value: Any, option: str) -> str:
    """``value`` if it is one of :data:`SCALE_CHOICES`, else ``ValueError`` naming ``option`` and the choices."""
    if value not in SCALE_CHOICES:
        raise ValueError(f"{option} must be one of {', '.join(map(repr, SCALE_CHOICES))}; got {value!r:.60}.")
    return value


@lru_cache(maxsize=4)
def _read(path: str) -> dict[str, ReadableScale]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {metric: ReadableScale.from_json(entry) for metric, entry in data["scales"].items()}


def shipped_scales(path: str | Path = SCALES_FILE) -> dict[str, ReadableScale]:
    """``{metric: ReadableScale}`` of the shipped defaults (empty when the file is missing)."""
    path = Path(path)
    return _read(str(path)) if path.is_file() else {}


def scale_for(metric: str, choice: str, *, option: str, model: str | None, weights: str | None,
              path: str | Path = SCALES_FILE) -> ReadableScale | None:
    """The map to apply to ``metric``'s scores under ``choice`` (``option``'s value), or ``None`` for raw.

    ``model`` / ``weights``: the configured model's catalog name (``None`` for a folder outside the catalog) and its
    weights' digest; a shipped map applies only to the model and weights it was fitted for. ``"readable"`` without
    such a map: ``ValueError`` saying why and naming ``"raw"``."""
    check_scale(choice, option)
    if choice == "raw":
        return None
    scale = shipped_scales(path).get(metric)
    if scale is not None and scale.model == model and scale.weights == weights:
        return scale
    if choice == "readable":
        have = f"one for {scale.model} (weights {scale.weights})" if scale else "none"
        raise ValueError(f"{option}='readable': capeval ships a readable scale for {metric} only with the model it was "
                         f"fitted for ({have}); the configured model is {model or 'a folder outside the catalog'} "
                         f"(weights {weights}). Use {option}='raw', or fit a map for your model with "
                         "capeval.scales.fit_scale on human captions' raw scores and apply it to the per-caption scores.")
    return None


def scale_field(scale: ReadableScale | None) -> str:
    """The signature's record: ``,scale=raw`` or ``,scale=readable@<digest>``."""
    return f",scale={scale.label if scale is not None else 'raw'}"
