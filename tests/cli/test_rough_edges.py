"""The rough edges a new user met on the command line: help texts naming the catalog's defaults,
errors in the command's words, tables aligned by kind and display width, plurals, warnings above progress bars."""
from __future__ import annotations

import json
import re
import unicodedata

import pytest

from capeval.catalog import DEFAULTS
from capeval.cli import build_parser, main


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps(["a dog runs on the grass", "two cats on a red sofa"]), encoding="utf-8")
    refs.write_text(json.dumps([["a dog running on a lawn"], ["cats on a couch"]]), encoding="utf-8")
    return preds, refs


def _score(capsys, preds, refs, *args):
    rc = main(["score", "--predictions", str(preds), "--references", str(refs), *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _subparser(command: str):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command]


# -- help texts --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["score", "bench"])
def test_help_names_the_catalogs_default_models(command):
    helps = {a.dest: a.help for a in _subparser(command)._actions}
    for metric in ("critic", "critic_ref", "critic_plus", "lceval", "lceval_released", "lceval_plus",
                   "sentence_rank"):
        assert f"(default: {DEFAULTS[metric]}" in helps[f"{metric}_model"], metric
    # critic_img refuses to run without a model named (its shipped critic is at chance): the help says so
    assert DEFAULTS["critic_img"] in helps["critic_img_model"] and "no default" in helps["critic_img_model"]
    assert DEFAULTS["sentence_cosine"] in helps["sentence_cosine_encoder"]
    assert "lceval-flickr8k-coco" not in helps["lceval_model"]  # the old default, no longer the metric's


def test_help_never_breaks_a_model_name_at_its_hyphens(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = _subparser("score").format_help()
    assert DEFAULTS["lceval"] in text and DEFAULTS["lceval_plus"] in text
    assert not re.search(r"[a-z0-9]-\n", text), "a line of the help ends inside a hyphenated word"


# -- errors in the command's words -------------------------------------------------------------------------------


def test_too_long_caption_names_the_flag_and_none(files, capsys):
    preds, refs = files
    preds.write_text(json.dumps(["a dog " * 1000, "two cats"]), encoding="utf-8")
    rc, _, err = _score(capsys, preds, refs, "--metrics", "meteor")
    assert rc == 1
    assert "predictions[0] has 6,000 characters; meteor accepts at most 5,000" in err
    assert "--max-caption-chars none for no limit" in err
    assert "None for no limit" not in err and "max_caption_chars;" not in err


def test_python_keeps_the_keyword_names():
    import capeval

    with pytest.raises(ValueError, match=r"meteor accepts at most 5,000 \(max_caption_chars; pass a larger value, "
                                         r"or None for no limit"):
        capeval.score(["a dog " * 1000], [["a dog"]], metrics="meteor")
    with pytest.raises(ValueError, match=r"meteor, spice accept at most 5,000"):
        capeval.score(["a dog " * 1000], [["a dog"]], metrics="meteor,spice")


def test_missing_images_name_the_flags(files, capsys, monkeypatch):
    from support import image_metric

    fake = image_metric.register(monkeypatch)
    rc, _, err = _score(capsys, *files, "--metrics", fake)
    assert rc == 1 and "give --images FILE" in err and "--image-dir DIR" in err and "images=" not in err
    import capeval

    with pytest.raises(ValueError, match=r"pass images= \(one per prediction"):  # Python's words stay Python's
        capeval.score(["a dog"], [["a dog"]], metrics=fake)


# -- tables ------------------------------------------------------------------------------------------------------


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _columns(table: list[str]) -> list[list[str]]:
    """The cells of a text table (header, then body lines), cut at the rule's dashes by display column."""
    spans = [m.span() for m in re.finditer(r"-+", table[1])]
    rows = []
    for line in table[:1] + table[2:]:
        chars, column = [], 0  # (display column, character)
        for c in line:
            chars.append((column, c))
            column += _width(c)
        rows.append(["".join(c for col, c in chars if start <= col < end) for start, end in spans])
    return rows


def _table(text: str, first_header: str) -> list[str]:
    """The lines of the table whose header starts with ``first_header``, up to a blank line or the end."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def test_models_aligns_text_left_and_numbers_right(capsys):
    assert main(["models", "--wide"]) == 0
    rows = _columns(_table(capsys.readouterr().out, "model"))
    header, body = rows[0], rows[1:]
    for i, name in enumerate(header):
        if name.strip() == "MB":
            assert name.startswith(" ") or name.strip() == name, name  # right-aligned over the numbers
            assert all(cell == cell.rstrip() or not cell.strip() for cell in (r[i] for r in body))
        else:  # model, metric, default of, status, where: text, left-aligned under a left-aligned header
            assert name == name.lstrip()
            assert all(cell == cell.lstrip() for cell in (r[i] for r in body)), name
    joint = next(r for r in body if r[0].strip() == DEFAULTS["critic"])
    assert joint[1].startswith("critic ")


def test_per_caption_keeps_wide_characters_in_their_columns(files, capsys):
    preds, refs = files
    preds.write_text(json.dumps(["一只狗在草地上奔跑", "a dog", "犬が芝生の上を走っている、とても長いキャプションです" * 3]),
                     encoding="utf-8")
    refs.write_text(json.dumps([["a dog runs"], ["a dog runs"], ["a dog"]]), encoding="utf-8")
    rc, out, _ = _score(capsys, preds, refs, "--metrics", "bleu_4", "--per-caption")
    assert rc == 0
    table = _table(out, "item")
    assert len({_width(line.rstrip()) for line in table}) == 1, "\n".join(table)  # every line as wide as the rule
    rows = _columns(table)
    captions = [r[1] for r in rows[1:]]
    assert captions[1].startswith("a dog ")  # left-aligned text
    assert all(c == c.lstrip() for c in captions)
    assert captions[2].rstrip().endswith("…") and _width(captions[2].rstrip()) <= 60
    assert all(r[2] == r[2].rstrip() and r[2].strip().startswith("0.") for r in rows[1:])  # numbers right-aligned


def test_one_prediction_is_singular(files, capsys):
    preds, refs = files
    preds.write_text(json.dumps(["a dog runs on the grass"]), encoding="utf-8")
    refs.write_text(json.dumps([["a dog running on a lawn"]]), encoding="utf-8")
    rc, out, _ = _score(capsys, preds, refs, "--metrics", "bleu_4")
    assert rc == 0 and "1 prediction scored against" in out and "1 predictions" not in out


# -- warnings and progress bars ----------------------------------------------------------------------------------


def test_a_warning_under_progress_starts_its_own_line(files, capsys):
    import warnings

    from capeval.coco.cider import SmallCorpusWarning

    preds, refs = files
    with warnings.catch_warnings():
        warnings.simplefilter("always", SmallCorpusWarning)  # the suite's configuration filters it out
        rc, _, err = _score(capsys, preds, refs, "--metrics", "bleu_4,cider_d", "--progress")
    assert rc == 0 and "capeval score: warning: CIDEr-D's document frequencies" in err
    assert "capeval.score" in err  # the bar was drawn
    assert not re.search(r"[^\r\n]capeval score: warning:", err), err  # never after a bar's text on its line
