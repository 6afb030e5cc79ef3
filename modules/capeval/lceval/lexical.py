"""LCEval's own lexical features: modified n-gram precisions p1..p4 and ROUGE-1 recall (features 0-4).

Both read PTB tokens (lower-cased, punctuation removed: what the COCO metrics read).

* :func:`ngram_precisions`: for n = 1..4, COCO BLEU's clipped counting for one caption (each candidate n-gram
  counts at most as often as it occurs in the reference where it occurs most), as the reference code's
  modified ``Bleu`` returns it per caption: ``(correct + 1e-15) / (guess + 1e-9)`` with ``guess`` the number of
  candidate n-grams. In [0, 1] (about 1e-6 for a candidate with no n-gram: the reference code's smoothing).
  These are the precisions inside BLEU, not BLEU itself (no brevity penalty, no geometric mean).
* :func:`rouge1_recall`: per reference, the clipped unigram overlap divided by the reference's unigram count;
  the maximum over the references. In [0, 1]; 0 for empty references. The reference code leaves this slot at
  0 for every caption (a bug; the released weight for it is 0, so the released layer ignores it); capeval
  computes it, which only retrained models read.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["ngram_precisions", "rouge1_recall", "lexical_features"]

TINY, SMALL = 1e-15, 1e-9
N_MAX = 4


def _ngrams(tokens: Sequence[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def ngram_precisions(candidate: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """``[p1, p2, p3, p4]`` of one candidate (token list) against its references (token lists)."""
    out = np.empty(N_MAX, dtype=np.float64)
    for n in range(1, N_MAX + 1):
        cand = _ngrams(candidate, n)
        max_ref: Counter = Counter()
        for ref in references:
            for gram, count in _ngrams(ref, n).items():
                if count > max_ref[gram]:
                    max_ref[gram] = count
        correct = sum(min(count, max_ref[gram]) for gram, count in cand.items())
        guess = max(0, len(candidate) - n + 1)
        out[n - 1] = (correct + TINY) / (guess + SMALL)
    return out


def rouge1_recall(candidate: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Max over references of (clipped unigram matches / reference length); 0 without any non-empty reference."""
    cand = Counter(candidate)
    best = 0.0
    for ref in references:
        if not ref:
            continue
        matches = sum(min(count, cand[w]) for w, count in Counter(ref).items())
        best = max(best, matches / len(ref))
    return float(best)


def lexical_features(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> np.ndarray:
    """``(n, 5)`` array: p1..p4 and ROUGE-1 recall per candidate (tokens) with its references (token lists)."""
    out = np.zeros((len(candidates), N_MAX + 1), dtype=np.float64)
    for i, (cand, refs) in enumerate(zip(candidates, references)):
        out[i, :N_MAX] = ngram_precisions(cand, refs)
        out[i, N_MAX] = rouge1_recall(cand, refs)
    return out
