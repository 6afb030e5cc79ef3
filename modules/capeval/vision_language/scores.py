"""The functional core of CLIP-S, RefCLIP-S, PAC-S and RefPAC-S: normalised features in, per-caption scores out.

Hessel et al. 2021 (clipscore.py) and Sarto et al. 2023 (PAC-S's ``pac_score.py`` / ``compute_metrics.py``):

* image-text score (CLIP-S with ``w = 2.5``, PAC-S with ``w = 2.0``): ``w · max(cos(image, prefix + candidate), 0)``,
  in [0, w] (:func:`image_text_scores`);
* text-text score: the largest cosine between the candidate and its references (all encoded with the same prefix),
  in [-1, 1], neither clipped nor scaled (:func:`reference_scores`);
* reference-augmented score (RefCLIP-S, RefPAC-S): the harmonic mean ``2·a·b / (a + b)`` of the two
  (:func:`harmonic_mean`). Where the reference divides by zero (``a + b = 0``: both 0, or ``b = −a``, a candidate
  whose image cosine is ``a/w`` and whose best reference cosine is ``−a``), capeval returns 0 instead of NaN or ±inf.

The corpus value of each is the mean of its per-caption values.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The weights ``w`` of the published metrics.
CLIP_S_WEIGHT = 2.5
PAC_S_WEIGHT = 2.0


def image_text_scores(image_features: np.ndarray, text_features: np.ndarray, weight: float) -> np.ndarray:
    """``weight · max(cos, 0)`` per row of two ``[N, D]`` arrays of L2-normalised features, in their dtype (float32;
    float16 for ``dtype="float16"``: clipscore.py's ``w*np.clip(np.sum(images * candidates, axis=1), 0, None)``)."""
    if image_features.shape != text_features.shape:
        raise ValueError(f"image features {image_features.shape} and text features {text_features.shape} differ.")
    return weight * np.clip(np.sum(image_features * text_features, axis=1), 0, None)


def reference_counts(owners: np.ndarray, n: int) -> np.ndarray:
    """How many references each of ``n`` candidates has (``owners[j]``: the candidate of reference ``j``);
    ``ValueError`` naming the first candidate without one."""
    counts = np.bincount(owners, minlength=n) if owners.size else np.zeros(n, dtype=np.int64)
    if (counts == 0).any():
        raise ValueError(f"references[{int(np.argmin(counts > 0))}] is empty; the reference-augmented score needs at "
                         "least one reference per prediction.")
    return counts


def reference_scores(candidate_features: np.ndarray, reference_features: np.ndarray,
                     owners: Sequence[int]) -> np.ndarray:
    """Per candidate, the largest cosine with its references: ``reference_features[j]`` belongs to candidate
    ``owners[j]``; every candidate needs at least one (``ValueError`` naming the first without)."""
    owners = np.asarray(owners, dtype=np.int64)
    n = candidate_features.shape[0]
    reference_counts(owners, n)
    sims = np.sum(candidate_features[owners] * reference_features, axis=1)
    best = np.full(n, -np.inf, dtype=sims.dtype)
    np.maximum.at(best, owners, sims)
    return best


def harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``2ab / (a + b)`` elementwise, 0 where ``a + b == 0`` (see the module docstring); in the inputs' float dtype
    (float16 ones stay float16, as clipscore.py's GPU path computes it), float32 for integers."""
    a, b = np.asarray(a), np.asarray(b)
    denominator = a + b
    dtype = np.result_type(a, b)
    out = np.zeros(np.broadcast(a, b).shape, dtype=dtype if np.issubdtype(dtype, np.floating) else np.float32)
    np.divide(2 * a * b, denominator, out=out, where=denominator != 0)
    return out


__all__ = ["CLIP_S_WEIGHT", "PAC_S_WEIGHT", "harmonic_mean", "image_text_scores", "reference_counts", "reference_scores"]
