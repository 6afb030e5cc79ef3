"""``capeval verify``'s row logic: one row per published number, its tolerance, and reproduced / differs / skipped,
with a fake measurement (no benchmark is scored here)."""
from __future__ import annotations

import json
import math

import pytest

from capeval.meta_evaluation import verify as v
from capeval.meta_evaluation.verify.metric_facts import capeval_key
from capeval.published import entries as published_entries

HESSEL = {"benchmark": "flickr8k-expert", "source": "hessel2021", "where": "Table 1", "protocol": "clipscore",
          "statistic": "tau_c", "scale": 100,
          "values": {"bleu_4": 30.8, "cider_d": 43.9, "meteor": 41.8, "tiger": 49.3, "clip_s": 51.2, "refclip_s": 53.0}}
WEIGHTS = "weights not in the Hugging Face cache: hf download openai/clip-vit-base-patch32"


def fake_probe(job, key):
    return WEIGHTS if key in v.CLIP_FAMILY else None


def fake_measure(values):
    calls = []

    def measure(job, keys):
        calls.append((job, tuple(keys)))
        return {k: {"tau_c": values[k]} for k in keys if k in values}

    measure.calls = calls
    return measure


def run(entries, values, **kwargs):
    measure = fake_measure(values)
    report = v.verify(entries=entries, probe=kwargs.pop("probe", fake_probe), measure_job=measure, **kwargs)
    return report, {(r.metric, r.source): r for r in report.rows}, measure


def test_reproduced_differs_and_skipped():
    report, rows, measure = run([HESSEL], {"bleu_4": 0.30776, "cider_d": 0.4420, "meteor": 0.4185})
    assert rows["bleu_4", "hessel2021"].status == "reproduced"
    assert rows["bleu_4", "hessel2021"].measured == pytest.approx(30.776)
    cider = rows["cider_d", "hessel2021"]
    assert cider.status == "differs" and cider.delta == pytest.approx(0.3) and cider.tolerance == 0.05
    # exactly half a unit away prints either way: reproduced (inclusive)
    assert rows["meteor", "hessel2021"].status == "reproduced"
    tiger = rows["tiger", "hessel2021"]
    assert tiger.status == "skipped" and "not a capeval metric" in tiger.reason and tiger.measured is None
    for key in ("clip_s", "ref_clip_s"):
        assert rows[key, "hessel2021"].status == "skipped" and rows[key, "hessel2021"].reason == WEIGHTS
    assert rows["ref_clip_s", "hessel2021"].published_as == "refclip_s"
    # one run for the job, with the metrics of its comparable rows only
    assert len(measure.calls) == 1 and measure.calls[0][1] == ("bleu_4", "cider_d", "meteor")
    assert report.counts() == {"reproduced": 2, "differs": 1, "skipped": 3}
    assert not report.ok


def test_all_within_tolerance_is_ok():
    report, _, _ = run([HESSEL], {"bleu_4": 0.308, "cider_d": 0.439, "meteor": 0.418})
    assert report.ok and report.counts()["differs"] == 0


def test_json_rows_have_the_required_keys(capsys):
    report, _, _ = run([HESSEL], {"bleu_4": 0.308, "cider_d": 0.45, "meteor": 0.418})
    payload = json.loads(json.dumps(report.to_json()))
    assert len(payload) == 6
    for row in payload:
        assert set(v.REQUIRED_KEYS) <= set(row)
        assert row["status"] in v.STATUSES
        assert row["benchmark"] == "flickr8k-expert" and row["source"] == "hessel2021"
        assert isinstance(row["published"], float)
        if row["status"] == "skipped":
            assert row["reason"]
        else:
            assert isinstance(row["measured"], float) and isinstance(row["tolerance"], float)
            assert row["delta"] == pytest.approx(row["measured"] - row["published"])


def test_a_failed_measurement_is_an_error_not_a_pass():
    def broken(job, keys):
        raise RuntimeError("the METEOR jar died")

    report = v.verify(entries=[HESSEL], probe=fake_probe, measure_job=broken)
    bleu = next(r for r in report.rows if r.metric == "bleu_4")
    assert bleu.status == "skipped" and bleu.error and "the METEOR jar died" in bleu.reason
    assert not report.ok


def test_unavailable_data_skips_with_the_probe_reason_and_measures_nothing():
    measure = fake_measure({})
    report = v.verify(entries=[HESSEL], probe=lambda job, key: "benchmark data not found: ExpertAnnotations.txt",
                      measure_job=measure)
    assert measure.calls == []
    assert {r.reason for r in report.rows if r.metric != "tiger"} == {"benchmark data not found: ExpertAnnotations.txt"}
    assert report.ok  # nothing differs


@pytest.mark.parametrize("entry, name, field, tolerance", [
    (HESSEL, "cider_d", None, 0.05),
    (HESSEL, "spice", None, 1.0),  # SPICE's fidelity target against official SPICE
    ({**HESSEL, "source": "pycocoevalcap-here", "where": "docs/benchmarks/measurements.md §2", "scale": 1, "values": {"cider_d": 0.224}},
     "cider_d", None, 0.0005),
    ({"benchmark": "thumb", "source": "kasai2022", "where": "Table 4", "protocol": "with_human",
      "statistic": "pearson", "scale": 1, "values": {"cider_d": {"total": 0.2}}}, "cider_d", "total", 0.005),
    ({"benchmark": "pacscore-example", "source": "pacscore-readme", "where": "README.md: Quick Start",
      "protocol": "compute_metrics.py", "statistic": "corpus_score", "scale": 1,
      "values": {"cider_d": {"good": 1.4918}}}, "cider_d", "good", 0.00005),
    ({"benchmark": "pacscore-example", "source": "pacscore-readme", "where": "README.md: Quick Start",
      "protocol": "compute_metrics.py", "statistic": "corpus_score", "scale": 1,
      "values": {"pac_s": {"good": 0.8264}}}, "pac_s", "good", 0.0001),  # CPU / GPU float: one unit
    ({"benchmark": "pycocoevalcap-example", "source": "clipscore-readme",
      "where": "README.md: MSCOCO dataset in pycocoevalcap", "protocol": "pycocoevalcap",
      "statistic": "corpus_score", "scale": 1, "values": {"spice": 0.133}}, "spice", None, 0.005),
    ({"benchmark": "thumb", "source": "kasai2022", "where": "Table 3", "protocol": "system",
      "statistic": "strictly_best_worst", "scale": 1, "values": {"Human": {"best": 327}}}, "thumb", "Human best", 0.5),
])
def test_tolerance_rule(entry, name, field, tolerance):
    entry = {**entry, "values": {name: entry["values"].get(name, 44.9)}} if name != "thumb" else entry
    (row,) = v.plan([entry])
    assert row.field == field
    assert row.tolerance == pytest.approx(tolerance)
    assert row.tolerance_rule


def test_boundary_is_inclusive_with_float_slack():
    row = v.Row("cider_d", "pascal50s", 65.4, "pycocoevalcap-here", "docs/benchmarks/measurements.md §2", "accuracy",
                "expert-5-refs",
                field="HC", decimals=1, tolerance=0.05, measured=65.45)
    assert v.compare(row).status == "reproduced"
    row.measured = 65.46
    assert v.compare(row).status == "differs"
    row.measured = math.nan
    assert v.compare(row).status == "differs"


def test_every_published_number_has_a_row():
    """Nothing is dropped: one row per number of data/published.json (nulls are no number)."""
    def numbers(value):
        if isinstance(value, dict):
            return sum(numbers(x) for x in value.values())
        return int(isinstance(value, (int, float)) and not isinstance(value, bool))

    expected = sum(numbers(e["values"]) for e in published_entries())
    rows = v.plan(published_entries())
    assert len(rows) == expected
    for row in rows:
        assert row.tolerance is not None and row.tolerance > 0
        assert row.reason is not None or row.job is not None, row


def test_classification_of_the_published_table():
    rows = v.plan(published_entries())

    def reasons(**match):
        return {r.reason for r in rows if all(getattr(r, k) == x for k, x in match.items())}

    # protocols that cannot be replicated here
    assert reasons(source="cui2018", benchmark="flickr8k-expert") >= {v.CUI_PROTOCOL}
    assert reasons(benchmark="composite", source="sharif2019", metric="cider_d") == {v.LCEVAL_SPLIT}
    assert reasons(benchmark="composite", source="hessel2021", metric="cider_d") == {v.COMPOSITE_TEXT}
    assert reasons(benchmark="pascal50s", source="wang2020", metric="cider_d") == {v.WANG_LABELS}
    assert reasons(benchmark="thumb", source="kasai2022", statistic="pearson", metric="cider_d") == {v.THUMB_TABLE4}
    assert reasons(benchmark="coco2015", metric="spice") == {v.COCO2015_CAPTIONS}
    # metrics capeval does not have
    for name in ("tiger", "bert_s_pp", "nubia", "spider", "wmd", "nneval", "bertscore", "refonlyc"):
        if capeval_key(name) is None:  # (SPIDEr is one once the registry has it: its rows keep their protocol's)
            assert all("not a capeval metric" in r.reason and r.skip.kind == "not_in_capeval"
                       for r in rows if r.metric == name), name
    # Polos is one now: its Flickr8k and Polaris rows are targets (COMPOSITE's keep the reference-text reason)
    polos = {r.benchmark: r.reason for r in rows if r.metric == "polos"}
    assert {b for b, why in polos.items() if why is None} >= {"flickr8k-expert", "flickr8k-crowdflower", "polaris"}
    assert polos["composite"] == v.COMPOSITE_TEXT
    assert all("not a metric" in r.reason for r in rows if r.metric == "inter-human")
    # targets: the classical rows measured with exactly the published protocol
    targets = {(r.metric, r.benchmark, r.source) for r in rows if r.reason is None}
    for target in [("bleu_4", "flickr8k-expert", "hessel2021"), ("cider_d", "flickr8k-expert", "pycocoevalcap-here"),
                   ("rouge_l", "flickr8k-expert", "hessel2021"), ("spice", "flickr8k-expert", "hessel2021"),
                   ("cider_d", "pascal50s", "pycocoevalcap-here"), ("cider_d", "thumb", "pycocoevalcap-here"),
                   ("thumb", "thumb", "kasai2022"), ("cider_d", "clipscore-example", "clipscore-readme"),
                   ("meteor", "pacscore-example", "pacscore-readme"), ("spice", "pycocoevalcap-example",
                                                                        "clipscore-readme")]:
        assert target in targets, target
    # vision-language rows are targets too (skipped only when the weights / images are not here)
    vl = [r for r in rows if r.metric in v.CLIP_FAMILY]
    assert {r.benchmark for r in vl if r.reason is None} >= {
        "flickr8k-expert", "flickr8k-crowdflower", "pascal50s", "thumb", "polaris", "nebula", "clipscore-example",
        "pacscore-example", "pycocoevalcap-example"}
    # the published.json spellings refclip_s / refpac_s map to capeval's keys
    assert {r.published_as for r in vl if r.metric in ("ref_clip_s", "ref_pac_s")} == {"refclip_s", "refpac_s"}


def test_select_by_metric_and_benchmark():
    rows = v.plan(published_entries())
    picked = v.select(rows, ["refclipscore", "cider"], ["Flickr8k_Expert"])
    assert {r.metric for r in picked} == {"ref_clip_s", "cider_d"}
    assert {r.benchmark for r in picked} == {"flickr8k-expert"}
    assert v.select(rows, ["refclip_s"], None) == [r for r in rows if r.metric == "ref_clip_s"]
    with pytest.raises(ValueError, match="no published number for nosuch"):
        v.select(rows, ["nosuch"], None)
    with pytest.raises(ValueError, match="^benchmarks: no published number"):
        v.select(rows, None, ["abstract-51s"])


def test_fast_skips_spice_saying_so():
    entry = {**HESSEL, "values": {"spice": 44.9, "bleu_4": 30.8}}
    report, rows, measure = run([entry], {"bleu_4": 0.308}, fast=True)
    assert rows["spice", "hessel2021"].reason == v.FAST
    assert measure.calls[0][1] == ("bleu_4",)


def test_render_numbers_reasons_and_counts():
    report, _, _ = run([HESSEL], {"bleu_4": 0.308, "cider_d": 0.45, "meteor": 0.418})
    text = v.render(report, width=100)
    lines = text.splitlines()
    assert lines[:2] == ["6 published numbers: 2 reproduced, 1 differ, 3 skipped",
                         "skipped by kind: 0 weights, 0 data, 0 irreproducible, 1 not_in_capeval, 2 other"]
    assert "Differs (1)" in text and "flickr8k-expert · hessel2021 Table 1" in text
    differs = lines.index("Differs (1): measured further from the published number than its tolerance")
    assert lines[differs + 4].split()[:2] == ["cider_d", "clipscore"] and "+1.100" in lines[differs + 4]
    # the fake probe's bare string is a skip of kind other, grouped with its text; TIGEr: not_in_capeval
    assert any(line.startswith("other") and WEIGHTS[:40] in line for line in lines)
    assert any(line.startswith("not_in_capeval") and "TIGEr" in line for line in lines)
    assert "hessel2021: Jack Hessel" in text
    listed = v.render(report, show="skipped", width=100)
    assert "[1] TIGEr" in listed and WEIGHTS in listed and "Differs" not in listed
    markdown = v.render(report, "markdown")
    assert markdown.startswith("6 published numbers: 2 reproduced, 1 differ, 3 skipped.")
    assert "| metric |" in markdown and "skipped: not_in_capeval [1]" in markdown


def test_the_metric_sets_come_from_the_registry(monkeypatch):
    """The image-reading, CLIP-family and judge sets are read from the metric classes: a metric registered with
    ``needs_images`` and ``external_weights`` is an image metric at once; SPIDEr, a capeval metric, is never
    'not in capeval' (its published rows keep their protocol's reason)."""
    from capeval import CaptionMetric
    from capeval.meta_evaluation.verify import metric_facts
    from capeval.registry import REGISTRY, MetricSpec

    assert v.IMAGE_METRICS == frozenset({"clip_s", "ref_clip_s", "pac_s", "ref_pac_s", "polos", "fleur",
                                         "ref_fleur", "expert"})
    assert v.CLIP_FAMILY == {"clip_s": "clip", "ref_clip_s": "clip", "pac_s": "pac", "ref_pac_s": "pac"}
    assert v.JUDGES["expert"][-1] == "hjkim811/EXPERT-llava-13b-lora" and set(v.JUDGES) == {"fleur", "ref_fleur",
                                                                                             "expert"}

    class Looker(CaptionMetric):
        name = "looker"
        needs_images = True
        external_weights = True
        judge_models = ("someone/looker-judge",)

        def compute(self, batch):
            raise NotImplementedError

    import sys
    import types

    module = types.ModuleType("looker_module")
    module.Looker = Looker
    monkeypatch.setitem(sys.modules, "looker_module", module)
    REGISTRY["looker"] = MetricSpec("looker", "looker_module", "Looker", ("looker",))
    metric_facts.clear()
    try:
        assert "looker" in v.IMAGE_METRICS and v.JUDGES["looker"] == ("someone/looker-judge",)
        assert "looker" not in v.CLIP_FAMILY and capeval_key("looker") == "looker"
    finally:
        del REGISTRY["looker"]
        metric_facts.clear()
    assert "looker" not in v.IMAGE_METRICS
    spider = [r for r in v.plan(published_entries()) if r.metric == "spider"]
    assert spider and capeval_key("spider") == "spider" and "spider" not in v.NOT_IN_CAPEVAL
    assert all(r.skip.kind == "irreproducible" and "not a capeval metric" not in r.reason for r in spider)
