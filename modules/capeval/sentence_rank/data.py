"""Training data of ``sentence_rank``: ranking pairs from human captions alone (the plan: docs/benchmarks/measurements.md,
"Beyond the papers: a learned ranker on sentence embeddings").

Input: ``{image: [human captions]}`` for train and dev (COCO train2014's captions with every reported benchmark's
images left out and 2 % of the images as dev: :func:`capeval.corpora.coco_train2014.coco_training_corpus`).

**A pair** (:class:`RankPair`): for one image, a positive c+ (one of its captions, drawn uniformly), the references R
(its other captions) and a negative c−, one of four kinds (:data:`NEGATIVE_KINDS`), in equal parts:

* ``hard``: one of the ``neighbours`` (50) captions of *other training images* nearest to c+ by sentence-vector
  cosine, drawn uniformly. Captions whose lower-cased text equals c+'s (the same sentence written for another
  image) are skipped: they are not negatives. Exact nearest neighbours (:func:`nearest_rows`): blocked matrix
  products of the queries' vectors with every training caption's (float32, blocks of 512 queries: a 512 × 406k
  similarity block is 0.8 GB), then ``torch.topk``. Cost: 384 multiply-adds per (query, caption), i.e. 1.6·10^11 per
  1,024 queries against COCO's ~406k training captions: about 5 s on 2 CPU cores, so ~2 minutes for the ~20k hard
  negatives of an epoch (computed per epoch for the positives drawn, not for all 414k captions: that would take
  ~40 minutes);
* ``random``: a caption of another training image drawn uniformly (image uniform, then caption uniform);
* ``WP`` / ``RW``: c+ with permuted / replaced words (:mod:`capeval.critic.transforms`; RW's words are the training
  captions' lower-cased words), strength γ drawn log-uniformly in [``gamma_min``, ``gamma_max``] = [0.1, 1]. When WP
  cannot change c+ (one word, or all words equal) the pair becomes an RW pair.

**An epoch** (:func:`epoch_pairs`): every training image once, in a seeded random order, with the four kinds
assigned in equal parts (a shuffled list of kinds, counts differing by at most 1). **Dev** (:func:`dev_pairs`): every
dev image with one fixed positive and one negative of each kind (4 pairs per image; seeded by ``dev_seed``), the
hard and random negatives drawn from the *training* images' captions (the same pool as in training, so dev pairs
are as hard as training pairs; the positives and references are dev captions only).

Pairs refer to rows of a :class:`RankCorpus` (train captions first, then dev captions); WP / RW negatives are new
texts returned alongside (:class:`EpochPairs`), encoded by the trainer.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from capeval.critic.transforms import random_words, word_permutation

__all__ = ["NEGATIVE_KINDS", "EpochPairs", "RankCorpus", "RankPair", "dev_pairs", "epoch_pairs", "nearest_rows",
           "resolve_pairs"]

#: The negative kinds, in equal parts.
NEGATIVE_KINDS = ("hard", "random", "WP", "RW")


@dataclass(frozen=True)
class RankPair:
    """One ranking pair: row indices of the positive, the negative and the references (see the module docstring).

    ``negative`` indexes the corpus rows, or, from ``len(corpus)`` on, the pair list's new texts
    (:attr:`EpochPairs.texts`); before :func:`resolve_pairs` a ``hard`` pair holds ``-1`` there and its drawn rank
    in ``rank``.
    """

    image: str
    positive: int
    negative: int
    references: tuple[int, ...]
    kind: str
    rank: int = 0


@dataclass
class EpochPairs:
    """Pairs and the new negative texts (WP / RW) they refer to (row ``len(corpus) + j`` is ``texts[j]``)."""

    pairs: list[RankPair]
    texts: list[str] = field(default_factory=list)


class RankCorpus:
    """Train and dev captions as rows (train first), with each image's row span and the training vocabulary.

    ``train`` / ``dev``: ``{image: captions}``; images with fewer than 2 captions are refused (a pair needs a
    reference), as is an image in both splits or in one of ``held_out`` (``{name: image names}``, e.g. the reported
    benchmarks' images).
    """

    def __init__(self, train: Mapping[str, Sequence[str]], dev: Mapping[str, Sequence[str]],
                 held_out: Mapping[str, object] | None = None) -> None:
        both = set(train) & set(dev)
        if both:
            raise ValueError(f"{len(both)} image(s) are in both train and dev, e.g. {sorted(both)[0]!r}.")
        for name, images in (held_out or {}).items():
            hits = sorted((set(train) | set(dev)) & set(images))
            if hits:
                raise ValueError(f"{len(hits)} training / dev image(s) belong to {name}, e.g. {hits[0]!r}.")
        if len(train) < 2 or not dev:
            raise ValueError("sentence_rank needs at least 2 training images and 1 dev image.")
        self.texts: list[str] = []
        self.owner: list[str] = []
        self.span: dict[str, tuple[int, int]] = {}
        for split in (train, dev):
            for image in sorted(split):
                captions = [c for c in split[image] if isinstance(c, str) and c.strip()]
                if len(captions) < 2:
                    raise ValueError(f"image {image!r} has {len(captions)} caption(s); a pair needs 2 or more.")
                self.span[image] = (len(self.texts), len(self.texts) + len(captions))
                self.texts.extend(captions)
                self.owner.extend([image] * len(captions))
        self.train_images = sorted(train)
        self.dev_images = sorted(dev)
        self.train_rows = self.span[self.train_images[-1]][1]  # rows [0, train_rows) are training captions
        self.lower = [t.lower() for t in self.texts]
        self.vocabulary = sorted({w for t in self.lower[: self.train_rows] for w in t.split()})
        if len(self.vocabulary) < 2:
            raise ValueError("the training captions need at least 2 distinct words (RW's replacements).")

    def __len__(self) -> int:
        return len(self.texts)


def _gamma(rng: random.Random, low: float, high: float) -> float:
    return min(1.0, math.exp(rng.uniform(math.log(low), math.log(high))))


def _perturb(kind: str, text: str, rng: random.Random, vocabulary: Sequence[str], low: float, high: float):
    """(kind, new text): WP, or RW when WP leaves ``text`` unchanged."""
    if kind == "WP":
        out = word_permutation(text, _gamma(rng, low, high), rng)
        if out != text:
            return "WP", out
    return "RW", random_words(text, _gamma(rng, low, high), rng, vocabulary)


def _pair(corpus: RankCorpus, image: str, kind: str, rng: random.Random, new: list[str], gamma: tuple[float, float],
          neighbours: int, positive: int | None = None) -> RankPair:
    start, end = corpus.span[image]
    if positive is None:
        positive = start + rng.randrange(end - start)
    references = tuple(r for r in range(start, end) if r != positive)
    if kind == "hard":
        return RankPair(image, positive, -1, references, kind, rng.randrange(neighbours))
    if kind == "random":
        images = corpus.train_images
        other = images[rng.randrange(len(images))]
        while other == image:
            other = images[rng.randrange(len(images))]
        o_start, o_end = corpus.span[other]
        return RankPair(image, positive, o_start + rng.randrange(o_end - o_start), references, kind)
    kind, text = _perturb(kind, corpus.texts[positive], rng, corpus.vocabulary, *gamma)
    new.append(text)
    return RankPair(image, positive, len(corpus) + len(new) - 1, references, kind)


def epoch_pairs(corpus: RankCorpus, rng: random.Random, *, neighbours: int = 50,
                gamma: tuple[float, float] = (0.1, 1.0)) -> EpochPairs:
    """One pair per training image, in a random order, the kinds in equal parts (hard pairs unresolved: call
    :func:`resolve_pairs`). Everything is drawn from ``rng``."""
    images = list(corpus.train_images)
    rng.shuffle(images)
    kinds = [NEGATIVE_KINDS[i % len(NEGATIVE_KINDS)] for i in range(len(images))]
    rng.shuffle(kinds)
    new: list[str] = []
    pairs = [_pair(corpus, image, kind, rng, new, gamma, neighbours) for image, kind in zip(images, kinds)]
    return EpochPairs(pairs, new)


def dev_pairs(corpus: RankCorpus, seed: int, *, neighbours: int = 50,
              gamma: tuple[float, float] = (0.1, 1.0)) -> EpochPairs:
    """Fixed dev pairs: per dev image one positive and one negative of each kind (hard pairs unresolved)."""
    rng = random.Random(seed)
    new: list[str] = []
    pairs = []
    for image in corpus.dev_images:
        start, end = corpus.span[image]
        positive = start + rng.randrange(end - start)
        pairs.extend(_pair(corpus, image, kind, rng, new, gamma, neighbours, positive) for kind in NEGATIVE_KINDS)
    return EpochPairs(pairs, new)


def nearest_rows(corpus: RankCorpus, vectors, queries: Sequence[int], k: int = 50, *, block: int = 512,
                 progress_bar: bool | None = None) -> list[list[int]]:
    """For each query row, the ``k`` training rows of *other images* nearest by cosine, nearest first, skipping
    captions whose lower-cased text equals the query's (exact: blocked matrix products, ``torch.topk``; ties in
    topk's deterministic order). ``vectors``: ``[len(corpus), dim]`` unit vectors (numpy or torch, any float).
    Fewer than ``k`` only when the training pool has fewer eligible captions."""
    from capeval.dependencies import require
    from capeval.progress import progress

    torch = require("torch", what="sentence_rank's nearest captions")
    table = torch.as_tensor(np.asarray(vectors)) if not hasattr(vectors, "float") else vectors
    pool = table[: corpus.train_rows].float()
    out: list[list[int]] = []
    starts = range(0, len(queries), block)
    for start in progress(starts, total=len(starts), desc="sentence_rank: nearest captions", enabled=progress_bar):
        rows = list(queries[start:start + block])
        sims = table[rows].float() @ pool.T
        want = k + 16
        while True:
            top = torch.topk(sims, min(want, pool.shape[0]), dim=1).indices.tolist()
            found = [[j for j in cand if corpus.owner[j] != corpus.owner[q] and corpus.lower[j] != corpus.lower[q]][:k]
                     for q, cand in zip(rows, top)]
            if all(len(f) == k for f in found) or want >= pool.shape[0]:
                break
            want *= 4  # many duplicates of a common caption: look further
        out.extend(found)
    return out


def resolve_pairs(corpus: RankCorpus, vectors, epoch: EpochPairs, k: int = 50, *, block: int = 512,
                  progress_bar: bool | None = None) -> EpochPairs:
    """``epoch`` with every ``hard`` pair's negative set: the neighbour of its drawn rank among the ``k`` nearest
    (:func:`nearest_rows` of its positive; rank modulo the neighbours found). A hard pair whose positive has no
    eligible neighbour (a tiny corpus) is dropped."""
    hard = [i for i, p in enumerate(epoch.pairs) if p.kind == "hard"]
    queries = list(dict.fromkeys(epoch.pairs[i].positive for i in hard))
    found = dict(zip(queries, nearest_rows(corpus, vectors, queries, k, block=block, progress_bar=progress_bar)))
    pairs = []
    for pair in epoch.pairs:
        if pair.kind == "hard":
            near = found[pair.positive]
            if not near:
                continue
            pair = RankPair(pair.image, pair.positive, near[pair.rank % len(near)], pair.references, pair.kind,
                            pair.rank)
        pairs.append(pair)
    return EpochPairs(pairs, epoch.texts)
