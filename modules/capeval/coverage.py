"""Vocabulary coverage of the learned metrics that read a fixed vocabulary, and the warning when it is low.

A learned critic knows the 10,000 words of its training captions; every other word falls to one ``<unk>`` vector.
LCEval's word features (WMD, MOWE) know GloVe's 400,000 words and drop the others. When the captions scored come from
another domain (clip-art scenes with named characters, other languages, misspellings), many of their words are
unknown and the scores mean less: the result says how many, and a warning names the predictions concerned.

* **Coverage** of a metric on a call (``result["coverage"][metric]``): the share, in [0, 1], of the *predictions'*
  tokens the model reads that its vocabulary knows (what the user scores); ``None`` when the predictions hold no such
  token. Per caption (``result["coverage_per_caption"][metric]``): the same over one prediction, ``None`` for a
  prediction without such a token (an empty one scored with ``empty="zero"``). The references' share, for a model that
  reads them, is reported apart (``result["reference_coverage"][metric]``): it never changes the verdict. Tokens are
  the model's own: the critic's (lower-cased words, the first 15 per text), LCEval's content words (stop words
  removed). A model made of several vocabularies (an ensemble of critics, LCEval+ with its critic) reports the lowest.
* **Baseline**: the same share on the model's training captions, recorded when it was trained (``training.json``:
  ``vocabulary_coverage``); :data:`DEFAULT_BASELINE` when a folder does not record it.
* **Low**, for one prediction or for the call's predictions together (:func:`is_low_counts`): every token unknown, or
  a share more than :data:`COVERAGE_MARGIN` below the baseline *and* more unknown tokens than text of that length
  from the training domain has in :data:`SIGNIFICANCE` of cases (a binomial tail at the baseline's unknown rate, at
  least :data:`MIN_UNKNOWN_RATE`). One unknown word among ten is what training captions often have; three are not.
  A prediction's verdict depends on it alone, so it is the same alone and in any batch.
* :class:`OutOfVocabularyWarning` (a ``UserWarning``, exported as ``capeval.OutOfVocabularyWarning``), once per metric
  and call, when some prediction is low (naming up to :data:`WARN_ITEMS` of them with their coverage) or the call's
  predictions are (a shift spread thin over many captions); it gives the call's share, the baseline and up to
  :data:`WARN_WORDS` unknown words of the predictions, most frequent first. Measured (BENCHMARKS.md, "Vocabulary
  coverage"): the shipped critics know 98.8 % of the tokens of Flickr8k's training captions; with the default
  ``critic_oov="glove-map"``, of the candidates of Flickr8k-Expert, COMPOSITE and THumB none is low, of PASCAL-50S's
  8,000 five (words such as 'pottedplant', 'tvmonitor', 'withjackets').
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

#: How far below its training coverage a share may fall before it can be low (absolute).
COVERAGE_MARGIN = 0.03
#: Training coverage assumed for a model folder that does not record its own: the shipped critics' on Flickr8k
#: train's 30,000 human captions (0.9878).
DEFAULT_BASELINE = 0.988
#: A share below the baseline is low only when that many unknown tokens would occur by chance less often than this
#: in text of the same length from the training domain (binomial tail).
SIGNIFICANCE = 1e-3
#: The unknown-token rate assumed for the training domain at least (a vocabulary built from its own training captions
#: records 100 %, yet new captions of that domain hold unknown words): the shipped critics' 1.2 %.
MIN_UNKNOWN_RATE = 1 - DEFAULT_BASELINE
#: Unknown words named in the warning.
WARN_WORDS = 10
#: Low predictions named in the warning.
WARN_ITEMS = 10


class OutOfVocabularyWarning(UserWarning):
    """Many of the words scored are outside a learned metric's vocabulary (see :mod:`capeval.coverage`)."""


@dataclass
class Coverage:
    """``known`` of ``total`` prediction tokens in ``vocabulary`` (a label for messages); ``per_caption`` shares (``None``
    for a prediction without a token); ``counts``, per prediction, ``(known, total)``; the predictions' ``unknown`` words
    with their counts; ``baseline``, the share met in training; the references' ``reference_known`` of
    ``reference_total`` tokens (both 0 for a model that does not read references); ``low_items``: the predictions whose
    own coverage is low (indices, ascending)."""

    known: int
    total: int
    per_caption: list[float | None]
    unknown: Counter = field(default_factory=Counter)
    vocabulary: str = "the vocabulary"
    baseline: float = DEFAULT_BASELINE
    #: What happens to an unknown word in this model (for messages).
    effect: str = "they share one unknown vector"
    reference_known: int = 0
    reference_total: int = 0
    low_items: list[int] = field(default_factory=list)

    @property
    def share(self) -> float | None:
        """The predictions' share of known tokens, in [0, 1]; ``None`` when they hold no token."""
        return self.known / self.total if self.total else None

    @property
    def reference_share(self) -> float | None:
        """The references' share of known tokens, in [0, 1]; ``None`` when none was read."""
        return self.reference_known / self.reference_total if self.reference_total else None


def unknown_tail(unknown: int, total: int, rate: float) -> float:
    """P(X ≥ ``unknown``) for X ~ Binomial(``total``, ``rate``), in [0, 1]: how often text of ``total`` tokens with an
    unknown-token rate ``rate`` (in (0, 1)) holds at least ``unknown`` unknown tokens. 1.0 at or below the mean."""
    if unknown <= total * rate:
        return 1.0
    log_term = (math.lgamma(total + 1) - math.lgamma(unknown + 1) - math.lgamma(total - unknown + 1)
                + unknown * math.log(rate) + (total - unknown) * math.log1p(-rate))
    term, tail, i = math.exp(log_term), 0.0, unknown
    while i <= total and term > 0.0:  # terms fall geometrically above the mean
        tail += term
        if term < tail * 1e-12:
            break
        term *= (total - i) / (i + 1) * rate / (1 - rate)
        i += 1
    return min(1.0, tail)


def is_low_counts(known: int, total: int, baseline: float) -> bool:
    """Whether ``known`` of ``total`` tokens is low against ``baseline`` (see the module docstring): every token unknown,
    or a share below ``baseline`` − :data:`COVERAGE_MARGIN` with a binomial tail under :data:`SIGNIFICANCE`."""
    if total <= 0:
        return False
    if known == 0:
        return True
    if known / total >= baseline - COVERAGE_MARGIN:
        return False
    rate = min(max(1.0 - baseline, MIN_UNKNOWN_RATE), 0.5)
    return unknown_tail(total - known, total, rate) < SIGNIFICANCE


def measure(items: Sequence[Sequence[Sequence[str]]], known: Container[str] | Callable[[str], bool], *,
            vocabulary: str = "the vocabulary", baseline: float | None = None,
            effect: str = "they share one unknown vector") -> Coverage:
    """Coverage of ``items`` (per caption, the token lists the model reads: the prediction's first, then its
    references', if it reads them) by ``known`` (a set-like container or a predicate). The prediction's tokens make the
    coverage and the verdicts; the references' are counted apart."""
    test = known if callable(known) and not hasattr(known, "__contains__") else known.__contains__
    base = DEFAULT_BASELINE if baseline is None else float(baseline)
    total = hit = ref_total = ref_hit = 0
    per: list[float | None] = []
    counts: list[tuple[int, int]] = []
    unknown: Counter = Counter()
    seen: dict[str, bool] = {}

    def count(tokens: Sequence[str], missing: Counter | None) -> tuple[int, int]:
        k = 0
        for token in tokens:
            ok = seen.get(token)
            if ok is None:
                ok = seen[token] = bool(test(token))
            if ok:
                k += 1
            elif missing is not None:
                missing[token] += 1
        return k, len(tokens)

    for texts in items:
        k, n = count(texts[0], unknown) if len(texts) else (0, 0)
        per.append(k / n if n else None)
        counts.append((k, n))
        total, hit = total + n, hit + k
        for tokens in texts[1:]:
            rk, rn = count(tokens, None)
            ref_total, ref_hit = ref_total + rn, ref_hit + rk
    low = [i for i, (k, n) in enumerate(counts) if is_low_counts(k, n, base)]
    return Coverage(hit, total, per, unknown, vocabulary, base, effect, ref_hit, ref_total, low)


def lowest(coverages: Sequence[Coverage]) -> Coverage:
    """The coverage with the lowest share (per caption: the lowest of each caption's; the references' share: the
    lowest; low predictions: those low in any vocabulary), for a model of several vocabularies."""
    if not coverages:
        raise ValueError("no coverage to compare.")
    worst = min(coverages, key=lambda c: 2.0 if c.share is None else c.share)
    per = [min((v for v in values if v is not None), default=None) for values in zip(*(c.per_caption for c in coverages))]
    refs = min(coverages, key=lambda c: 2.0 if c.reference_share is None else c.reference_share)
    low = sorted(set().union(*(c.low_items for c in coverages)))
    return Coverage(worst.known, worst.total, per, worst.unknown, worst.vocabulary, worst.baseline, worst.effect,
                    refs.reference_known, refs.reference_total, low)


def is_low(coverage: Coverage) -> bool:
    """Whether the call's predictions together are low (:func:`is_low_counts` on all their tokens)."""
    return is_low_counts(coverage.known, coverage.total, coverage.baseline)


def warn_if_low(metric: str, coverage: Coverage) -> None:
    """One :class:`OutOfVocabularyWarning` (pointing at the caller's line) when some prediction is low, naming them, or
    the call's predictions are (:func:`is_low`)."""
    if not coverage.low_items and not is_low(coverage):
        return
    from capeval.validation import warn_at_caller

    words = [w for w, _ in coverage.unknown.most_common(WARN_WORDS)]
    more = len(coverage.unknown) - len(words)
    shown = ", ".join(repr(w) for w in words) + (f" and {more} more" if more > 0 else "")
    call = (f"{coverage.share:.1%} of the {coverage.total:,} prediction tokens it read are in {coverage.vocabulary}, "
            f"against {coverage.baseline:.1%} on its training captions")
    if coverage.low_items:
        named = ", ".join(f"predictions[{i}] ({coverage.per_caption[i]:.0%})" for i in coverage.low_items[:WARN_ITEMS])
        extra = len(coverage.low_items) - WARN_ITEMS
        head = (f"{metric}: {len(coverage.low_items):,} prediction(s) with many words unknown to it: {named}"
                f"{f' and {extra:,} more' if extra > 0 else ''}; over the call {call}.")
    else:
        head = f"{metric}: {call}."
    warn_at_caller(f"{head} The unknown words ({coverage.effect}) make its scores mean less: {shown}.",
                   OutOfVocabularyWarning)


def result_extra(metric: str, coverage: Coverage) -> dict[str, Any]:
    """The entries a metric adds to the result, keyed by the metric: ``coverage`` and ``coverage_per_caption`` (the
    predictions'), and ``reference_coverage`` when it read references."""
    extra: dict[str, Any] = {"coverage": {metric: coverage.share},
                             "coverage_per_caption": {metric: list(coverage.per_caption)}}
    if coverage.reference_total:
        extra["reference_coverage"] = {metric: coverage.reference_share}
    return extra


__all__ = ["COVERAGE_MARGIN", "Coverage", "DEFAULT_BASELINE", "MIN_UNKNOWN_RATE", "OutOfVocabularyWarning",
           "SIGNIFICANCE", "WARN_ITEMS", "WARN_WORDS", "is_low", "is_low_counts", "lowest", "measure", "result_extra",
           "unknown_tail", "warn_if_low"]
