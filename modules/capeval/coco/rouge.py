"""ROUGE-L exactly as pycocoevalcap 1.2's ``Rouge`` (Lin 2004, COCO variant).

For a prediction c and its references r_1..r_m, with LCS the length of the longest common
subsequence of tokens: ``P = max_j LCS(c, r_j) / |c|``, ``R = max_j LCS(c, r_j) / |r_j|`` (the two
maxima may come from different references) and ``ROUGE-L = (1 + b^2) P R / (R + b^2 P)`` with
``b = 1.2``; 0 when P or R is 0 (including an empty token list). Corpus score: mean over captions.
Scores are in [0, 1].

The one difference from pycocoevalcap: it splits an empty caption into the token list ``['']``, so
an empty prediction (e.g. only punctuation) scores 1.0 against an empty reference; here any empty
token list scores 0.

LCS lengths come from ``rapidfuzz.distance.LCSseq`` (bit-parallel, C++), on strings in which each
distinct token is one code point, so they are exact (no hashing).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import LCSseq

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput

__all__ = ["BETA", "RougeL", "rouge_l_scores"]

BETA = 1.2
_MAX_CODE_POINT = 0x110000


def _encode(captions: Sequence[Sequence[str]], vocab: dict[str, int]) -> list[list[int]]:
    """Token ids (empty tokens dropped), extending ``vocab``."""
    setdefault = vocab.setdefault
    return [[setdefault(t, len(vocab)) for t in tokens if t] for tokens in captions]


def rouge_l_scores(
    prediction_tokens: Sequence[Sequence[str]], reference_tokens: Sequence[Sequence[Sequence[str]]], beta: float = BETA
) -> np.ndarray:
    """Per-caption ROUGE-L (see module docstring)."""
    n_refs = np.fromiter((len(r) for r in reference_tokens), dtype=np.int64, count=len(reference_tokens))
    ref_item = np.repeat(np.arange(len(reference_tokens)), n_refs)
    flat_refs = [r for refs in reference_tokens for r in refs]
    # encode each distinct prediction once, then pair it with each of its references
    vocab: dict[str, int] = {}
    pred_ids = _encode(prediction_tokens, vocab)
    ref_ids = _encode(flat_refs, vocab)
    pred_len = np.array([len(p) for p in pred_ids], dtype=np.float64)
    ref_len = np.array([len(r) for r in ref_ids], dtype=np.float64)
    if len(vocab) < _MAX_CODE_POINT:
        pred_str = ["".join(map(chr, p)) for p in pred_ids]
        ref_str = ["".join(map(chr, r)) for r in ref_ids]
        lcs = process.cpdist(
            [pred_str[i] for i in ref_item], ref_str, scorer=LCSseq.similarity, dtype=np.int64, workers=1
        ).astype(np.float64)
    else:
        lcs = np.array(
            [LCSseq.similarity(pred_ids[i], r) for i, r in zip(ref_item, ref_ids)], dtype=np.float64
        )
    cand_len = pred_len[ref_item]
    prec = np.divide(lcs, cand_len, out=np.zeros_like(lcs), where=cand_len > 0)
    rec = np.divide(lcs, ref_len, out=np.zeros_like(lcs), where=ref_len > 0)
    starts = np.zeros(len(reference_tokens), dtype=np.int64)
    if len(reference_tokens) > 1:
        np.cumsum(n_refs[:-1], out=starts[1:])
    prec_max = np.maximum.reduceat(prec, starts)
    rec_max = np.maximum.reduceat(rec, starts)
    ok = (prec_max != 0) & (rec_max != 0)
    num = (1 + beta**2) * prec_max * rec_max
    den = rec_max + beta**2 * prec_max
    return np.where(ok, num / np.where(ok, den, 1.0), 0.0)


class RougeL(CaptionMetric):
    """ROUGE-L (LCS F-measure, beta = 1.2) as in pycocoevalcap (see module docstring)."""

    pauses_gc: ClassVar[bool] = True

    name: ClassVar[str] = "rouge_l"
    options: ClassVar[dict] = {}

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        scores = rouge_l_scores(batch.prediction_tokens, batch.reference_tokens)
        return MetricOutput(
            corpus={"rouge_l": float(np.mean(scores))},
            per_caption={"rouge_l": scores.tolist()},
            signature=f"beta={BETA:g}",
        )
