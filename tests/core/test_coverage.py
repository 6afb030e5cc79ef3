"""capeval.coverage: the share of the predictions' known tokens (the references' apart), the lowest of several
vocabularies, which predictions and calls are low, the warning's wording (the metrics' use of it: tests/critic/test_coverage.py)."""
from __future__ import annotations

import math
import warnings
from collections import Counter

import pytest

import capeval
from capeval.coverage import (COVERAGE_MARGIN, MIN_UNKNOWN_RATE, SIGNIFICANCE, Coverage, OutOfVocabularyWarning,
                              is_low, is_low_counts, lowest, measure, result_extra, unknown_tail, warn_if_low)


def test_measure_counts_the_predictions_tokens_and_the_references_apart():
    known = {"a", "dog", "runs", "on", "grass"}
    cov = measure([[["a", "dog", "runs"], ["a", "dog", "sprints"]], [["mike", "mike"], ["a", "dog"]], [], [[]]], known,
                  baseline=0.99)
    assert (cov.known, cov.total) == (3, 5)  # the predictions' tokens only
    assert cov.share == pytest.approx(3 / 5)
    assert cov.per_caption == [1.0, 0.0, None, None]  # no prediction token: None
    assert (cov.reference_known, cov.reference_total) == (4, 5) and cov.reference_share == pytest.approx(0.8)
    assert cov.unknown == Counter({"mike": 2}) and cov.baseline == 0.99  # the predictions' unknown words
    assert cov.low_items == [1]  # every token unknown
    assert measure([], known).share is None and measure([[[]]], known).per_caption == [None]
    assert measure([[["x"]]], lambda word: word == "x").share == 1.0  # a predicate works too


def test_lowest_takes_the_worst_vocabulary_and_each_captions_minimum():
    a = Coverage(9, 10, [1.0, 0.8, None], Counter({"z": 1}), "A", 0.99, reference_known=5, reference_total=10,
                 low_items=[1])
    b = Coverage(7, 10, [0.5, 0.9, None], Counter({"y": 3}), "B", 1.0, reference_known=9, reference_total=10,
                 low_items=[0])
    worst = lowest([a, b])
    assert (worst.share, worst.vocabulary, worst.baseline, worst.per_caption) == (0.7, "B", 1.0, [0.5, 0.8, None])
    assert worst.reference_share == 0.5 and worst.low_items == [0, 1]
    with pytest.raises(ValueError):
        lowest([])


def test_unknown_tail_is_the_binomial_tail():
    assert unknown_tail(1, 10, 0.012) == pytest.approx(1 - 0.988 ** 10, rel=1e-12)
    assert unknown_tail(3, 15, 0.012) == pytest.approx(sum(math.comb(15, i) * 0.012 ** i * 0.988 ** (15 - i)
                                                           for i in range(3, 16)), rel=1e-12)
    assert unknown_tail(0, 10, 0.012) == 1.0 and unknown_tail(1000, 10_000, 0.012) == 0.0


def test_low_means_all_unknown_or_far_and_unlikely_below_the_baseline():
    base = 0.988
    assert is_low_counts(0, 1, base)  # a one-token prediction the model does not know (e.g. Chinese, unsplit)
    assert not is_low_counts(9, 10, base)  # one unknown word among ten: common in training captions
    assert is_low_counts(7, 10, base) and is_low_counts(12, 15, base)  # three: rarer than SIGNIFICANCE
    assert not is_low_counts(96, 100, base)  # 2.8 points below: within the margin
    assert is_low_counts(9_000, 10_000, base) and not is_low_counts(0, 0, base)
    assert not is_low_counts(13, 15, 1.0) and MIN_UNKNOWN_RATE == pytest.approx(0.012)  # a 100 % baseline: 1.2 % unknown
    assert SIGNIFICANCE == 1e-3 and COVERAGE_MARGIN == 0.03


def test_the_warning_names_the_low_predictions_and_the_calls_share():
    near = measure([[["w"] * 96 + ["x"] * 4]], {"w"}, baseline=0.988)  # 2.8 points below
    assert not is_low(near) and near.low_items == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_low("critic_ref", near)
    good = [[["w"] * 10]] * 20
    items = [*good[:3], [["q1"]], *good[3:], [["w"] * 7 + ["z1", "z2", "z3"]], *[[[f"u{i}"]] for i in range(11)]]
    cov = measure(items, {"w"}, vocabulary="V", baseline=0.988)
    assert cov.low_items == [3, 21, *range(22, 33)]
    with pytest.warns(OutOfVocabularyWarning) as caught:
        warn_if_low("critic_ref", cov)
    message = str(caught[0].message)
    assert message.startswith("critic_ref: 13 prediction(s) with many words unknown to it: predictions[3] (0%), "
                              "predictions[21] (70%), predictions[22] (0%)")
    assert "predictions[29] (0%) and 3 more; over the call" in message and "predictions[30]" not in message
    assert f"{cov.share:.1%} of the {cov.total:,} prediction tokens it read are in V, against 98.8%" in message
    assert "'z1'" in message and "and 5 more" in message  # ten unknown words, most frequent first
    assert caught[0].filename == __file__  # points at the caller's line
    assert issubclass(capeval.OutOfVocabularyWarning, UserWarning) and "OutOfVocabularyWarning" in capeval.__all__


def test_a_shift_spread_thin_warns_for_the_call_without_naming_a_prediction():
    cov = measure([[["w"] * 9 + [f"x{i}"]] for i in range(50)], {"w"}, vocabulary="V", baseline=0.988)
    assert cov.low_items == [] and is_low(cov)  # each 90 %: none stands out; 500 tokens at 90 % do
    with pytest.warns(OutOfVocabularyWarning, match=r"^critic_ref: 90.0% of the 500 prediction tokens"):
        warn_if_low("critic_ref", cov)


def test_result_entries_are_keyed_by_metric():
    cov = Coverage(3, 4, [0.75, None], Counter(), "V")
    assert result_extra("lceval", cov) == {"coverage": {"lceval": 0.75},
                                           "coverage_per_caption": {"lceval": [0.75, None]}}
    cov = Coverage(3, 4, [0.75], Counter(), "V", reference_known=1, reference_total=2)
    assert result_extra("critic_ref", cov)["reference_coverage"] == {"critic_ref": 0.5}
