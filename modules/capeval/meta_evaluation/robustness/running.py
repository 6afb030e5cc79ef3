"""A robustness run (:func:`run_robustness`): check the settings, prepare the data and RC's nearest images, score
every point ``(T, γ)`` of every metric (:func:`score_points`), then normalise each curve by the untransformed human
captions' mean and integrate it (:func:`curves_of`). The result: :class:`RobustnessResult`."""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.meta_evaluation.robustness.data import RobustnessData, flickr8k_split_data, subset
from capeval.meta_evaluation.robustness.scoring import score_point
from capeval.meta_evaluation.robustness.settings import (GAMMAS, SCORE_DEFINITION, check_gammas, check_transforms,
                                                    metric_key, trapezoid_auc)
from capeval.meta_evaluation.robustness.transforming import features_matrix, transform_captions
from capeval.meta_evaluation.score_cache import ScoreCache
from capeval.critic.transforms import RW_MIN_WORDS, TRANSFORMS, WP_MIN_WORDS, NearestImages
from capeval.progress import progress
from capeval.registry import available_metrics, metric_class

#: One curve point: ``(transform, γ)``; ``(None, 0.0)`` is the untransformed human captions.
Point = tuple[str | None, float]


@dataclass
class RobustnessResult:
    """One robustness run: ``curves[metric][transform]`` = ``{"gammas", "raw", "normalised", "auc"}``."""

    settings: dict[str, Any]
    curves: dict[str, dict[str, dict[str, Any]]]
    metrics: dict[str, dict[str, Any]]  # per metric: key, signature, human_mean, seconds
    examples: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def auc(self) -> dict[str, dict[str, float]]:
        """``{metric: {transform: R(Θ, T)}}``."""
        return {m: {t: c["auc"] for t, c in per.items()} for m, per in self.curves.items()}

    def to_json(self) -> dict[str, Any]:
        return {"settings": self.settings, "auc": self.auc,
                "results": {m: {**self.metrics[m], "transforms": self.curves[m]} for m in self.curves},
                "examples": self.examples, "notes": self.notes}


@dataclass
class Scores:
    """What :func:`score_points` measured: ``raw[key][point]`` the mean per-caption score, each key's signature
    and scoring time (seconds), and one transformed candidate per point (``examples``)."""

    raw: dict[str, dict[Point, float]]
    signatures: dict[str, str]
    seconds: dict[str, float]
    examples: dict[str, dict[str, str]]


def run_robustness(
    metrics: Sequence[str] | str,
    data: RobustnessData | None = None,
    *,
    transforms: Sequence[str] | str = TRANSFORMS,
    gammas: Sequence[float] = GAMMAS,
    seed: int = 0,
    root: str | Path | None = None,
    images_limit: int | None = None,
    split: str = "test",
    features: Any = None,
    use_cache: bool = True,
    cache: ScoreCache | None = None,
    metric_options: dict[str, Any] | None = None,
    show_progress: bool | None = None,
) -> RobustnessResult:
    """Robustness curves and AUCs of ``metrics`` (result keys) under ``transforms`` at ``gammas``.

    ``data``: default the Flickr8k ``split`` (:func:`flickr8k_split_data`: ``test``, or ``dev`` to choose between
    models without reading test; ``root``, ``images_limit``); given data is cut to its first
    ``images_limit`` images too. ``features``: RC's pooled image features (see :class:`RobustnessData`);
    default: the data's, else EfficientNet-Lite0 on the image files. ``use_cache=False`` (or ``cache=``)
    controls the score cache. ``metric_options`` go to ``capeval.score`` (``cleanup``, ``tokenizer`` ...).
    """
    keys = metric_keys(metrics)
    transforms = check_transforms(transforms)
    gammas = check_gammas(gammas)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}.")
    if data is None:
        data = flickr8k_split_data(split, root, images_limit)
    elif images_limit is not None:
        data = subset(data, images_limit)
    if "RW" in transforms and len(data.vocabulary) < 2:
        raise ValueError("RW needs a vocabulary of at least 2 words.")
    if len(data.captions) < 2 and "RC" in transforms:
        raise ValueError("RC needs at least 2 images.")
    needs_images = {key: bool(getattr(metric_class(family), "needs_images", False)) for key, family in keys.items()}
    image_files = candidate_images(data, needs_images)
    options = dict(metric_options or {})
    store = cache if cache is not None else (ScoreCache() if use_cache else None)
    feature_source = None
    nearest = None
    if "RC" in transforms:
        matrix, feature_source = features_matrix(data, features)
        nearest = NearestImages(data.images, matrix)
    try:
        scores = score_points(data, keys, transforms, gammas, seed, nearest, needs_images, image_files, store,
                              options, show_progress)
    finally:
        if store is not None and cache is None:
            store.close()
    curves, per_metric = curves_of(scores, keys, transforms, gammas, needs_images)
    notes = list(data.notes)
    if gammas[-1] < 1:
        notes.append(f"the gammas end at {gammas[-1]:g}: AUCs cover [0, {gammas[-1]:g}], not [0, 1]")
    settings = run_settings(data, transforms, gammas, seed, feature_source, options, store is not None)
    return RobustnessResult(settings, curves, per_metric, scores.examples, notes)


def metric_keys(metrics: Sequence[str] | str) -> dict[str, str]:
    """``{result key: metric family}`` of the requested metrics (comma-separated or a list), in order, each once."""
    names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else [str(m).strip() for m in metrics]
    names = [m for m in names if m]
    if not names:
        raise ValueError(f"no metric given; choose from {available_metrics()}.")
    keys: dict[str, str] = {}
    for name in names:
        family, key = metric_key(name)
        keys.setdefault(key, family)
    return keys


def candidate_images(data: RobustnessData, needs_images: dict[str, bool]) -> list[str] | None:
    """One image path per candidate where some metric reads images (``FileNotFoundError`` when one is missing),
    else ``None``."""
    if not any(needs_images.values()):
        return None
    missing = [i for i in data.images if (data.image_paths or {}).get(i) is None]
    if missing:
        raise FileNotFoundError(f"{', '.join(k for k, v in needs_images.items() if v)} need the images, but "
                                f"{len(missing)} image file(s) were not found (e.g. {missing[0]}).")
    image_per_candidate, _, _ = data.candidates()
    return [str(data.image_paths[i]) for i in image_per_candidate]  # type: ignore[index]


def score_points(data: RobustnessData, keys: dict[str, str], transforms: Sequence[str], gammas: Sequence[float],
                 seed: int, nearest: NearestImages | None, needs_images: dict[str, bool],
                 image_files: list[str] | None, store: ScoreCache | None, options: dict[str, Any],
                 show_progress: bool | None) -> Scores:
    """Every metric's mean per-caption score at the human captions and at each ``(T, γ > 0)``, in that order."""
    _, candidates, references = data.candidates()
    points: list[Point] = [(None, 0.0)] + [(t, g) for t in transforms for g in gammas[1:]]
    scores = Scores({k: {} for k in keys}, {}, {k: 0.0 for k in keys}, {"original": {"0": candidates[0]}})
    bar = progress(points, total=len(points), desc="robustness", enabled=show_progress)
    try:
        for transform, gamma in bar:
            bar.set_postfix_str(f"{transform or 'human'} γ={gamma:g}", refresh=False)
            cands = candidates if transform is None else transform_captions(data, transform, gamma, seed, nearest)
            if transform is not None:
                scores.examples.setdefault(transform, {})[f"{gamma:g}"] = cands[0]
            for key, family in keys.items():
                start = time.perf_counter()
                values, signature = score_point(family, key, cands, references,
                                                image_files if needs_images[key] else None, store, options,
                                                show_progress)
                scores.seconds[key] += time.perf_counter() - start
                scores.signatures[key] = signature
                scores.raw[key][(transform, gamma)] = float(np.mean(values))
    finally:
        bar.close()
    return scores


def curves_of(scores: Scores, keys: dict[str, str], transforms: Sequence[str], gammas: Sequence[float],
              needs_images: dict[str, bool]) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, Any]]]:
    """``(curves, per metric)``: each curve normalised by the human captions' mean (which must be positive) with
    its AUC; per metric its family, signature, human mean, whether it read images and its scoring seconds."""
    curves: dict[str, dict[str, dict[str, Any]]] = {}
    per_metric: dict[str, dict[str, Any]] = {}
    for key in keys:
        base = scores.raw[key][(None, 0.0)]
        if not (math.isfinite(base) and base > 0):
            raise ValueError(f"{key}: the untransformed human captions score {base:g} on average; the curves are "
                             "normalised by that mean, so it must be positive.")
        curves[key] = {}
        for t in transforms:
            values = [base] + [scores.raw[key][(t, g)] for g in gammas[1:]]
            normalised = [v / base for v in values]
            curves[key][t] = {"gammas": gammas, "raw": values, "normalised": normalised,
                              "auc": trapezoid_auc(gammas, normalised)}
        per_metric[key] = {"metric": keys[key], "signature": scores.signatures[key], "human_mean": base,
                           "needs_images": needs_images[key], "seconds": round(scores.seconds[key], 2)}
    return curves, per_metric


def run_settings(data: RobustnessData, transforms: list[str], gammas: list[float], seed: int,
                 feature_source: str | None, options: dict[str, Any], cached: bool) -> dict[str, Any]:
    """The JSON's ``settings``: the data, the protocol (references, transforms, gammas, seeding, vocabulary, minimum
    words, the score's definition) and the options."""
    _, candidates, _ = data.candidates()
    return {
        "data": data.source,
        "n_images": len(data.captions),
        "n_candidates": len(candidates),
        "references": "leave-one-out: each caption against its image's other captions",
        "transforms": transforms,
        "gammas": gammas,
        "seed": seed,
        "seeding": "random.Random(seed + 10000 * index of T in (RC, WP, RW) + round(1000 * gamma)) per (T, gamma)",
        "feature_encoder": feature_source,
        "rw_vocabulary": f"{len(data.vocabulary)} words",
        "min_words": {"WP": WP_MIN_WORDS, "RW": RW_MIN_WORDS},
        "score": SCORE_DEFINITION,
        "metric_options": options,
        "cache": cached,
    }
