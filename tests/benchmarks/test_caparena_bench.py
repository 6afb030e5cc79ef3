"""``capeval bench caparena``: each metric's entry is CapArena's agreement statistics on its scores of both captions
of every battle (against the battle's reference), the length baseline beside them, the length-matched agreement, the
report table and ``capeval verify``'s Table 2 rows."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("scipy")

import capeval  # noqa: E402
from benchmarks.test_caparena import synthetic_release  # noqa: E402
from capeval.judgments.caparena import caparena_agreement, load_caparena, metric_verdicts  # noqa: E402

WORDS = "a dog runs on the green grass near two red cars while people walk under tall old trees".split()


@pytest.fixture
def release(tmp_path, monkeypatch):
    items, _, _ = synthetic_release(n=64, seed=3)
    rng = np.random.default_rng(5)
    for item in items:  # captions of varied length and words, so that metrics disagree
        for key in ("caption1", "caption2", "ref"):
            item[key] = " ".join(rng.choice(WORDS, size=int(rng.integers(4, 30))))
    item = items[0]
    item["caption2"] = " ".join(item["caption1"].split()[:-1] + ["cat"])  # a length-matched battle
    folder = tmp_path / "caparena"
    folder.mkdir()
    (folder / "caparena_annots_eval.json").write_text(json.dumps(items))
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    return items


def test_entries_are_capArenas_statistics_of_the_scores(release):
    from capeval.meta_evaluation.harness import run_benchmark

    result = run_benchmark("caparena", ["rouge_l", "cider_d"], use_cache=False, show_progress=False)
    bench = load_caparena()
    n = len(bench)
    preds = [p.caption1 for p in bench.pairs] + [p.caption2 for p in bench.pairs]
    refs = [[p.reference] for p in bench.pairs] * 2
    scored = capeval.score(preds, refs, metrics=["rouge_l", "cider_d", "caption_length"])["per_caption"]
    for key in ("rouge_l", "cider_d", "caption_length"):
        expected = caparena_agreement(bench, (scored[key][:n], scored[key][n:]))
        entry = result.results[key]
        assert entry["agreement"] == pytest.approx(expected["caption_level"]["overall"]["agreement"])
        assert entry["levels"]["level 2"] == pytest.approx(expected["caption_level"]["level 2"]["agreement"])
        assert entry["spearman"] == pytest.approx(expected["model_level"]["spearman"])
        assert entry["kendall"] == pytest.approx(expected["model_level"]["kendall"])
        assert entry["ranking"] == expected["model_level"]["ranking"]
    assert result.results["rouge_l"]["agreement"] != result.results["caption_length"]["agreement"]
    assert result.results["caption_length"]["baseline"] is True
    assert result.settings == {"battles": 64, "elo_rounds": 1000, "elo_seed": 42, "length_baseline": "caption_length"}
    assert result.notes == ["8 battle(s) with the human caption scored but left out of the statistics, as CapArena "
                            "does"]


def test_length_controlled_is_the_agreement_on_length_matched_battles(release):
    from capeval.meta_evaluation.harness import run_benchmark

    result = run_benchmark("caparena", ["rouge_l"], use_cache=False, show_progress=False)
    bench = load_caparena()
    n = len(bench)
    preds = [p.caption1 for p in bench.pairs] + [p.caption2 for p in bench.pairs]
    scored = capeval.score(preds, [[p.reference] for p in bench.pairs] * 2, metrics=["rouge_l"])["per_caption"]
    lengths = [len(c.split()) for c in preds]
    verdicts = metric_verdicts(scored["rouge_l"][:n], scored["rouge_l"][n:])
    hits = [verdicts[i] == p.human_verdict for i, p in enumerate(bench.pairs)
            if not p.has_human and abs(lengths[i] - lengths[n + i]) <= 1]
    controlled = result.results["rouge_l"]["length_controlled"]
    assert hits and controlled == {"statistic": "agreement_length_matched", "value": sum(hits) / len(hits),
                                   "pairs": len(hits), "tolerance_words": 1.0}


def test_the_report_and_verify(release, capsys):
    from capeval.cli import main

    assert main(["bench", "caparena", "--metrics", "meteor", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "caparena: agreement with the human battles" in out
    words = out.split()
    for column in ("metric", "agreement", "spearman", "kendall", "cheng2025"):
        assert column in words, column
    assert "0.576" in out and "controlled" in out  # the published METEOR agreement; the length-controlled column
    assert main(["verify", "--benchmarks", "caparena", "--metrics", "meteor,cider_d,caption_length"]) in (0, 1)
    out = capsys.readouterr().out
    assert "caparena · cheng2025 Table 2" in out and "0.576" in out and "0.585" in out
