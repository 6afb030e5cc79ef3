"""The pathological transformations of Cui et al. (2018, §3.3): the critic's hard negatives and the robustness test.

Each takes a strength ``gamma`` in [0, 1] (the paper's γ%: 0 = the caption unchanged, 1 = the strongest
transformation) and a ``random.Random`` (so results are reproducible from a seed):

* :func:`word_permutation` (WP): permute ``round(gamma * n)`` of the caption's ``n`` words (at least 2 when
  ``gamma > 0``), so that the result differs from the caption whenever two of those words differ;
* :func:`random_words` (RW): replace ``round(gamma * n)`` words (at least 2 when ``gamma > 0``: the paper's "from 2
  to all words"; capeval replaced at least 1 until 2026-11-25) by words drawn from ``vocabulary`` other than the
  word replaced;
* :func:`random_caption` (RC): a human caption of another image, drawn from the ``gamma`` fraction of images
  nearest to this one by image feature (:class:`NearestImages`; at least the single nearest one).

Words are whitespace tokens of the caption as given (the captions are re-tokenised by every metric).
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

import numpy as np

TRANSFORMS = ("RC", "WP", "RW")
#: The fewest words WP permutes and RW replaces at any strength above 0 (Cui et al. 2018 §3.3: "at least 2 words",
#: "from 2 to all words").
WP_MIN_WORDS = RW_MIN_WORDS = 2


def _check_gamma(gamma: float) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0 <= gamma <= 1 or math.isnan(gamma):
        raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}.")
    return float(gamma)


def _count(gamma: float, n: int, minimum: int) -> int:
    if gamma == 0 or n == 0:
        return 0
    return min(n, max(minimum, int(round(gamma * n))))


def word_permutation(caption: str, gamma: float, rng: random.Random) -> str:
    """WP: ``caption`` with ``round(gamma * n)`` (≥ 2) of its words permuted among their positions (a derangement
    of the chosen positions when their words allow one)."""
    words = caption.split()
    k = _count(_check_gamma(gamma), len(words), WP_MIN_WORDS)
    if k < 2:
        return caption
    positions = sorted(rng.sample(range(len(words)), k))
    chosen = [words[p] for p in positions]
    for _ in range(10):  # a shuffle that moves something (all-equal words cannot move)
        shuffled = chosen[:]
        rng.shuffle(shuffled)
        if shuffled != chosen or len(set(chosen)) == 1:
            break
    if shuffled == chosen and len(set(chosen)) > 1:
        shuffled = chosen[1:] + chosen[:1]  # a rotation always differs when two words differ
    out = words[:]
    for p, w in zip(positions, shuffled):
        out[p] = w
    return " ".join(out)


def random_words(caption: str, gamma: float, rng: random.Random, vocabulary: Sequence[str]) -> str:
    """RW: ``caption`` with ``round(gamma * n)`` (≥ 2, or all of a 1-word caption) of its words replaced by random
    ``vocabulary`` words."""
    if len(vocabulary) < 2:
        raise ValueError("random_words needs a vocabulary of at least 2 words.")
    words = caption.split()
    k = _count(_check_gamma(gamma), len(words), RW_MIN_WORDS)
    out = words[:]
    for p in rng.sample(range(len(words)), k):
        w = vocabulary[rng.randrange(len(vocabulary))]
        while w == words[p]:
            w = vocabulary[rng.randrange(len(vocabulary))]
        out[p] = w
    return " ".join(out)


class NearestImages:
    """Images ranked by cosine similarity of their features, nearest first (the image itself excluded).

    ``features``: ``[n, d]`` (numpy or torch) in the order of ``names``. Up to ``precompute_limit`` images the whole
    ranking is computed once (``n²`` floats in blocks; Flickr8k's 6,000 training images take about a second); above
    it (COCO's 80,000: the ranking alone would take 27 GB) each draw ranks one image's similarities on demand
    (``argpartition``, about a millisecond). Both give a uniformly drawn image among the ``gamma`` fraction nearest.
    """

    def __init__(self, names: Sequence[str], features, precompute_limit: int = 20_000):
        feats = np.asarray(features.float().numpy() if hasattr(features, "numpy") else features, dtype=np.float32)
        if feats.ndim != 2 or feats.shape[0] != len(names):
            raise ValueError(f"features must be [n, d] with n = {len(names)} images, got {feats.shape}.")
        if len(names) < 2:
            raise ValueError("random captions (RC) need at least 2 images.")
        self.names = list(names)
        self.position = {n: i for i, n in enumerate(self.names)}
        self.unit = feats / np.maximum(np.linalg.norm(feats, axis=1, keepdims=True), 1e-12)
        self.order = None if len(names) > precompute_limit else self._ranking(self.unit)

    @staticmethod
    def _ranking(unit: np.ndarray) -> np.ndarray:
        n = unit.shape[0]
        order = np.empty((n, n - 1), dtype=np.int32)
        for start in range(0, n, 1024):
            sims = unit[start:start + 1024] @ unit.T
            for r in range(sims.shape[0]):
                sims[r, start + r] = -np.inf
            # stable sort on (-similarity, index): ties keep index order, so the ranking is deterministic
            order[start:start + sims.shape[0]] = np.argsort(-sims, axis=1, kind="stable")[:, : n - 1]
        return order

    def neighbour(self, name: str, gamma: float, rng: random.Random) -> str:
        """A random image among the ``gamma`` fraction nearest to ``name`` (at least the nearest one)."""
        gamma = _check_gamma(gamma)
        position = self.position[name]
        k = max(1, int(round(gamma * (len(self.names) - 1))))
        rank = rng.randrange(k)
        if self.order is not None:
            return self.names[int(self.order[position][rank])]
        sims = self.unit @ self.unit[position]
        sims[position] = -np.inf
        return self.names[int(np.argpartition(-sims, rank)[rank])]


def random_caption(image: str, gamma: float, rng: random.Random, captions: Mapping[str, Sequence[str]],
                   nearest: NearestImages, original: str | None = None) -> str:
    """RC: a human caption of an image among the ``gamma`` fraction nearest to ``image``; ``gamma = 0`` returns
    ``original`` (the untransformed caption; required then)."""
    if _check_gamma(gamma) == 0:
        if original is None:
            raise ValueError("random_caption with gamma = 0 returns the original caption: pass original=.")
        return original
    other = nearest.neighbour(image, gamma, rng)
    pool = captions[other]
    return pool[rng.randrange(len(pool))]
