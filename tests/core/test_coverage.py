"""capeval.coverage: the share of known tokens, the lowest of several vocabularies, the warning's threshold and
wording (the metrics' use of it: tests/critic/test_coverage.py)."""
from __future__ import annotations

import warnings
from collections import Counter

import pytest

import capeval
from capeval.coverage import (COVERAGE_MARGIN, Coverage, OutOfVocabularyWarning, is_low, lowest, measure,
                              result_extra, warn_if_low)


def test_measure_counts_every_token_of_the_prediction_and_its_references():
    known = {"a", "dog", "runs", "on", "grass"}
    cov = measure([[["a", "dog", "runs"], ["a", "dog", "sprints"]], [["mike", "mike"]], []], known, baseline=0.99)
    assert (cov.known, cov.total) == (5, 8)
    assert cov.share == pytest.approx(5 / 8)
    assert cov.per_caption == [pytest.approx(5 / 6), 0.0, 1.0]  # no token: 1.0
    assert cov.unknown == Counter({"mike": 2, "sprints": 1}) and cov.baseline == 0.99
    assert measure([], known).share == 1.0
    assert measure([[["x"]]], lambda word: word == "x").share == 1.0  # a predicate works too


def test_lowest_takes_the_worst_vocabulary_and_each_captions_minimum():
    a = Coverage(9, 10, [1.0, 0.8], Counter({"z": 1}), "A", 0.99)
    b = Coverage(7, 10, [0.5, 0.9], Counter({"y": 3}), "B", 1.0)
    worst = lowest([a, b])
    assert (worst.share, worst.vocabulary, worst.baseline, worst.per_caption) == (0.7, "B", 1.0, [0.5, 0.8])
    with pytest.raises(ValueError):
        lowest([])


def test_the_warning_fires_only_below_the_baseline_minus_the_margin():
    near = Coverage(96, 100, [0.96], Counter({"x": 4}), "V", 0.988)  # 2.8 points below
    far = Coverage(90, 100, [0.9], Counter({f"w{i}": 12 - i for i in range(12)}), "V", 0.988)
    assert COVERAGE_MARGIN == 0.03 and not is_low(near) and is_low(far) and not is_low(Coverage(0, 0, []))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_low("critic_ref", near)
    with pytest.warns(OutOfVocabularyWarning) as caught:
        warn_if_low("critic_ref", far)
    message = str(caught[0].message)
    assert message.startswith("critic_ref: 90.0% of the 100 tokens it read are in V, against 98.8%")
    assert "'w0', 'w1'" in message and "'w9' and 2 more" in message and "'w10'" not in message  # ten, most frequent
    assert caught[0].filename == __file__  # points at the caller's line
    assert issubclass(capeval.OutOfVocabularyWarning, UserWarning) and "OutOfVocabularyWarning" in capeval.__all__


def test_result_entries_are_keyed_by_metric():
    cov = Coverage(3, 4, [0.75], Counter(), "V")
    assert result_extra("lceval", cov) == {"coverage": {"lceval": 0.75}, "coverage_per_caption": {"lceval": [0.75]}}
