"""CapArena's loader and agreement statistics (capeval.judgments.caparena) against transcriptions of the reference
functions (njucckevin/CapArena: vlm_as_a_judge.py ``cal_agreement``, cal_ranking.py ``calculate_elo_rankings``,
caparena_metrics.py ``cal_model_level_agreement``), on a synthetic file in the released format."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from capeval.judgments.caparena import HUMAN_RANKING, caparena_agreement, load_caparena, metric_verdicts
from support.caparena_reference import reference_compute_elo

pd = pytest.importorskip("pandas")
scipy_stats = pytest.importorskip("scipy.stats")

SYSTEMS = ["GPT-4o-0806", "InternVL2-26B", "Claude-3.5-Sonnet-0620", "MiniCPM-V2.6-8B", "LLaVA-1.6-34B",
           "LLaVA-1.5-7B"]


# -- the reference, transcribed -----------------------------------------------------------------------------------------

def reference_cal_agreement(caption_eval_pair_list, include_tie=False, in_400=False):
    """vlm_as_a_judge.py's cal_agreement, returning what it prints."""
    agreement_level = {"overall": [], "level 1": [], "level 2": [], "level 3": [], "level 4": []}
    tie_num = {"level 1": 0, "level 2": 0, "level 3": 0, "level 4": 0}
    for item in caption_eval_pair_list:
        if "judge" not in item:
            continue
        if item["source1"] == "human" or item["source2"] == "human":
            continue
        if in_400 == True:  # noqa: E712
            if not item["in-400"]:
                continue
        if item["judge"] not in ["Caption 1 is better.", "Caption 1 is better", "Caption 2 is better.",
                                 "Caption 2 is better", "Tie", "Tie."]:
            continue
        if item["winner"] == item["source1"]:
            judge_human = "Caption 1 is better."
        elif item["winner"] == item["source2"]:
            judge_human = "Caption 2 is better."
        else:
            judge_human = "Tie."
        if not include_tie:
            if judge_human != "Tie." and item["judge"] != "Tie." and item["judge"] != "Tie":
                agree = 1 if item["judge"] in judge_human else 0
                agreement_level["overall"].append(agree)
                agreement_level[item["cluster"]].append(agree)
        else:
            agree = 1 if item["judge"] in judge_human else 0
            agreement_level["overall"].append(agree)
            agreement_level[item["cluster"]].append(agree)
            if item["judge"] == "Tie" or item["judge"] == "Tie.":
                tie_num[item["cluster"]] += 1
    values = {k: (sum(v) / len(v) if len(v) > 0 else None, len(v)) for k, v in agreement_level.items()}
    return values, tie_num


def reference_calculate_elo_rankings(data, rounds):
    result = []
    for item in data:
        if "human" in [item["source1"], item["source2"]]:
            continue
        if "judge" not in item:
            continue
        if "1" in item["judge"]:
            item["winner_gpt"] = item["source1"]
        elif "2" in item["judge"]:
            item["winner_gpt"] = item["source2"]
        else:
            item["winner_gpt"] = "equal"
        result.append(item)
    battles = pd.DataFrame(result)[['img', 'source1', 'source2', 'winner_gpt']]
    np.random.seed(42)
    rows = [reference_compute_elo(battles.sample(frac=1.0, replace=True)) for _ in range(rounds)]
    df = pd.DataFrame(rows)
    df = df[df.median().sort_values(ascending=False).index]
    return list(df.median().reset_index().set_axis(["model", "Elo rating"], axis=1)["model"])


def reference_model_level(sorted_model_names, ranking_human=list(HUMAN_RANKING)):
    if "human" in sorted_model_names:
        sorted_model_names.remove("human")
    sorted_ranking = [i + 1 for i in range(len(sorted_model_names))]
    human_ranking = [ranking_human.index(model) + 1 for model in sorted_model_names]
    rho, _ = scipy_stats.spearmanr(human_ranking, sorted_ranking)
    tau, _ = scipy_stats.kendalltau(human_ranking, sorted_ranking)
    return rho, tau


# -- a synthetic release ------------------------------------------------------------------------------------------------

def synthetic_release(n=48, seed=0):
    rng = np.random.default_rng(seed)
    items, scores1, scores2 = [], [], []
    for i in range(n):
        if i % 8 == 7:  # a pair with DOCCI's human caption
            s1, s2 = "human", SYSTEMS[int(rng.integers(len(SYSTEMS)))]
        else:
            a, b = rng.choice(len(SYSTEMS), 2, replace=False)
            s1, s2 = SYSTEMS[a], SYSTEMS[b]
        winner = [s1, s2, s1, s2, "tie"][int(rng.integers(5))]
        items.append({"img": f"test_{i:05d}.jpg", "caption1": f"caption one {i}", "caption2": f"caption two {i}",
                      "source1": s1, "source2": s2, "winner": winner, "cluster": f"level {1 + i % 4}",
                      "ref": f"a reference {i}", "in-400": bool(i % 3)})
        # a metric that roughly follows the systems' strength, with equal scores now and then
        strength = {s: -k for k, s in enumerate(SYSTEMS)} | {"human": 0}
        x1, x2 = strength[s1] + rng.normal(0, 2), strength[s2] + rng.normal(0, 2)
        if i % 11 == 0:
            x2 = x1
        scores1.append(float(x1))
        scores2.append(float(x2))
    return items, scores1, scores2


def _judge_string(v):
    return {"1": "Caption 1 is better.", "2": "Caption 2 is better", "tie": "Tie"}[v]


@pytest.fixture
def release(tmp_path, monkeypatch):
    items, s1, s2 = synthetic_release()
    folder = tmp_path / "data" / "caparena"
    (folder / "images").mkdir(parents=True)
    (folder / "caparena_annots_eval.json").write_text(json.dumps(items))
    for item in items[:5]:
        (folder / "images" / item["img"]).write_bytes(b"\xff\xd8")
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path / "data"))
    return items, s1, s2


def test_the_loader_reads_the_released_format(release):
    items, _, _ = release
    bench = load_caparena()
    assert len(bench) == len(items)
    first = bench.pairs[0]
    assert (first.image, first.caption1, first.source2, first.cluster, first.reference) == (
        items[0]["img"], items[0]["caption1"], items[0]["source2"], items[0]["cluster"], items[0]["ref"])
    assert first.image_path is not None and first.image_path.name == items[0]["img"]
    assert bench.pairs[6].image_path is None and len(bench.missing_images()) == len(items) - 5
    assert [p.in_400 for p in bench] == [item["in-400"] for item in items]
    assert sum(p.has_human for p in bench) == 6


def test_a_missing_release_names_the_file_and_format(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"caparena/caparena_annots_eval.json not found; expected "
                                                r"caparena_annots_eval.json .*\"winner\", \"cluster\""):
        load_caparena()


def test_a_malformed_item_is_named(tmp_path):
    items, _, _ = synthetic_release(4)
    del items[2]["winner"]
    path = tmp_path / "caparena_annots_eval.json"
    path.write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"caparena_annots_eval.json\[2\]: no 'winner'"):
        load_caparena(annotations=path)
    items[2]["winner"], items[3]["cluster"] = "tie", "level 9"
    path.write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"\[3\]: cluster 'level 9'"):
        load_caparena(annotations=path)


@pytest.mark.parametrize("in_400", [False, True])
def test_caption_level_agreement_equals_cal_agreement(release, in_400):
    items, s1, s2 = release
    verdicts = metric_verdicts(s1, s2)
    annotated = [dict(item, judge=_judge_string(v)) for item, v in zip(items, verdicts)]
    want, want_ties = reference_cal_agreement(annotated, include_tie=True, in_400=in_400)
    got = caparena_agreement(load_caparena(), (s1, s2), in_400=in_400, rounds=30)
    for level, (value, n) in want.items():
        assert got["caption_level"][level]["n"] == n
        assert got["caption_level"][level]["agreement"] == pytest.approx(value), level
    assert got["ties"] == want_ties
    assert sum(want_ties.values()) > 0 and 0 < want["overall"][0] < 1  # the data exercise ties and disagreements
    assert got["skipped_human"] == 6 and got["no_verdict"] == 0


def test_model_level_agreement_equals_caparena_metrics(release):
    items, s1, s2 = release
    verdicts = metric_verdicts(s1, s2)
    annotated = [dict(item, judge=_judge_string(v)) for item, v in zip(items, verdicts)]
    rounds = 80
    names = reference_calculate_elo_rankings(annotated, rounds)
    rho, tau = reference_model_level(list(names))
    got = caparena_agreement(load_caparena(), (s1, s2), rounds=rounds)["model_level"]
    assert got["ranking"] == names
    assert got["spearman"] == pytest.approx(rho) and got["kendall"] == pytest.approx(tau)
    assert got["human_positions"] == [HUMAN_RANKING.index(n) + 1 for n in names]
    assert -1 <= got["spearman"] <= 1 and got["battles"] == 42


def test_judge_verdicts_with_failures_are_left_out(release):
    items, s1, s2 = release
    verdicts = metric_verdicts(s1, s2)
    verdicts[0] = None  # a judge's failed pair
    labels = [{"1": "a", "2": "b", "tie": "tie", None: None}[v] for v in verdicts]
    got = caparena_agreement(load_caparena(), verdicts=labels, rounds=30)
    annotated = [dict(item, judge=_judge_string(v)) for item, v in zip(items, verdicts) if v is not None]
    want, _ = reference_cal_agreement(annotated, include_tie=True)
    assert got["caption_level"]["overall"]["n"] == want["overall"][1]
    assert got["caption_level"]["overall"]["agreement"] == pytest.approx(want["overall"][0])
    assert got["no_verdict"] == 1


def test_bad_inputs_are_refused(release):
    bench = load_caparena()
    with pytest.raises(ValueError, match="one of the two"):
        caparena_agreement(bench)
    with pytest.raises(ValueError, match=r"verdicts\[0\]: 'x'"):
        caparena_agreement(bench, verdicts=["x"] * len(bench))
    with pytest.raises(ValueError, match="47 verdicts or scores for 48 pairs"):
        caparena_agreement(bench, verdicts=["1"] * 47)
    with pytest.raises(ValueError, match="not in the human ranking"):
        caparena_agreement(bench, verdicts=["1"] * len(bench), human_ranking=SYSTEMS[:3])


def test_metrics_score_both_captions_against_the_reference(release, tmp_path):
    import capeval
    from capeval.judgments.caparena import score_caparena

    items, _, _ = release
    words = ["a", "dog", "runs", "on", "green", "grass", "near", "the", "old", "red", "barn", "today"]
    rng = np.random.default_rng(1)
    for item in items:
        item["ref"] = " ".join(words)
        item["caption1"] = " ".join(rng.choice(words, 9))
        item["caption2"] = " ".join(rng.choice(words, 9))
    path = tmp_path / "release.json"
    path.write_text(json.dumps(items))
    bench = load_caparena(annotations=path)
    got = score_caparena(bench, "rouge_l", rounds=20)
    direct = capeval.score([p.caption1 for p in bench] + [p.caption2 for p in bench], [[p.reference] for p in bench] * 2,
                           metrics="rouge_l")["per_caption"]["rouge_l"]
    n = len(bench)
    annotated = [dict(item, judge=_judge_string(v)) for item, v in zip(items, metric_verdicts(direct[:n], direct[n:]))]
    want, want_ties = reference_cal_agreement(annotated, include_tie=True)
    assert set(got) == {"rouge_l"}
    assert got["rouge_l"]["caption_level"]["overall"]["agreement"] == pytest.approx(want["overall"][0])
    assert got["rouge_l"]["caption_level"]["overall"]["n"] == want["overall"][1] == 42
    items[4].pop("ref")
    path.write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"release.json\[4\]: no 'ref'"):
        score_caparena(load_caparena(annotations=path), "rouge_l")


def test_an_arena_run_over_the_battles_gives_its_agreement(release):
    from capeval.judges.arena import collect

    items, s1, s2 = release
    verdicts = metric_verdicts(s1, s2)
    said = {"1": ("Judgment: Caption 1 is better.", "Judgment: Caption 2 is better."),  # a in both orders
            "2": ("Judgment: Caption 2 is better.", "Judgment: Caption 1 is better."),  # b in both orders
            "tie": ("Judgment: Caption 1 is better.", "Judgment: Caption 1 is better.")}  # position bias: a tie
    result = collect([answer for v in verdicts for answer in said[v]])
    assert result.verdicts == [{"1": "a", "2": "b", "tie": "tie"}[v] for v in verdicts]
    bench = load_caparena()
    got = caparena_agreement(bench, verdicts=result, rounds=30)
    want = caparena_agreement(bench, (s1, s2), rounds=30)
    assert got == want
