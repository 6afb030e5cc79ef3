"""The command line around the scores: ``--json -`` on stdout, one list of names (help, errors, README) from the
registries, progress bars (``--progress``), ``--empty zero``."""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import time

import pytest
from support import ROOT, require_data

import capeval
from capeval.cli import build_parser, main
from capeval.cli.output import STDOUT, json_target
from capeval.progress import progress
from capeval.registry import BENCHMARKS, REGISTRY, judged_benchmarks, result_keys

FAST = "bleu,rouge_l,cider_d"


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a file named "-" would land here
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    preds = tmp_path / "p.json"
    refs = tmp_path / "r.json"
    preds.write_text(json.dumps(["a dog runs on the grass", "two cats on a red sofa"]), encoding="utf-8")
    refs.write_text(json.dumps([["a dog running on a lawn", "a dog on grass"], ["cats on a couch"]]), encoding="utf-8")
    return preds, refs


def _score(capsys, preds, refs, *args):
    rc = main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", FAST, *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


# -- --json - ----------------------------------------------------------------------------------------------------


def test_score_json_dash_prints_only_json_on_stdout(files, capsys, tmp_path):
    rc, out, err = _score(capsys, *files, "--json", "-")
    assert rc == 0
    payload = json.loads(out)  # stdout is exactly one JSON document
    want = capeval.score(json.loads(files[0].read_text()), json.loads(files[1].read_text()), metrics=FAST)
    assert payload == json.loads(json.dumps(want))
    assert "2 predictions scored" in err and "signature:" in err  # the tables moved to stderr
    assert not (tmp_path / "-").exists()


def test_score_json_file_still_keeps_the_tables_on_stdout(files, capsys, tmp_path):
    rc, out, err = _score(capsys, *files, "--json", str(tmp_path / "out" / "r.json"))
    assert rc == 0 and "2 predictions scored" in out and "wrote" in err
    assert json.loads((tmp_path / "out" / "r.json").read_text())["signature"].startswith("nrefs:var|")


def test_bench_json_dash(capsys, monkeypatch, tmp_path):
    require_data("thumb")
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "thumb", "--metrics", "rouge_l", "--no-cache", "--json", "-"]) == 0
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert payload["benchmark"] == "thumb" and "rouge_l" in payload["results"]
    assert "signature:" in out.err and not (tmp_path / "-").exists()


def test_thumb_report_json_dash(capsys, monkeypatch, tmp_path):
    require_data("thumb", "mscoco_THumB-1.0.jsonl")
    monkeypatch.chdir(tmp_path)
    assert main(["thumb", "report", "--bootstrap-samples", "0", "--json", "-"]) == 0
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert set(payload["systems"]) >= {"Human"} and len(payload["per_caption"]["total"]) == 2500
    assert "mscoco_THumB-1.0.jsonl" in out.err and not (tmp_path / "-").exists()


def _json_options(parser: argparse.ArgumentParser, path=()):
    """(command path, --json action) for every parser of the CLI."""
    for action in parser._actions:
        if "--json" in action.option_strings:
            yield " ".join(path), action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _json_options(sub, (*path, name))


def test_every_json_file_option_takes_dash():
    found = dict(_json_options(build_parser()))
    assert {"score", "bench", "thumb report", "captioner evaluate", "captioner distractors", "mmi tune",
            "mmi table", "caption", "models"} <= set(found)
    for command, action in found.items():
        assert action.type is json_target, command
        assert "'-' prints it on stdout" in action.help, command
    assert json_target("-") == STDOUT and str(json_target("x.json")) == "x.json"


# -- one list of names -------------------------------------------------------------------------------------------


def _help(*command) -> str:
    parser = build_parser()
    for name in command:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return " ".join(parser.format_help().split())


def test_score_help_lists_every_metric_and_its_keys():
    text = _help("score")
    for name in REGISTRY:
        for key in result_keys(name):
            assert re.search(rf"\b{key}\b", text), key
    assert "spice_u (spice_u/uniqueness)" in text


def test_bench_help_and_errors_list_the_same_benchmarks(capsys):
    text = _help("bench")
    listed = ", ".join(judged_benchmarks())
    assert f"Benchmarks: {listed}." in text and f"one of {listed} (aliases:" in text
    assert main(["bench", "nope", "--metrics", "bleu_4"]) == 1
    assert f"available: {listed}." in capsys.readouterr().err
    assert main(["bench", "coco-karpathy-test", "--metrics", "bleu_4"]) == 1
    assert f"has no human judgments; benchmark one of {listed}." in capsys.readouterr().err
    for name in REGISTRY:
        assert re.search(rf"\b{name}\b", text), name


def test_readme_lists_the_registry_names():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    metrics_line = readme.split("- metrics (result keys): ", 1)[1].split("\n- ", 1)[0]
    named = re.findall(r"`([a-z0-9_]+)`", metrics_line)
    assert list(dict.fromkeys(n for n in named if n in REGISTRY)) == list(REGISTRY)
    for name in REGISTRY:
        keys = result_keys(name)
        if len(keys) > 1 and name != "bleu":
            assert all(f"`{k}`" in metrics_line for k in keys), name
    assert "`bleu_1`..`bleu_4`" in metrics_line
    bench_line = readme.split("- benchmarks (`capeval bench`): ", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([a-z0-9-]+)`", bench_line) == list(BENCHMARKS)


def test_unknown_metric_errors_come_from_the_registry(files, capsys):
    """A misspelt name gets the closest registry names; a name close to none gets every name."""
    rc = main(["score", "--predictions", str(files[0]), "--references", str(files[1]), "--metrics", "blue"])
    err = capsys.readouterr().err
    assert rc == 1 and "Unknown metric 'blue'; did you mean 'bleu'" in err and len(err.splitlines()) == 1
    rc = main(["score", "--predictions", str(files[0]), "--references", str(files[1]), "--metrics", "qqqq"])
    err = capsys.readouterr().err
    assert rc == 1 and "Unknown metric 'qqqq'; choose from" in err
    for name in REGISTRY:
        assert re.search(rf"\b{name}\b", err), name


# -- progress bars -----------------------------------------------------------------------------------------------


def test_progress_flag_shows_the_bar_when_stderr_is_not_a_terminal(files, capsys):
    rc, _, quiet = _score(capsys, *files)
    assert rc == 0 and "capeval.score" not in quiet
    rc, _, err = _score(capsys, *files, "--progress")
    assert rc == 0 and re.search(r"capeval\.score: .*/3 .*cider_d", err), err  # the last metric started


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("seconds, shown", [(0.0, False), (1.2, True)])
def test_bars_show_on_a_terminal_only_for_work_longer_than_a_second(monkeypatch, seconds, shown):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    for _ in progress(range(3), desc="working"):
        time.sleep(seconds / 2)
    assert ("working" in terminal.getvalue()) is shown


def test_score_progress_true_draws_one_bar_over_the_metrics(capsys):
    capeval.score(["a dog"], [["a dog runs"]], metrics="bleu,rouge_l", progress=True)
    err = capsys.readouterr().err
    assert re.search(r"capeval\.score: .*1/2 .*rouge_l", err), err


# -- --empty zero ------------------------------------------------------------------------------------------------


def test_empty_predictions_are_refused_naming_the_item_and_the_flag(files, capsys):
    files[0].write_text(json.dumps(["a dog runs on the grass", "  "]), encoding="utf-8")
    rc, out, err = _score(capsys, *files)
    assert rc == 1 and "item 1 is empty or whitespace only (--empty zero scores empty predictions 0" in err
    rc, out, err = _score(capsys, *files, "--empty", "zero", "--json", "-")
    assert rc == 0
    result = json.loads(out)
    assert [result["per_caption"][k][1] for k in ("bleu_1", "rouge_l", "cider_d")] == [0.0, 0.0, 0.0]
    assert result["per_caption"]["rouge_l"][0] > 0
    assert "warning: 1 empty prediction(s) scored 0 on every metric" in err and "predictions[1]" in err
