"""Provenance and contamination: the catalog's training data, the benchmarks' data, the overlap rule, and the marks
``capeval bench`` prints and writes."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from capeval import catalog, provenance
from capeval.meta_evaluation.contamination import RULE_BASED, contamination, metric_models
from capeval.meta_evaluation.harness import BenchResult, run_benchmark
from capeval.meta_evaluation.report import CONTAMINATION_MARK, render
from capeval.paths import hub_cards_dir
from capeval.registry import REGISTRY

from support import FIXTURES, require_data

MODULE = "evaluate:" + str(FIXTURES / "evaluate_modules" / "token_overlap")
MINILM_DIRTY = [("flickr8k-expert", None), ("flickr8k-crowdflower", None), ("composite", None), ("composite", "8k"),
                ("composite", "30k")]
MINILM_CLEAN = [("pascal50s", None), ("abstract50s", None), ("thumb", None), ("composite", "coco")]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_catalog_covers_every_shipped_model_and_default():
    for name in (n for n, m in catalog.MODELS.items() if m.location in ("bundled", "hub")):
        assert hub_cards_dir("models", f"{name}.md").is_file(), name
    # critic-flickr8k-joint scores without its image (image_optional); a CLIP serves its score and the reference-augmented one
    also_serves = {"critic_ref": "critic", "ref_clip_s": "clip_s", "ref_pac_s": "pac_s", "ref_fleur": "fleur"}
    for metric, name in catalog.DEFAULTS.items():
        assert metric in REGISTRY
        assert catalog.entry(name).metric in (metric, None, also_serves.get(metric)), (metric, name)
    for model in catalog.MODELS.values():
        assert model.status in catalog.STATUSES
        if model.status != "pretrained":
            assert model.sources, f"{model.name} declares no training data"


def test_training_sources_follow_components():
    sources = {s.key: path for s, path in catalog.training_sources("critic-flickr8k-plus")}
    assert sources["flickr30k-caption-pairs"] == ("critic-flickr8k-plus", "all-minilm-l6-v2")
    assert sources["flickr8k-train"] == ("critic-flickr8k-plus", "critic-flickr8k-caption")
    assert "imagenet-1k-train" in sources and "glove-6b-corpus" in sources
    hard = {s.key for s, _ in catalog.training_sources("critic-flickr8k-hard")}  # retired, still in the catalog
    assert "coco-train2014-captions" in hard  # inherited through critic-flickr8k-coco from critic-coco-ref


@pytest.mark.parametrize("bench_name,subset", MINILM_DIRTY)
def test_minilm_metrics_are_marked_on_flickr_benchmarks(bench_name, subset):
    for key in ("critic_plus", "lceval_plus"):
        reasons = contamination(key, bench_name, subset)
        assert reasons and all("all-minilm-l6-v2" in r and "Flickr30k" in r for r in reasons), (key, reasons)


@pytest.mark.parametrize("bench_name,subset", MINILM_CLEAN)
def test_minilm_metrics_are_clean_off_flickr(bench_name, subset):
    for key in ("critic_plus", "lceval_plus"):
        assert contamination(key, bench_name, subset) == []


@pytest.mark.parametrize("bench_name", list(provenance.BENCHMARK_DATA))
def test_rule_based_metrics_are_never_marked(bench_name):
    name, _, subset = bench_name.partition("/")
    for family in RULE_BASED:
        for key in REGISTRY[family].keys:
            assert contamination(key, name, subset or None) == []


def test_other_split_of_the_same_dataset_is_clean():
    # critics trained on Flickr8k train never saw the test split that Flickr8k-Expert is made of
    assert contamination("critic", "flickr8k-expert") == []
    assert contamination("lceval", "flickr8k-expert") == []


def test_left_out_images_do_not_count_but_would_otherwise():
    lceval_coco = provenance.SOURCES["coco-karpathy-test-pairs"]
    thumb = provenance.SOURCES["coco-karpathy-test"]
    assert not provenance.overlaps(lceval_coco, thumb, "thumb")
    assert provenance.overlaps(replace(lceval_coco, left_out=()), thumb, "thumb")
    assert provenance.overlaps(lceval_coco, thumb, "coco-karpathy-test")  # not left out of that one


def test_karpathy_test_lies_inside_val2014():
    val = provenance.Source("x", "coco", "val2014", frozenset({"captions"}), "COCO val2014 captions")
    assert provenance.overlaps(val, provenance.SOURCES["coco-karpathy-test"])
    train = provenance.SOURCES["coco-train2014-caption-pairs"]
    assert not provenance.overlaps(train, provenance.SOURCES["coco-karpathy-test"])


def test_released_lceval_was_selected_on_flickr8k_expert_judgments():
    reasons = contamination("lceval_released", "flickr8k-expert")
    assert any("judgments" in r for r in reasons) and any("Flickr30k" in r for r in reasons)
    assert contamination("lceval_released", "pascal50s") == []


def test_model_options_change_the_verdict(tmp_path):
    assert contamination("critic", "pascal50s", options={"critic_model": "critic-flickr8k-joint"}) == []
    unknown = contamination("critic", "pascal50s", options={"critic_model": str(tmp_path)})
    assert len(unknown) == 1 and unknown[0].startswith("unknown:") and "critic_model" in unknown[0]
    assert metric_models("sentence_cosine", {"sentence_cosine_encoder": "sentence-transformers/all-MiniLM-L6-v2"}) == [
        "all-minilm-l6-v2"]
    assert contamination(MODULE, "pascal50s")[0].startswith("unknown:")
    assert contamination("evaluate:sacrebleu", "pascal50s") == []


def test_unknown_benchmark_is_refused():
    with pytest.raises(KeyError, match="known"):
        provenance.benchmark_data("composite", "40k")


def test_composite_coco_images_are_inside_the_karpathy_test_split():
    """The declaration ``composite/coco`` = COCO Karpathy test, checked on the files."""
    root = require_data("composite", "composite_coco.jsonl").parent.parent
    karpathy = root / "coco_karpathy_test" / "karpathy_ref.json"
    if not karpathy.is_file():
        pytest.skip(f"{karpathy} is absent")
    images = {json.loads(line)["image"] for line in (root / "composite" / "composite_coco.jsonl").open()}
    test_split = {entry["image_id"] for entry in json.loads(karpathy.read_text())}
    assert images and all(name.startswith("COCO_val2014_") for name in images)
    assert images <= test_split


def test_flickr8k_expert_candidates_are_test_captions():
    """The declaration ``flickr8k-expert`` = Flickr8k test images and test captions, checked on the files."""
    folder = require_data("flickr8k", "ExpertAnnotations.txt").parent
    test = set((folder / "Flickr_8k.testImages.txt").read_text().split())
    rows = [line.split("\t") for line in (folder / "ExpertAnnotations.txt").read_text().splitlines() if line]
    assert rows and all(r[0] in test and r[1].split("#")[0] in test for r in rows)


def test_bench_writes_and_prints_the_marks():
    require_data("pascal50s", "expert-processed", "pascal_50s.json")
    result = run_benchmark("pascal50s", ["bleu_4", MODULE])
    assert result.results["bleu_4"]["contamination"] == []
    assert result.results[MODULE]["contamination"][0].startswith("unknown:")
    from capeval.render import display_width, full_width

    fitted = render(result, "text")  # pytest's captured output is no terminal: 100 columns unless COLUMNS says
    assert max(display_width(line) for line in fitted.splitlines()) <= 100
    with full_width():
        text = render(result, "text")
    assert f"{MODULE} {CONTAMINATION_MARK}" in text and f"bleu_4 {CONTAMINATION_MARK}" not in text
    assert f"{CONTAMINATION_MARK} {MODULE}: not clean on this benchmark: unknown:" in text
    assert json.loads(json.dumps(result.to_json()))["results"]["bleu_4"]["contamination"] == []


def test_render_marks_composite_subsets_separately():
    entry = {"tau_b": .5, "tau_c": .5, "pearson": .5, "spearman": .5, "primary": "tau_b", "contamination": ["r8k"],
             "subsets": {"8k": {"tau_b": .4, "tau_c": .4, "pearson": .4, "spearman": .4, "contamination": ["r8k"]},
                         "coco": {"tau_b": .6, "tau_c": .6, "pearson": .6, "spearman": .6, "contamination": []}}}
    result = BenchResult("composite", {}, {"lceval_plus": entry})
    text = render(result, "markdown")
    assert f"lceval_plus {CONTAMINATION_MARK}" in text
    lines = [line for line in text.splitlines() if "| coco" in line or "| 8k" in line]
    assert any("8k" in line and CONTAMINATION_MARK in line for line in lines)
    assert any("coco" in line and CONTAMINATION_MARK not in line for line in lines)
    assert f"{CONTAMINATION_MARK} lceval_plus: not clean on this benchmark: r8k" in text
