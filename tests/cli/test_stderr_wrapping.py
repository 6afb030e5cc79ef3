"""The command line's warnings and errors fit the terminal as its tables do: at ``COLUMNS=100`` no stderr line is
longer than 100 characters, the lines after a message's first are indented, and joined again the text is whole."""
from __future__ import annotations

import json
import warnings

import pytest

from capeval.cli import main
from capeval.cli.stderr_lines import INDENT, fit, unwrap


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps(["a dog runs on the grass", "two cats on a red sofa"]), encoding="utf-8")
    refs.write_text(json.dumps([["a dog running on a lawn"], ["cats on a couch"]]), encoding="utf-8")
    return preds, refs


def _stderr(capsys, monkeypatch, columns: int, *argv: str) -> tuple[int, str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # said on every run, not once per place
        rc = main(list(argv))
    return rc, capsys.readouterr().err


def _messages(text: str) -> list[str]:
    """Each message of ``text`` as one line: a line starting with the indent continues the one above."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(INDENT) and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


def _assert_fit(narrow: str, wide: str) -> None:
    assert narrow.strip() and all(len(line) <= 100 for line in narrow.splitlines()), narrow
    assert any(line.startswith(INDENT) for line in narrow.splitlines())  # it did wrap, with a hanging indent
    assert _messages(narrow) == wide.splitlines()  # nothing lost or changed but the line breaks


def test_the_small_corpus_cider_warning_wraps_and_names_the_flag(files, capsys, monkeypatch):
    argv = ["score", "--predictions", str(files[0]), "--references", str(files[1]), "--metrics", "cider_d"]
    rc, narrow = _stderr(capsys, monkeypatch, 100, *argv)
    assert rc == 0
    rc, wide = _stderr(capsys, monkeypatch, 10_000, *argv)
    assert rc == 0 and len(wide.splitlines()[0]) > 200
    _assert_fit(narrow, wide)
    said = unwrap(narrow)
    assert "capeval score: warning: CIDEr-D's document frequencies come from the references of only 2" in said
    assert "pass --cider-df coco-val2014." in said and "cider_df=" not in said


def test_a_long_error_wraps_and_keeps_its_words(files, capsys, monkeypatch):
    files[0].write_text(json.dumps(["a dog " * 1000, "two cats"]), encoding="utf-8")
    argv = ["score", "--predictions", str(files[0]), "--references", str(files[1]), "--metrics", "meteor"]
    rc, narrow = _stderr(capsys, monkeypatch, 100, *argv)
    assert rc == 1
    rc, wide = _stderr(capsys, monkeypatch, 10_000, *argv)
    assert rc == 1 and len(wide.splitlines()) == 1
    _assert_fit(narrow, wide)
    assert "--max-caption-chars none for no limit" in unwrap(narrow)


def test_the_non_english_warning_wraps(files, capsys, monkeypatch):
    files[0].write_text(json.dumps(["le chien est dans le jardin avec une balle", "two cats on a red sofa"]),
                        encoding="utf-8")
    argv = ["score", "--predictions", str(files[0]), "--references", str(files[1]), "--metrics", "bleu"]
    rc, narrow = _stderr(capsys, monkeypatch, 100, *argv)
    rc, wide = _stderr(capsys, monkeypatch, 10_000, *argv)
    assert rc == 0
    warning = [m for m in _messages(narrow) if "do not look English" in m]
    assert warning and warning[0].endswith("--no-language-check silences this.")
    assert all(len(line) <= 100 for line in narrow.splitlines())
    assert _messages(narrow) == wide.splitlines()


def test_fit_breaks_at_spaces_only_and_wide_leaves_lines_whole():
    text = "capeval score: error: " + " ".join(f"--flag-{k} /a/long/path/number/{k}" for k in range(30))
    lines = fit(text, 60).splitlines()
    assert len(lines) > 5 and all(len(line) <= 60 for line in lines)
    assert all(line.startswith(INDENT) for line in lines[1:]) and unwrap("\n".join(lines)) == text
    assert fit(text, 0) == text
    long_word = "x" * 150
    assert fit(f"see {long_word} here", 60).splitlines()[1] == INDENT + long_word  # never cut
