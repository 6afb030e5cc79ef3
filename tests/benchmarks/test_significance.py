"""Headline statistics with 95 % intervals and paired bootstrap comparisons (`capeval bench --compare A,B`).

The statistics are checked on constructed data; the harness and the CLI on small synthetic benchmarks that replace
``load_benchmark`` and the scorer (no benchmark data, no metric is run): every candidate text names its item, and
the fake metrics look their scores up by text.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from capeval.judgments import Benchmark, CaptionRecord, PairRecord, stats
from capeval.meta_evaluation import harness
from capeval.meta_evaluation.harness import plan_comparisons, run_benchmark
from capeval.meta_evaluation.report import comparison_table, format_headline, render, tables, verdict
from capeval.meta_evaluation.scorers import ItemScores
from capeval.cli import main

GOOD, BAD, TWIN = "evaluate:good", "evaluate:bad", "evaluate:twin"  # twin: the same scores as good


# -- the statistics ------------------------------------------------------------------------------------------------
def _tau_c(human):
    return lambda v, idx: stats.kendall_tau(human[idx], v[idx], "c")


@pytest.fixture(scope="module")
def grouped():
    """300 items with 3 human rows each (1-4 like the Flickr8k experts); metric a follows the latent quality
    closely, b loosely."""
    rng = np.random.default_rng(7)
    quality = rng.normal(size=300)
    item = np.repeat(np.arange(300), 3)
    human = np.clip(np.round(2.5 + quality[item] + rng.normal(0, 0.6, 900)), 1, 4)
    a = quality[item] + np.repeat(rng.normal(0, 0.3, 300), 3)
    b = quality[item] + np.repeat(rng.normal(0, 2.0, 300), 3)
    return human, a, b, item


def test_paired_bootstrap_a_clearly_better(grouped):
    human, a, b, item = grouped
    out = stats.paired_bootstrap_difference(_tau_c(human), a, b, groups=item, n_resamples=300, seed=1)
    assert out["difference"] == pytest.approx(stats.kendall_tau(human, a, "c") - stats.kendall_tau(human, b, "c"))
    assert out["value_a"] > out["value_b"]
    low, high = out["ci"]
    assert 0 < low < out["difference"] < high
    assert out["a_beats_b"] and not out["b_beats_a"]
    assert out["p_value"] == 0.0  # no resample put b at or above a
    assert (out["confidence"], out["n_resamples"], out["seed"], out["skipped"]) == (0.95, 300, 1, 0)


def test_paired_bootstrap_of_identical_metrics_finds_nothing(grouped):
    human, a, _, item = grouped
    out = stats.paired_bootstrap_difference(_tau_c(human), a, a.copy(), groups=item, n_resamples=200, seed=0)
    assert out["difference"] == 0.0 and out["ci"] == [0.0, 0.0]
    assert out["p_value"] == 1.0 and not out["a_beats_b"] and not out["b_beats_a"]
    assert verdict({"a": "x", "b": "y", **out}) == "no significant difference"


def test_paired_bootstrap_is_symmetric_and_seeded(grouped):
    human, a, b, item = grouped
    close = b * 0.2 + a * 0.8  # close to a: the interval straddles 0 for a while, the sign is what matters
    kwargs = {"groups": item, "n_resamples": 200}
    ab = stats.paired_bootstrap_difference(_tau_c(human), a, close, seed=3, **kwargs)
    ba = stats.paired_bootstrap_difference(_tau_c(human), close, a, seed=3, **kwargs)
    assert ba["difference"] == pytest.approx(-ab["difference"])
    assert ba["ci"] == pytest.approx([-ab["ci"][1], -ab["ci"][0]])
    assert ba["p_value"] == pytest.approx(ab["p_value"])
    assert (ba["a_beats_b"], ba["b_beats_a"]) == (ab["b_beats_a"], ab["a_beats_b"])
    assert stats.paired_bootstrap_difference(_tau_c(human), a, close, seed=3, **kwargs) == ab
    assert stats.paired_bootstrap_difference(_tau_c(human), a, close, seed=4, **kwargs)["ci"] != ab["ci"]


def test_paired_bootstrap_p_value_is_two_sided_share():
    values = np.arange(10.0)
    # statistic: mean of the resampled rows; A = values, B = values shifted by a constant -> difference constant
    out = stats.paired_bootstrap_difference(lambda v, idx: float(v[idx].mean()), values, values - 0.5, n_resamples=50)
    assert out["difference"] == pytest.approx(0.5) and out["ci"] == pytest.approx([0.5, 0.5]) and out["p_value"] == 0
    noise = np.random.default_rng(0).normal(size=40)
    seen = []  # every statistic value, A then B for each resample (the first pair: all rows)

    def mean(v, idx):
        seen.append(float(v[idx].mean()))
        return seen[-1]

    out = stats.paired_bootstrap_difference(mean, noise, np.zeros(40), n_resamples=400, seed=2)
    diffs = np.array(seen[2::2]) - np.array(seen[3::2])
    assert len(diffs) == 400
    expected = min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0)))
    assert out["p_value"] == pytest.approx(expected) and 0 < expected < 1
    assert out["ci"] == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])))
    assert out["ci"][0] < 0 < out["ci"][1] and not out["a_beats_b"] and not out["b_beats_a"]


def test_paired_bootstrap_refuses_misaligned_input():
    with pytest.raises(ValueError, match="the same rows"):
        stats.paired_bootstrap_difference(lambda v, idx: 0.0, np.zeros(5), np.zeros(6))
    with pytest.raises(ValueError, match="n_resamples"):
        stats.paired_bootstrap_difference(lambda v, idx: 0.0, np.zeros(5), np.zeros(5), n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        stats.paired_bootstrap_difference(lambda v, idx: 0.0, np.zeros(5), np.zeros(5), confidence=95)


def test_resampler_keeps_groups_and_strata():
    groups = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4, 5])
    strata = np.array(["x", "x", "x", "y", "y", "y", "y", "x", "x", "y"])
    sampler = stats.Resampler(groups=groups, strata=strata)
    rng = np.random.default_rng(0)
    for _ in range(50):
        rows = sampler.draw(rng)
        for g in np.unique(groups[rows]):  # every drawn item brings all of its rows, as often as it was drawn
            size = int((groups == g).sum())
            assert np.sum(groups[rows] == g) % size == 0
        drawn_items = {s: sum(np.sum(groups[rows] == g) // int((groups == g).sum())
                              for g in np.unique(groups[strata == s])) for s in ("x", "y")}
        assert drawn_items == {"x": 3, "y": 3}  # items 0, 1, 4 are x; 2, 3, 5 are y: each stratum keeps 3
    with pytest.raises(ValueError, match="an item must lie in one stratum"):
        stats.Resampler(groups=[0, 0, 1], strata=["x", "y", "y"])


def test_bootstrap_ci_without_strata_draws_as_before():
    """The vectorised group expansion gives the rows the per-item concatenation gave (same intervals as before)."""
    rng = np.random.default_rng(0)
    groups = rng.permutation(np.repeat(np.arange(40), 3))
    sampler, draws = stats.Resampler(groups=groups), np.random.default_rng(5)
    uniq, inverse = np.unique(groups, return_inverse=True)
    rows_of = [np.flatnonzero(inverse == k) for k in range(len(uniq))]
    reference = np.random.default_rng(5)
    for _ in range(5):
        expected = np.concatenate([rows_of[k] for k in reference.integers(0, len(uniq), size=len(uniq))])
        assert np.array_equal(sampler.draw(draws), expected)


def test_stratified_bootstrap_never_loses_a_category():
    """Per-category accuracies need every category in every resample: stratified, none is ever skipped, where
    plain resampling of a tiny category is undefined now and then."""
    cats = np.array([0] * 60 + [1] * 3)
    credit_a = np.r_[np.ones(60), [1.0, 0.0, 1.0]]
    credit_b = np.r_[np.zeros(60), [0.0, 1.0, 0.0]]
    average = harness._category_average(cats)
    strat = stats.paired_bootstrap_difference(average, credit_a, credit_b, strata=cats, n_resamples=300, seed=0)
    assert strat["skipped"] == 0 and strat["difference"] == pytest.approx(100 * (1 - 0) / 2 + 100 * (2 / 3 - 1 / 3) / 2)
    plain = stats.paired_bootstrap_difference(average, credit_a, credit_b, n_resamples=300, seed=0)
    assert plain["skipped"] > 0
    ci = stats.bootstrap_ci(lambda idx: average(credit_a, idx), strata=cats, n_resamples=200, seed=0)
    assert ci["skipped"] == 0 and ci["low"] <= average(credit_a, np.arange(63)) <= ci["high"]


# -- synthetic benchmarks ------------------------------------------------------------------------------------------
class Fake:
    """Synthetic benchmarks and metric scores keyed by candidate text."""

    def __init__(self):
        rng = np.random.default_rng(11)
        self.scores: dict[str, dict[str, float]] = {GOOD: {}, BAD: {}, TWIN: {}}
        # Flickr8k-like: 90 items x 3 expert rows
        self.expert = []
        for i in range(90):
            q = rng.normal()
            text = f"expert {i}"
            human = tuple(float(np.clip(np.round(2.5 + q + rng.normal(0, 0.5)), 1, 4)) for _ in range(3))
            self.expert.append(CaptionRecord("flickr8k-expert", f"e{i}", f"img{i}.jpg", None, text, ("a ref",), human))
            self._score(text, q, rng)
        # COMPOSITE-like: 3 subsets x 60 captions, human 1-5
        self.composite = []
        for sub in ("8k", "30k", "coco"):
            for i in range(60):
                q = rng.normal()
                text = f"composite {sub} {i}"
                human = (float(np.clip(np.round(3 + q + rng.normal(0, 0.5)), 1, 5)),)
                self.composite.append(CaptionRecord("composite", f"{sub}/{i}", f"{sub}{i}.jpg", None, text,
                                                    ("a ref",), human, category=sub))
                self._score(text, q, rng)
        # PASCAL-like: 4 categories x 40 pairs; humans prefer the higher latent quality
        self.pairs = []
        for c, cat in enumerate(("HC", "HI", "HM", "MM")):
            for i in range(40):
                qa, qb = rng.normal(), rng.normal()
                ta, tb = f"pair {cat} {i} a", f"pair {cat} {i} b"
                self.pairs.append(PairRecord("pascal50s", f"{cat}{i}", f"p{cat}{i}.jpg", None, (ta, tb),
                                             ("a ref",), int(qb > qa), category=cat))
                self._score(ta, qa, rng)
                self._score(tb, qb, rng)
        # THumB-like: 4 systems + Human, 30 captions each
        self.thumb = []
        for system in ("Human", "S1", "S2", "S3", "S4"):
            for i in range(30):
                q = rng.normal()
                text = f"thumb {system} {i}"
                extra = {"P": 3 + q, "R": 3 + q / 2 + rng.normal(0, 0.3), "total": 6 + 1.5 * q + rng.normal(0, 0.5),
                         "candidate_in_references": system == "Human" and i < 2}
                self.thumb.append(CaptionRecord("thumb", f"{system}{i}", f"t{i}.jpg", None, text, ("a ref",),
                                                (extra["total"],), system=system, extra=extra))
                self._score(text, q, rng)

    def _score(self, text, quality, rng):
        self.scores[GOOD][text] = quality + rng.normal(0, 0.3)
        self.scores[TWIN][text] = self.scores[GOOD][text]
        self.scores[BAD][text] = quality + rng.normal(0, 3.0)

    def load(self, name, root=None, **settings):
        if name.startswith("flickr8k"):
            stat = "kendall_b" if settings.get("protocol") == "cui" or name.endswith("crowdflower") else "kendall_c"
            return Benchmark(name, self.expert, {"protocol": settings.get("protocol") or "clipscore"}, stat)
        if name == "composite":
            subset = settings.get("subset") or "all"
            records = [r for r in self.composite if subset in ("all", r.category)]
            return Benchmark("composite", records, {"subset": subset, "tau": "c"}, "kendall_c")
        if name in ("pascal50s", "abstract50s"):
            seed = settings.get("seed", 0)
            # another reference sample per seed: shift one pair's scores by "changing" its text
            records = self.pairs if seed == 0 else [
                PairRecord(r.benchmark, r.source_id, r.image_id, None,
                           (r.candidates[0] + " s1", r.candidates[1] + " s1") if k % 7 == 0 else r.candidates,
                           r.references, r.preferred, category=r.category) for k, r in enumerate(self.pairs)]
            return Benchmark(name, records, {"refs": settings.get("references", "expert")}, "accuracy")
        if name == "thumb":
            include = settings.get("include_human", True)
            records = [r for r in self.thumb if include or r.system != "Human"]
            return Benchmark("thumb", records, {"include_human": include}, "pearson")
        raise AssertionError(name)

    def score_items(self, spec, predictions, references, *, images=None, cache=None, options=None,
                    show_progress=None):
        if spec == "caption_length":  # the length baseline every run adds: real word counts of the fake texts
            from capeval.length.metric import word_counts

            return {spec: ItemScores(spec, np.asarray(word_counts(list(predictions))), "fake:length")}
        table = self.scores[spec]
        values = [table[p] if p in table else -table[p[:-3]] for p in predictions]  # " s1": another ordering
        return {spec: ItemScores(spec, np.asarray(values, dtype=float), f"fake:{spec}")}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    data = Fake()
    monkeypatch.setattr(harness, "load_benchmark", data.load)
    monkeypatch.setattr(harness, "score_items", data.score_items)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return data


def _check_headline(h, statistic, value, n):
    assert set(h) == {"statistic", "value", "ci", "confidence", "n_resamples", "seed"}
    assert h["statistic"] == statistic and h["value"] == pytest.approx(value) and h["confidence"] == 0.95
    if n:
        assert h["n_resamples"] == n and h["ci"][0] <= h["value"] <= h["ci"][1]
    else:
        assert h["ci"] is None and h["n_resamples"] == 0


@pytest.mark.parametrize("bootstrap", [0, 200])
def test_headline_for_every_benchmark_kind(fake, bootstrap):
    kw = {"bootstrap": bootstrap, "use_cache": False}
    for protocol, stat in ((None, "tau_c"), ("cui", "tau_b")):
        entry = run_benchmark("flickr8k-expert", [GOOD], protocol=protocol, **kw).results[GOOD]
        _check_headline(entry["headline"], stat, entry[stat], bootstrap)
        if bootstrap:  # the protocol statistic's interval is the headline's
            assert entry["headline"]["ci"] == [entry["ci"]["low"], entry["ci"]["high"]]
    entry = run_benchmark("flickr8k-crowdflower", [GOOD], **kw).results[GOOD]
    _check_headline(entry["headline"], "tau_b", entry["tau_b"], bootstrap)
    entry = run_benchmark("composite", [GOOD], **kw).results[GOOD]
    _check_headline(entry["headline"], "tau_b", entry["tau_b"], bootstrap)
    assert entry["primary"] == "tau_c"  # the table still leads with the protocol's τ-c
    for sub in ("8k", "30k", "coco"):
        _check_headline(entry["subsets"][sub]["headline"], "tau_b", entry["subsets"][sub]["tau_b"], bootstrap)
        assert "ci" not in entry["subsets"][sub]
    for name in ("pascal50s", "abstract50s"):
        entry = run_benchmark(name, [GOOD], **kw).results[GOOD]
        _check_headline(entry["headline"], "avg", entry["avg"], bootstrap)
    entry = run_benchmark("thumb", [GOOD], **kw).results[GOOD]
    _check_headline(entry["headline"], "pearson", entry["with_human"]["total"], bootstrap)
    if bootstrap:  # the 90 % paper interval stays, inside the 95 % headline one
        lo90, hi90 = entry["with_human"]["total_ci"]
        assert entry["headline"]["ci"][0] <= lo90 < hi90 <= entry["headline"]["ci"][1]


def test_headline_of_several_seeds_is_their_mean_with_its_interval(fake):
    entry = run_benchmark("pascal50s", [GOOD], seeds=[0, 1], bootstrap=200, use_cache=False).results[GOOD]
    assert len(entry["per_seed"]) == 2 and entry["per_seed"][0]["avg"] != entry["per_seed"][1]["avg"]
    _check_headline(entry["headline"], "avg", entry["avg"], 200)


def _by(comps, **match):
    return [c for c in comps if all(c.get(k) == v for k, v in match.items())]


def test_comparisons_on_each_benchmark_kind(fake):
    kw = {"bootstrap": 150, "use_cache": False}
    result = run_benchmark("flickr8k-expert", [GOOD, BAD, TWIN], compare=[(GOOD, BAD), (GOOD, TWIN), "evaluate:bad,"
                                                                          "evaluate:good"], **kw)
    (gb,), (gt,), (bg,) = (_by(result.comparisons, a=a, b=b) for a, b in ((GOOD, BAD), (GOOD, TWIN), (BAD, GOOD)))
    assert gb["statistic"] == "tau_c" and gb["subset"] is None
    assert gb["difference"] == pytest.approx(result.results[GOOD]["tau_c"] - result.results[BAD]["tau_c"])
    assert gb["a_beats_b"] and not gb["b_beats_a"] and gb["ci"][0] > 0 and gb["p_value"] < 0.05
    assert gt["difference"] == 0 and gt["ci"] == [0, 0] and gt["p_value"] == 1 and not (gt["a_beats_b"] or
                                                                                         gt["b_beats_a"])
    assert bg["b_beats_a"] and bg["ci"] == pytest.approx([-gb["ci"][1], -gb["ci"][0]])

    comps = run_benchmark("composite", [GOOD, BAD], compare=[(GOOD, BAD)], **kw).comparisons
    assert [c["subset"] for c in comps] == [None, "8k", "30k", "coco"]
    assert {c["statistic"] for c in comps} == {"tau_b"} and all(c["a_beats_b"] for c in comps)
    (one,) = run_benchmark("composite", [GOOD, BAD], subset="coco", compare=[(GOOD, BAD)], **kw).comparisons
    assert one["subset"] == "coco" and one["difference"] == pytest.approx(comps[3]["difference"])

    result = run_benchmark("pascal50s", [GOOD, BAD], compare=[(GOOD, BAD)], **kw)
    (c,) = result.comparisons
    assert c["statistic"] == "avg" and c["skipped"] == 0 and c["a_beats_b"]
    assert c["difference"] == pytest.approx(result.results[GOOD]["avg"] - result.results[BAD]["avg"])

    result = run_benchmark("thumb", [GOOD, BAD], compare=[(GOOD, BAD)], **kw)
    assert [c["subset"] for c in result.comparisons] == ["with_human", "without_human"]
    w, wo = result.comparisons
    assert w["difference"] == pytest.approx(result.results[GOOD]["with_human"]["total"]
                                            - result.results[BAD]["with_human"]["total"])
    assert wo["difference"] == pytest.approx(result.results[GOOD]["without_human"]["total"]
                                             - result.results[BAD]["without_human"]["total"])


def test_comparisons_are_deterministic_given_the_seed(fake):
    def comps(seed):
        return run_benchmark("pascal50s", [GOOD, BAD], compare=[(GOOD, BAD)], bootstrap=100, seeds=[seed],
                             use_cache=False).comparisons[0]
    first = comps(0)
    assert comps(0) == first and first["seed"] == 0
    assert comps(1)["ci"] != first["ci"]


def test_compare_defaults_to_1000_resamples_and_refuses_none(fake, monkeypatch):
    assert harness.COMPARE_RESAMPLES == 1000
    monkeypatch.setattr(harness, "COMPARE_RESAMPLES", 40)  # the mechanism, at a test's speed
    result = run_benchmark("thumb", [GOOD], compare=[(GOOD, BAD)], use_cache=False)
    assert BAD in result.results  # a compared key outside the metrics is scored too
    assert result.settings["bootstrap"] == 40 and result.comparisons[0]["n_resamples"] == 40
    assert result.results[GOOD]["headline"]["n_resamples"] == 40
    with pytest.raises(ValueError, match=r"^compare= needs bootstrap resamples, but bootstrap=0") as err:
        run_benchmark("thumb", [GOOD], compare=[(GOOD, BAD)], bootstrap=0)
    from capeval.cli.metric_flags import cli_words

    assert cli_words(err.value).startswith("--compare needs bootstrap resamples, but --bootstrap 0")  # the CLI's words
    assert run_benchmark("thumb", [GOOD], use_cache=False).comparisons == []


def test_plan_comparisons_resolves_and_refuses():
    assert plan_comparisons([], ["bleu"]) == ([], ["bleu"])
    assert plan_comparisons(["bleu_4,cider", ("bleu_4", "cider_d")], ["bleu"]) == ([("bleu_4", "cider_d")],
                                                                                   ["bleu", "cider_d"])
    assert plan_comparisons([("spice", "bleu_1")], ["bleu_1"]) == ([("spice", "bleu_1")], ["bleu_1", "spice"])
    for compare, match in ((["bleu_4"], "two result keys separated by a comma"),
                           (["bleu_4,"], "two result keys"), (["a,b,c"], "two result keys"),
                           (["bleu_4,nope"], "'nope' is neither a result key of metrics="),
                           (["bleu,cider_d"], "metric family with the result keys bleu_1"),
                           (["cider,cider_d"], "compares cider_d with itself")):
        with pytest.raises(ValueError, match=match):
            plan_comparisons(compare, ["bleu_4", "cider_d"])


def test_report_prints_headline_column_and_comparison_table(fake):
    result = run_benchmark("flickr8k-expert", [GOOD, BAD], compare=[(GOOD, BAD), (BAD, TWIN)], bootstrap=200,
                           use_cache=False)
    (title, headers, rows), (ctitle, cheaders, crows) = tables(result)
    assert headers[:5] == ["metric", "tau_c (protocol)", "tau_b", "pearson", "spearman"]
    assert headers[-1] == "tau_c [95% CI]"
    h = result.results[GOOD]["headline"]
    assert rows[0][-1] == format_headline(h)
    assert format_headline({"statistic": "tau_c", "value": 0.472, "ci": [0.455, 0.489]}) == ".472 [.455, .489]"
    assert format_headline({"statistic": "avg", "value": 78.25, "ci": [76.1, 80.44]}) == "78.2 [76.1, 80.4]"
    assert cheaders == ["A − B", "statistic", "A", "B", "difference [95% CI]", "p", "verdict"]
    assert "paired bootstrap: A − B" in ctitle and "200 resamples" in ctitle
    assert crows[0][0] == f"{GOOD} − {BAD}" and crows[0][-1] == f"{GOOD} beats {BAD}"
    assert crows[1][-1] == f"{TWIN} beats {BAD}" and crows[0][4].startswith("+.")
    md = render(result, "markdown")
    assert "## flickr8k-expert: paired bootstrap: A − B" in md and "| tau_c [95% CI] |" in md
    assert "no significant difference" in render(run_benchmark(
        "flickr8k-expert", [GOOD, TWIN], compare=[(GOOD, TWIN)], bootstrap=50, use_cache=False))
    # composite: a subset column; without bootstrap no headline column and no comparison table
    result = run_benchmark("composite", [GOOD, BAD], compare=[(GOOD, BAD)], bootstrap=50, use_cache=False)
    _, sub_headers, sub_rows = tables(result)[1]
    assert sub_headers[-1] == "tau_b [95% CI]" and sub_rows[0][-1] == format_headline(
        result.results[GOOD]["subsets"]["8k"]["headline"])
    assert comparison_table(result)[1][:2] == ["A − B", "subset"]
    plain = tables(run_benchmark("composite", [GOOD], use_cache=False))
    assert len(plain) == 2 and not plain[0][1][-1].endswith("CI]")


def test_cli_compare_json_markdown_and_refusals(fake, tmp_path, capsys):
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert main(["bench", "pascal50s", "--metrics", GOOD, "--compare", f"{GOOD},{BAD}", "--compare", f"{BAD},{GOOD}",
                 "--bootstrap", "100", "--json", str(out), "--markdown", str(md), "--no-cache"]) == 0
    payload = json.loads(out.read_text())
    assert set(payload) >= {"benchmark", "settings", "results", "notes", "comparisons"}
    assert set(payload["results"]) == {GOOD, BAD}
    assert set(payload["results"][GOOD]["headline"]) == {"statistic", "value", "ci", "confidence", "n_resamples",
                                                         "seed"}
    first, second = payload["comparisons"]
    assert set(first) == {"a", "b", "statistic", "subset", "difference", "value_a", "value_b", "ci", "confidence",
                          "n_resamples", "skipped", "seed", "p_value", "a_beats_b", "b_beats_a"}
    assert (first["a"], first["b"], second["a"], second["b"]) == (GOOD, BAD, BAD, GOOD)
    assert first["a_beats_b"] is True and second["b_beats_a"] is True and first["n_resamples"] == 100
    text = md.read_text()
    assert "paired bootstrap: A − B" in text and "avg [95% CI]" in text
    capsys.readouterr()
    for argv, message in (
        (["--compare", GOOD], "--compare needs two result keys separated by a comma"),
        (["--compare", f"{GOOD},nope"], "'nope' is neither a result key of --metrics"),
        (["--compare", f"{GOOD},{BAD}", "--bootstrap", "0"], "--compare needs bootstrap resamples"),
        (["--bootstrap", "-5"], "--bootstrap must be a whole number"),
    ):
        assert main(["bench", "thumb", "--metrics", GOOD, "--no-cache", *argv]) == 1, argv
        assert message in capsys.readouterr().err


def test_pairwise_intervals_resample_pairs_within_their_category(fake, monkeypatch):
    calls = []
    for fn in ("bootstrap_ci", "paired_bootstrap_difference"):
        real = getattr(stats, fn)

        def spy(*args, _real=real, _fn=fn, **kwargs):
            calls.append((_fn, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(harness.stats, fn, spy)
    run_benchmark("pascal50s", [GOOD, BAD], compare=[(GOOD, BAD)], bootstrap=30, use_cache=False)
    stratified = [(fn, kw) for fn, kw in calls if kw.get("strata") is not None]
    assert [fn for fn, _ in stratified] == ["bootstrap_ci", "bootstrap_ci", "paired_bootstrap_difference"]
    for _, kw in stratified:  # pairs of 4 categories, 40 each (the per-category intervals are unstratified)
        assert np.bincount(kw["strata"]).tolist() == [40, 40, 40, 40] and kw["confidence"] == 0.95
