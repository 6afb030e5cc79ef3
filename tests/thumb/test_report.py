"""``capeval thumb report`` tables (:mod:`capeval.thumb.report`) on made-up ratings."""
from __future__ import annotations

from capeval import thumb
from capeval.thumb.published import TABLE3
from capeval.thumb.report import format_report

SYSTEMS = list(TABLE3)


def _result():
    """Two images, every paper system captioning both; Human best on both."""
    systems = [s for _ in range(2) for s in SYSTEMS]
    images = [f"img{i}" for i in range(2) for _ in SYSTEMS]
    precision = [5.0 if s == "Human" else 3.0 + k % 2 for k, s in enumerate(systems)]
    recall = [5.0 if s == "Human" else 2.0 + k % 3 for k, s in enumerate(systems)]
    return thumb.score(precision, recall, systems=systems, images=images, bootstrap_samples=20)


def test_paper_report_explains_the_worst_gap():
    """The paper's #worst row is not reproduced (docs/benchmarks/thumb.md): a --paper report says so under the table."""
    result = _result()
    text = format_report(result, paper=True)
    note = next(line for line in text.splitlines() if line.startswith("note: #worst differs from the paper's Table 3"))
    theirs = "/".join(str(TABLE3[s][1]) for s in sorted(SYSTEMS, key=lambda s: (-result["systems"][s]["total"], s)))
    assert f"{theirs} in the paper" in note and "docs/benchmarks/thumb.md" in note
    assert "note:" not in format_report(result)  # no paper columns, nothing to explain
