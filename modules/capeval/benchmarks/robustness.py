"""Robustness of a caption metric to pathological transformations (Cui et al. 2018, §3.4, Fig. 6).

``capeval robustness`` runs this. The data ``D`` is the Flickr8k test split (1,000 images × 5 human captions,
images in the order of ``Flickr_8k.testImages.txt``; ``images_limit`` keeps the first N). Every human caption
``c`` of image ``i`` is a candidate, scored against the image's *other* captions as references (leave-one-out:
4 references on Flickr8k). For a transformation ``T`` (:mod:`capeval.critic.transforms`: RC, WP, RW) and a
strength ``γ`` every candidate is replaced by ``T(c, γ)`` (``γ = 0``: unchanged) and the metric scores all
candidates in one ``capeval.score`` call (so CIDEr-D's document frequencies come from the same references at
every point). Then

* ``s(Θ, T(D, γ))`` = mean per-caption score of the metric's result key, divided by the mean at ``γ = 0``
  (the untransformed human captions score 1);
* ``R(Θ, T)`` = the area under that normalised curve over the gammas (trapezoid rule; the default gammas
  0, 0.1, ..., 1 cover [0, 1]). Lower = the metric punishes the transformation more = more robust.

**Normalised score, not 1 − score.** The paper's §3.4 defines ``s`` for a learned critic whose output is
P(human): a human caption contributes ``score`` and a generated one ``1 − score``, and it calls transformed
captions "generated". Its Fig. 6 nevertheless plots, for every metric, the mean score of the transformed
captions normalised so that the human captions score 1 (curves start at 1 and fall; "the lower the score the
more robust"), which is the only reading that works for rule-based metrics without a P(human) scale. That is
what is computed here: the normalised mean score, transformed captions taken as they are.

Transformations (their strength rules are in :mod:`capeval.critic.transforms`):

* **RC**: the candidate is replaced by a human caption of an image among the ``γ`` fraction of ``D``'s other
  images nearest to its own image (:class:`~capeval.critic.transforms.NearestImages` on pooled image features:
  by default EfficientNet-Lite0 at 224² from :func:`capeval.models.image_encoder.load_image_encoder`,
  disk-cached; or given features);
* **WP**: ``round(γ n)`` (≥ 2) of the candidate's whitespace words permuted;
* **RW**: ``round(γ n)`` (≥ 2, the paper's "from 2 to all words"; ≥ 1 before 2026-11-25) words replaced by
  words drawn uniformly from a vocabulary: the distinct
  lower-cased whitespace tokens of the Flickr8k *train* captions that hold a letter or digit (punctuation
  tokens such as ``.`` are not words), never the test captions.

Seeding: the candidates of one point ``(T, γ)`` are drawn with ``random.Random(seed + k)``,
``k = 10,000 × index of T in ("RC", "WP", "RW") + round(1,000 γ)``, going through the candidates in order;
so every point can be reproduced alone, whatever other gammas or transformations a run asks for.

Metrics are any registered capeval metric's result key (``bleu_4``, ``cider_d``, ``meteor``, ``spice`` ...);
a metric whose class has ``needs_images = True`` also gets ``images=`` (one image path per candidate). Scores
go through the benchmark score cache (:mod:`capeval.benchmarks.score_cache`), so a re-run or a run adding
a metric recomputes nothing else.

>>> from capeval.benchmarks.robustness import run_robustness, plot_robustness   # doctest: +SKIP
>>> result = run_robustness(["bleu_4", "cider_d"], images_limit=100)
>>> result.auc["bleu_4"]["WP"]
"""
from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.benchmarks.files import FLICKR8K_IMAGE_DIRS, image_finder, require_file, resolve_root
from capeval.benchmarks.score_cache import ScoreCache, data_fingerprint, file_fingerprint, make_key
from capeval.critic.transforms import (RW_MIN_WORDS, TRANSFORMS, WP_MIN_WORDS, NearestImages, random_caption,
                                      random_words, word_permutation)
from capeval.progress import progress
from capeval.registry import ALIASES, available_metrics, metric_class, resolve

#: The default strengths: 0, 0.1, ..., 1.0.
GAMMAS = tuple(round(0.1 * k, 1) for k in range(11))
TRANSFORM_NAMES = {"RC": "human caption of a similar image", "WP": "words permuted", "RW": "random words"}
#: The normalisation and AUC in words (the JSON's ``settings["score"]``).
SCORE_DEFINITION = ("mean per-caption score of the transformed candidates divided by the mean of the untransformed "
                    "human captions (gamma = 0), i.e. the curve of the paper's Fig. 6; not 1 - score; "
                    "AUC by the trapezoid rule over the gammas; lower = more robust")


# -- data ---------------------------------------------------------------------------------------------------

@dataclass
class RobustnessData:
    """The data ``D``: each image's human captions (≥ 2 each: one is the candidate, the others its references).

    ``vocabulary``: RW's replacement words. ``image_paths``: per image, for RC features computed by the encoder
    and for metrics that need images (``None`` when there are none). ``features``: optional pooled features
    for RC (``[n, d]`` in the order of ``captions``, a ``{image: vector}`` mapping, a
    :class:`~capeval.models.feature_table.FeatureTable`, or an encoder with ``encode(paths, kind="pooled")``).
    """

    captions: dict[str, list[str]]
    vocabulary: list[str]
    image_paths: dict[str, Path] | None = None
    features: Any = None
    source: str = "given captions"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.captions = {str(k): [str(c) for c in v] for k, v in self.captions.items()}
        if not self.captions:
            raise ValueError("the robustness data holds no images.")
        for image, caps in self.captions.items():
            if len(caps) < 2:
                raise ValueError(f"image {image!r} has {len(caps)} caption(s); each image needs at least 2 (one "
                                 "candidate, the others its references).")
            blank = [j for j, c in enumerate(caps) if not c.strip()]
            if blank:
                raise ValueError(f"image {image!r}: caption {blank[0]} is empty.")
        self.vocabulary = list(self.vocabulary)

    @property
    def images(self) -> list[str]:
        return list(self.captions)

    def candidates(self) -> tuple[list[str], list[str], list[list[str]]]:
        """``(image per candidate, candidates, references)``: every caption against its image's other captions."""
        images, cands, refs = [], [], []
        for image, caps in self.captions.items():
            for j, c in enumerate(caps):
                images.append(image)
                cands.append(c)
                refs.append(caps[:j] + caps[j + 1:])
        return images, cands, refs


def train_vocabulary(captions: Mapping[str, Sequence[str]] | Sequence[str]) -> list[str]:
    """RW's vocabulary: the distinct lower-cased whitespace tokens holding a letter or digit, sorted."""
    texts = [c for caps in captions.values() for c in caps] if isinstance(captions, Mapping) else list(captions)
    words = {w.lower() for text in texts for w in text.split()}
    return sorted(w for w in words if any(ch.isalnum() for ch in w))


#: Flickr8k splits the robustness test reads (listed in ``Flickr_8k.<split>Images.txt``): ``test`` (the reported
#: numbers) and ``dev`` (for choosing a model without looking at test).
SPLITS = ("test", "dev")


def flickr8k_split_data(split: str = "test", root: str | Path | None = None,
                        images_limit: int | None = None) -> RobustnessData:
    """A Flickr8k split (images in its listing's order, the first ``images_limit``), its 5 captions per image,
    image paths (``flickr8k/images-224`` or an original-resolution folder), RW vocabulary from train."""
    from capeval.corpora.captions import flickr8k_captions

    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}.")
    base = resolve_root(root)
    listing = require_file(base / "flickr8k" / f"Flickr_8k.{split}Images.txt", f"one {split} image file name per line")
    order = [ln.strip() for ln in listing.read_text(encoding="utf-8").splitlines() if ln.strip()]
    captions = flickr8k_captions(split, base)
    missing = [name for name in order if name not in captions]
    if missing:
        raise ValueError(f"{len(missing)} Flickr8k {split} images have no captions in Flickr8k.token.txt "
                         f"(e.g. {missing[0]}).")
    if images_limit is not None:
        order = order[:_check_limit(images_limit)]
    find = image_finder(base, None, FLICKR8K_IMAGE_DIRS)
    paths = {name: find(name) for name in order}
    found = [p for p in paths.values() if p is not None]
    notes = []
    if len(found) < len(paths):
        notes.append(f"{len(paths) - len(found)} of {len(paths)} images not found under {base / 'flickr8k'}")
    return RobustnessData(
        captions={name: captions[name] for name in order},
        vocabulary=train_vocabulary(flickr8k_captions("train", base)),
        image_paths=paths if found else None,
        source=f"Flickr8k {split} ({base})",
        notes=notes,
    )


def flickr8k_test_data(root: str | Path | None = None, images_limit: int | None = None) -> RobustnessData:
    """Flickr8k test: :func:`flickr8k_split_data` with ``split="test"``."""
    return flickr8k_split_data("test", root, images_limit)


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"images_limit must be an integer ≥ 2, got {limit!r}.")
    return limit


# -- settings checks ----------------------------------------------------------------------------------------

def check_gammas(gammas: Sequence[float]) -> list[float]:
    """The gammas as floats: in [0, 1], strictly increasing, starting at 0 (``ValueError`` otherwise)."""
    try:
        values = [float(g) for g in gammas]
    except (TypeError, ValueError):
        raise ValueError(f"gammas must be numbers in [0, 1], got {gammas!r}.") from None
    if len(values) < 2:
        raise ValueError(f"gammas need at least two values (0 and a larger one), got {values}.")
    bad = [g for g in values if not (math.isfinite(g) and 0 <= g <= 1)]
    if bad:
        raise ValueError(f"gammas must lie in [0, 1]; got {bad[0]:g} in {values}.")
    if values[0] != 0:
        raise ValueError(f"gammas must start at 0 (the untransformed captions that every curve is normalised by); "
                         f"got {values}.")
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"gammas must be strictly increasing, got {values}.")
    return values


def parse_gammas(text: str) -> list[float]:
    """``"0,0.1,...,1"`` → checked floats (also ``"0:1:0.1"``: start:stop:step, stop included)."""
    text = str(text).strip()
    if text.count(":") == 2:
        try:
            start, stop, step = (float(x) for x in text.split(":"))
        except ValueError:
            raise ValueError(f"gammas range must be start:stop:step numbers, got {text!r}.") from None
        if step <= 0:
            raise ValueError(f"gammas step must be positive, got {text!r}.")
        n = int(math.floor((stop - start) / step + 1e-9))
        return check_gammas([round(start + k * step, 10) for k in range(n + 1)])
    try:
        numbers = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"gammas must be numbers separated by commas, got {text!r}.") from None
    return check_gammas(numbers)


def check_transforms(transforms: Sequence[str] | str) -> list[str]:
    names = [t for t in transforms.split(",")] if isinstance(transforms, str) else list(transforms)
    out = []
    for t in names:
        key = str(t).strip().upper()
        if key not in TRANSFORMS:
            raise ValueError(f"unknown transformation {t!r}; choose from {', '.join(TRANSFORMS)} "
                             f"({'; '.join(f'{k}: {v}' for k, v in TRANSFORM_NAMES.items())}).")
        if key not in out:
            out.append(key)
    if not out:
        raise ValueError(f"no transformation given; choose from {', '.join(TRANSFORMS)}.")
    return out


def metric_key(name: str) -> tuple[str, str]:
    """``(metric family, result key)`` of a requested metric: ``"cider"`` → ``("cider_d", "cider_d")``.

    A family with several keys and none of its own name (``bleu``) must be given as one key (``bleu_4``).
    """
    raw = str(name).strip()
    ((family, keys),) = resolve([raw]).items()  # ValueError listing every valid name
    canonical = ALIASES.get(raw.lower(), raw.lower())
    if canonical in keys:
        return family, canonical
    if len(keys) == 1:
        return family, keys[0]
    raise ValueError(f"metric {raw!r} has several result keys ({', '.join(keys)}); name one, e.g. {keys[-1]}. "
                     f"Valid names: {available_metrics()}.")


def point_seed(seed: int, transform: str, gamma: float) -> int:
    """The seed of one curve point: ``seed + 10,000 × index(transform) + round(1,000 γ)``."""
    return int(seed) + 10_000 * TRANSFORMS.index(transform) + int(round(1000 * gamma))


def trapezoid_auc(gammas: Sequence[float], values: Sequence[float]) -> float:
    """Area under ``values`` over ``gammas`` by the trapezoid rule."""
    if len(gammas) != len(values):
        raise ValueError(f"{len(gammas)} gammas but {len(values)} values.")
    return float(sum((g1 - g0) * (v0 + v1) / 2 for g0, g1, v0, v1 in zip(gammas, gammas[1:], values, values[1:])))


# -- features and transformations ---------------------------------------------------------------------------

def _features_matrix(data: RobustnessData, features: Any = None) -> tuple[np.ndarray, str]:
    """Pooled features ``[n images, d]`` in ``data.images`` order and a description of where they came from."""
    names = data.images
    source = features if features is not None else data.features
    if source is None:
        if data.image_paths is None or any(data.image_paths.get(n) is None for n in names):
            missing = [n for n in names if (data.image_paths or {}).get(n) is None]
            raise FileNotFoundError(f"RC needs image features, but {len(missing)} image file(s) were not found "
                                    f"(e.g. {missing[0]}); give features or leave RC out (--transforms WP,RW).")
        from capeval.models.image_encoder import load_image_encoder

        source = load_image_encoder()
    if hasattr(source, "encode"):  # an image encoder (or a fake one)
        paths = [str((data.image_paths or {})[n]) for n in names]
        matrix = source.encode(paths, kind="pooled")
        where = str(getattr(source, "settings", type(source).__name__))
    elif hasattr(source, "rows"):  # a FeatureTable
        matrix = source.pooled().rows(names)  # grid features [n, regions, channels] averaged over the regions
        where = f"feature table ({getattr(source, 'settings', '') or 'no settings'})"
    elif isinstance(source, Mapping):
        missing = [n for n in names if n not in source]
        if missing:
            raise KeyError(f"no features for image {missing[0]!r} ({len(missing)} missing).")
        matrix = np.stack([np.asarray(source[n], dtype=np.float32).reshape(-1) for n in names])
        where = "given features (by image)"
    else:
        matrix = source
        where = "given features (array)"
    matrix = np.asarray(matrix.float().numpy() if hasattr(matrix, "numpy") and hasattr(matrix, "float") else matrix,
                        dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(names):
        raise ValueError(f"features must be [{len(names)} images, d], got shape {matrix.shape}.")
    return matrix, where


def transform_captions(data: RobustnessData, transform: str, gamma: float, seed: int = 0,
                       nearest: NearestImages | None = None) -> list[str]:
    """Every candidate of ``data`` (in :meth:`RobustnessData.candidates` order) transformed by ``transform`` at
    ``gamma``, drawn with ``random.Random(point_seed(seed, transform, gamma))``. RC needs ``nearest``."""
    (transform,) = check_transforms([transform])
    images, cands, _ = data.candidates()
    if gamma == 0:
        return cands
    rng = random.Random(point_seed(seed, transform, gamma))
    if transform == "WP":
        return [word_permutation(c, gamma, rng) for c in cands]
    if transform == "RW":
        return [random_words(c, gamma, rng, data.vocabulary) for c in cands]
    if nearest is None:
        raise ValueError("RC needs nearest= (NearestImages over the data's image features).")
    return [random_caption(i, gamma, rng, data.captions, nearest, original=c) for i, c in zip(images, cands)]


# -- scoring ------------------------------------------------------------------------------------------------

def _score(family: str, key: str, predictions: list[str], references: list[list[str]], images: list[str] | None,
           cache: ScoreCache | None, options: dict[str, Any], show_progress: bool | None) -> tuple[np.ndarray, str]:
    """Per-caption scores of ``key`` (cached) and the signature; ``images`` only for metrics that need them."""
    from capeval.benchmarks.scorers import _capeval_fingerprint, _valid_capeval_entry, score_items

    if images is None:
        items = score_items(key, predictions, references, cache=cache, options=options, show_progress=show_progress)
        return items[key].values, items[key].signature
    from capeval._version import __version__
    from capeval.benchmarks.scorers import raw_scale_options

    options = {**dict.fromkeys(raw_scale_options(family), "raw"), **(options or {})}
    cache_key = make_key(kind="capeval", metric=family, options=options, version=__version__,
                         code=_capeval_fingerprint(family), data=data_fingerprint(predictions, references),
                         images=list(images), image_content=file_fingerprint(sorted(set(images))))
    cached = cache.get(cache_key) if cache else None
    if cached is not None and not _valid_capeval_entry(cached, [key], len(predictions)):
        cached = None
    if cached is None:
        from capeval.api import score

        result = score(predictions, references, metrics=[family], progress=show_progress, images=images, **options)
        cached = {"per_caption": result["per_caption"], "signature": result["signature"]}
        if cache:
            cache.put(cache_key, cached)
    return np.asarray(cached["per_caption"][key], dtype=float), cached["signature"]


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
    names = [m.strip() for m in metrics.split(",")] if isinstance(metrics, str) else [str(m).strip() for m in metrics]
    names = [m for m in names if m]
    if not names:
        raise ValueError(f"no metric given; choose from {available_metrics()}.")
    keys = {}
    for name in names:
        family, key = metric_key(name)
        keys.setdefault(key, family)
    transforms = check_transforms(transforms)
    gammas = check_gammas(gammas)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}.")
    if data is None:
        data = flickr8k_split_data(split, root, images_limit)
    elif images_limit is not None:
        kept = list(data.captions)[:_check_limit(images_limit)]
        data = RobustnessData({k: data.captions[k] for k in kept}, data.vocabulary,
                              None if data.image_paths is None else {k: data.image_paths.get(k) for k in kept},
                              _subset_features(data.features, data.images, kept), data.source, list(data.notes))
    if "RW" in transforms and len(data.vocabulary) < 2:
        raise ValueError("RW needs a vocabulary of at least 2 words.")
    if len(data.captions) < 2 and "RC" in transforms:
        raise ValueError("RC needs at least 2 images.")
    needs_images = {key: bool(getattr(metric_class(family), "needs_images", False)) for key, family in keys.items()}
    image_per_candidate, candidates, references = data.candidates()
    if any(needs_images.values()):
        missing = [i for i in data.images if (data.image_paths or {}).get(i) is None]
        if missing:
            raise FileNotFoundError(f"{', '.join(k for k, v in needs_images.items() if v)} need the images, but "
                                    f"{len(missing)} image file(s) were not found (e.g. {missing[0]}).")
        image_files = [str(data.image_paths[i]) for i in image_per_candidate]
    options = dict(metric_options or {})
    store = cache if cache is not None else (ScoreCache() if use_cache else None)

    feature_source = None
    nearest = None
    if "RC" in transforms:
        matrix, feature_source = _features_matrix(data, features)
        nearest = NearestImages(data.images, matrix)

    points = [(None, 0.0)] + [(t, g) for t in transforms for g in gammas[1:]]
    raw: dict[str, dict[tuple[str | None, float], float]] = {k: {} for k in keys}
    signatures: dict[str, str] = {}
    seconds = {k: 0.0 for k in keys}
    examples: dict[str, dict[str, str]] = {"original": {"0": candidates[0]}}
    bar = progress(points, total=len(points), desc="robustness", enabled=show_progress)
    try:
        for transform, gamma in bar:
            bar.set_postfix_str(f"{transform or 'human'} γ={gamma:g}", refresh=False)
            cands = candidates if transform is None else transform_captions(data, transform, gamma, seed, nearest)
            if transform is not None:
                examples.setdefault(transform, {})[f"{gamma:g}"] = cands[0]
            for key, family in keys.items():
                start = time.perf_counter()
                values, signature = _score(family, key, cands, references,
                                           image_files if needs_images[key] else None, store, options, show_progress)
                seconds[key] += time.perf_counter() - start
                signatures[key] = signature
                raw[key][(transform, gamma)] = float(np.mean(values))
    finally:
        bar.close()
        if store is not None and cache is None:
            store.close()

    curves: dict[str, dict[str, dict[str, Any]]] = {}
    per_metric: dict[str, dict[str, Any]] = {}
    for key in keys:
        base = raw[key][(None, 0.0)]
        if not (math.isfinite(base) and base > 0):
            raise ValueError(f"{key}: the untransformed human captions score {base:g} on average; the curves are "
                             "normalised by that mean, so it must be positive.")
        curves[key] = {}
        for t in transforms:
            values = [base] + [raw[key][(t, g)] for g in gammas[1:]]
            normalised = [v / base for v in values]
            curves[key][t] = {"gammas": gammas, "raw": values, "normalised": normalised,
                              "auc": trapezoid_auc(gammas, normalised)}
        per_metric[key] = {"metric": keys[key], "signature": signatures[key], "human_mean": base,
                           "needs_images": needs_images[key], "seconds": round(seconds[key], 2)}

    notes = list(data.notes)
    if gammas[-1] < 1:
        notes.append(f"the gammas end at {gammas[-1]:g}: AUCs cover [0, {gammas[-1]:g}], not [0, 1]")
    settings = {
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
        "cache": store is not None,
    }
    return RobustnessResult(settings, curves, per_metric, examples, notes)


def _subset_features(features: Any, names: list[str], kept: list[str]) -> Any:
    """Cut array features (rows in ``names`` order) to ``kept``; mappings, tables and encoders stay as they are."""
    if features is None or isinstance(features, Mapping) or hasattr(features, "encode") or hasattr(features, "rows"):
        return features
    return features[: len(kept)]


# -- reports ------------------------------------------------------------------------------------------------

def auc_table(result: RobustnessResult) -> tuple[list[str], list[list[Any]]]:
    """``(headers, rows)``: one row per metric, its human-caption mean and its AUC per transformation."""
    transforms = result.settings["transforms"]
    headers = ["metric", "human mean", *(f"AUC {t}" for t in transforms)]
    rows = [[m, result.metrics[m]["human_mean"], *(result.curves[m][t]["auc"] for t in transforms)]
            for m in result.curves]
    return headers, rows


def render(result: RobustnessResult, fmt: str = "text") -> str:
    """The AUC table (``fmt`` = ``"text"`` or ``"markdown"``) with the settings underneath."""
    from capeval.render import markdown_table, text_table

    headers, rows = auc_table(result)
    table = (text_table if fmt == "text" else markdown_table)(headers, rows, digits=3)
    s = result.settings
    lines = [f"robustness (Cui et al. 2018 §3.4): normalised mean score AUC over gamma, lower = more robust", table,
             f"data: {s['data']}, {s['n_images']} images, {s['n_candidates']} candidates (leave-one-out references)",
             f"gammas: {', '.join(f'{g:g}' for g in s['gammas'])}; seed {s['seed']}"]
    if s.get("feature_encoder"):
        lines.append(f"RC features: {s['feature_encoder']}")
    sigs = sorted({m['signature'] for m in result.metrics.values()})
    if fmt == "text":
        from capeval.render import fit_text
        from capeval.signature import merged_signature_lines

        lines += merged_signature_lines(sigs)
        lines += [f"note: {n}" for n in result.notes]
        return fit_text("\n".join(lines))
    lines += [f"signature: {sig}" for sig in sigs]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def plot_robustness(result: RobustnessResult, path: str | Path) -> Path:
    """PNG: one panel per transformation, one normalised curve per metric, the AUC in the legend (Fig. 6 layout)."""
    from capeval.benchmarks.report import pyplot, save_figure

    plt = pyplot()
    transforms = result.settings["transforms"]
    fig, axes = plt.subplots(1, len(transforms), figsize=(4.2 * len(transforms), 3.6), squeeze=False)
    for ax, t in zip(axes[0], transforms):
        for m, per in result.curves.items():
            c = per[t]
            ax.plot(c["gammas"], c["normalised"], marker="o", markersize=3, label=f"{m} ({c['auc']:.3f})")
        ax.set_title(f"T_{t}: {TRANSFORM_NAMES[t]}", fontsize=10)
        ax.set_xlabel("γ (fraction transformed)")
        ax.set_ylabel("normalised mean score")
        ax.set_xlim(0, max(1.0, result.settings["gammas"][-1]))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="metric (AUC)", title_fontsize=8)
    fig.suptitle(f"Robustness on {result.settings['n_images']} images (lower AUC = more robust)", fontsize=10)
    return save_figure(fig, path)


__all__ = [
    "GAMMAS", "SPLITS", "TRANSFORMS", "RobustnessData", "RobustnessResult", "auc_table", "check_gammas",
    "check_transforms", "flickr8k_split_data", "flickr8k_test_data", "metric_key", "parse_gammas", "plot_robustness",
    "point_seed", "render", "run_robustness", "train_vocabulary", "transform_captions", "trapezoid_auc",
]
