"""Nebula's corrected human scores (``scores="corrected"``, ``capeval bench nebula --scores corrected``): Pearl's
corrections, ``spica_{train,val,test}.csv`` (columns ``imgid``, ``mt``, ``score``), averaged per (image, caption)
as CaptionEvalKit does; the error without them; the CLI flag; and ``capeval verify`` naming the variant of each
published Nebula number.

Synthetic files in the released formats, written to ``tmp_path`` (the real Nebula and Spica files are not in
../shared/data).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import scipy.stats

import capeval
from capeval.judgments import load_benchmark
from capeval.meta_evaluation import verify as v
from capeval.meta_evaluation.harness import run_benchmark
from capeval.judgments.nebula import CORRECTION_FILES, correction_key, read_corrections
from capeval.meta_evaluation.report import render
from capeval.cli import main
from capeval.published import entries as published_entries

#: EXPERT's layout: (imgid, candidate, references, score).
ITEMS = [
    ("3f2a9c0e1b7d", "a red kite flying over a sandy beach", ["A red kite flies high above the beach.",
                                                              "People fly a red kite on the sand."], 0.9),
    ("9b8c7d6e5f4a", "two children  playing with a ball", ["Two kids kick a ball in a park.",
                                                           "Two young children chase a ball.", ""], 0.75),
    ("0a1b2c3d4e5f", "a cup of coffee on a table", ["A cup of coffee sits on a wooden table.",
                                                    "A coffee cup with a saucer on a table."], 0.55),
    ("77aa88bb99cc", "a dog sleeping on a couch", ["A dog naps on a sofa.", "a brown dog asleep on a couch"], 0.2),
    ("5e5e5e5e5e5e", "a bus parked by the road", ["A red bus at the side of a road.", "a bus on a street"], 0.4),
]
#: Correction rows per file (imgid with or without an extension, caption spacing as in the files): item 0 has two
#: rows in two files (mean 0.3), item 1 one row whose caption differs only in spacing, item 2 three rows, item 3 a
#: row whose caption differs in case (no match: keeps 0.2), item 4 none (keeps 0.4); one row of an image that is
#: not in the test split.
SPICA = {
    "spica_train.csv": [("3f2a9c0e1b7d.jpg", "a red kite flying over a sandy beach", 0.2),
                        ("0a1b2c3d4e5f", "a cup of coffee on a table", 1.0)],
    "spica_val.csv": [("3f2a9c0e1b7d", "a red kite flying  over a sandy beach ", 0.4),
                      ("0a1b2c3d4e5f.jpg", "a cup of coffee on a table", 0.5),
                      ("ffffffffffff", "a horse in a field", 0.9)],
    "spica_test.csv": [("9b8c7d6e5f4a", " two children playing with a ball", 0.25),
                       ("0a1b2c3d4e5f", "a cup of coffee on a table", 0.0),
                       ("77aa88bb99cc", "A dog sleeping on a couch", 1.0)],
}
EXPECTED = [0.3, 0.25, 0.5, 0.2, 0.4]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _write(root: Path, spica: dict[str, list] | None = SPICA, extra_columns: bool = True) -> Path:
    """``<root>/nebula/nebula_test.json`` (EXPERT's format) and the Spica CSVs (Pearl's columns, with the others a
    release carries: refs first, as a real row would); returns ``root``."""
    folder = root / "nebula"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nebula_test.json").write_text(json.dumps(
        [{"imgid": i, "mt": mt, "refs": refs, "score": s} for i, mt, refs, s in ITEMS]), encoding="utf-8")
    for name, rows in (spica or {}).items():
        with (folder / name).open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["refs", "mt", "score", "imgid"] if extra_columns else ["imgid", "mt", "score"])
            for imgid, mt, score in rows:
                writer.writerow([str(["a reference"]), mt, score, imgid] if extra_columns else [imgid, mt, score])
    return root


# -- the loader ------------------------------------------------------------------------------------------------------
def test_corrected_scores_are_the_mean_of_the_rows_of_the_same_image_and_caption(tmp_path):
    root = _write(tmp_path)
    original = load_benchmark("nebula", root)
    corrected = load_benchmark("nebula", root, scores="corrected")
    assert [r.human_scores for r in original.records] == [(s,) for *_, s in ITEMS]
    assert [r.human_scores[0] for r in corrected.records] == pytest.approx(EXPECTED, abs=1e-12)
    # only the scores change: same items, candidates, references, order
    assert [(r.image_id, r.candidate, r.references) for r in corrected.records] == \
        [(r.image_id, r.candidate, r.references) for r in original.records]
    assert original.settings == {"split": "test", "source": "expert-json", "scores": "original"}
    assert corrected.settings == {"split": "test", "source": "expert-json", "scores": "corrected",
                                  "corrected_items": 3, "uncorrected_items": 2}
    assert corrected.records[0].extra["original_score"] == 0.9 and corrected.records[0].extra["correction_rows"] == 2
    assert corrected.records[2].extra["correction_rows"] == 3
    assert any("replace 3 of 5 items' scores" in n and "2 item(s) without a correction row keep" in n
               for n in corrected.notes)
    assert [p.name for p in corrected.files] == ["nebula_test.json", *CORRECTION_FILES]
    # the statistic follows the corrected scores
    values = [0.1, 0.9, 0.3, 0.5, 0.7]
    assert corrected.evaluate(values)["value"] == pytest.approx(
        scipy.stats.kendalltau(EXPECTED, values, variant="c").statistic, abs=1e-12)


def test_the_three_files_are_pooled_and_keys_normalise_as_the_reference_does(tmp_path):
    table = read_corrections(_write(tmp_path, extra_columns=False) / "nebula")
    assert table[("3f2a9c0e1b7d", "a red kite flying over a sandy beach")] == (pytest.approx(0.3), 2)
    assert table[("0a1b2c3d4e5f", "a cup of coffee on a table")] == (pytest.approx(0.5), 3)
    assert ("77aa88bb99cc", "A dog sleeping on a couch") in table  # no case folding
    assert ("77aa88bb99cc", "a dog sleeping on a couch") not in table
    assert correction_key("abc.jpg", "  a  dog\truns \n") == ("abc", "a dog runs")


def test_without_a_correction_file_the_error_is_one_line_naming_it_and_where_it_goes(tmp_path):
    root = _write(tmp_path, {k: v for k, v in SPICA.items() if k != "spica_val.csv"})
    with pytest.raises(FileNotFoundError) as err:
        load_benchmark("nebula", root, scores="corrected")
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"Nebula's corrected scores need spica_val.csv in {root / 'nebula'}/")
    assert "hiranohachiman/Spica" in text and "--local-dir" in text
    assert load_benchmark("nebula", root).settings["scores"] == "original"  # the original scores need none


def test_a_bad_value_or_split_is_refused(tmp_path):
    root = _write(tmp_path)
    with pytest.raises(ValueError, match=r"scores must be one of original, corrected, got 'corected'; did you mean "
                                         r"'corrected'\?"):
        load_benchmark("nebula", root, scores="corected")
    with pytest.raises(ValueError, match=r"applies to Nebula's test split only"):
        load_benchmark("nebula", root, split="validation", scores="corrected")


def test_a_malformed_correction_file_names_the_file_and_line(tmp_path):
    root = _write(tmp_path)
    (root / "nebula" / "spica_test.csv").write_text("imgid,mt\nx,a dog\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"spica_test\.csv: no column score"):
        load_benchmark("nebula", root, scores="corrected")
    (root / "nebula" / "spica_test.csv").write_text("imgid,mt,score\nx,a dog,0.5\ny,a cat,high\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"spica_test\.csv: line 3: score 'high' is not a finite number"):
        load_benchmark("nebula", root, scores="corrected")


def test_hub_file_names_match_correction_rows_without_the_extension(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = _write(tmp_path)
    (root / "nebula" / "nebula_test.json").unlink()
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    (root / "nebula" / "data").mkdir()
    pq.write_table(pa.table({
        "file_name": [f"{i}.jpg" for i, *_ in ITEMS],
        "image": pa.array([{"bytes": b"", "path": f"{i}.jpg"} for i, *_ in ITEMS], image),
        "refs": [refs for *_, refs, _ in ITEMS], "mt": [mt for _, mt, *_ in ITEMS],
        "human_score": pa.array([s for *_, s in ITEMS], pa.float64())}),
        root / "nebula" / "data" / "test-00000-of-00001.parquet")
    bench = load_benchmark("nebula", root, scores="corrected")
    assert bench.settings["source"] == "hub-parquet"
    assert [r.human_scores[0] for r in bench.records] == pytest.approx(EXPECTED, abs=1e-12)


# -- capeval bench ---------------------------------------------------------------------------------------------------
def test_bench_scores_corrected_correlates_with_the_corrected_scores(tmp_path, monkeypatch, capsys, whole_lines):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data")))
    out = tmp_path / "corrected.json"
    assert main(["bench", "nebula", "--metrics", "bleu_1", "--scores", "corrected", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    bench = load_benchmark("nebula", scores="corrected")
    per_caption = capeval.score(bench.candidates(), bench.references(), metrics="bleu_1")["per_caption"]["bleu_1"]
    assert payload["results"]["bleu_1"]["tau_c"] == pytest.approx(
        scipy.stats.kendalltau(EXPECTED, per_caption, variant="c").statistic, abs=1e-12)
    assert payload["settings"]["scores"] == "corrected" and payload["settings"]["uncorrected_items"] == 2
    text = capsys.readouterr().out
    assert "nebula (corrected scores): correlation with human judgments" in text
    assert "scores=corrected" in text and "uncorrected_items=2" in text
    # the default names its variant too, and differs where the scores differ
    assert main(["bench", "nebula", "--metrics", "bleu_1", "--json", str(tmp_path / "original.json")]) == 0
    original = json.loads((tmp_path / "original.json").read_text())
    assert original["settings"]["scores"] == "original"
    assert original["results"]["bleu_1"]["tau_c"] != payload["results"]["bleu_1"]["tau_c"]
    text = capsys.readouterr().out
    assert "nebula: correlation with human judgments" in text and "scores=original" in text


def test_bench_tables_show_the_published_numbers_of_their_own_variant(tmp_path, monkeypatch, whole_lines):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data")))
    corrected = render(run_benchmark("nebula", ["bleu_4"], scores="corrected", use_cache=False), "text")
    original = render(run_benchmark("nebula", ["bleu_4"], use_cache=False), "text")
    assert ".441" in corrected and ".465" in corrected  # Pearl Table 1's BLEU-4 τ-c / τ-b on corrected scores
    assert ".441" not in original and ".465" not in original


def test_bench_bad_scores_value_is_one_line_with_the_closest_choice(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data")))
    with pytest.raises(SystemExit) as stop:
        main(["bench", "nebula", "--metrics", "bleu_1", "--scores", "corected"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert err.splitlines()[0] == "capeval bench: error: unknown --scores 'corected'; did you mean 'corrected'?"


def test_bench_without_the_correction_files_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data", spica=None)))
    assert main(["bench", "nebula", "--metrics", "bleu_1", "--scores", "corrected"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("capeval bench: error: Nebula's corrected scores need spica_train.csv, spica_val.csv, "
                          f"spica_test.csv in {tmp_path / 'data' / 'nebula'}/")


def test_bench_scores_applies_to_nebula_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    assert main(["bench", "polaris", "--metrics", "bleu_1", "--scores", "corrected"]) == 1
    assert "--scores applies to nebula only, not polaris" in capsys.readouterr().err


# -- capeval verify --------------------------------------------------------------------------------------------------
def test_every_published_nebula_number_names_its_scores_variant():
    nebula = [e for e in published_entries() if e["benchmark"] == "nebula"]
    assert {e["settings"]["scores"] for e in nebula} == {"original", "corrected"}
    rows = [r for r in v.plan(published_entries()) if r.benchmark == "nebula"]
    by_variant = {s: {(r.metric, r.statistic) for r in rows if r.scores == s} for s in ("original", "corrected")}
    assert by_variant["original"] == {("ref_clip_s", "tau_c"), ("ref_pac_s", "tau_c"), ("expert", "tau_c")}
    assert {("polos", "tau_c"), ("cider_d", "tau_b"), ("clip_s", "tau_c")} <= by_variant["corrected"]
    assert all(r.job == v.Job("bench", "nebula", (("scores", r.scores),)) for r in rows)
    assert {r.what for r in rows if r.statistic == "tau_c"} == {"test (original scores) τ-c",
                                                               "test-corrected (corrected scores) τ-c"}
    assert all(r.to_json()["scores"] == r.scores for r in rows)
    assert all(r.scores is None for r in v.plan(published_entries()) if r.benchmark != "nebula")


def test_verify_measures_each_variant_and_names_both(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data")))
    entries = [e for e in published_entries() if e["benchmark"] == "nebula"]
    seen = []

    def measure(job, keys):  # the corrected run for real; RefCLIP-S (CLIP weights) stands in on the original
        seen.append((dict(job.settings)["scores"], tuple(keys)))
        if dict(job.settings)["scores"] == "original":
            return {"ref_clip_s": {"tau_c": 0.469}}
        return v.measure(job, keys, use_cache=False)

    report = v.verify(["bleu_4", "refclip_s"], entries=entries, probe=lambda job, key: None, measure_job=measure)
    assert sorted(seen) == [("corrected", ("bleu_4",)), ("original", ("ref_clip_s",))]
    assert rows_status(report) == {("bleu_4", "corrected"): "differs", ("ref_clip_s", "original"): "reproduced"}
    rows = {(r.metric, r.scores, r.statistic): r for r in report.rows}
    measured = run_benchmark("nebula", ["bleu_4"], scores="corrected", use_cache=False).results["bleu_4"]
    assert rows["bleu_4", "corrected", "tau_c"].measured == pytest.approx(100 * measured["tau_c"])
    assert rows["bleu_4", "corrected", "tau_b"].measured == pytest.approx(100 * measured["tau_b"])
    text = v.render(report, width=0, show="all")
    assert "(corrected scores)" in text and "(original scores)" in text
    assert "nebula (scores=corrected)" in text and "nebula (scores=original)" in text  # the runs


def rows_status(report) -> dict:
    """``{(metric, scores): status}`` (one status per metric and variant)."""
    out: dict = {}
    for row in report.rows:
        out.setdefault((row.metric, row.scores), row.status)
    return out


def test_verify_without_the_correction_files_skips_the_corrected_rows_as_data(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(_write(tmp_path / "data", spica=None)))
    probe = v.Probe()
    skip = probe(v.Job("bench", "nebula", (("scores", "corrected"),)), "bleu_4")
    assert skip.kind == "data" and "spica_train.csv" in skip.text and "hiranohachiman/Spica" in skip.text
    assert probe(v.Job("bench", "nebula", (("scores", "original"),)), "bleu_4") is None
