"""The README answers the first question first: a "Which metric should I report?" table of at most 10
rows before the quick start, no table cell over 300 characters, the two-command quick start, at most 16,000
characters; what moved out lives in docs/usage.md and the pages under docs/usage/."""
from __future__ import annotations

import re

from capeval.catalog import DEFAULTS, VERDICTS
from support import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _sections() -> list[str]:
    return re.findall(r"^## (.+)$", README, flags=re.M)


def test_which_metric_comes_first_then_the_quick_start():
    assert _sections()[:2] == ["Which metric should I report?", "Quick start"]
    table = README.split("## Which metric should I report?", 1)[1].split("## Quick start", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| situation")]
    assert 3 <= len(rows) <= 10
    for row in rows:
        assert len(row.strip("|").split("|")) == 3, row


def test_short_cells_and_length():
    assert len(README) <= 16_000
    for line in README.splitlines():
        if line.startswith("|"):
            assert all(len(cell.strip()) <= 300 for cell in line.strip("|").split("|")), line[:80]


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_second():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", quick, flags=re.S)
    assert [b.strip() for b in blocks] == ['pip install -e ".[all]" && capeval score --example',
                                           'pip install -e ".[test]" && python -m pytest']
    assert 'pip install -e ".[test]" && python -m pytest' in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_recommended_defaults_are_the_ones_the_readme_recommends():
    recommended = [metric for metric, (ok, _) in VERDICTS.items() if ok]
    table = README.split("## Which metric should I report?", 1)[1].split("## Quick start", 1)[0]
    for metric in recommended:
        assert f"| `{metric}` |" in table, metric
    assert f"`{DEFAULTS['critic_ref']}`, recommended" in table
    not_recommended = [metric for metric, (ok, _) in VERDICTS.items() if not ok and metric != "critic"]
    assert all(f"`{m}`" in table.split("Not recommended by the rule", 1)[1] for m in not_recommended)


def test_the_detail_moved_to_docs():
    usage = "\n".join(page.read_text(encoding="utf-8")
                        for page in [ROOT / "docs" / "usage.md", *sorted((ROOT / "docs" / "usage").glob("*.md"))])
    for heading in ("## Hugging Face Trainer", "## Command line", "## Several processes", "## Spaces and the Hub"):
        assert heading in usage
    for link in re.findall(r"\]\(([^)#]+)", README):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link
