"""metrics/clip_score and metrics/pac_score through `evaluate`, with tiny random CLIPs saved as checkpoints (fixture
``tiny_clip``): per-caption scores equal to the transcribed reference procedure (clipscore.py, w = 2.5; PAC-S,
w = 2.0, the checkpoint in the authors' format), the numbers of `capeval.score`, `metrics=` choosing, one reference
string per prediction, image kinds, truncation, the default PAC-S checkpoint, `evaluate.combine` with COCO Caption,
the Space's callback, and the errors (no images, missing checkpoint)."""
from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from support import ROOT, require_data

import capeval

evaluate = pytest.importorskip("evaluate")

PREDICTIONS = ["a dog runs across the grass", "a man rides a red bike down the street", "two cats sleep on a sofa"]
REFERENCES = [["a brown dog running on a lawn", "a dog plays in the grass"],
              ["a man riding a bicycle on a road", "a cyclist in the city", "a person on a red bike"],
              ["two cats lying on a couch"]]
CLIP_KEYS, PAC_KEYS = ["clip_s", "ref_clip_s"], ["pac_s", "ref_pac_s"]

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture(scope="module")
def clip_module():
    return evaluate.load(str(ROOT / "metrics" / "clip_score"))


@pytest.fixture(scope="module")
def pac_module():
    return evaluate.load(str(ROOT / "metrics" / "pac_score"))


def _reference(model, images, predictions, references, w):
    from support.clip_reference import reference_scores

    return reference_scores(model, images, predictions, references, w=w)


def _check_reference(got: dict, keys: list[str], want: tuple) -> None:
    assert sorted(got) == sorted([*keys, "per_caption", "signature"])
    for key, values in zip(keys, want):
        assert got["per_caption"][key] == pytest.approx(values.tolist(), abs=1e-5), key
        assert got[key] == pytest.approx(float(np.mean(got["per_caption"][key])), abs=1e-12), key


def test_clip_score_equals_the_reference_procedure(clip_module, tiny_clip):
    images = tiny_clip["images"]
    got = clip_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=images,
                              clip_model=tiny_clip["clip_model"])
    _check_reference(got, CLIP_KEYS, _reference(tiny_clip["clip"], images, PREDICTIONS, REFERENCES, w=2.5))
    assert all(0.0 <= s <= 2.5 for s in got["per_caption"]["clip_s"])
    fields = got["signature"].split("|")
    assert fields[2].startswith("clip_s:model=tiny-clip.pt#") and ",w=2.5,prefix=A%20photo%20depicts%20," in fields[2]
    assert fields[3].startswith("ref_clip_s:model=tiny-clip.pt#") and fields[3].endswith(",refs=max")
    assert ",dtype=float32," in fields[2]


def test_pac_score_equals_the_reference_procedure(pac_module, tiny_clip):
    images = tiny_clip["images"]
    got = pac_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=images,
                             pac_model=tiny_clip["pac_model"])
    _check_reference(got, PAC_KEYS, _reference(tiny_clip["pac"], images, PREDICTIONS, REFERENCES, w=2.0))
    assert all(0.0 <= s <= 2.0 for s in got["per_caption"]["pac_s"])
    assert got["signature"].split("|")[2].startswith("pac_s:model=clip_ViT-B-32.pth#")
    assert ",w=2,prefix=" in got["signature"]


@pytest.mark.parametrize("name, keys, option", [("clip_score", CLIP_KEYS, "clip_model"),
                                                ("pac_score", PAC_KEYS, "pac_model")])
def test_module_equals_capeval_score(name, keys, option, tiny_clip):
    module = evaluate.load(str(ROOT / "metrics" / name))
    kwargs = {option: tiny_clip[option], "images": tiny_clip["images"]}
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES, **kwargs)
    want = capeval.score(PREDICTIONS, REFERENCES, metrics=keys, **kwargs)
    assert got == want


def test_metrics_chooses_between_the_two_keys(clip_module, tiny_clip):
    kwargs = dict(predictions=PREDICTIONS, references=REFERENCES, images=tiny_clip["images"],
                  clip_model=tiny_clip["clip_model"])
    both = clip_module.compute(**kwargs)
    only = clip_module.compute(metrics="clip_s", **kwargs)
    assert sorted(only) == ["clip_s", "per_caption", "signature"] and "ref_clip_s" not in only["signature"]
    assert only["per_caption"]["clip_s"] == both["per_caption"]["clip_s"]
    alias = clip_module.compute(metrics=["refclipscore"], **kwargs)  # the registry's alias of ref_clip_s
    assert sorted(alias) == ["per_caption", "ref_clip_s", "signature"]
    assert alias["per_caption"]["ref_clip_s"] == both["per_caption"]["ref_clip_s"]
    with pytest.warns(UserWarning, match="selects none of this module's metrics"):
        assert clip_module.compute(metrics="pac_s", **kwargs) == {}  # another module's metric (evaluate.combine)


def test_one_reference_string_per_prediction(clip_module, tiny_clip):
    single = [refs[0] for refs in REFERENCES]
    kwargs = dict(predictions=PREDICTIONS, images=tiny_clip["images"], clip_model=tiny_clip["clip_model"])
    as_strings = clip_module.compute(references=single, **kwargs)
    as_lists = clip_module.compute(references=[[r] for r in single], **kwargs)
    mixed = clip_module.compute(references=[single[0], [single[1]], single[2]], **kwargs)
    assert as_strings == as_lists == mixed
    _, ref = _reference(tiny_clip["clip"], tiny_clip["images"], PREDICTIONS, [[r] for r in single], w=2.5)
    assert as_strings["per_caption"]["ref_clip_s"] == pytest.approx(ref.tolist(), abs=1e-5)


def test_pil_images_arrays_and_datasets_values_score_like_paths(clip_module, tiny_clip):
    from PIL import Image

    paths = tiny_clip["images"]
    kwargs = dict(predictions=PREDICTIONS, references=REFERENCES, clip_model=tiny_clip["clip_model"])
    by_path = clip_module.compute(images=paths, **kwargs)["per_caption"]
    pil = clip_module.compute(images=[Image.open(p) for p in paths], **kwargs)["per_caption"]
    arrays = clip_module.compute(images=[np.asarray(Image.open(p).convert("RGB")) for p in paths], **kwargs)
    values = clip_module.compute(images=[{"path": p, "bytes": None} for p in paths], **kwargs)["per_caption"]
    for key in CLIP_KEYS:  # lossless PNGs: the same pixels every way
        assert pil[key] == pytest.approx(by_path[key], abs=1e-6), key
        assert arrays["per_caption"][key] == pytest.approx(by_path[key], abs=1e-6), key
        assert values[key] == pytest.approx(by_path[key], abs=1e-6), key


def test_long_caption_is_cut_as_the_reference_cuts_it_with_one_warning(clip_module, tiny_clip):
    from capeval.vision_language.metric import CaptionTruncatedWarning

    long = "a dog " + " ".join(["and a very small brown dog"] * 20) + " running on the grass"
    predictions = [long, PREDICTIONS[1], PREDICTIONS[2]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = clip_module.compute(predictions=predictions, references=REFERENCES, images=tiny_clip["images"],
                                  clip_model=tiny_clip["clip_model"])
    cut = [w for w in caught if issubclass(w.category, CaptionTruncatedWarning)]
    assert len(cut) == 1 and "predictions[0]" in str(cut[0].message) and "1 text(s)" in str(cut[0].message)
    want = _reference(tiny_clip["clip"], tiny_clip["images"], predictions, REFERENCES, w=2.5)
    _check_reference(got, CLIP_KEYS, want)


def test_empty_prediction_scores_zero_with_empty_zero(clip_module, tiny_clip):
    kwargs = dict(references=REFERENCES, images=tiny_clip["images"], clip_model=tiny_clip["clip_model"])
    predictions = [PREDICTIONS[0], " ", PREDICTIONS[2]]
    with pytest.raises(ValueError, match=r"predictions\[1\]"):
        clip_module.compute(predictions=predictions, **kwargs)
    with pytest.warns(UserWarning, match=r"predictions\[1\]"):
        got = clip_module.compute(predictions=predictions, empty="zero", **kwargs)
    assert got["per_caption"]["clip_s"][1] == 0.0 and got["per_caption"]["ref_clip_s"][1] == 0.0
    full = clip_module.compute(predictions=PREDICTIONS, **kwargs)["per_caption"]
    assert got["per_caption"]["clip_s"][0] == full["clip_s"][0]


@pytest.mark.parametrize("name, message", [("clip_score", "clip_s, ref_clip_s need one image per prediction"),
                                           ("pac_score", "pac_s, ref_pac_s need one image per prediction")])
def test_missing_images_is_a_clear_error(name, message):
    module = evaluate.load(str(ROOT / "metrics" / name))
    with pytest.raises(ValueError, match=message):
        module.compute(predictions=PREDICTIONS, references=REFERENCES)
    with pytest.raises(ValueError, match="3 predictions but 2 images"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, images=["a.png", "b.png"])


def test_bad_image_and_missing_checkpoint_name_the_problem(clip_module, tiny_clip, tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("not a picture")
    images = [tiny_clip["images"][0], str(bad), tiny_clip["images"][2]]
    with pytest.raises(ValueError, match=r"images\[1\]"):
        clip_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=images,
                            clip_model=tiny_clip["clip_model"])
    with pytest.raises(FileNotFoundError, match="clip_model: no such file or folder"):
        clip_module.compute(predictions=PREDICTIONS, references=REFERENCES, images=tiny_clip["images"],
                            clip_model=str(tmp_path / "nowhere" / "ViT-B-32.pt"))


def test_default_pac_checkpoint_is_read_from_the_cache_folder(pac_module, tiny_clip, tmp_path, monkeypatch):
    """Absent: FileNotFoundError naming where to put it and where to get it; present: scored as pac_model=file."""
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    place = tmp_path / "cache" / "models" / "pac-s-clip-vit-b-32" / "clip_ViT-B-32.pth"
    kwargs = dict(predictions=PREDICTIONS, references=REFERENCES, images=tiny_clip["images"])
    with pytest.raises(FileNotFoundError) as info:
        pac_module.compute(**kwargs)
    assert str(place) in str(info.value) and "aimagelab/pacscore" in str(info.value)
    place.parent.mkdir(parents=True)
    shutil.copyfile(tiny_clip["pac_model"], place)
    got = pac_module.compute(**kwargs)
    assert got == pac_module.compute(pac_model=tiny_clip["pac_model"], **kwargs)


def test_combine_with_the_coco_module_sends_images_and_options(tiny_clip):
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "clip_score"),
                                 str(ROOT / "metrics" / "pac_score")])
    options = dict(images=tiny_clip["images"], clip_model=tiny_clip["clip_model"], pac_model=tiny_clip["pac_model"])
    got = combined.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="bleu_1,clip_s,ref_pac_s",
                           **options)
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="bleu_1,clip_s,ref_pac_s", **options)
    assert got["bleu_1"] == want["bleu_1"] and got["clip_s"] == want["clip_s"]
    assert got["ref_pac_s"] == want["ref_pac_s"]


def test_space_callback_and_app_options(clip_module, tiny_clip, monkeypatch):
    """The Space's callback (capeval.hf.space_inputs.score_image_captions, what app.py runs on Score) gives
    capeval.score's numbers; app.py reads CAPEVAL_CLIP_MODEL / CAPEVAL_PAC_MODEL."""
    import runpy

    from capeval.hf.space_inputs import DIGITS, score_image_captions

    gallery = [(p, f"{i}. image") for i, p in enumerate(tiny_clip["images"], 1)]
    options = {"clip_model": tiny_clip["clip_model"]}
    corpus, per_caption, signature = score_image_captions(
        clip_module.compute, CLIP_KEYS, gallery, "\n".join(PREDICTIONS),
        "\n".join(" | ".join(refs) for refs in REFERENCES), CLIP_KEYS, options)
    want = capeval.score(PREDICTIONS, REFERENCES, metrics=CLIP_KEYS, images=tiny_clip["images"], **options)
    assert corpus == [[k, round(want[k], DIGITS)] for k in CLIP_KEYS] and signature == want["signature"]
    assert [row[3:] for row in per_caption["data"]] == [
        [round(want["per_caption"][k][i], DIGITS) for k in CLIP_KEYS] for i in range(3)]
    pytest.importorskip("gradio")
    for name, variable, option in (("clip_score", "CAPEVAL_CLIP_MODEL", "clip_model"),
                                   ("pac_score", "CAPEVAL_PAC_MODEL", "pac_model")):
        monkeypatch.delenv(variable, raising=False)
        assert runpy.run_path(str(ROOT / "metrics" / name / "app.py"), run_name="app")["OPTIONS"] == {}
        monkeypatch.setenv(variable, tiny_clip[option])
        app = runpy.run_path(str(ROOT / "metrics" / name / "app.py"), run_name="app")
        assert app["OPTIONS"] == {option: tiny_clip[option]}


@pytest.mark.parametrize("example", ["clipscore_example", "pacscore_example"])
def test_the_reference_repositories_example_images_equal_the_reference(example, clip_module, tiny_clip):
    """The JPEGs of jmhessel/clipscore's and aimagelab/pacscore's examples, with their good captions and references
    (a random CLIP: the released weights are not available offline)."""
    import json

    folder = require_data(example)
    ids = ["image1", "image2"]
    captions = json.loads((folder / "good_captions.json").read_text())
    refs = json.loads((folder / "refs.json").read_text())
    images = [str(folder / "images" / f"{i}.jpg") for i in ids]
    predictions, references = [captions[i] for i in ids], [refs[i] for i in ids]
    got = clip_module.compute(predictions=predictions, references=references, images=images,
                              clip_model=tiny_clip["clip_model"])
    _check_reference(got, CLIP_KEYS, _reference(tiny_clip["clip"], images, predictions, references, w=2.5))
