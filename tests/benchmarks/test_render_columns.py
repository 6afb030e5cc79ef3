"""``capeval bench`` tables have no empty column: a published source with none of the metrics shown is left out,
also when a narrow terminal splits the table into blocks (each repeating the metric column)."""
from __future__ import annotations

import pytest

from capeval.meta_evaluation.harness import BenchResult
from capeval.meta_evaluation.report import NOT_MEASURED, render, without_empty_columns

ENTRY = {"tau_b": 0.3, "tau_c": 0.31, "pearson": 0.4, "spearman": 0.41, "primary": "tau_c", "signature": "x"}


def _blocks(text: str) -> list[list[list[str]]]:
    """Each table block of ``text`` as rows of cells, cut at the spans of its ``----`` line."""
    lines = text.splitlines()
    blocks = []
    for k, line in enumerate(lines):
        if line.startswith("---"):
            spans, start = [], None
            for i, ch in enumerate(line + " "):
                if ch == "-" and start is None:
                    start = i
                elif ch != "-" and start is not None:
                    spans.append((start, i))
                    start = None
            rows = []
            for row in lines[k + 1:]:
                if not row.strip():
                    break
                rows.append([row[a:b].strip() for a, b in spans])
            blocks.append(rows)
    return blocks


def _result() -> BenchResult:
    return BenchResult("flickr8k-expert", {"protocol": "clipscore"}, {"bleu_4": dict(ENTRY), "cider_d": dict(ENTRY)})


@pytest.mark.parametrize("columns", ["200", "100", "60", "40"])
def test_no_block_of_a_bench_table_has_an_empty_column(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    text = render(_result())
    blocks = _blocks(text)
    assert blocks and all(rows for rows in blocks)
    for rows in blocks:
        for j in range(1, len(rows[0])):
            assert any(row[j] not in ("", NOT_MEASURED) for row in rows), (columns, j, text)
    # hessel2021 and pycocoevalcap-here publish BLEU-4 and CIDEr-D on this protocol: kept; sarto2023 (PAC-S only)
    # and capevalkit (Polos, FLEUR, ...) publish neither: left out
    assert "hessel2021" in text and "pycocoevalcap-here" in text.replace("-\n", "-").replace(" ", "")
    assert "sarto2023" not in text and "capevalkit" not in text


def test_a_column_with_one_value_stays_and_the_markdown_table_agrees():
    headers = ["metric", "a", "b", "c"]
    rows = [["m1", 1.0, None, None], ["", None, None, ""], ["m2", None, None, 2.0]]
    assert without_empty_columns(headers, rows) == (["metric", "a", "c"],
                                                    [["m1", 1.0, None], ["", None, ""], ["m2", None, 2.0]])
    assert without_empty_columns(headers, []) == (headers, [])
    markdown = render(_result(), "markdown")
    header = next(line for line in markdown.splitlines() if line.startswith("| metric"))
    assert "sarto2023" not in header and "hessel2021 tau_c" in header
