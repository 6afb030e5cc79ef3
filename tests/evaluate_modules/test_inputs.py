"""Inputs through `evaluate`: every reference shape, `evaluate.combine` with per-module options and a metric
choice, and `empty="zero"` — each compared with `capeval.score` on the same input."""
from __future__ import annotations

import warnings

import pytest
from support import ROOT, needs

import capeval

evaluate = pytest.importorskip("evaluate")

# module -> metrics= for capeval.score (the module's own metrics; the COCO ones without METEOR's JVM)
CAPTION_MODULES = {"coco_caption": "bleu,rouge_l,cider_d", "spice": "spice", "spice_u": "spice_u"}
PREDICTIONS = ["a dog runs on the grass", "two cats on a red sofa", "a man rides a horse on a beach"]
ONE = ["a brown dog running on a lawn", "two cats sleeping on a red couch", "a man riding a horse"]
MANY = [["a dog sprints through a field", "a dog on a lawn"], ["cats on a sofa", "two cats resting"],
        ["a person on a horse at the shore", "a rider on the sand"]]
SHAPES = {
    "all strings": ONE,
    "all lists": MANY,
    "string then lists": [ONE[0], MANY[1], MANY[2]],
    "list then string": [MANY[0], ONE[1], MANY[2]],
    "lists around a string": [MANY[0], ONE[1], [ONE[2]]],
    "one-item lists and tuples": [[ONE[0]], tuple(MANY[1]), ONE[2]],
}


pytestmark = pytest.mark.usefixtures("fresh_cache")


def _load(name: str):
    return evaluate.load(str(ROOT / "metrics" / name))


def _same(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == value, key


# -- references: one string or a list per prediction, mixed in any order ------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", CAPTION_MODULES)
def test_every_reference_shape_scores_as_capeval_score(name, shape):
    needs(name)
    refs = SHAPES[shape]
    kwargs = {"metrics": CAPTION_MODULES[name]} if name == "coco_caption" else {}
    got = _load(name).compute(predictions=PREDICTIONS, references=refs, **kwargs)
    _same(got, capeval.score(PREDICTIONS, refs, metrics=CAPTION_MODULES[name]))


def test_mixed_shapes_differ_from_the_wrong_readings():
    """The old failure modes, checked against: a list read as its text, a string read as its characters."""
    refs = [MANY[0], ONE[1], MANY[2]]
    got = _load("coco_caption").compute(predictions=PREDICTIONS, references=refs, metrics="rouge_l")
    as_text = capeval.score(PREDICTIONS, [str(MANY[0]), ONE[1], str(MANY[2])], metrics="rouge_l")
    assert got["per_caption"]["rouge_l"] != as_text["per_caption"]["rouge_l"]
    assert got["signature"].startswith("nrefs:var|")


def test_add_batch_and_add_take_both_forms():
    coco = _load("coco_caption")
    refs = SHAPES["lists around a string"]
    coco.add_batch(predictions=PREDICTIONS[:2], references=refs[:2])
    coco.add(prediction=PREDICTIONS[2], reference=ONE[2])
    got = coco.compute(metrics="bleu,rouge_l,cider_d")
    _same(got, capeval.score(PREDICTIONS, [*refs[:2], ONE[2]], metrics="bleu,rouge_l,cider_d"))


@pytest.mark.parametrize("refs, match", [
    ([["a dog", None], ONE[1], ONE[2]], r"references\[0\]\[1\] is None"),
    ([[], ONE[1], ONE[2]], r"references\[0\] is an empty list"),
    ([ONE[0], "  ", ONE[2]], r"references\[1\] is empty"),
    ([ONE[0], ONE[1], 7], r"references\[2\] is a int"),
])
def test_bad_references_name_the_item(refs, match):
    with pytest.raises(ValueError, match=match):
        _load("coco_caption").compute(predictions=PREDICTIONS, references=refs, metrics="rouge_l")


# -- evaluate.combine: one call, per-module options, metrics= across modules ---------------------------------


def test_combine_runs_only_the_metrics_named_with_per_module_options(monkeypatch):
    pytest.importorskip("spacy")
    from capeval.coco.meteor import MeteorScorer

    monkeypatch.setattr(MeteorScorer, "_jvm", lambda *a: pytest.fail("METEOR's JVM was started"))
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "spice")])
    refs = SHAPES["string then lists"]
    got = combined.compute(predictions=PREDICTIONS, references=refs, metrics=["bleu_4", "cider_d", "spice"],
                           cleanup="none", spice_input="raw", meteor_jvms=2)
    coco = capeval.score(PREDICTIONS, refs, metrics=["bleu_4", "cider_d"], cleanup="none")
    spice = capeval.score(PREDICTIONS, refs, metrics="spice", cleanup="none", spice_input="raw")
    assert "meteor" not in got and "rouge_l" not in got and "bleu_1" not in got
    assert (got["bleu_4"], got["cider_d"]) == (coco["bleu_4"], coco["cider_d"])
    assert got["spice"] == spice["spice"] and got["spice_per_caption"] == spice["per_caption"]
    assert got["coco_caption_signature"] == coco["signature"]
    assert got["spice_signature"] == spice["signature"] and "input=raw" in got["spice_signature"]  # option arrived


def test_combine_option_of_one_module_changes_only_that_module():
    pytest.importorskip("spacy")
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "spice")])
    plain = combined.compute(predictions=PREDICTIONS, references=MANY, metrics="rouge_l,spice")
    no_syn = combined.compute(predictions=PREDICTIONS, references=MANY, metrics="rouge_l,spice", spice_synonyms=False)
    assert no_syn["rouge_l"] == plain["rouge_l"] and no_syn["coco_caption_signature"] == plain["coco_caption_signature"]
    assert no_syn["spice_signature"] != plain["spice_signature"]


def test_a_module_with_none_of_the_named_metrics_returns_nothing_and_says_so():
    pytest.importorskip("spacy")
    with pytest.warns(UserWarning, match=r"metrics='rouge_l' selects none of this module's metrics \(spice, "):
        assert _load("spice").compute(predictions=PREDICTIONS, references=MANY, metrics="rouge_l") == {}
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "spice")])
    with pytest.warns(UserWarning, match="selects none"):
        got = combined.compute(predictions=PREDICTIONS, references=MANY, metrics="rouge_l")
    want = capeval.score(PREDICTIONS, MANY, metrics="rouge_l")
    _same(got, want)  # only COCO Caption answered, so nothing needed a prefix


@pytest.mark.parametrize("kwargs, match", [
    ({"cider_dff": "references"}, r"Unknown option\(s\) \['cider_dff'\] for the coco_caption module"),
    ({"metrics": "blue"}, r"Unknown metric 'blue'"),
    ({"empty": "skip"}, r"empty must be one of \['error', 'zero'\]"),
])
def test_combine_refuses_names_no_capeval_module_knows(kwargs, match):
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption")])
    with pytest.raises(ValueError, match=match):
        combined.compute(predictions=PREDICTIONS, references=MANY, **{"metrics": "rouge_l", **kwargs})


# -- empty="zero" ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CAPTION_MODULES)
def test_empty_prediction_raises_by_default_and_scores_zero_with_empty_zero(name):
    needs(name)
    module = _load(name)
    preds = [PREDICTIONS[0], "  ", PREDICTIONS[2]]
    kwargs = {"metrics": CAPTION_MODULES[name]} if name == "coco_caption" else {}
    with pytest.raises(ValueError, match=r'predictions\[1\] is empty or whitespace only.*empty="zero"'):
        module.compute(predictions=preds, references=MANY, **kwargs)
    with pytest.warns(capeval.EmptyCaptionWarning, match=r"predictions\[1\]"):
        got = module.compute(predictions=preds, references=MANY, empty="zero", **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", capeval.EmptyCaptionWarning)
        want = capeval.score(preds, MANY, metrics=CAPTION_MODULES[name], empty="zero")
    _same(got, want)
    main = {"coco_caption": ("bleu_1", "bleu_4", "rouge_l", "cider_d"), "spice": ("spice",), "spice_u": ("spice_u",)}
    for key in main[name]:
        assert got["per_caption"][key][1] == 0.0, key
        assert got["per_caption"][key][0] > 0.0, key
