"""`capeval leaderboard`: the metric × benchmark table built from synthetic `capeval bench --json` payloads."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from capeval.meta_evaluation.leaderboard import (ANCHORS, Cell, Column, build_leaderboard, format_cell, read_payloads,
                                            render)
from capeval.cli import main
from capeval.published import citations, published


def headline(statistic, value, ci=None, n=1000):
    return {"statistic": statistic, "value": value, "ci": ci, "confidence": 0.95, "n_resamples": n}


def corr(benchmark, results, **settings):
    return {"benchmark": benchmark, "settings": settings, "results": results, "notes": []}


def entry(statistic, value, ci=None, contamination=(), **extra):
    return {statistic: value, "primary": statistic, "headline": headline(statistic, value, ci),
            "contamination": list(contamination), **extra}


def write(tmp_path, name, payload):
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def labels(board):
    return [c.label for c in board.columns]


# -- columns and rows --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("whole_lines")
def test_columns_come_in_the_fixed_order_whatever_the_file_order():
    payloads = [
        corr("thumb", {"m": {"with_human": {"P": .1, "R": .1, "total": .2}, "headline": headline("pearson", .2)}}),
        corr("abstract50s", {"m": entry("avg", 70.0)}, refs="all"),
        corr("pascal50s", {"m": entry("avg", 80.0)}, refs=5),
        corr("pascal50s", {"m": entry("avg", 80.0)}, refs="all"),
        corr("pascal50s", {"m": entry("avg", 80.0)}, refs="expert"),
        corr("composite", {"m": entry("tau_b", .4, subsets={s: {"tau_b": .3, "headline": headline("tau_b", .3)}
                                                             for s in ("coco", "30k", "8k")})}, subset="all"),
        corr("flickr8k-crowdflower", {"m": entry("tau_b", .3)}, protocol="clipscore"),
        corr("flickr8k-expert", {"m": entry("tau_b", .3)}, protocol="cui"),
        corr("flickr8k-expert", {"m": entry("tau_c", .5)}, protocol="clipscore"),
    ]
    board = build_leaderboard(payloads)
    assert labels(board) == [
        "Flickr8k-Expert (clipscore) τ-c", "Flickr8k-Expert (cui) τ-b", "CrowdFlower (clipscore) τ-b",
        "COMPOSITE τ-b", "COMPOSITE-8k τ-b", "COMPOSITE-30k τ-b", "COMPOSITE-COCO τ-b",
        "PASCAL-50S (refs: expert) avg %", "PASCAL-50S (refs: all) avg %", "PASCAL-50S (refs: 5) avg %",
        "ABSTRACT-50S (refs: all) avg %", "THumB w/ Human Pearson",
    ]
    text = render(board)
    header = next(line for line in text.splitlines() if line.startswith("metric"))
    assert header.index("Flickr8k-Expert (clipscore)") < header.index("CrowdFlower") < header.index("THumB")


def test_the_same_metric_from_several_files_is_one_row(tmp_path):
    first = {"cider_d": entry("tau_c", .44), "spice": entry("tau_c", .45)}
    a = write(tmp_path, "a.json", corr("flickr8k-expert", first, protocol="clipscore"))
    b = write(tmp_path, "b.json", corr("pascal50s", {"cider_d": entry("avg", 79.9)}, refs="expert"))
    c = write(tmp_path, "c.json", corr("flickr8k-expert", {"cider_d": entry("tau_c", .46)}, protocol="clipscore"))
    payloads, skipped = read_payloads([a, b, c])
    board = build_leaderboard(payloads)
    assert list(board.rows) == ["cider_d", "spice"] and not skipped
    cider = board.rows["cider_d"]
    assert set(cider) == {"flickr8k-expert/clipscore/all/tau_c", "pascal50s/expert/all/avg"}
    assert cider["flickr8k-expert/clipscore/all/tau_c"].value == .46  # the later file wins, with a note
    assert any("cider_d" in n and str(a) in n and str(c) in n for n in board.notes)
    assert "—" in render(board).splitlines()[[i for i, line in enumerate(render(board).splitlines())
                                              if line.startswith("spice")][0]]
    assert board.files == [str(a), str(b), str(c)]


# -- cells -------------------------------------------------------------------------------------------------------


def test_interval_formatting():
    tau = Column("flickr8k-expert", "clipscore", "all", "tau_c")
    acc = Column("pascal50s", "expert", "all", "avg")
    assert format_cell(Cell(.4723, (.4551, .4889), .95, 1000, []), tau) == ".472 [.455, .489]"
    assert format_cell(Cell(80.24, (78.91, 81.44), .95, 1000, []), acc) == "80.2 [78.9, 81.4]"
    assert format_cell(Cell(-.031, (-.05, .012), .95, 1000, []), tau) == "-.031 [-.050, .012]"
    assert format_cell(Cell(.5, (.4, .6), .9, 200, []), tau) == ".500 90% [.400, .600]"
    assert format_cell(Cell(.5, None, None, None, []), tau) == ".500"
    assert format_cell(Cell(None, None, None, None, []), tau) == "n/a"
    assert format_cell(Cell(.5, contamination=None), tau) == ".500 ?"
    assert format_cell(Cell(.5, contamination=["x", "y"]), tau, {"x": 1, "y": 3}) == ".500 †1,3"
    unknown = "unknown: my-critic is not in capeval's catalog"
    assert format_cell(Cell(.5, contamination=["x", unknown]), tau, {"x": 2, unknown: 4}) == ".500 †2 ?4"
    assert format_cell(Cell(.5, contamination=[], best=True), tau, markdown=True) == "**.500**"


def test_contamination_marks_and_numbered_footnotes():
    shared = "trained on Flickr8k train captions (same images as the test set)"
    board = build_leaderboard([
        corr("flickr8k-expert", {"critic": entry("tau_c", .52, contamination=[shared, "model selected on Expert"]),
                                 "lceval": entry("tau_c", .50, contamination=[shared]),
                                 "cider_d": entry("tau_c", .44)}, protocol="clipscore"),
        corr("composite", {"critic": entry("tau_c", .40, contamination=[shared],
                                           subsets={"8k": {"tau_c": .42, "headline": headline("tau_c", .42),
                                                           "contamination": [shared]},
                                                    "coco": {"tau_c": .38, "headline": headline("tau_c", .38),
                                                             "contamination": []}})}),
    ])
    notes = [n for n in board.footnotes if n.kind == "contamination"]
    assert [(n.id, n.mark, n.text) for n in notes] == [(1, "†", shared), (2, "†", "model selected on Expert")]
    assert notes[0].cells == [("critic", "flickr8k-expert/clipscore/all/tau_c"),
                              ("lceval", "flickr8k-expert/clipscore/all/tau_c"),
                              ("critic", "composite/minus-matched/all/tau_c"),
                              ("critic", "composite/minus-matched/8k/tau_c")]
    text = render(board)
    critic = next(line for line in text.splitlines() if line.startswith("critic"))
    assert critic.split()[1:] == [".520", "†1,2", ".400", "†1", ".420", "†1", ".380"]
    unwrapped = text.replace("\n    ", " ")
    assert f"†1 {shared} — critic × Flickr8k-Expert (clipscore) τ-c; lceval × Flickr8k-Expert" in unwrapped
    assert board.to_json()["footnotes"][1] == {"id": 2, "mark": "†", "kind": "contamination",
                                               "text": "model selected on Expert",
                                               "cells": [{"row": "critic",
                                                          "column": "flickr8k-expert/clipscore/all/tau_c"}]}


def test_legacy_payloads_fall_back_to_their_fields_without_interval_and_unknown_contamination():
    board = build_leaderboard([
        corr("flickr8k-expert", {"cider_d": {"tau_b": .43, "tau_c": .439, "primary": "tau_c",
                                             "ci": {"low": .42, "high": .45, "statistic": "kendall_c"}}},
             protocol="clipscore", tau="c"),
        corr("flickr8k-crowdflower", {"cider_d": {"tau_b": .246, "tau_c": .12, "primary": "tau_b"}},
             protocol="clipscore"),
        corr("composite", {"cider_d": {"tau_b": .35, "tau_c": .377, "primary": "tau_c",  # headline: tau-b
                                       "subsets": {"8k": {"tau_b": .38, "tau_c": .40}}}}, subset="all"),
        corr("pascal50s", {"cider_d": {"HC": 65.4, "HI": 98.6, "HM": 90.1, "MM": 65.4, "avg": 79.875}},
             refs="expert"),
        corr("thumb", {"cider_d": {"with_human": {"P": .2, "R": .1, "total": .224, "total_ci": [.19, .25]}}}),
    ])
    cells = board.rows["cider_d"]
    assert {k: c.value for k, c in cells.items()} == {
        "flickr8k-expert/clipscore/all/tau_c": .439, "flickr8k-crowdflower/clipscore/all/tau_b": .246,
        "composite/minus-matched/all/tau_b": .35, "composite/minus-matched/8k/tau_b": .38,
        "pascal50s/expert/all/avg": 79.875, "thumb/with_human/all/pearson": .224}
    assert all(c.ci is None and c.contamination is None and not c.best for c in cells.values())
    row = next(line for line in render(board).splitlines() if line.startswith("cider_d"))
    assert row.split()[1:] == [".439", "?", ".246", "?", ".350", "?", ".380", "?", "79.9", "?", ".224", "?"]
    assert "**" not in render(board, "markdown").split("| `cider_d` |")[1].split("\n")[0]


def test_a_payload_without_the_benchmarks_value_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"x\.json: results\['m'\] has neither a 'headline' nor the 'avg'"):
        build_leaderboard([("x.json", corr("pascal50s", {"m": {"HC": 50.0}}))])


def test_best_clean_value_is_bold_and_a_higher_contaminated_one_is_not():
    board = build_leaderboard([corr("flickr8k-expert", {
        "critic": entry("tau_c", .58, (.56, .60), contamination=["trained on Flickr8k"]),
        "spice": entry("tau_c", .449, (.43, .46)),
        "meteor": entry("tau_c", .418, (.40, .43)),
        "legacy": {"tau_c": .70, "primary": "tau_c"},
    }, protocol="clipscore")])
    md = render(board, "markdown")
    line = {m: next(x for x in md.splitlines() if x.startswith(f"| `{m}`")) for m in board.rows}
    assert "**.449 [.430, .460]**" in line["spice"]
    assert "**" not in line["critic"] and ".580 [.560, .600] †1" in line["critic"]
    assert "**" not in line["meteor"] and "**" not in line["legacy"] and ".700 ?" in line["legacy"]
    rows = {r["metric"]: r for r in board.to_json()["rows"]}
    assert [m for m, r in rows.items() if r["cells"]["flickr8k-expert/clipscore/all/tau_c"]["best"]] == ["spice"]


# -- published anchors -------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("whole_lines")
def test_anchors_follow_the_capeval_rows_with_their_citations():
    board = build_leaderboard([
        corr("flickr8k-expert", {"cider_d": entry("tau_c", .44)}, protocol="clipscore"),
        corr("flickr8k-crowdflower", {"cider_d": entry("tau_b", .25)}, protocol="clipscore"),
        corr("composite", {"cider_d": entry("tau_c", .38, subsets={"8k": {"tau_c": .4}})}),
        corr("pascal50s", {"cider_d": entry("avg", 79.9)}, refs="expert"),
        corr("pascal50s", {"cider_d": entry("avg", 80.1)}, refs=5),
        corr("thumb", {"cider_d": {"with_human": {"total": .224}, "headline": headline("pearson", .224),
                                   "contamination": []}}),
    ])
    assert [a.spec.name for a in board.anchors] == ["CLIP-S", "RefCLIP-S", "PAC-S", "RefPAC-S", "Polos", "BERT-S++",
                                                    "TIGEr", "NUBIA"]
    anchors = {a.spec.name: a for a in board.anchors}
    clip = anchors["CLIP-S"].cells
    assert clip["flickr8k-expert/clipscore/all/tau_c"].value == .512
    assert clip["flickr8k-expert/clipscore/all/tau_c"].source == "hessel2021"
    assert clip["composite/minus-matched/all/tau_c"].value == .538
    thumb = clip["thumb/with_human/all/pearson"]
    assert thumb.source == "kasai2022" and thumb.value == .25
    assert "composite/minus-matched/8k/tau_c" not in clip  # papers print whole-benchmark numbers only
    assert clip["pascal50s/5/all/avg"].protocol_matches and clip["pascal50s/5/all/avg"].value == 80.7
    assert not clip["pascal50s/expert/all/avg"].protocol_matches
    refpac = anchors["RefPAC-S"].cells["flickr8k-expert/clipscore/all/tau_c"]
    assert (refpac.source, refpac.via, refpac.value) == ("wada2024", "capevalkit", .559)
    assert anchors["NUBIA"].cells.keys() == {"flickr8k-expert/clipscore/all/tau_c"}
    text = render(board)
    lines = text.splitlines()
    first_anchor = next(i for i, line in enumerate(lines) if line.startswith("CLIP-S [published: hessel2021"))
    assert lines[first_anchor - 1].startswith("published (not measured by capeval)")
    assert lines[first_anchor - 2].startswith("----") and lines[first_anchor - 3].startswith("cider_d")
    assert "80.7 ‡" in lines[first_anchor]
    assert "hessel2021: Jack Hessel" in text and "capevalkit: CaptionEvalKit" in text
    assert "published with 5 references drawn at random (mean of 5 draws); this column: refs=expert" in text
    payload = board.to_json()
    assert set(payload) == {"columns", "rows", "anchors", "footnotes", "citations", "files", "notes", "comparisons"}
    assert {"hessel2021", "kasai2022", "wada2024", "capevalkit"} <= set(payload["citations"])


def test_only_numbers_published_with_the_columns_statistic_are_shown():
    board = build_leaderboard([corr("composite", {"m": entry("tau_b", .35)}, subset="all")])
    anchors = {a.spec.name: a for a in board.anchors}
    assert anchors["CLIP-S"].cells["composite/minus-matched/all/tau_b"].value == .498  # capevalkit's tau-b
    assert not anchors["BERT-S++"].cells
    assert any("τ-c 44.9" in note for note in anchors["BERT-S++"].not_shown)


def test_every_anchor_value_is_cited_and_numeric():
    cites = citations()
    keys = {a.metric for a in ANCHORS}
    for bench in ("flickr8k-expert", "flickr8k-crowdflower", "composite", "pascal50s", "thumb"):
        for e in published(bench):
            for metric, original in (e.get("original") or {}).items():
                assert metric in e["values"] and original["source"] in cites and original["where"]
            for metric in keys & set(e["values"]):
                value = e["values"][metric]
                assert isinstance(value, (int, float)) or isinstance(value, dict)


# -- command line ------------------------------------------------------------------------------------------------


@pytest.fixture
def bench_dir(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    write(folder, "expert.json", corr("flickr8k-expert", {"cider_d": entry("tau_c", .439, (.421, .455))},
                                      protocol="clipscore"))
    write(folder, "pascal.json", corr("pascal50s", {"cider_d": entry("avg", 79.9, (78.6, 81.1))}, refs="expert"))
    write(folder, "other.json", {"hello": 1})
    (folder / "broken.json").write_text("{oops", encoding="utf-8")
    (folder / "notes.txt").write_text("not read", encoding="utf-8")
    return folder


def test_cli_end_to_end(bench_dir, tmp_path, capsys):
    md, js = tmp_path / "out" / "board.md", tmp_path / "out" / "board.json"
    assert main(["leaderboard", str(bench_dir), "--markdown", str(md), "--json", str(js)]) == 0
    out = capsys.readouterr()
    assert "cider_d" in out.out and ".439 [.421, .455]" in out.out and "79.9 [78.6, 81.1]" in out.out
    assert "skipped" in out.err and "other.json: not a capeval bench payload" in out.err
    assert "broken.json: not JSON" in out.err and "notes.txt" not in out.err
    assert "| `cider_d` | **.439 [.421, .455]** | **79.9 [78.6, 81.1]** |" in md.read_text(encoding="utf-8")
    payload = json.loads(js.read_text(encoding="utf-8"))
    assert [c["label"] for c in payload["columns"]] == ["Flickr8k-Expert (clipscore) τ-c",
                                                        "PASCAL-50S (refs: expert) avg %"]
    assert payload["rows"][0]["cells"]["flickr8k-expert/clipscore/all/tau_c"]["ci"] == [.421, .455]


def test_cli_json_dash_keeps_stdout_one_json_document(bench_dir, capsys):
    assert main(["leaderboard", str(bench_dir / "expert.json"), "--json", "-"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["rows"][0]["metric"] == "cider_d"
    assert "Leaderboard" in out.err and "cider_d" in out.err


def test_cli_as_a_module(bench_dir):
    proc = subprocess.run([sys.executable, "-m", "capeval", "leaderboard", str(bench_dir / "pascal.json")],
                          capture_output=True, text=True, encoding="utf-8", check=False)
    assert proc.returncode == 0, proc.stderr
    assert "PASCAL-50S (refs: expert) avg %" in proc.stdout and "RefCLIP-S [published: hessel2021]" in proc.stdout


@pytest.mark.parametrize("name, content, message", [
    ("broken.json", "{oops", "broken.json: not JSON"),
    ("list.json", "[1, 2]", "list.json: not a capeval bench payload (a JSON list, not an object)"),
    ("score.json", '{"bleu_4": 0.3}', "score.json: not a capeval bench payload (no 'benchmark' or 'results' key)"),
    ("karpathy.json", '{"benchmark": "coco-karpathy-test", "results": {}}', "is not one capeval bench scores"),
])
def test_cli_errors_name_the_bad_file(tmp_path, capsys, name, content, message):
    bad = tmp_path / name
    bad.write_text(content, encoding="utf-8")
    assert main(["leaderboard", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("capeval leaderboard: error:") and message in err and str(bad) in err


def test_cli_errors_on_missing_paths_and_empty_folders(tmp_path, capsys):
    assert main(["leaderboard", str(tmp_path / "nope.json")]) == 1
    assert "nope.json: No such file or directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty", "x.json", {"hello": 1})
    assert main(["leaderboard", str(tmp_path / "empty")]) == 1
    err = capsys.readouterr().err
    assert "x.json: not a capeval bench payload" in err and "no capeval bench payload in" in err
    good = write(tmp_path, "g.json", corr("thumb", {"m": {"with_human": {"total": .2}}}))
    assert main(["leaderboard", str(good), "--json", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_undeclared_training_data_is_marked_unknown_not_contaminated_and_never_best():
    unknown = "unknown: /runs/my-critic is not a model capeval knows; its training data is not declared"
    board = build_leaderboard([corr("pascal50s", {"mine": entry("avg", 90.0, contamination=[unknown]),
                                                  "cider_d": entry("avg", 79.9)}, refs="expert")])
    (note,) = [n for n in board.footnotes if n.kind != "protocol"]
    assert (note.id, note.mark, note.kind, note.cells) == (1, "?", "unknown", [("mine", "pascal50s/expert/all/avg")])
    cells = {m: board.rows[m]["pascal50s/expert/all/avg"] for m in board.rows}
    assert not cells["mine"].best and cells["cider_d"].best
    mine = next(line for line in render(board).splitlines() if line.startswith("mine"))
    assert mine.split()[1:] == ["90.0", "?1"]


def test_legacy_fallback_matches_the_statistic_capeval_bench_heads_with():
    from capeval.meta_evaluation import harness
    from capeval.meta_evaluation.leaderboard import HEADLINE_FALLBACK

    assert HEADLINE_FALLBACK == dict(getattr(harness, "HEADLINE_KEYS", HEADLINE_FALLBACK))


def test_two_models_of_one_metric_are_two_rows():
    from capeval.meta_evaluation.leaderboard import build_leaderboard

    def payload(model, value, via_option=False):
        entry = {"avg": value, "contamination": []}
        settings = {"refs": "expert"}
        if via_option:
            settings["metric_options"] = {"critic_model": model}
        else:
            entry["models"] = [model]
        return {"benchmark": "pascal50s", "settings": settings,
                "results": {"critic": entry, "cider_d": {"avg": 79.9, "contamination": [], "models": []}}}

    board = build_leaderboard([payload("critic-flickr8k", 51.6), payload("critic-flickr8k-joint", 80.2, True)])
    assert {"critic (critic-flickr8k)", "critic (critic-flickr8k-joint)", "cider_d"} <= set(board.rows)


def test_paired_comparisons_are_listed_with_their_verdicts():
    from capeval.meta_evaluation.leaderboard import build_leaderboard, render

    results = {"lceval": {"avg": 82.0, "models": ["lceval-caption-flickr8k-coco"], "contamination": []},
               "cider_d": {"avg": 79.9, "models": [], "contamination": []},
               "spice": {"avg": 79.3, "models": [], "contamination": []}}
    comps = [{"a": "lceval", "b": "cider_d", "statistic": "avg", "subset": None, "difference": 2.1, "ci": [1.0, 3.2],
              "p_value": 0.0, "a_beats_b": True, "b_beats_a": False},
             {"a": "lceval", "b": "spice", "statistic": "avg", "subset": None, "difference": 0.4, "ci": [-0.5, 1.3],
              "p_value": 0.41, "a_beats_b": False, "b_beats_a": False}]
    board = build_leaderboard([{"benchmark": "pascal50s", "settings": {"refs": "expert"}, "results": results,
                                "comparisons": comps}])
    text = render(board, "markdown")
    assert "| PASCAL-50S (refs: expert) avg % | lceval (lceval-caption-flickr8k-coco) | cider_d | +2.10 [+1.00, +3.20]" \
        in text
    assert "lceval (lceval-caption-flickr8k-coco) beats cider_d" in text and "no significant difference" in text
    assert board.to_json()["comparisons"][1]["b_row"] == "spice"


def test_the_text_fits_the_terminal_and_the_rule_stays_above_the_published_rows(monkeypatch):
    from capeval.render import display_width

    board = build_leaderboard([
        corr("flickr8k-expert", {"cider_d": entry("tau_c", .44), "lceval": entry("tau_c", .5)}, protocol="clipscore"),
        corr("pascal50s", {"cider_d": entry("avg", 79.9)}, refs="expert"),
        corr("thumb", {"cider_d": {"with_human": {"total": .224}, "headline": headline("pearson", .224),
                                   "contamination": []}}),
    ])
    for width in (60, 100):
        monkeypatch.setenv("COLUMNS", str(width))
        lines = render(board, "text").splitlines()
        assert max(display_width(line) for line in lines) <= width
        published = next(i for i, line in enumerate(lines) if line.startswith("published"))
        assert lines[published - 1] and not lines[published - 1].strip("- ")  # the rule


def test_whether_an_anchor_reads_images_comes_from_its_metric_class(monkeypatch):
    """An anchor capeval has (CLIP-S, RefCLIP-S spelled refclip_s, Polos) reads images as its registered class says;
    a published-only one (TIGEr, BERT-S++) as declared."""
    from capeval.registry import metric_class

    spec = {a.name: a for a in ANCHORS}
    assert [a.name for a in ANCHORS if a.reads_images] == ["CLIP-S", "RefCLIP-S", "PAC-S", "RefPAC-S", "Polos",
                                                           "TIGEr"]
    assert spec["TIGEr"].declared_images is True and spec["BERT-S++"].declared_images is False
    assert spec["CLIP-S"].declared_images is None and spec["RefCLIP-S"].declared_images is None
    monkeypatch.setattr(metric_class("ref_clip_s"), "needs_images", False)
    assert not spec["RefCLIP-S"].reads_images and spec["CLIP-S"].reads_images
    board = build_leaderboard([{"benchmark": "pascal50s", "settings": {}, "notes": [],
                                "results": {"m": {"avg": 70.0, "contamination": []}}}])
    assert {a["name"]: a["reads_images"] for a in board.to_json()["anchors"]}["RefCLIP-S"] is False
