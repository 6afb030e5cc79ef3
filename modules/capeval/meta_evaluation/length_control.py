"""Caption length in every benchmark report: the length baseline and each metric's agreement with length held fixed.

``capeval bench`` scores every benchmark with :class:`capeval.length.metric.CaptionLength` (``caption_length``, words
per caption) beside the metrics asked for, so every table has a row saying how far counting words alone agrees with
the judgments. And each metric's entry carries ``length_controlled``: its agreement with people once length is held
fixed, so that a metric whose agreement is only length shows it. The choice, per kind of benchmark:

* **correlation benchmarks** (Flickr8k, COMPOSITE, Nebula, Polaris): the partial correlation of the metric and the
  human scores given caption length (:func:`capeval.judgments.stats.partial_correlation`): Kendall's partial τ-b
  (built from the three τ-b values; the benchmark's own τ-c has no partial form) over the same judgment rows as the
  headline;
* **pairwise benchmarks** (PASCAL-50S, ABSTRACT-50S): the accuracy over the *length-matched* pairs, whose two captions
  differ by at most one word (:func:`capeval.judgments.stats.length_matched`), with the benchmark's tie rules
  (metric ties ½, human ties left out), all categories pooled, on the first seed's references; ``pairs`` says how
  many;
* **THumB**: the partial Pearson correlation of the metric and the human total given length, over the captions with
  Human (the headline's set);
* **CapArena**: the caption-level agreement over the length-matched battles (:mod:`capeval.meta_evaluation.
  caparena_bench`).

Computed without resampling (no interval); the baseline's own entry has none.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.judgments import stats

#: The result key of the length baseline.
LENGTH_KEY = "caption_length"
#: Words two captions of a length-matched pair may differ by.
MATCH_TOLERANCE = 1.0


def informative(lengths: np.ndarray) -> bool:
    """Whether the captions' lengths vary (with one length for all, length can neither agree with people nor be
    held fixed: no baseline row, no ``length_controlled``)."""
    lengths = np.asarray(lengths, dtype=float)
    return lengths.size > 1 and bool(np.ptp(lengths) > 0)


def constant_note(lengths: np.ndarray, where: str = "") -> str:
    """The note saying why a report has no length row."""
    return (f"caption_length: every caption{where} has {int(np.asarray(lengths)[0])} words, so length says nothing "
            "here: no length row, no length-controlled values")


def correlation_controlled(human: np.ndarray, metric: np.ndarray, length: np.ndarray, statistic: str
                           ) -> dict[str, Any]:
    """``length_controlled`` of a correlation benchmark's entry (``statistic``: its ``Benchmark.statistic``)."""
    base = stats.PARTIAL_OF[statistic]
    name = {"kendall_b": "partial_tau_b", "pearson": "partial_pearson", "spearman": "partial_spearman"}[base]
    return {"statistic": name, "value": stats.partial_correlation(human, metric, length, statistic),
            "control": LENGTH_KEY, "rows": int(len(human))}


def pairwise_controlled(a: np.ndarray, b: np.ndarray, preferred: Sequence[int | None], length_a: np.ndarray,
                        length_b: np.ndarray, seed: int) -> dict[str, Any]:
    """``length_controlled`` of a pairwise benchmark's entry: accuracy (percent) over the length-matched pairs."""
    matched = stats.length_matched(length_a, length_b, MATCH_TOLERANCE)
    kept = np.flatnonzero(matched)
    credit, counts_mask = stats.pairwise_credit(a[kept], b[kept], [preferred[i] for i in kept], seed=seed)
    n = int(counts_mask.sum())
    return {"statistic": "accuracy_length_matched", "value": float(100 * credit[counts_mask].mean()) if n else None,
            "pairs": n, "tolerance_words": MATCH_TOLERANCE}


def note(benchmark_kind: str) -> str:
    """The report's one-line explanation of the ``length_controlled`` column."""
    what = {"correlation": "Kendall's partial τ-b with caption length held fixed",
            "pairwise": f"accuracy on the pairs whose captions differ by at most {MATCH_TOLERANCE:g} word",
            "thumb": "partial Pearson with caption length held fixed (with Human)",
            "caparena": f"agreement on the battles whose captions differ by at most {MATCH_TOLERANCE:g} word"
            }[benchmark_kind]
    return (f"caption_length: words per caption, the length baseline every report carries; 'length-controlled': "
            f"{what}")
