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

__all__ = ["BETA", "RougeL", "rouge_l_from_ngram_table", "rouge_l_scores"]

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
    flat_refs = [r for refs in reference_tokens for r in refs]
    vocab: dict[str, int] = {}
    pred_ids = _encode(prediction_tokens, vocab)
    ref_ids = _encode(flat_refs, vocab)
    if len(vocab) < _MAX_CODE_POINT:
        pred_seq = ["".join(map(chr, p)) for p in pred_ids]
        ref_seq = ["".join(map(chr, r)) for r in ref_ids]
    else:
        pred_seq, ref_seq = pred_ids, ref_ids
    return _rouge_l_from_sequences(pred_seq, ref_seq, n_refs, beta)


def rouge_l_from_ngram_table(table, n_predictions: int, n_refs: np.ndarray, beta: float = BETA) -> np.ndarray | None:
    """:func:`rouge_l_scores` from a batch's n-gram table (:mod:`capeval.coco.ngrams`), whose token ids already
    spell every caption; ``None`` when they cannot be used as they are (a token was empty or held whitespace,
    or there are too many distinct tokens for one code point each)."""
    ids = table.token_ids
    if not table.tokens_as_given or (ids.size and int(ids.max()) >= 0xD800):
        return None  # re-split tokens, or ids that would reach the surrogate code points
    text = ids.astype("<u4").tobytes().decode("utf-32-le")  # one code point per token
    ends = np.cumsum(table.lengths).tolist()
    starts = [0] + ends[:-1]
    spelled = [text[a:b] for a, b in zip(starts, ends)]
    return _rouge_l_from_sequences(spelled[:n_predictions], spelled[n_predictions:], n_refs, beta)


def _rouge_l_from_sequences(pred_seq: Sequence, ref_seq: Sequence, n_refs: np.ndarray, beta: float) -> np.ndarray:
    """ROUGE-L per item from encoded captions (strings of one code point per token, or id lists)."""
    ref_item = np.repeat(np.arange(len(n_refs)), n_refs)
    pred_len = np.fromiter(map(len, pred_seq), dtype=np.float64, count=len(pred_seq))
    ref_len = np.fromiter(map(len, ref_seq), dtype=np.float64, count=len(ref_seq))
    paired = [pred_seq[i] for i in ref_item.tolist()]
    if all(isinstance(x, str) for x in pred_seq[:1]):
        lcs = process.cpdist(paired, ref_seq, scorer=LCSseq.similarity, dtype=np.int64, workers=1).astype(np.float64)
    else:
        lcs = np.array([LCSseq.similarity(p, r) for p, r in zip(paired, ref_seq)], dtype=np.float64)
    cand_len = pred_len[ref_item]
    prec = np.divide(lcs, cand_len, out=np.zeros_like(lcs), where=cand_len > 0)
    rec = np.divide(lcs, ref_len, out=np.zeros_like(lcs), where=ref_len > 0)
    starts = np.zeros(len(n_refs), dtype=np.int64)
    if len(n_refs) > 1:
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
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    options: ClassVar[dict] = {}

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        from capeval.coco.ngrams import cached_batch_ngrams

        counted = cached_batch_ngrams(batch)  # BLEU / CIDEr-D in the same call: their token ids are reused
        scores = None
        if counted is not None:
            n_refs = np.fromiter(map(len, batch.raw_references), dtype=np.int64, count=len(batch))
            scores = rouge_l_from_ngram_table(counted.table, counted.n_predictions, n_refs)
        if scores is None:
            scores = rouge_l_scores(batch.prediction_tokens, batch.reference_tokens)
        return MetricOutput(
            corpus={"rouge_l": float(np.mean(scores))},
            per_caption={"rouge_l": scores.tolist()},
            signature=f"beta={BETA:g}",
        )
