"""The Space callbacks (capeval.hf.space_inputs) without gradio: typed text in, the numbers of capeval.score out,
bad input refused naming the line."""
from __future__ import annotations

import pytest
from support import ROOT

import capeval
from capeval.hf.space_inputs import (DIGITS, SpaceInputError, parse_predictions, parse_references, score_captions,
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


# -- the image Space (learned_critic): images, captions and references in, capeval.score's numbers out ----------

CRITIC_PREDICTIONS = "a tabby cat looking at the camera\na woman astronaut in an orange suit\nof coffee cup a saucer on a"
CRITIC_REFERENCES = "a cat with stripes | a striped cat\nan astronaut in front of a flag\na cup of coffee on a saucer"
CRITIC_KEYS = ["critic", "critic_ref", "critic_img"]


@pytest.fixture(scope="module")
def critic_module():
    return evaluate.load(str(ROOT / "metrics" / "learned_critic"))


@pytest.fixture
def photos():
    from capeval.io import example_images

    return [str(p) for p in example_images()]


def _fail_compute(**_):
    pytest.fail("must not compute")


def test_image_paths_reads_every_upload_form(tmp_path):
    from capeval.hf.space_inputs import image_paths

    class Uploaded:  # what a gr.File of gradio 3 handed over
        name = "/tmp/c.jpg"

    assert image_paths(None) == [] and image_paths([]) == []
    assert image_paths("/tmp/a.jpg") == ["/tmp/a.jpg"]
    assert image_paths([("/tmp/a.jpg", None), ("/tmp/b.jpg", "2. b.jpg"), Uploaded(), {"path": "/tmp/d.jpg"},
                        tmp_path / "e.jpg"]) == ["/tmp/a.jpg", "/tmp/b.jpg", "/tmp/c.jpg", "/tmp/d.jpg",
                                                 str(tmp_path / "e.jpg")]
    with pytest.raises(SpaceInputError, match="Image 2 has no file"):
        image_paths(["/tmp/a.jpg", {"path": None}])


def test_critic_tables_equal_capeval_score(critic_module, tiny_critics, photos):
    from capeval.hf.space_inputs import score_image_captions

    gallery = [(p, f"{i}. caption") for i, p in enumerate(photos, 1)]  # what gr.Gallery(type="filepath") gives
    corpus, per_caption, signature = score_image_captions(critic_module.compute, CRITIC_KEYS, gallery,
                                                          CRITIC_PREDICTIONS, CRITIC_REFERENCES, CRITIC_KEYS,
                                                          tiny_critics)
    want = capeval.score(parse_predictions(CRITIC_PREDICTIONS), parse_references(CRITIC_REFERENCES, 3),
                         metrics=CRITIC_KEYS, images=photos, **tiny_critics)
    assert corpus == [[k, round(want[k], DIGITS)] for k in CRITIC_KEYS] + [
        [f"{k} vocabulary coverage", round(want["coverage"][k], DIGITS)] for k in CRITIC_KEYS]
    assert per_caption["headers"] == ["#", "image", "caption", *CRITIC_KEYS]
    assert [row[:3] for row in per_caption["data"]] == [
        [1, "chelsea.jpg", "a tabby cat looking at the camera"], [2, "astronaut.jpg", "a woman astronaut in an orange suit"],
        [3, "coffee.jpg", "of coffee cup a saucer on a"]]
    for i, row in enumerate(per_caption["data"]):
        assert row[3:] == [round(want["per_caption"][k][i], DIGITS) for k in CRITIC_KEYS]
    assert signature == want["signature"]


def test_one_image_serves_every_line_and_critic_ref_needs_none(critic_module, tiny_critics, photos):
    from capeval.hf.space_inputs import score_image_captions

    preds, refs = "a cat\na striped cat sitting", "a cat with stripes\na tabby cat"
    corpus, per_caption, _ = score_image_captions(critic_module.compute, CRITIC_KEYS, photos[:1], preds, refs,
                                                  ["critic_img"], tiny_critics)
    want = capeval.score(["a cat", "a striped cat sitting"], [["a cat with stripes"], ["a tabby cat"]],
                         metrics="critic_img", images=photos[:1] * 2, **tiny_critics)
    assert corpus == [["critic_img", round(want["critic_img"], DIGITS)],
                      ["critic_img vocabulary coverage", round(want["coverage"]["critic_img"], DIGITS)]]
    assert [row[1] for row in per_caption["data"]] == ["chelsea.jpg", "chelsea.jpg"]
    corpus, per_caption, signature = score_image_captions(critic_module.compute, CRITIC_KEYS, None, preds, refs,
                                                          ["critic_ref"], tiny_critics)
    want = capeval.score(["a cat", "a striped cat sitting"], [["a cat with stripes"], ["a tabby cat"]],
                         metrics="critic_ref", **tiny_critics)
    assert corpus == [["critic_ref", round(want["critic_ref"], DIGITS)],
                      ["critic_ref vocabulary coverage", round(want["coverage"]["critic_ref"], DIGITS)]]
    assert "ctx=reference" in signature
    assert [row[1] for row in per_caption["data"]] == ["", ""]
    corpus, _, _ = score_image_captions(critic_module.compute, CRITIC_KEYS, [], preds, refs, None, tiny_critics)
    assert [row[0] for row in corpus] == ["critic_ref", "critic_ref vocabulary coverage"]  # the default without images


@pytest.mark.parametrize("images, predictions, references, metrics, message", [
    ([], CRITIC_PREDICTIONS, CRITIC_REFERENCES, ["critic", "critic_ref"],
     "critic reads the image: upload one image per caption line (in the order of the lines), or choose only critic_ref"),
    ([], CRITIC_PREDICTIONS, CRITIC_REFERENCES, CRITIC_KEYS, "critic, critic_img read the image"),
    (["a.jpg", "b.jpg"], CRITIC_PREDICTIONS, CRITIC_REFERENCES, CRITIC_KEYS, "3 caption(s) but 2 image(s)"),
    (["a.jpg"], CRITIC_PREDICTIONS, "one line", CRITIC_KEYS, "3 caption(s) but 1 line(s) of references"),
    (["a.jpg"], "", CRITIC_REFERENCES, CRITIC_KEYS, "type one caption per line"),
    (["a.jpg"], CRITIC_PREDICTIONS, CRITIC_REFERENCES, [], "Choose at least one metric"),
    (["a.jpg"], CRITIC_PREDICTIONS, CRITIC_REFERENCES, ["critic_x"], "Unknown metric 'critic_x'"),
])
def test_bad_image_input_is_refused_before_computing(images, predictions, references, metrics, message):
    from capeval.hf.space_inputs import score_image_captions

    with pytest.raises(SpaceInputError) as info:
        score_image_captions(_fail_compute, CRITIC_KEYS, images, predictions, references, metrics)
    assert message in str(info.value)


def test_unreadable_and_missing_images_are_named_as_the_page_numbers_them(critic_module, tiny_critics, photos,
                                                                          tmp_path):
    from capeval.hf.space_inputs import score_image_captions

    bad = tmp_path / "notes.jpg"
    bad.write_text("not a picture")
    with pytest.raises(SpaceInputError, match=r"^Image 2 \(notes\.jpg\) is not a readable image"):
        score_image_captions(critic_module.compute, CRITIC_KEYS, [photos[0], str(bad), photos[2]], CRITIC_PREDICTIONS,
                             CRITIC_REFERENCES, ["critic"], tiny_critics)
    with pytest.raises(SpaceInputError, match=r"Image 3 \(gone\.jpg\)"):
        score_image_captions(critic_module.compute, CRITIC_KEYS, [photos[0], photos[1], str(tmp_path / "gone.jpg")],
                             CRITIC_PREDICTIONS, CRITIC_REFERENCES, ["critic_img"], tiny_critics)


def test_critic_models_come_from_the_arguments_then_the_environment(tmp_path):
    from capeval.hf.space_inputs import CRITIC_MODEL_ENV, critic_models

    assert critic_models(environ={}) == {}
    env = {"CAPEVAL_CRITIC_MODEL": "/m/critic", "CAPEVAL_CRITIC_IMG_MODEL": "/m/img", "OTHER": "x"}
    assert critic_models(environ=env) == {"critic_model": "/m/critic", "critic_img_model": "/m/img"}
    assert critic_models({"critic_model": tmp_path}, environ=env) == {"critic_model": str(tmp_path),
                                                                      "critic_img_model": "/m/img"}
    assert set(CRITIC_MODEL_ENV.values()) == {"CAPEVAL_CRITIC_MODEL", "CAPEVAL_CRITIC_REF_MODEL",
                                              "CAPEVAL_CRITIC_IMG_MODEL", "CAPEVAL_CRITIC_PLUS_MODEL"}
    assert critic_models(environ={"CAPEVAL_CRITIC_PLUS_MODEL": "/m/plus"}) == {"critic_plus_model": "/m/plus"}
    with pytest.raises(ValueError, match="unknown critic option"):
        critic_models({"critic": "/m"})


# -- the LCEval Space: typed captions in, both scores and the 16 features out --------------------------------------

LCEVAL_PREDICTIONS = "a dog runs across the grass\na man rides a red bike"
LCEVAL_REFERENCES = "a brown dog running on a lawn | a dog plays in the grass\na man riding a bicycle"


def test_lceval_tables_equal_capeval_score(tiny_lceval, java):
    """Both networks (a tiny random one as lceval_model), the 16 features once per caption (both networks read the
    same features), a feature group per network when they differ (other word vectors) only."""
    from capeval.hf.space_inputs import LCEVAL_FEATURE_COLUMNS, LCEVAL_METRICS, score_lceval
    from capeval.lceval import FEATURE_NAMES

    module = evaluate.load(str(ROOT / "metrics" / "lceval"))
    options = {"lceval_model": tiny_lceval}
    corpus, per_caption, features, signature = score_lceval(module.compute, LCEVAL_PREDICTIONS, LCEVAL_REFERENCES,
                                                            LCEVAL_METRICS, options)
    preds, refs = parse_predictions(LCEVAL_PREDICTIONS), parse_references(LCEVAL_REFERENCES, 2)
    want = capeval.score(preds, refs, metrics=list(LCEVAL_METRICS), lceval_features=True, **options)
    assert corpus == [[k, round(want[k], DIGITS)] for k in LCEVAL_METRICS] + [
        [f"{k} vocabulary coverage", round(want["coverage"][k], DIGITS)] for k in LCEVAL_METRICS]
    assert per_caption["headers"] == ["#", "caption", *LCEVAL_METRICS]
    assert per_caption["data"] == [[i + 1, p, *(round(want["per_caption"][k][i], DIGITS) for k in LCEVAL_METRICS)]
                                   for i, p in enumerate(preds)]
    assert features["headers"] == [*LCEVAL_FEATURE_COLUMNS, *FEATURE_NAMES] and len(FEATURE_NAMES) == 16
    assert features["data"] == [[i + 1, p, "lceval, lceval_released",
                                 *(round(want["lceval_features"][i][f], DIGITS) for f in FEATURE_NAMES)]
                                for i, p in enumerate(preds)]
    assert signature == want["signature"]
    corpus, per_caption, features, _ = score_lceval(module.compute, LCEVAL_PREDICTIONS, LCEVAL_REFERENCES,
                                                    ["lceval_released"], options)
    assert [row[0] for row in corpus] == ["lceval_released", "lceval_released vocabulary coverage"]
    assert per_caption["headers"][2:] == ["lceval_released"]
    assert [row[2] for row in features["data"]] == ["lceval_released"] * 2


def test_lceval_feature_rows_per_network_when_they_differ():
    from capeval.hf.space_inputs import score_lceval
    from capeval.lceval import FEATURE_NAMES

    one = {name: 0.5 for name in FEATURE_NAMES}
    other = {**one, "wmd": 0.25}

    def compute(**kwargs):
        assert kwargs["lceval_features"] is True and kwargs["lceval_released_features"] is True
        return {"lceval": 0.75, "lceval_released": 0.5, "per_caption": {"lceval": [0.75], "lceval_released": [0.5]},
                "lceval_features": [one], "lceval_released_features": [other], "signature": "s"}

    corpus, _, features, _ = score_lceval(compute, "a dog", "a dog runs", ["lceval", "lceval_released"])
    assert corpus == [["lceval", 0.75], ["lceval_released", 0.5]]
    assert [row[:3] for row in features["data"]] == [[1, "a dog", "lceval"], [1, "a dog", "lceval_released"]]
    assert [row[3 + FEATURE_NAMES.index("wmd")] for row in features["data"]] == [0.5, 0.25]


@pytest.mark.parametrize("predictions, references, metrics, message", [
    ("", "a ref", None, "type one caption per line"),
    (LCEVAL_PREDICTIONS, "only one line", None, "2 caption(s) but 1 line(s) of references"),
    (LCEVAL_PREDICTIONS, LCEVAL_REFERENCES, [], "Choose at least one metric"),
])
def test_bad_lceval_input_is_refused_before_computing(predictions, references, metrics, message):
    from capeval.hf.space_inputs import score_lceval

    with pytest.raises(SpaceInputError) as info:
        score_lceval(_fail_compute, predictions, references, metrics)
    assert message in str(info.value)


def test_lceval_module_errors_come_back_as_messages(tmp_path):
    from capeval.hf.space_inputs import score_lceval

    def compute(**kwargs):
        raise FileNotFoundError(f"{kwargs['lceval_model']!r} is neither a shipped LCEval model nor a folder.")

    with pytest.raises(SpaceInputError, match="is neither a shipped LCEval model"):
        score_lceval(compute, LCEVAL_PREDICTIONS, LCEVAL_REFERENCES, None, {"lceval_model": str(tmp_path / "x")})


def test_lceval_models_come_from_the_arguments_then_the_environment(tmp_path):
    from capeval.hf.space_inputs import LCEVAL_MODEL_ENV, lceval_models

    assert lceval_models(environ={}) == {}
    env = {"CAPEVAL_LCEVAL_MODEL": "/m/lceval", "CAPEVAL_CRITIC_MODEL": "/m/critic"}
    assert lceval_models(environ=env) == {"lceval_model": "/m/lceval"}
    assert lceval_models({"lceval_released_model": tmp_path}, environ=env) == {
        "lceval_model": "/m/lceval", "lceval_released_model": str(tmp_path)}
    assert set(LCEVAL_MODEL_ENV.values()) == {"CAPEVAL_LCEVAL_MODEL", "CAPEVAL_LCEVAL_RELEASED_MODEL"}
    with pytest.raises(ValueError, match="unknown lceval option"):
        lceval_models({"critic_model": "/m"})
