"""A lone surrogate in a caption (U+D800..U+DFFF without its pair, as JSON's ``"\\ud800"`` reads): scored as before (the
tokenizer drops it, as pycocoevalcap's does), with one warning line naming the caption, through ``capeval.score`` and
``capeval score`` (whose ``--per-caption`` table shows it escaped instead of failing to print it)."""
from __future__ import annotations

import json
import warnings

import pytest

import capeval
from capeval.cli import main
from capeval.validation import LoneSurrogateWarning, lone_surrogate_items

PREDICTIONS = ["a dog \ud800 runs on the grass", "a cat sits on a mat"]
REFERENCES = [["a dog runs on the grass"], ["a cat on a mat", "a cat \udfff sitting"]]
CLEAN = ["a dog runs on the grass", "a cat sits on a mat"]
CLEAN_REFS = [["a dog runs on the grass"], ["a cat on a mat", "a cat sitting"]]
METRICS = "bleu,rouge_l,cider_d"


def _caught(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    return result, caught


def test_items_are_named_in_order():
    assert lone_surrogate_items(PREDICTIONS, REFERENCES) == ["predictions[0]", "references[1][1]"]
    assert lone_surrogate_items(CLEAN, CLEAN_REFS) == []
    assert lone_surrogate_items(["a smile \U0001F600"], [["\u00e9t\u00e9"]]) == []  # a real pair is one character


def test_capeval_score_warns_once_naming_the_items_and_scores_as_without_them():
    result, caught = _caught(lambda: capeval.score(PREDICTIONS, REFERENCES, metrics=METRICS))
    ours = [w for w in caught if issubclass(w.category, LoneSurrogateWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert "\n" not in message and message.startswith("2 caption(s) hold a lone surrogate")
    assert "predictions[0], references[1][1]." in message
    assert ours[0].filename == __file__  # points at the caller's line
    clean, caught = _caught(lambda: capeval.score(CLEAN, CLEAN_REFS, metrics=METRICS))
    assert not [w for w in caught if issubclass(w.category, LoneSurrogateWarning)]
    for key in ("bleu_4", "rouge_l", "cider_d"):
        assert result[key] == clean[key]
    assert result["per_caption"] == clean["per_caption"]


def test_the_cli_reads_the_escape_from_json_warns_in_one_line_and_prints_the_table(tmp_path, capsys):
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text('["a dog \\ud800 runs on the grass", "a cat sits on a mat"]', encoding="utf-8")
    refs.write_text(json.dumps(CLEAN_REFS), encoding="utf-8")
    assert "\\ud800" in preds.read_text(encoding="utf-8")  # the escape as JSON text, valid UTF-8
    rc = main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", METRICS,
               "--per-caption", "--json", str(tmp_path / "out.json")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = [line for line in err.splitlines() if "lone surrogate" in line]
    assert len(lines) == 1 and lines[0].startswith("capeval score: warning: 1 caption(s) hold a lone surrogate")
    assert "predictions[0]." in lines[0]
    assert "a dog \\ud800 runs" in out  # shown escaped: a lone surrogate cannot be written as UTF-8
    result = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = capeval.score(CLEAN, CLEAN_REFS, metrics=METRICS)
    assert result["per_caption"] == clean["per_caption"]


@pytest.mark.parametrize("text", ["\ud800", "\udfff only"])
def test_a_caption_of_nothing_but_a_surrogate_is_also_wordless(text):
    _, caught = _caught(lambda: capeval.score([text], [["a dog"]], metrics="bleu"))
    kinds = {w.category.__name__ for w in caught}
    assert "LoneSurrogateWarning" in kinds
    if text == "\ud800":
        assert "WordlessCaptionWarning" in kinds
