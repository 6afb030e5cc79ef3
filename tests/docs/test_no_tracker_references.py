"""No issue numbers and no numbered sections of the internal spec in the code or the docs: a sentence says the fact
itself, or names the section of a page by its heading. A citation of a published paper's section ("Kasai et al.
2022, §2.2", "the paper's §3.3") is what a reader can look up, and stays.

The rule, for every ``.py``, ``.md``, ``.cfg``, ``.toml`` and ``.yml`` file under modules/, metrics/, docs/,
hub_cards/ and README.md, BENCHMARKS.md:

* no ``issue N`` / ``issues N`` / ``issue #N`` (a number of the tracker);
* no ``spec §``, ``specification §``, ``REFERENCE §`` or ``REFERENCE.md §`` (sections of the internal spec);
* no ``FILE.md §N`` and no ``measurements §N`` / ``lab notes §N`` (a page's section by number: name its heading);
* a bare ``§N`` only where a paper is named before it in the same paragraph (up to 400 characters back, not past a
  blank line): ``et al``, ``paper``, ``supplementary``, ``appendix`` or a year (1990 to 2099).
"""
from __future__ import annotations

import re

from support import ROOT

ROOTS = ("modules", "metrics", "docs", "hub_cards")
FILES = ("README.md", "BENCHMARKS.md")
SUFFIXES = {".py", ".md", ".cfg", ".toml", ".yml"}

FORBIDDEN = (
    ("an issue number", re.compile(r"\b[Ii]ssues? ?#?\d+")),
    ("a section of the spec", re.compile(r"\bspec(?:ification)?\b[`'\"]?\s*§|\bREFERENCE(?:\.md)?[`'\"]?\s*§")),
    ("a page's section by number", re.compile(r"\.md[`'\"]?,?\s*§|\b(?:measurements|lab[- ]notes)\s*§")),
)
SECTION = re.compile(r"§\s*\d")
#: ``<!-- include: PATH § HEADING -->``: the site's marker (docs/_hooks/capeval_site.py), a heading by its name.
INCLUDE = re.compile(r"^<!-- include: \S+ § .+ -->$", re.M)
PAPER = re.compile(r"et al\b|\bpapers?\b|[Ss]upplementary|[Aa]ppendix|\b(?:199\d|20\d\d)\b")


def _files():
    for name in ROOTS:
        for path in sorted((ROOT / name).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and ".egg-info" not in str(path):
                yield path
    for name in FILES:
        yield ROOT / name


def offences(text: str) -> list[tuple[int, str, str]]:
    """``(line number, what, the line)`` for every reference of ``text`` the rule forbids."""
    text = INCLUDE.sub(lambda m: " " * len(m.group(0)), text)  # the site's include markers name a heading
    out = []
    for what, pattern in FORBIDDEN:
        for match in pattern.finditer(text):
            out.append((text.count("\n", 0, match.start()) + 1, what, match.group(0)))
    for match in SECTION.finditer(text):
        before = text[max(0, match.start() - 400):match.start()]
        before = re.split(r"\n\s*(?:#|//|\*)?\s*\n", before)[-1]  # this paragraph only
        if not PAPER.search(before):
            out.append((text.count("\n", 0, match.start()) + 1, "a section with no paper named before it",
                        match.group(0)))
    return sorted(out)


def test_the_rule_tells_a_paper_citation_from_a_tracker_reference():
    allowed = ["the minimal post-processing of THumB 1.0 (Kasai et al. 2022, §2.2.3)",
               "Two architectures (the paper's, §3.3)", "(supplementary §2.4)", "Wang et al. (ECCV 2020) §3.1",
               "the paper prints 0.02, but\n# its §2.2.2 says", "<!-- include: benchmarks/a.md § 1. COCO metrics -->"]
    forbidden = ["Hostile text (issue 54): a cell", "Rules (issue 54):", "(issue 50, items 1, 2 and 5)",
                 "Issue 30 item 5: x", "see the spec §1", "(shared/spec/REFERENCE.md §5)", "REFERENCE §6's floor",
                 "docs/benchmarks/measurements.md §10", "(measurements §12)", "the plan of §12",
                 "Cui et al. 2018\n\n§9's protocol", "issue #12", "<!-- include: a.md § 1. Title -->\nsee §1"]
    assert [text for text in allowed if offences(text)] == []
    assert [text for text in forbidden if not offences(text)] == []


def test_no_issue_number_or_spec_section_in_code_or_docs():
    found = []
    for path in _files():
        for line, what, text in offences(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}: {what}: {text!r}")
    assert not found, "\n".join(found)
