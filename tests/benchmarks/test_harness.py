"""`capeval bench`: result layout per benchmark kind, published-number tables, plots, CLI errors."""
from __future__ import annotations

import json

import pytest

from capeval.meta_evaluation.harness import run_benchmark
from capeval.meta_evaluation.report import plot, render, tables
from capeval.cli import main

from support import FIXTURES, require_data

MODULE = "evaluate:" + str(FIXTURES / "evaluate_modules" / "token_overlap")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_pairwise_layout_and_plot(tmp_path):
    require_data("pascal50s", "expert-processed", "pascal_50s.json")
    result = run_benchmark("pascal50s", [MODULE])
    entry = result.results[MODULE]
    assert set(entry) >= {"HC", "HI", "HM", "MM", "avg"}
    assert entry["avg"] == pytest.approx(sum(entry[c] for c in ("HC", "HI", "HM", "MM")) / 4)
    assert 50 < entry["HI"] <= 100  # a word-overlap metric separates correct from incorrect captions
    assert result.settings["refs"] == "expert"
    png = plot(result, tmp_path / "p.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_seeds_report_std(tmp_path):
    require_data("pascal50s", "cider-matlab", "pascal50S.mat")
    result = run_benchmark("pascal50s", [MODULE], refs=5, seeds=[0, 1])
    entry = result.results[MODULE]
    assert len(entry["per_seed"]) == 2 and set(entry["std"]) >= {"HC", "avg"}
    assert entry["per_seed"][0] != entry["per_seed"][1]  # different reference samples


def test_thumb_layout_and_tables():
    require_data("thumb", "mscoco_THumB-1.0.jsonl")
    result = run_benchmark("thumb", [MODULE])
    entry = result.results[MODULE]
    for block in ("with_human", "without_human", "with_human_no_leaked"):
        assert set(entry[block]) >= {"P", "R", "total"}
        assert -1 <= entry[block]["total"] <= 1
    assert set(entry["system"]) == {"Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human"}
    assert set(entry["system_no_leaked"]) == {"Human"}
    assert result.settings["leaked_human_captions"] == 39
    titles = [t for t, _, _ in tables(result)]
    assert any("Table 4" in t for t in titles) and any("Table 2" in t for t in titles)


@pytest.mark.usefixtures("whole_lines")
def test_correlation_layout_composite_subsets():
    require_data("composite", "composite_8k.jsonl")
    result = run_benchmark("composite", [MODULE])
    entry = result.results[MODULE]
    assert set(entry) >= {"tau_b", "tau_c", "pearson", "spearman"}
    assert set(entry["subsets"]) == {"8k", "30k", "coco"}
    (_, headers, _), _ = tables(result)
    assert "sharif2019 tau" in headers  # the LCEval paper's numbers are put beside ...
    assert "sharif2019" not in render(result)  # ... and left out of the print: none for this module (no empty column)


@pytest.mark.usefixtures("whole_lines")
def test_empty_published_cells_print_a_dash_as_the_leaderboard_does():
    """A metric the papers did not report: its published cells read "—" (as in ``capeval leaderboard``), not blank;
    a paper's column with none of the metrics shown is left out."""
    from capeval.meta_evaluation.harness import BenchResult
    from capeval.meta_evaluation.report import without_empty_columns

    entry = {"tau_b": 0.41, "tau_c": 0.43, "pearson": 0.5, "spearman": 0.6}
    result = BenchResult(benchmark="composite", settings={}, results={"cider_d": dict(entry), "mine": dict(entry)})
    (_, headers, rows), = tables(result)
    shown, _ = without_empty_columns(headers, rows)
    published = len(shown) - 5  # metric, tau_b, tau_c, pearson, spearman, then the papers' columns
    assert published > 0
    text = render(result, "text")
    mine = next(line for line in text.splitlines() if line.startswith("mine"))
    assert mine.split()[5:] == ["—"] * published, text
    markdown = render(result, "markdown")
    mine = next(line for line in markdown.splitlines() if line.startswith("| mine"))
    assert [cell.strip() for cell in mine.strip("|").split("|")][5:] == ["—"] * published, markdown


def test_correlation_tables_put_the_protocols_statistic_first():
    """The variant of Kendall's τ a protocol reports leads its table, labelled, so it is not read off the wrong
    column (CLIPScore's Flickr8k-Expert protocol: τ-c; Cui et al.'s: τ-b)."""
    from capeval.meta_evaluation.harness import BenchResult

    def result(primary):
        entry = {"tau_b": 0.41, "tau_c": 0.43, "pearson": 0.5, "spearman": 0.6, "primary": primary,
                 "subsets": {"8k": {"tau_b": 0.31, "tau_c": 0.33, "pearson": 0.4, "spearman": 0.45}}}
        return BenchResult(benchmark="composite", settings={}, results={"m": entry})

    (_, headers, rows), (_, sub_headers, sub_rows) = tables(result("tau_c"))
    assert headers[:5] == ["metric", "tau_c (protocol)", "tau_b", "pearson", "spearman"]
    assert rows[0][:5] == ["m", 0.43, 0.41, 0.5, 0.6]
    assert sub_headers == ["metric", "subset", "tau_c (protocol)", "tau_b", "pearson", "spearman"]
    assert sub_rows[0] == ["m", "8k", 0.33, 0.31, 0.4, 0.45]
    headers, rows = tables(result("tau_b"))[0][1:]
    assert headers[:3] == ["metric", "tau_b (protocol)", "tau_c"] and rows[0][1:3] == [0.41, 0.43]
    headers = tables(result(None))[0][1]
    assert headers[:5] == ["metric", "tau_b", "tau_c", "pearson", "spearman"]


def test_cli_json_and_errors(tmp_path, capsys):
    require_data("thumb", "mscoco_THumB-1.0.jsonl")
    out = tmp_path / "r.json"
    assert main(["bench", "thumb", "--metrics", MODULE, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["benchmark"] == "thumb" and MODULE in payload["results"]
    assert main(["bench", "thumb", "--metrics", MODULE, "--refs", "5"]) == 1
    assert "--refs applies to pascal50s" in capsys.readouterr().err
    assert main(["bench", "nope", "--metrics", MODULE]) == 1
