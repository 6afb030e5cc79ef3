"""``capeval bench`` with a metric that leaves some items without a score (``unscored_items``, as ``fleur`` does).

A fake judge registered for each test reads its "answer" from the caption: the caption's last word as a number, and
``NaN`` (no score) when the last word is not one. Tiny Nebula, ABSTRACT-50S and THumB files are written in
``tmp_path``. Checked: correlations equal scipy's over the scored items, the left-out counts are reported, a paired
comparison uses the items both metrics scored, a pair with an unscored caption is the metric's tie, the score cache
returns NaN as it was put, and a NaN from an ordinary metric still raises.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats

import capeval
from capeval.judgments import load_benchmark, stats
from capeval.meta_evaluation import harness
from capeval.meta_evaluation.harness import may_leave_unscored, run_benchmark
from capeval.meta_evaluation.report import render
from capeval.meta_evaluation.score_cache import ScoreCache
from capeval.meta_evaluation.scorers import ItemScores, score_items
from capeval.metric import CaptionMetric, MetricOutput

JUDGE = "fake_judge"
PLAIN = "fake_plain"


def _answer(caption: str) -> float:
    """The fake judge's reading of ``caption``: its last word as a number, ``NaN`` when it is not one."""
    try:
        return float(caption.split()[-1])
    except ValueError:
        return float("nan")


class FakeJudge(CaptionMetric):
    """Scores a caption by the number it ends with; no number: no score (``NaN``), as a judge without an answer."""

    name = JUDGE
    uses_tokens = False
    unscored_items = True
    options: dict[str, Any] = {}

    def compute(self, batch) -> MetricOutput:
        values = [_answer(p) for p in batch.raw_predictions]
        scored = [v for v in values if v == v]
        corpus = sum(scored) / len(scored) if scored else float("nan")
        return MetricOutput({self.name: corpus}, {self.name: values}, "fake-judge")


class FakePlain(FakeJudge):
    """The same reading by an ordinary metric (``unscored_items`` False): its NaN is a bug."""

    name = PLAIN
    unscored_items = False


@pytest.fixture(autouse=True)
def _registered(tmp_path, monkeypatch):
    from capeval import registry

    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setitem(registry.REGISTRY, JUDGE, registry.MetricSpec(JUDGE, __name__, "FakeJudge", (JUDGE,)))
    monkeypatch.setitem(registry.REGISTRY, PLAIN, registry.MetricSpec(PLAIN, __name__, "FakePlain", (PLAIN,)))


# -- tiny benchmark files ------------------------------------------------------------------------------------------
#: Nebula items: (candidate, human score); the fake judge reads no number in items 2 and 6.
NEBULA = [
    ("a dog runs on grass 0.9", 0.95), ("a cat on a sofa 0.2", 0.1), ("a man rides a bike fast", 0.8),
    ("two birds on a wire 0.6", 0.55), ("a red car parked outside 0.3", 0.5), ("a plate of food 0.75", 0.7),
    ("a boy kicks a ball", 0.2), ("a bus in the street 0.1", 0.3), ("a tree in a field 0.5", 0.4),
    ("a girl with a kite 0.85", 0.9),
]
UNSCORED = [2, 6]


def _write_nebula(root: Path) -> None:
    folder = root / "nebula"
    folder.mkdir(parents=True)
    items = [{"imgid": f"img{i:02d}", "mt": mt, "refs": [f"a reference of image {i}", f"image {i} described"],
              "score": score} for i, (mt, score) in enumerate(NEBULA)]
    (folder / "nebula_test.json").write_text(json.dumps(items))


#: ABSTRACT-50S pairs: (candidate a, candidate b, votes for a of 48); pair 1's b and pair 4's a have no number.
PAIRS = [
    ("mike kicks the ball 0.8", "jenny sits 0.3", 40),      # metric right
    ("the dog plays 0.4", "the owl is in a tree", 10),     # unscored: a tie
    ("mike is sad 0.2", "jenny is happy 0.7", 30),         # metric wrong
    ("a bear and a boy 0.5", "a slide in the park 0.5", 5),  # a real tie of the metric
    ("jenny eats a pie", "mike eats a cake 0.9", 24),      # unscored, and a human tie: does not count
    ("the cat jumps 0.1", "the cat sleeps 0.6", 2),        # metric right
]


def _write_abstract(root: Path) -> None:
    import scipy.io

    base = root / "abstract50s"
    base.mkdir(parents=True)
    scenes = [f"Seed7K_{i:03d}_0.png" for i in range(len(PAIRS))]
    refs = [{"image_id": s, "caption": f"reference {k} of {s}"} for s in scenes for k in range(48)]
    (base / "abstract48S.json").write_text(json.dumps(refs))
    (base / "abstract_candsB.json").write_text(json.dumps([{"image_id": s, "caption": a}
                                                           for s, (a, _, _) in zip(scenes, PAIRS)]))
    (base / "abstract_candsC.json").write_text(json.dumps([{"image_id": s, "caption": b}
                                                           for s, (_, b, _) in zip(scenes, PAIRS)]))
    triplets = np.empty((1, 48 * len(PAIRS)), dtype=[("A", "O"), ("B", "O"), ("C", "O"), ("rating", "O")])
    k = 0
    for scene, (a, b, for_a) in zip(scenes, PAIRS):
        for j, rating in enumerate([-1] * for_a + [1] * (48 - for_a)):  # -1: triplet C (= candsB, a) is closer
            triplets[0, k] = (f"reference {j} of {scene}", b, a, np.array([[rating]], dtype=np.int8))
            k += 1
    scipy.io.savemat(str(base / "consensus_abstract.mat"), {"triplets": triplets}, oned_as="row")


THUMB_SYSTEMS = ("Human", "VinVL-large", "VinVL-base", "Up-Down")


def _thumb_caption(system: str, image: int) -> str:
    if system == "Up-Down":  # the judge scores none of this system's captions
        return f"a picture of scene {image} from afar"
    if system == "Human" and image == 1:  # no number; and image 0's Human caption is leaked (one of its references)
        return "a person describes scene one"
    if system == "Human" and image == 0:
        return "scene 0 seen by a person 0.7"
    return f"{system} sees scene {image} {0.1 * (image + 1) + 0.05 * THUMB_SYSTEMS.index(system):.2f}"


def _write_thumb(root: Path) -> None:
    base = root / "thumb"
    base.mkdir(parents=True)
    rows, refs = [], []
    rng = np.random.default_rng(3)
    for image in range(4):
        refs.append({"seg_id": str(image), "set_id": 0,
                     "refs": ["scene 0 seen by a person 0.7" if image == 0 else f"ref a of {image}", f"ref b {image}"]})
        for system in THUMB_SYSTEMS:
            p, r = (float(x) for x in rng.integers(1, 6, size=2))
            rows.append({"SYS": system, "seg_id": str(image), "set_id": 0, "hyp": _thumb_caption(system, image),
                         "image": f"COCO_val2014_{image:012d}.jpg", "P": p, "R": r, "Fl": 0.0, "Inc": 0.0,
                         "Con": 0.0, "human_score": (p + r) / 2})
    (base / "mscoco_THumB-1.0.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (base / "mscoco_references.json").write_text("".join(json.dumps(row) + "\n" for row in refs))


# -- correlation benchmarks ------------------------------------------------------------------------------------------
def test_correlation_is_scipys_over_the_scored_items_and_the_left_out_count_is_reported(tmp_path):
    _write_nebula(tmp_path / "data")
    result = run_benchmark("nebula", [JUDGE, "bleu_4"], compare=[(JUDGE, "bleu_4")], bootstrap=200)
    bench = load_benchmark("nebula")
    human = np.array([r.human_scores[0] for r in bench.records])
    judge = np.array([_answer(c) for c in bench.candidates()])
    assert list(np.flatnonzero(np.isnan(judge))) == UNSCORED
    kept = ~np.isnan(judge)
    entry = result.results[JUDGE]
    assert entry["unscored"] == 2 and entry["rows"] == 8
    assert entry["tau_c"] == pytest.approx(scipy.stats.kendalltau(human[kept], judge[kept], variant="c").statistic,
                                           abs=1e-12)
    assert entry["pearson"] == pytest.approx(scipy.stats.pearsonr(human[kept], judge[kept]).statistic, abs=1e-12)
    assert entry["spearman"] == pytest.approx(scipy.stats.spearmanr(human[kept], judge[kept]).statistic, abs=1e-12)
    # the interval resamples the 8 kept items, exactly as a bootstrap over those items alone
    ci = stats.bootstrap_ci(lambda idx: stats.kendall_tau(human[kept][idx], judge[kept][idx], "c"),
                            groups=np.arange(8), n_resamples=200, confidence=0.95, seed=0)
    assert entry["headline"]["ci"] == [ci["low"], ci["high"]]
    # an ordinary metric keeps all 10 items and has no count
    bleu = capeval.score(bench.candidates(), bench.references(), metrics="bleu_4")["per_caption"]["bleu_4"]
    bleu = np.array(bleu)
    assert "unscored" not in result.results["bleu_4"] and result.results["bleu_4"]["rows"] == 10
    assert result.results["bleu_4"]["tau_c"] == pytest.approx(
        scipy.stats.kendalltau(human, bleu, variant="c").statistic, abs=1e-12)
    # the paired comparison is over the 8 items both scored
    (comp,) = result.comparisons
    assert comp["unscored"] == 2
    assert comp["value_a"] == pytest.approx(entry["tau_c"], abs=1e-12)
    assert comp["value_b"] == pytest.approx(scipy.stats.kendalltau(human[kept], bleu[kept], variant="c").statistic,
                                            abs=1e-12)
    assert comp["value_b"] != pytest.approx(result.results["bleu_4"]["tau_c"], abs=1e-6)
    # never silent: a note in the result and in the printed text
    assert any(n.startswith(f"{JUDGE}: 2 of 10 items have no score") for n in result.notes)
    assert any("over the 8 of 10 items both scored" in n for n in result.notes)
    text = render(result, "text")
    assert f"note: {JUDGE}: 2 of 10 items have no score" in text
    assert len(result.plot_data[JUDGE]["metric"]) == 8 and not np.isnan(result.plot_data[JUDGE]["metric"]).any()


def test_nan_from_an_ordinary_metric_still_raises(tmp_path, monkeypatch):
    _write_nebula(tmp_path / "data")
    assert may_leave_unscored(JUDGE) and not may_leave_unscored(PLAIN)
    assert not may_leave_unscored("bleu_4") and not may_leave_unscored("evaluate:some/module")
    with pytest.raises(ValueError, match=r"is nan"):  # capeval.score refuses it before the harness sees it
        run_benchmark("nebula", [PLAIN])
    # a NaN reaching the harness from an ordinary metric (e.g. an evaluate module) is refused, naming the item
    def bench(self, b):
        values = np.arange(len(b), dtype=float)
        values[3] = np.nan
        return {"bleu_4": ItemScores("bleu_4", values, "sig")}

    monkeypatch.setattr(harness._Scorer, "bench", bench)
    with pytest.raises(ValueError, match=r"bleu_4 gave item 3 no score \(NaN\)"):
        run_benchmark("nebula", ["bleu_4"])


# -- pairwise benchmarks ---------------------------------------------------------------------------------------------
def test_a_pair_with_an_unscored_caption_is_the_metrics_tie(tmp_path):
    _write_abstract(tmp_path / "data")
    result = run_benchmark("abstract50s", [JUDGE])
    entry = result.results[JUDGE]
    assert entry["unscored_pairs"] == [2]  # pairs 1 and 4 (4 is also a human tie)
    # by hand: pair 0 right (1), 1 unscored (½), 2 wrong (0), 3 the metric's tie (½), 4 a human tie (out), 5 right
    assert entry["HC"] == pytest.approx(100 * (1 + 0.5 + 0 + 0.5 + 1) / 5)
    assert entry["avg"] == pytest.approx(entry["HC"])
    # the same as the metric's own tie: the accuracy with the unscored captions given equal scores
    bench = load_benchmark("abstract50s")
    a = np.array([_answer(r.candidates[0]) for r in bench.records])
    b = np.array([_answer(r.candidates[1]) for r in bench.records])
    tie = np.isnan(a) | np.isnan(b)
    same = bench.evaluate(np.where(tie, 0.0, a), np.where(tie, 0.0, b))
    assert entry["avg"] == pytest.approx(100 * same["value"])
    note = next(n for n in result.notes if n.startswith(JUDGE))
    assert "2 of 6 pairs have a caption without a score" in note and "HC 2" in note and "tie" in note


def test_pairwise_nan_from_an_ordinary_metric_raises(tmp_path, monkeypatch):
    _write_abstract(tmp_path / "data")
    with pytest.raises(ValueError, match=r"is nan"):
        run_benchmark("abstract50s", [PLAIN])


# -- THumB -----------------------------------------------------------------------------------------------------------
def test_thumb_correlations_and_system_means_over_the_scored_captions(tmp_path):
    _write_thumb(tmp_path / "data")
    result = run_benchmark("thumb", [JUDGE], compare=[(JUDGE, "bleu_4")], bootstrap=50)
    bench = load_benchmark("thumb", include_human=True)
    values = np.array([_answer(c) for c in bench.candidates()])
    kept = ~np.isnan(values)
    assert kept.sum() == 11  # 16 captions; Up-Down's 4 and one Human caption have no number
    total = np.array([r.extra["total"] for r in bench.records])
    entry = result.results[JUDGE]
    assert entry["with_human"]["unscored"] == 5
    assert entry["with_human"]["total"] == pytest.approx(scipy.stats.pearsonr(total[kept], values[kept]).statistic)
    assert entry["headline"]["value"] == pytest.approx(entry["with_human"]["total"])
    without = np.array([r.system != "Human" for r in bench.records])
    assert entry["without_human"]["unscored"] == 4
    assert entry["without_human"]["total"] == pytest.approx(
        scipy.stats.pearsonr(total[kept & without], values[kept & without]).statistic)
    leaked = np.array([r.system == "Human" and r.extra["candidate_in_references"] for r in bench.records])
    assert leaked.sum() == 1
    assert entry["with_human_no_leaked"]["unscored"] == 5
    assert entry["with_human_no_leaked"]["total"] == pytest.approx(
        scipy.stats.pearsonr(total[kept & ~leaked], values[kept & ~leaked]).statistic)
    systems = np.array([r.system for r in bench.records])
    for system in ("VinVL-large", "VinVL-base", "Human"):
        mine = (systems == system) & kept
        assert entry["system"][system] == pytest.approx(values[mine].mean())
    assert entry["system"]["Up-Down"] is None  # no scored caption: no system score
    assert entry["system_unscored"] == {"Human": 1, "VinVL-large": 0, "VinVL-base": 0, "Up-Down": 4}
    human_clean = (systems == "Human") & ~leaked
    assert entry["system_no_leaked"] == {"Human": pytest.approx(values[human_clean & kept].mean())}
    assert entry["system_no_leaked_unscored"] == {"Human": 1}
    with_h = next(c for c in result.comparisons if c["subset"] == "with_human")
    assert with_h["unscored"] == 5
    assert with_h["value_a"] == pytest.approx(entry["with_human"]["total"])
    assert any("Up-Down 4" in n for n in result.notes) and any("5 of 16 captions" in n for n in result.notes)
    render(result, "text")  # the None system score prints as a dash, no error


# -- score cache -----------------------------------------------------------------------------------------------------
def test_cache_returns_nan_as_it_was_put(tmp_path, monkeypatch):
    cache = ScoreCache(tmp_path / "scores.sqlite")
    payload = {"per_caption": {"m": [0.5, float("nan"), float("inf"), float("-inf"), 1]}, "signature": "s",
               "nested": [{"x": float("nan")}]}
    cache.put("k", payload)
    raw = cache._con.execute("SELECT payload FROM scores WHERE key = 'k'").fetchone()[0]
    json.loads(raw, parse_constant=lambda token: pytest.fail(f"non-standard JSON token {token}"))  # standard JSON
    got = cache.get("k")
    values = got["per_caption"]["m"]
    assert values[0] == 0.5 and math.isnan(values[1]) and values[2] == math.inf and values[3] == -math.inf
    assert values[4] == 1 and math.isnan(got["nested"][0]["x"]) and got["signature"] == "s"
    cache.close()
    # through the benchmark scorer: the second call is served by the cache, NaN at the same places
    preds, refs = ["a dog 0.4", "a cat", "a bird 0.9"], [["a dog"], ["a cat"], ["a bird"]]
    cache = ScoreCache(tmp_path / "bench.sqlite")
    first = score_items(JUDGE, preds, refs, cache=cache)[JUDGE].values
    monkeypatch.setattr("capeval.api.score", lambda *a, **k: pytest.fail("not served by the cache"))
    second = score_items(JUDGE, preds, refs, cache=cache)[JUDGE].values
    cache.close()
    assert np.isnan(first[1]) and np.isnan(second[1])
    assert np.array_equal(first, second, equal_nan=True) and second[0] == 0.4
