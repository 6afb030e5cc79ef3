"""``capeval verify`` as a reader meets it: the counts first (skipped rows by kind), then the differing rows, the
reproduced ones one line each and the skipped ones one line per group, within 100 columns; ``--show skipped`` lists
every skipped row; ``--json`` gives every skipped row its ``skip_kind``; the published table cites only files that
exist. Offline: the whole published table is planned as it is, the data / weights probe and the measurements are
fakes (nothing is scored)."""
from __future__ import annotations

import json
import re

import pytest

from capeval.meta_evaluation import verify as v
from capeval.meta_evaluation.verify import availability, measuring
from capeval.cli import main
from capeval.published import citations
from capeval.published import entries as published_entries
from capeval.render import display_width

from support import ROOT

#: Rows of these (metric, benchmark) pairs are measured off by ten tolerances (so that some rows differ).
OFF = {("cider_d", "pascal50s"), ("bleu_4", "clipscore-example")}
#: A skip reason as long as the real ones get (a data directory deep in a shared file system).
LONG_DATA = ("benchmark data not found: /very/long/shared/file/system/path/to/the/benchmark/data/directory/flickr8k/"
             "CrowdFlowerAnnotations.txt not found; expected CrowdFlowerAnnotations.txt (official Flickr8k text "
             "release): tab-separated, no header")


def fake_probe(job, key):
    """Weights missing for every image metric, CrowdFlower's files missing, everything else here."""
    if key in v.IMAGE_METRICS:
        return v.Skip("weights", f"weights not in the Hugging Face cache: hf download openai/{key}-weights",
                      f"{key} weights", f"hf download openai/{key}-weights")
    if job.name == "flickr8k-crowdflower":
        return v.Skip("data", LONG_DATA, f"{job.name} files",
                      "/very/long/shared/file/system/path/to/the/benchmark/data/directory/flickr8k/"
                      "CrowdFlowerAnnotations.txt not found")
    return None


def fake_measure(rows):
    """Each job's result holding, at every target row's lookup path, its published value (OFF rows: ten tolerances
    away), on the job's own scale."""
    results: dict = {}
    for row in rows:
        if row.job is None or row.reason is not None:
            continue
        node = results.setdefault(row.job, {})
        *head, last = row.lookup
        for part in head:
            node = node.setdefault(part, {})
        off = 10 * row.tolerance if (row.metric, row.benchmark) in OFF else 0.0
        node[last] = (row.published + off) / row.factor

    def measure(job, keys, **_):
        return results.get(job, {})

    return measure


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """``capeval verify`` over the whole published table with the fake probe and measurements, at COLUMNS=100."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(availability, "Probe", lambda: fake_probe)
    monkeypatch.setattr(measuring, "measure", fake_measure(v.plan(published_entries())))


def run_cli(capsys, *args):
    code = main(["verify", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_every_skipped_row_has_its_kind_and_the_counts_by_kind_sum_to_the_total(offline, capsys):
    code, out, _ = run_cli(capsys, "--json", "-")
    rows = json.loads(out)
    assert code == 1  # the OFF rows differ
    skipped = [r for r in rows if r["status"] == "skipped"]
    assert skipped and all(r["skip_kind"] in v.SKIP_KINDS for r in skipped)
    assert all(r["skip_kind"] is None for r in rows if r["status"] != "skipped")
    by_kind = {k: sum(r["skip_kind"] == k for r in skipped) for k in v.SKIP_KINDS}
    assert sum(by_kind.values()) == len(skipped)
    assert by_kind["weights"] and by_kind["data"] and by_kind["irreproducible"] and by_kind["not_in_capeval"]
    # the kind comes from where the skip was decided, not from the wording of the reason
    for row in skipped:
        if row["skip_kind"] == "weights":
            assert row["metric"] in v.IMAGE_METRICS and row["fix"].startswith("hf download")
        if row["skip_kind"] == "data":
            assert row["benchmark"] == "flickr8k-crowdflower" and row["reason"] == LONG_DATA
    assert {r["skip_kind"] for r in skipped if r["metric"] in ("tiger", "nubia", "inter-human")} == {"not_in_capeval"}
    assert {r["skip_kind"] for r in skipped if r["source"] == "cui2018" and r["metric"] in ("bleu_4", "cider_d",
                                                                                           "critic")} == {
        "irreproducible"}


def test_report_counts_by_kind_sum_to_the_rows():
    report = v.verify(entries=published_entries(), probe=fake_probe,
                      measure_job=fake_measure(v.plan(published_entries())))
    counts, kinds = report.counts(), report.skip_counts()
    assert list(kinds) == list(v.SKIP_KINDS)
    assert sum(kinds.values()) == counts["skipped"]
    assert sum(counts.values()) == len(report.rows)
    lines = v.summary_lines(report)
    assert lines[0] == (f"{len(report.rows)} published numbers: {counts['reproduced']} reproduced, "
                        f"{counts['differs']} differ, {counts['skipped']} skipped")
    assert lines[1] == "skipped by kind: " + ", ".join(f"{n} {k}" for k, n in kinds.items())
    # the summary's groups cover every skipped row once
    assert sum(n for _, n, _ in v.skip_groups(report)) == counts["skipped"]


def test_a_bare_string_from_a_probe_is_a_skip_of_kind_other():
    entry = {"benchmark": "flickr8k-expert", "source": "hessel2021", "where": "Table 1", "protocol": "clipscore",
             "statistic": "tau_c", "scale": 100, "values": {"bleu_4": 30.8}}
    report = v.verify(entries=[entry], probe=lambda job, key: "the disk is on fire", measure_job=lambda *a: {})
    (row,) = report.rows
    assert row.status == "skipped" and row.reason == "the disk is on fire" and row.skip_kind == "other"
    assert row.to_json()["skip_kind"] == "other"
    with pytest.raises(ValueError, match="skip kind must be one of"):
        v.Skip("weight", "typo")


def test_the_real_probe_decides_the_kinds(tmp_path, monkeypatch):
    """Missing benchmark files are ``data``, missing PAC-S weights ``weights`` with where to put them."""
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    probe = v.Probe()
    skip = probe(v.Job("bench", "flickr8k-crowdflower", (("protocol", "clipscore"),)), "cider_d")
    assert skip.kind == "data" and skip.text.startswith("benchmark data not found") and "not found" in skip.fix
    pac = v.weights_skip("pac_s")
    assert pac.kind == "weights" and "clip_ViT-B-32.pth" in pac.text and pac.fix.startswith("save to ")


def test_default_output_order_counts_differs_reproduced_skipped_groups(offline, capsys):
    code, out, _ = run_cli(capsys)
    lines = out.splitlines()
    assert code == 1
    assert re.fullmatch(r"\d+ published numbers: \d+ reproduced, \d+ differ, \d+ skipped", lines[0])
    assert lines[1].startswith("skipped by kind: ") and all(k in lines[1] for k in v.SKIP_KINDS)

    def first(prefix):
        return next(i for i, line in enumerate(lines) if line.startswith(prefix))

    differs, reproduced, groups = first("Differs ("), first("Reproduced ("), first("Skipped (")
    assert 1 < differs < reproduced < groups
    # the differing rows are there, with Δ and the tolerance; no reproduced row among them
    assert "Δ" in lines[differs + 1] and "tolerance" in lines[differs + 1]
    assert any(line.startswith("pascal50s · ") for line in lines[differs:reproduced])
    # reproduced: one line each, no skipped row's reason; skipped: one line per group, not per row
    n_reproduced = int(re.search(r"(\d+) reproduced", lines[0]).group(1))
    n_skipped = int(re.search(r"(\d+) skipped", lines[0]).group(1))
    assert f"Reproduced ({n_reproduced})" in lines[reproduced]
    rows_in_groups = [line for line in lines[groups + 3:] if re.match(r"(weights|data|irreproducible|"
                                                                     r"not_in_capeval|other) +\d+ ", line)]
    assert sum(int(line.split()[1]) for line in rows_in_groups) == n_skipped
    # one line per missing download (here one fake download per image metric) and per data file, not per table
    assert len(rows_in_groups) <= len(v.IMAGE_METRICS) + 4
    assert any(line.startswith("weights") and "hf download" in line for line in rows_in_groups)
    assert "--show skipped" in lines[groups]
    assert len(lines) < 250  # it was 587 lines


@pytest.mark.parametrize("args", [(), ("--show", "all"), ("--show", "skipped")])
def test_no_line_is_wider_than_100_columns(offline, capsys, args):
    _, out, _ = run_cli(capsys, *args)
    wide = [line for line in out.splitlines() if display_width(line) > 100]
    assert not wide, wide


def test_show_skipped_lists_every_skipped_row_with_its_kind(offline, capsys, tmp_path):
    _, table, _ = run_cli(capsys, "--show", "skipped", "--json", str(tmp_path / "rows.json"))
    skipped = [r for r in json.loads((tmp_path / "rows.json").read_text()) if r["status"] == "skipped"]
    lines = table.splitlines()
    listed = [line for line in lines if re.search(r"  (weights|data|irreproducible|not_in_capeval|other) \[\d+\]$",
                                                  line)]
    assert len(listed) == len(skipped)
    kinds = [re.search(r"(\w+) \[\d+\]$", line).group(1) for line in listed]
    assert sorted(kinds) == sorted(r["skip_kind"] for r in skipped)
    for row in skipped:  # each row's metric and published number on a line of its kind
        assert any(line.split()[0] == row["metric"] and line.endswith("]") and f" {row['skip_kind']} [" in line
                   for line in listed), row
    # every reason is printed once, numbered; the reproduced and differing rows are not listed
    notes = [line for line in lines if re.match(r"\[\d+\] ", line)]
    assert len(notes) == len({r["reason"] for r in skipped})
    assert not any(line.startswith(("Reproduced", "Differs")) for line in lines)


def test_show_all_lists_every_row_and_bad_values_are_one_line(offline, capsys):
    _, out, _ = run_cli(capsys, "--show", "all")
    for header in ("Differs (", "Reproduced (", "Skipped ("):
        assert any(line.startswith(header) for line in out.splitlines()), header
    code, _, err = run_cli(capsys, "--show", "skiped")
    assert code == 1 and err.strip().splitlines() == [
        "capeval verify: error: --show: unknown 'skiped'; did you mean 'skipped'?"]


def test_wide_prints_the_groups_whole(offline, capsys):
    _, out, _ = run_cli(capsys, "--wide")
    assert any(display_width(line) > 100 for line in out.splitlines())
    assert not any(line.endswith("…") for line in out.splitlines())


# -- citations: every file the published table names exists ------------------------------------------------------

#: A path inside a citation (``docs/benchmarks/measurements.md §2``, ``tests/thumb/test_paper.py``), with the
#: section it names, if any.
PATH = re.compile(r"(?<![\w/.~-])((?:[\w.-]+/)*[\w.-]+\.(?:md|py|json|jsonl|txt|sh|cfg|toml))(?: §(\d+))?")


def external_sources() -> set[str]:
    """Citation keys of other repositories (the clipscore / pacscore READMEs, CaptionEvalKit): their ``where``
    names files of those repositories, not of this one."""
    return {key for key, text in citations().items() if "github.com/" in text}


def repository_citations() -> list[tuple[str, str | None, str]]:
    """``(path, section, where it was cited)`` for every path in the table's citations that names a file of this
    repository (its first folder or file is one of the repository's top level) or of the wheel (``capeval/...``)."""
    top = {p.name for p in ROOT.iterdir()} - {".git"}
    texts: list[tuple[str, str]] = []
    external = external_sources()
    rows = v.plan(published_entries())
    for row in rows:
        if row.source not in external:
            texts.append((row.where, f"where of {row.metric} / {row.benchmark} / {row.source}"))
        texts += [(row.reason or "", f"reason of {row.metric} / {row.benchmark}"),
                  (row.tolerance_rule, f"tolerance rule of {row.metric}")]
    texts += [(text, f"citation {key}") for key, text in citations().items() if key not in external]
    texts += [(skip.text, "a protocol reason") for skip in v.STATIC.values()]
    texts += [(text, name) for name, text in (("FAST", v.FAST), ("SPICE_RULE", v.SPICE_RULE))]
    out = []
    for text, origin in texts:
        for found in PATH.finditer(text):
            path = found.group(1)
            first = path.split("/", 1)[0]
            if first in top or first == "capeval":
                out.append((path, found.group(2), origin))
    return out


def test_the_published_table_cites_only_files_that_exist():
    cited = repository_citations()
    paths = {path for path, _, _ in cited}
    # the table's own computations are cited as repository files (not a spec outside the repository)
    assert "docs/benchmarks/measurements.md" in paths and "docs/benchmarks/spice.md" in paths
    for path, section, origin in cited:
        file = ROOT / path if not path.startswith("capeval/") else ROOT / "modules" / path
        assert file.is_file(), f"{origin} cites {path}, which is not in the repository"
        if section:
            text = file.read_text(encoding="utf-8")
            assert re.search(rf"^#+ (§\s*)?{section}[.\s]", text, re.M), f"{origin}: {path} has no section {section}"


def test_no_citation_names_the_spec_outside_the_repository():
    texts = [str(e.get("where", "")) for e in published_entries()]
    texts += [str(orig.get("where", "")) for e in published_entries() for orig in (e.get("original") or {}).values()]
    texts += list(citations().values()) + [s.text for s in v.STATIC.values()]
    texts += [r.reason or "" for r in v.plan(published_entries())]
    for text in texts:
        assert not re.search(r"\bspec\b|REFERENCE\.md|shared/spec", text), text
