"""A missing prediction is named by its own place, ``predictions[1]`` (a file: ``item 1`` / ``line 2``), on every
route: the API, a JSON or JSON-lines file, the command line and the evaluate modules' ``add``."""
from __future__ import annotations

import json

import pytest

import capeval
from capeval.cli import main
from capeval.io import InputFormatError, load_predictions


@pytest.mark.parametrize("predictions, named", [(["a dog", None], "predictions[1]"),
                                                ([None, "a dog"], "predictions[0]")])
def test_the_api_names_the_missing_item(predictions, named):
    with pytest.raises(ValueError) as err:
        capeval.score(predictions, [["a dog"], ["a cat"]], metrics=["bleu"])
    assert str(err.value).startswith(f"{named} is None")


@pytest.mark.parametrize("name, text, named", [
    ("p.json", json.dumps(["a dog", None]), "item 1 is null"),
    ("p.json", json.dumps(["a dog", 3]), "item 1 is a number"),
    ("p.json", json.dumps([None, "a dog"]), "item 0 is null"),
    ("p.jsonl", '"a dog"\nnull\n', "line 2 is null"),
    ("p.json", json.dumps([{"image_id": 1, "caption": "a dog"}, "a cat"]), "item 1 is a string"),
])
def test_a_file_names_the_missing_item(tmp_path, name, text, named):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        load_predictions(path)
    assert f"{path}: {named}" in str(err.value)


def test_the_command_line_names_the_missing_item(tmp_path, capsys):
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps(["a dog", None]), encoding="utf-8")
    refs.write_text(json.dumps([["a dog"], ["a cat"]]), encoding="utf-8")
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "bleu"]) == 1
    err = capsys.readouterr().err
    assert "item 1 is null" in err and "item 0" not in err


def test_an_evaluate_module_names_the_added_item():
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load("metrics/coco_caption")
    module.add(prediction="a dog", reference=["a dog"])
    with pytest.raises(ValueError, match=r"^predictions\[1\] is None"):
        module.add(prediction=None, reference=["a cat"])
    module.add(prediction="a cat", reference=["a cat"])  # the refused one is not counted
    with pytest.raises(ValueError, match=r"^predictions\[2\] is None"):
        module.add(prediction=None, reference=["a cat"])
    assert module.compute(metrics=["bleu"])["bleu_1"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"predictions\[1\] is None"):
        module.compute(predictions=["a dog", None], references=[["a dog"], ["a cat"]], metrics=["bleu"])


@pytest.mark.parametrize("images, index, problem", [
    (["a.jpg", None], 1, " is None; fake_img needs an image for every prediction."),
    (["a.jpg", ""], 1, " is an empty path; give the image file's path."),
    ([{"bytes": b""}, "a.jpg"], 0, "['bytes'] is empty bytes; give the encoded image file's bytes."),
])
def test_a_bad_image_entry_carries_its_index(images, index, problem):
    from capeval.models.images import ImageInputError as FromModels
    from capeval.validation import ImageInputError, check_images

    assert FromModels is ImageInputError  # still importable where it was
    with pytest.raises(ImageInputError) as err:
        check_images(images, 2, needing=["fake_img"])
    assert (err.value.index, err.value.problem) == (index, problem)
    assert str(err.value) == f"images[{index}]{problem}"
    assert err.value.named(f"Image {index + 1}") == f"Image {index + 1}{problem}"  # a caller's own words, from fields
