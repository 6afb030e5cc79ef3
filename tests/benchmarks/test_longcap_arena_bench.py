"""``capeval bench longcap-arena``: Kendall τ-c per aspect (the main entry descriptiveness, one block per aspect),
the length baseline, on synthetic files of CaptionEvalKit's CSV layout."""
from __future__ import annotations

import csv

import numpy as np
import pytest

scipy_stats = pytest.importorskip("scipy.stats")

import capeval  # noqa: E402
from capeval.judgments import load_benchmark  # noqa: E402
from capeval.judgments import stats  # noqa: E402

WORDS = "a dog runs on the green grass near two red cars while people walk under tall old trees".split()


@pytest.fixture
def release(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    folder = tmp_path / "longcap-arena"
    folder.mkdir()
    for k, aspect in enumerate(("desc", "rel", "flu")):
        with open(folder / f"{aspect}_dci_test.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["imgid", "mt", "refs", "score"])
            writer.writeheader()
            for i in range(30):
                writer.writerow({"imgid": f"sa_{i}.jpg", "mt": " ".join(rng.choice(WORDS, int(rng.integers(5, 40)))),
                                 "refs": repr([" ".join(rng.choice(WORDS, 30))]),
                                 "score": float(rng.integers(1, 6)) + k})
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    return folder


def test_bench_reports_tau_c_per_aspect(release):
    from capeval.meta_evaluation.harness import run_benchmark

    result = run_benchmark("longcap-arena", ["rouge_l"], use_cache=False, show_progress=False)
    entry = result.results["rouge_l"]
    assert entry["primary"] == "tau_c" and set(entry["subsets"]) == {"desc", "rel", "flu"}
    for aspect in ("desc", "rel", "flu"):
        bench = load_benchmark("longcap-arena", aspect=aspect)
        scored = capeval.score(bench.candidates(), bench.references(), metrics=["rouge_l"])["per_caption"]["rouge_l"]
        human = [r.human_scores[0] for r in bench.records]
        assert entry["subsets"][aspect]["tau_c"] == pytest.approx(stats.kendall_tau(scored, human, variant="c"))
    assert entry["tau_c"] == pytest.approx(entry["subsets"]["desc"]["tau_c"])
    assert "caption_length" in result.results and "length_controlled" in entry
    assert result.settings["aspect"] == "desc" and result.settings["split"] == "test"
