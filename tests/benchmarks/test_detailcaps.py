"""DetailCaps-4870's loader on a synthetic file of the release's format (its parquet columns), and ``capeval bench
detailcaps`` on it: Pearson and Kendall τ-b over the (image, model) items, the length baseline beside them."""
from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from capeval.judgments import load_benchmark  # noqa: E402
from capeval.judgments.detailcaps import FILE_NAME, load_detailcaps  # noqa: E402

WORDS = "a dog runs on the green grass near two red cars while people walk under tall trees".split()


def _caption(rng, n):
    return " ".join(rng.choice(WORDS, size=n))


def write_release(folder, n=12, *, gpt4o=True, eval_of=None, seed=0):
    """A DetailCaps-4870.parquet of ``n`` images with the release's columns."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        row = {"image": f"coco/val2014/COCO_val2014_{i:012d}.jpg", "source": "COCO" if i % 2 else "SAM",
               "binary": b"\x89PNG fake %d" % i, "GT_Caption_GPT4V": _caption(rng, 40) + ".  Second  sentence.",
               "GT_Caption_Gemini15Pro": _caption(rng, 30)}
        if gpt4o:
            row["GT_Caption_GPT4O"] = _caption(rng, 35)
        for model in ("CogVLM", "ShareCaptioner", "LLaVA_v15"):
            row[model] = _caption(rng, int(rng.integers(5, 60)))
        scores = {m: float(rng.integers(1, 11)) for m in ("CogVLM", "ShareCaptioner", "LLaVA_v15")}
        row["GPT4_Eval"] = (eval_of(i, scores) if eval_of else json.dumps(scores))
        rows.append(row)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / FILE_NAME)
    return rows


def test_records_follow_the_release(tmp_path):
    rows = write_release(tmp_path / "detailcaps", eval_of=lambda i, s: None if i == 3 else json.dumps(s))
    bench = load_benchmark("detailcaps-4870", root=tmp_path)
    assert bench.name == "detailcaps" and bench.statistic == "pearson" and bench.settings == {"references": "paper"}
    assert len(bench) == 11 * 3 and bench.notes == ["1 image(s) without GPT4_Eval skipped"]
    first = bench.records[0]
    assert first.system == "CogVLM" and first.category == "SAM" and first.source_id == "0/CogVLM"
    assert first.references == (" ".join(rows[0]["GT_Caption_GPT4V"].split()), rows[0]["GT_Caption_Gemini15Pro"])
    assert first.human_scores == (json.loads(rows[0]["GPT4_Eval"])["CogVLM"],)
    assert [r.system for r in bench.records[:3]] == ["CogVLM", "ShareCaptioner", "LLaVA_v15"]
    images = bench.images()
    assert images[0] == {"bytes": rows[0]["binary"], "path": None} and images[9]["bytes"] == rows[4]["binary"]
    assert len(load_detailcaps(tmp_path, references="all").records[0].references) == 3


def test_a_revision_without_gpt4o_and_malformed_judgments(tmp_path):
    write_release(tmp_path / "detailcaps", gpt4o=False)
    bench = load_detailcaps(tmp_path, references="all")
    assert len(bench.records[0].references) == 2 and "no GT_Caption_GPT4O" in bench.notes[-1]
    write_release(tmp_path / "bad" / "detailcaps", eval_of=lambda i, s: json.dumps({**s, "CogVLM": "n/a"}))
    with pytest.raises(ValueError) as err:
        load_detailcaps(tmp_path / "bad")
    assert str(err.value) == "DetailCaps-4870.parquet: items[0]: GPT4_Eval['CogVLM'] is 'n/a', not a number."
    with pytest.raises(ValueError, match="references must be one of 'paper', 'all', got 'gpt4o'"):
        load_detailcaps(tmp_path, references="gpt4o")


def test_missing_release_names_the_places_and_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(FileNotFoundError) as err:
        load_detailcaps(tmp_path)
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'detailcaps' / FILE_NAME} not found; expected {FILE_NAME} ")
    assert "also looked in the Hugging Face hub cache" in message
    assert "hf download --repo-type dataset foundation-multimodal-models/DetailCaps-4870 --local-dir" in message


def test_bench_detailcaps_reports_pearson_kendall_and_length(tmp_path, monkeypatch):
    from capeval.meta_evaluation.harness import run_benchmark

    write_release(tmp_path / "detailcaps", n=20)
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    result = run_benchmark("detailcaps", ["bleu_4", "rouge_l"], use_cache=False, show_progress=False)
    bench = load_detailcaps(tmp_path)
    from scipy.stats import kendalltau, pearsonr

    import capeval

    human = [r.human_scores[0] for r in bench.records]
    scored = capeval.score(bench.candidates(), bench.references(), metrics=["rouge_l"])["per_caption"]["rouge_l"]
    entry = result.results["rouge_l"]
    assert entry["pearson"] == pytest.approx(pearsonr(scored, human)[0])
    assert entry["tau_b"] == pytest.approx(kendalltau(scored, human)[0])
    assert entry["primary"] == "pearson" and "length_controlled" in entry
    assert result.results["caption_length"]["baseline"] is True
