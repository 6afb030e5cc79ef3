"""The Space callbacks (capeval.hf.space) without gradio: typed text in, the numbers of capeval.score out,
bad input refused naming the line."""
from __future__ import annotations

import pytest
from support import ROOT

import capeval
from capeval.hf.space import (DIGITS, SpaceInputError, parse_predictions, parse_references, score_captions,
                              score_thumb)

evaluate = pytest.importorskip("evaluate")

PREDICTIONS = "a dog runs across the grass\n\na man rides a red bike\n"  # a blank line inside is refused
TEXT_PREDICTIONS = "a dog runs across the grass\na man rides a red bike"
TEXT_REFERENCES = "a brown dog running on a lawn | a dog plays in the grass\na man riding a bicycle"


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_parse_lines_and_several_references():
    assert parse_predictions(TEXT_PREDICTIONS + "\n\n") == ["a dog runs across the grass", "a man rides a red bike"]
    assert parse_references(TEXT_REFERENCES, 2) == [["a brown dog running on a lawn", "a dog plays in the grass"],
                                                    ["a man riding a bicycle"]]


@pytest.mark.parametrize("predictions, references, message", [
    ("", "a ref", "type one caption per line"),
    (PREDICTIONS, "x\ny", "Predictions line 2 is empty"),
    (TEXT_PREDICTIONS, "only one line", "2 caption(s) but 1 line(s) of references"),
    (TEXT_PREDICTIONS, "a dog | \na man", "References line 1: reference 2 is empty"),
])
def test_bad_input_names_the_line(predictions, references, message):
    with pytest.raises(SpaceInputError) as info:
        score_captions(lambda **kw: pytest.fail("must not compute"), ["bleu_4"], predictions, references)
    assert message in str(info.value)


def test_caption_tables_equal_capeval_score():
    module = evaluate.load(str(ROOT / "metrics" / "coco_caption"))
    keys = ["bleu_1", "bleu_4", "rouge_l", "cider_d"]
    corpus, per_caption, signature = score_captions(module.compute, keys, TEXT_PREDICTIONS, TEXT_REFERENCES,
                                                    ["bleu", "rouge_l", "cider_d"])
    want = capeval.score(parse_predictions(TEXT_PREDICTIONS), parse_references(TEXT_REFERENCES, 2),
                         metrics="bleu,rouge_l,cider_d")
    assert corpus == [[k, round(want[k], DIGITS)] for k in keys]
    assert per_caption["headers"] == ["#", "caption", *keys]
    assert per_caption["data"][1][:2] == [2, "a man rides a red bike"]
    assert per_caption["data"][1][2:] == [round(want["per_caption"][k][1], DIGITS) for k in keys]
    assert signature == want["signature"]
    with pytest.raises(SpaceInputError, match="at least one metric"):
        score_captions(module.compute, keys, TEXT_PREDICTIONS, TEXT_REFERENCES, [])


def test_module_errors_come_back_as_messages():
    def compute(**_):
        raise ValueError("predictions[1] is too long")

    with pytest.raises(SpaceInputError, match=r"predictions\[1\] is too long"):
        score_captions(compute, ["bleu_4"], TEXT_PREDICTIONS, TEXT_REFERENCES)


def test_thumb_rows_and_errors():
    module = evaluate.load(str(ROOT / "metrics" / "thumb"))
    text = "precision, recall, fluency, conciseness, inclusive, system\n5, 5, 0, 0, 0, a\n4, 3, -0.1, 0, 0, b"
    corpus, per_caption, systems, signature = score_thumb(module.compute, text)
    want = module.compute(precision=[5, 4], recall=[5, 3], fluency=[0, -0.1], conciseness=[0, 0], inclusive=[0, 0],
                          systems=["a", "b"], bootstrap_samples=0)
    assert corpus == [["total", round(want["total"], DIGITS)]]
    assert per_caption == [[1, 5.0, 5.0, round(want["per_caption"]["total"][0], DIGITS)],
                           [2, 4.0, 3.0, round(want["per_caption"]["total"][1], DIGITS)]]
    assert [row[0] for row in systems] == ["a", "b"] and signature
    with pytest.raises(SpaceInputError, match="Line 2: recall 'x' is not a number"):
        score_thumb(module.compute, "5, 5\n4, x")
    with pytest.raises(SpaceInputError, match="Line 1 has 3 value"):
        score_thumb(module.compute, "5, 5, 0")
    with pytest.raises(SpaceInputError, match="precision"):
        score_thumb(module.compute, "9, 5")  # out of the 1-5 range: the module's message, naming the caption
