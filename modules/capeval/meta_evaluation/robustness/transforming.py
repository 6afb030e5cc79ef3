"""The transformations of a robustness run: RC's pooled image features (:func:`features_matrix`, from the data, given
features or EfficientNet-Lite0 on the image files) and every candidate transformed at one point ``(T, γ)``
(:func:`transform_captions`)."""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import numpy as np

from capeval.meta_evaluation.robustness.data import RobustnessData
from capeval.meta_evaluation.robustness.settings import check_transforms, point_seed
from capeval.critic.transforms import NearestImages, random_caption, random_words, word_permutation


def features_matrix(data: RobustnessData, features: Any = None) -> tuple[np.ndarray, str]:
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

