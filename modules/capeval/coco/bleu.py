"""BLEU-1..4 exactly as pycocoevalcap 1.2's ``BleuScorer`` (Papineni et al. 2002, COCO variant).

* Clipped n-gram counts: each prediction n-gram counts at most as often as in the reference where
  it is most frequent.
* Brevity penalty with the **closest** reference length (ties go to the shorter reference).
* Per caption: ``prod_k (correct_k + 1e-15) / (guess_k + 1e-9)`` to the power ``1/n``, times
  ``exp(1 - 1/ratio)`` when ``ratio = (len + 1e-15) / (reflen + 1e-9) < 1``. This smoothing is
  pycocoevalcap's, so a caption with no matching 4-gram gets a tiny positive BLEU-4, not 0.
* Corpus: the same formula on counts and lengths summed over the corpus (not a mean of captions).

Scores are in [0, 1].
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.coco.ngrams import BatchNgrams, batch_ngrams
from capeval.metric import CaptionMetric, MetricOutput

__all__ = ["Bleu", "bleu_from_ngrams", "bleu_from_totals", "merge_totals"]

TINY = 1e-15
SMALL = 1e-9


def _clipped_matches(ng: BatchNgrams, max_n: int) -> np.ndarray:
    """``(items x max_n)`` sums over prediction n-grams of ``min(count, max count in one reference)``."""
    hyp = ng.hyp
    refs = ng.refs
    n_items = hyp.shape[0]
    # min(h, max_r R) = max_r min(h, R): elementwise minimum against each reference, then max per item
    per_ref = hyp[ng.ref_item].minimum(refs).tocoo()
    grams = per_ref.col.astype(np.int64)
    items = ng.ref_item[per_ref.row]
    key = items * np.int64(hyp.shape[1]) + grams
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    if key_sorted.size == 0:
        return np.zeros((n_items, max_n))
    starts = np.flatnonzero(np.r_[True, key_sorted[1:] != key_sorted[:-1]])
    best = np.maximum.reduceat(per_ref.data[order], starts)
    unique_key = key_sorted[starts]
    unique_item = unique_key // hyp.shape[1]
    unique_order = ng.table.order[unique_key % hyp.shape[1]].astype(np.int64)
    keep = unique_order < max_n
    flat = np.bincount(
        unique_item[keep] * max_n + unique_order[keep], weights=best[keep], minlength=n_items * max_n
    )
    return flat.reshape(n_items, max_n)


def _closest_ref_lengths(ng: BatchNgrams) -> np.ndarray:
    """Per item, the reference length closest to the prediction length (the shorter one on ties)."""
    hyp_len = ng.hyp_lengths
    ref_len = ng.ref_lengths
    scale = np.int64(ref_len.max(initial=0) + 1)
    diff = np.abs(ref_len - hyp_len[ng.ref_item])
    best = np.minimum.reduceat(diff * scale + ref_len, ng.ref_start)
    return best % scale


def bleu_from_ngrams(ng: BatchNgrams, max_n: int = 4) -> tuple[list[float], np.ndarray, dict]:
    """BLEU-1..max_n: ``(corpus scores, per-caption array (items x max_n), totals)``."""
    correct = _clipped_matches(ng, max_n)
    test_len = ng.hyp_lengths.astype(np.int64)
    guess = np.maximum(0, test_len[:, None] - np.arange(max_n)[None, :])
    ref_len = _closest_ref_lengths(ng)

    # per caption, the running product in pycocoevalcap's order of operations
    per_caption = np.empty((len(test_len), max_n))
    running = np.ones(len(test_len))
    for k in range(max_n):
        running = running * ((correct[:, k] + TINY) / (guess[:, k] + SMALL))
        per_caption[:, k] = running ** (1.0 / (k + 1))
    ratio = (test_len + TINY) / (ref_len + SMALL)
    short = ratio < 1
    per_caption[short] *= np.exp(1 - 1 / ratio[short])[:, None]

    totals = {"correct": [int(c) for c in correct.sum(axis=0).round()], "guess": [int(g) for g in guess.sum(axis=0)],
              "testlen": int(test_len.sum()), "reflen": int(ref_len.sum())}
    return bleu_from_totals(totals, max_n), per_caption, totals


def bleu_from_totals(totals: dict, max_n: int = 4) -> list[float]:
    """Corpus BLEU-1..max_n from summed counts (``correct`` / ``guess`` per order, ``testlen``, ``reflen``): integer
    sums, so batches' totals add up to the whole corpus's exactly (:func:`merge_totals`)."""
    corpus: list[float] = []
    bleu = 1.0
    for k in range(max_n):
        bleu *= float(totals["correct"][k] + TINY) / (totals["guess"][k] + SMALL)
        corpus.append(bleu ** (1.0 / (k + 1)))
    ratio_corpus = (totals["testlen"] + TINY) / (totals["reflen"] + SMALL)
    if ratio_corpus < 1:
        corpus = [b * math.exp(1 - 1 / ratio_corpus) for b in corpus]
    return corpus


def merge_totals(parts: Iterable[dict]) -> dict:
    """The element-wise sum of several batches' BLEU totals (integers: exact in any order), read in one pass."""
    merged: dict | None = None
    for part in parts:
        if merged is None:
            width = len(part["correct"])
            merged = {"correct": [0] * width, "guess": [0] * width, "testlen": 0, "reflen": 0}
        for key in ("correct", "guess"):
            merged[key] = [a + int(b) for a, b in zip(merged[key], part[key], strict=True)]
        merged["testlen"] += int(part["testlen"])
        merged["reflen"] += int(part["reflen"])
    if merged is None:
        raise ValueError("no BLEU totals to merge.")
    return merged


class Bleu(CaptionMetric):
    """BLEU-1..4 with pycocoevalcap's 'closest' reference length and smoothing (see module docstring)."""

    pauses_gc: ClassVar[bool] = True

    name: ClassVar[str] = "bleu"
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    options: ClassVar[dict] = {}

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        corpus, per_caption, totals = bleu_from_ngrams(batch_ngrams(batch, 4), 4)
        return MetricOutput(
            corpus={key: float(corpus[k]) for k, key in enumerate(self.keys)},
            per_caption={key: per_caption[:, k].tolist() for k, key in enumerate(self.keys)},
            signature="closest",
            state=totals,
        )

    @classmethod
    def merge_state(cls, merged: dict | None, state: dict) -> dict:
        return merge_totals([state] if merged is None else [merged, state])

    @classmethod
    def corpus_from_merged(cls, merged: dict) -> dict[str, float]:
        corpus = bleu_from_totals(merged, 4)
        return {f"bleu_{k + 1}": float(value) for k, value in enumerate(corpus)}
