"""Vocabulary coverage of the learned metrics that read a fixed vocabulary, and the warning when it is low.

A learned critic knows the 10,000 words of its training captions; every other word falls to one ``<unk>`` vector.
LCEval's word features (WMD, MOWE) know GloVe's 400,000 words and drop the others. When the captions scored come from
another domain (clip-art scenes with named characters, other languages, misspellings), many of their words are
unknown and the scores mean less: the result says how many (``result["coverage"][metric]``), and a warning says when
it is clearly lower than what the model met in training.

* **Coverage** of a metric on a call: the share, in [0, 1], of the tokens the model reads (the prediction's and, where
  the model reads them, the references') that its vocabulary knows; 1.0 when there is no token. Per caption: the same
  over one prediction and its references (``result["coverage_per_caption"][metric]``). Tokens are the model's own:
  the critic's (lower-cased words, the first 15 per text), LCEval's content words (stop words removed). A model made
  of several vocabularies (an ensemble of critics, LCEval+ with its critic) reports the lowest.
* **Baseline**: the same share on the model's training captions, recorded when it was trained (``training.json``:
  ``vocabulary_coverage``); :data:`DEFAULT_BASELINE` when a folder does not record it.
* :class:`OutOfVocabularyWarning` (a ``UserWarning``, exported as ``capeval.OutOfVocabularyWarning``), once per metric
  and call, when coverage < baseline − :data:`COVERAGE_MARGIN`, naming the share, the baseline and up to
  :data:`WARN_WORDS` unknown words, most frequent first. Measured (BENCHMARKS.md, "Vocabulary coverage"): the shipped
  critics know 98.8 % of the tokens of Flickr8k's training captions and of Flickr8k-Expert's, 99.2 % of PASCAL-50S's,
  99.1 % of COMPOSITE's and 99.5 % of THumB's; the issue that asked for this reports 90 % on a set of clip-art
  captions. A margin of 3 points warns there and on none of the photo benchmarks.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

#: How far below its training coverage a call's coverage may fall before :class:`OutOfVocabularyWarning` (absolute).
COVERAGE_MARGIN = 0.03
#: Training coverage assumed for a model folder that does not record its own: the shipped critics' on Flickr8k
#: train's 30,000 human captions (0.9878).
DEFAULT_BASELINE = 0.988
#: Unknown words named in the warning.
WARN_WORDS = 10


class OutOfVocabularyWarning(UserWarning):
    """Many of the words scored are outside a learned metric's vocabulary (see :mod:`capeval.coverage`)."""


@dataclass
class Coverage:
    """``known`` of ``total`` tokens in ``vocabulary`` (a label for messages); ``per_caption`` shares; the ``unknown``
    words with their counts; ``baseline``, the share met in training."""

    known: int
    total: int
    per_caption: list[float]
    unknown: Counter = field(default_factory=Counter)
    vocabulary: str = "the vocabulary"
    baseline: float = DEFAULT_BASELINE
    #: What happens to an unknown word in this model (for messages).
    effect: str = "they share one unknown vector"

    @property
    def share(self) -> float:
        return self.known / self.total if self.total else 1.0


def measure(items: Sequence[Sequence[Sequence[str]]], known: Container[str] | Callable[[str], bool], *,
            vocabulary: str = "the vocabulary", baseline: float | None = None,
            effect: str = "they share one unknown vector") -> Coverage:
    """Coverage of ``items`` (per caption, the token lists the model reads: the prediction's, then its references')
    by ``known`` (a set-like container or a predicate)."""
    test = known if callable(known) and not hasattr(known, "__contains__") else known.__contains__
    total = hit = 0
    per: list[float] = []
    unknown: Counter = Counter()
    seen: dict[str, bool] = {}
    for texts in items:
        n = k = 0
        for tokens in texts:
            for token in tokens:
                ok = seen.get(token)
                if ok is None:
                    ok = seen[token] = bool(test(token))
                n += 1
                if ok:
                    k += 1
                else:
                    unknown[token] += 1
        per.append(k / n if n else 1.0)
        total, hit = total + n, hit + k
    return Coverage(hit, total, per, unknown, vocabulary, DEFAULT_BASELINE if baseline is None else float(baseline),
                    effect)


def lowest(coverages: Sequence[Coverage]) -> Coverage:
    """The coverage with the lowest share (per caption: the lowest of each caption's), for a model of several
    vocabularies."""
    if not coverages:
        raise ValueError("no coverage to compare.")
    worst = min(coverages, key=lambda c: c.share)
    per = [min(values) for values in zip(*(c.per_caption for c in coverages))]
    return Coverage(worst.known, worst.total, per, worst.unknown, worst.vocabulary, worst.baseline, worst.effect)


def is_low(coverage: Coverage) -> bool:
    """Whether ``coverage`` is more than :data:`COVERAGE_MARGIN` below its baseline."""
    return coverage.total > 0 and coverage.share < coverage.baseline - COVERAGE_MARGIN


def warn_if_low(metric: str, coverage: Coverage) -> None:
    """One :class:`OutOfVocabularyWarning` (pointing at the caller's line) when :func:`is_low`."""
    if not is_low(coverage):
        return
    from capeval.validation import warn_at_caller

    words = [w for w, _ in coverage.unknown.most_common(WARN_WORDS)]
    more = len(coverage.unknown) - len(words)
    shown = ", ".join(repr(w) for w in words) + (f" and {more} more" if more > 0 else "")
    warn_at_caller(
        f"{metric}: {coverage.share:.1%} of the {coverage.total:,} tokens it read are in {coverage.vocabulary}, "
        f"against {coverage.baseline:.1%} on its training captions. The others are unknown to it ({coverage.effect}), "
        f"so its scores mean less here: {shown}.", OutOfVocabularyWarning)


def result_extra(metric: str, coverage: Coverage) -> dict[str, Any]:
    """The entries a metric adds to the result: ``coverage`` and ``coverage_per_caption``, keyed by the metric."""
    return {"coverage": {metric: coverage.share}, "coverage_per_caption": {metric: coverage.per_caption}}


__all__ = ["COVERAGE_MARGIN", "Coverage", "DEFAULT_BASELINE", "OutOfVocabularyWarning", "WARN_WORDS", "is_low",
           "lowest", "measure", "result_extra", "warn_if_low"]
