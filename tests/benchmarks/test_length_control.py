"""Caption length in every benchmark report: the ``caption_length`` baseline row and each metric's agreement with
people with length held fixed (partial τ-b, length-matched pairs, partial Pearson)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from support import require_data

import capeval
from capeval.judgments import stats
from capeval.meta_evaluation.harness import run_benchmark
from capeval.meta_evaluation.length_control import LENGTH_KEY, pairwise_controlled
from capeval.meta_evaluation.report import render


def test_the_length_metric_counts_words():
    result = capeval.score(["a dog runs on the grass", "two cats,  sleeping."], [["a dog"], ["cats"]],
                           metrics="caption_length")
    assert result["per_caption"]["caption_length"] == [6.0, 3.0] and result["caption_length"] == 4.5
    assert "caption_length:unit=words" in result["signature"]


def test_the_partial_correlation_is_the_textbook_formula():
    rng = np.random.default_rng(0)
    length = rng.integers(5, 40, 300).astype(float)
    human = length + rng.normal(0, 5, 300)
    metric = length + rng.normal(0, 5, 300)  # agrees with people only through length
    r = {(a, b): stats.correlation(x, y, "kendall_b") for a, x in (("h", human), ("m", metric)) for b, y in
         (("m", metric), ("l", length))}
    expected = (r["h", "m"] - r["h", "l"] * r["m", "l"]) / np.sqrt((1 - r["h", "l"] ** 2) * (1 - r["m", "l"] ** 2))
    got = stats.partial_correlation(human, metric, length, "kendall_c")
    assert got == pytest.approx(expected, abs=1e-12)
    raw = stats.correlation(human, metric, "kendall_b")
    assert raw > 0.5 and abs(got) < raw / 3  # most of the agreement was length
    assert stats.partial_correlation(human, length, length, "pearson") is None  # a function of the control
    with pytest.raises(ValueError, match="unknown correlation"):
        stats.partial_correlation(human, metric, length, "tau")


def test_length_matched_pairs():
    a, b = np.array([1.0, 0.0, 3.0, 2.0]), np.array([0.0, 1.0, 3.0, 1.0])
    out = pairwise_controlled(a, b, [0, 0, 1, None], np.array([10, 10, 8, 9]), np.array([10, 11, 20, 9]), seed=0)
    # pairs 0 and 1 are matched (0 and 1 word apart), pair 2 is 12 words apart, pair 3 a human tie (left out)
    assert out == {"statistic": "accuracy_length_matched", "value": 50.0, "pairs": 2, "tolerance_words": 1.0}


def test_every_correlation_report_carries_the_length_row_and_column(tmp_path):
    require_data("flickr8k", "ExpertAnnotations.txt")
    result = run_benchmark("flickr8k-expert", ["bleu_4"], use_cache=False)
    length = result.results[LENGTH_KEY]
    assert length["baseline"] is True and length["tau_c"] == pytest.approx(-0.0950, abs=5e-4)
    assert "length_controlled" not in length
    controlled = result.results["bleu_4"]["length_controlled"]
    assert controlled["statistic"] == "partial_tau_b" and controlled["rows"] == result.results["bleu_4"]["rows"]
    assert controlled["value"] == pytest.approx(0.2971, abs=5e-4)  # BLEU-4's τ-b .306 less what length explains
    text = render(result)
    assert "length-controlled" in text and "caption_length" in text and "partial τ-b" in text
    assert json.loads(json.dumps(result.to_json()))["settings"]["length_baseline"] == LENGTH_KEY
    without = run_benchmark("flickr8k-expert", ["bleu_4"], use_cache=False, length_baseline=False)
    assert LENGTH_KEY not in without.results and "length_controlled" not in without.results["bleu_4"]
    assert "length-controlled" not in render(without)
    from capeval.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench", "flickr8k-expert", "--metrics", "bleu_4", "--no-length-baseline", "--json", str(out)]) == 0
    assert LENGTH_KEY not in json.loads(out.read_text())["results"]


def test_constant_lengths_give_no_row_and_a_note():
    from capeval.meta_evaluation.length_control import constant_note, informative

    assert not informative(np.array([3.0, 3.0, 3.0])) and informative(np.array([3.0, 4.0]))
    assert "every caption has 3 words" in constant_note(np.array([3.0, 3.0]))


def test_pairwise_and_thumb_reports():
    require_data("pascal50s")
    result = run_benchmark("pascal50s", ["bleu_1"], use_cache=False)
    controlled = result.results["bleu_1"]["length_controlled"]
    assert controlled["statistic"] == "accuracy_length_matched" and 0 < controlled["pairs"] < 4000
    assert 0 < controlled["value"] < 100 and 0 < result.results[LENGTH_KEY]["avg"] < 100
    require_data("thumb")
    thumb = run_benchmark("thumb", ["bleu_1"], use_cache=False)
    assert thumb.results["bleu_1"]["length_controlled"]["statistic"] == "partial_pearson"
    assert LENGTH_KEY in thumb.results and "length-controlled" in render(thumb)
