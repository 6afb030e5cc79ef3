"""Bad input, model loading errors, the 0/0 rule, the truncation warning and the command line of the vision-language
metrics: clear errors naming the item or the option, never NaN, nothing downloaded."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")

import capeval  # noqa: E402
from capeval.vision_language.metric import CaptionTruncatedWarning  # noqa: E402
from capeval.vision_language.scores import harmonic_mean, reference_scores  # noqa: E402
from support import clip_reference as ref  # noqa: E402
from support.images import write_pngs  # noqa: E402


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("vl-model") / "tiny.pt"
    ref.save_state_dict(ref.random_openai_clip(ref.TINY, seed=1), path)
    return str(path)


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    return [str(p) for p in write_pngs(tmp_path_factory.mktemp("vl-png"), 3)]


def test_no_images_names_the_metrics_that_need_none():
    with pytest.raises(ValueError, match=r"clip_s, ref_clip_s need one image per prediction.*metrics that need no "
                                         r"image: bleu, .*cider_d"):
        capeval.score(["a dog"], [["a dog runs"]], metrics=["clip_s", "ref_clip_s"])


def test_a_missing_or_broken_image_is_named(checkpoint, pngs, tmp_path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    with pytest.raises(FileNotFoundError, match=r"images\[1\]"):
        capeval.score(["a", "b"], [["x"], ["y"]], metrics="clip_s", images=[pngs[0], tmp_path / "missing.jpg"],
                      clip_model=checkpoint)
    with pytest.raises(ValueError, match=r"images\[0\].*not a readable image"):
        capeval.score(["a"], [["x"]], metrics="clip_s", images=[broken], clip_model=checkpoint)


def test_an_empty_reference_list_is_named(checkpoint, pngs):
    with pytest.raises(ValueError, match=r"references\[1\]"):
        capeval.score(["a", "b"], [["x"], []], metrics="ref_clip_s", images=pngs[:2], clip_model=checkpoint)
    with pytest.raises(ValueError, match=r"references\[2\] is empty"):
        reference_scores(np.ones((3, 4), np.float32), np.ones((2, 4), np.float32), [0, 1])


def test_harmonic_mean_never_divides_zero_by_zero():
    out = harmonic_mean(np.array([0.0, 0.5, 0.5, 1.0], np.float32), np.array([0.0, -0.5, 0.5, -0.2], np.float32))
    assert np.isfinite(out).all()
    assert out[0] == 0.0 and out[1] == 0.0 and out[2] == pytest.approx(0.5)
    assert out[3] == pytest.approx(2 * 1.0 * -0.2 / 0.8)  # the reference's value where it is defined


def test_an_empty_prediction_scores_zero_with_empty_zero(checkpoint, pngs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = capeval.score(["", "a dog"], [["x"], ["y"]], metrics=["clip_s", "ref_clip_s"], images=pngs[:2],
                               clip_model=checkpoint, empty="zero")
    assert result["per_caption"]["clip_s"][0] == 0.0 and result["per_caption"]["ref_clip_s"][0] == 0.0


def test_one_truncation_warning_names_the_first_ten(checkpoint, pngs):
    long = "a " * 100 + "dog"
    preds = [long] * 12 + ["short"]
    refs = [["fine"]] * 12 + [[long, "ok"]]
    images = [pngs[i % 3] for i in range(13)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capeval.score(preds, refs, metrics=["clip_s", "ref_clip_s"], images=images, clip_model=checkpoint)
    truncation = [w for w in caught if issubclass(w.category, CaptionTruncatedWarning)]
    assert len(truncation) == 1
    text = str(truncation[0].message)
    assert text.startswith("13 text(s)") and "predictions[0]" in text and "predictions[9]" in text
    assert "predictions[10]" not in text and "and 3 more" in text
    assert truncation[0].filename == __file__  # points at the caller's line, not inside capeval


def test_a_pickle_that_runs_code_is_refused(tmp_path, pngs):
    import torch

    path = tmp_path / "evil.pt"
    torch.save({"state_dict": {"x": torch.zeros(1)}, "payload": _Payload()}, path)
    with pytest.raises(ValueError, match=r"could not be read as weights only.*never unpickles code"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_model=str(path))


class _Payload:
    """An object a weights-only load refuses."""


def test_other_weights_and_bad_specs_are_named(tmp_path, pngs):
    import torch

    other = tmp_path / "other.pt"
    torch.save({"layer.weight": torch.zeros(2, 2)}, other)
    with pytest.raises(ValueError, match=r"not an OpenAI-format CLIP state dict"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_model=str(other))
    with pytest.raises(FileNotFoundError, match=r"no such file"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_model=str(tmp_path / "missing.pth"))
    with pytest.raises(ValueError, match=r"clip_model must be"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_model=3)
    with pytest.raises(ValueError, match=r"clip_dtype must be one of"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_dtype="int8")


def test_float16_is_refused_off_a_gpu(checkpoint, pngs):
    with pytest.raises(ValueError, match=r"float16.*only on a GPU"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1], clip_model=checkpoint, clip_dtype="float16",
                      clip_device="cpu")


def test_an_uncached_hub_model_offline_names_the_id_and_the_fetch_command(monkeypatch, tmp_path, pngs):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    from capeval.hub_cli import installed_cli

    with pytest.raises(OSError, match=rf"openai/clip-vit-base-patch32.*`{installed_cli()} download "
                                      r"openai/clip-vit-base-patch32`"):
        capeval.score(["a"], [["b"]], metrics="clip_s", images=pngs[:1])


def test_the_default_pac_checkpoint_missing_says_where_to_put_it(monkeypatch, tmp_path, pngs):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match=r"clip_ViT-B-32\.pth.*aimagelab/pacscore"):
        capeval.score(["a"], [["b"]], metrics="pac_s", images=pngs[:1])


def test_the_default_pac_checkpoint_is_found_in_the_cache(monkeypatch, tmp_path, pngs):
    from capeval.vision_language.metric import default_pac_checkpoint

    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    path = default_pac_checkpoint()
    path.parent.mkdir(parents=True)
    ref.save_state_dict(ref.random_openai_clip(ref.TINY, seed=4), path, pac_format=True)
    result = capeval.score(["a dog"], [["a dog runs"]], metrics=["pac_s", "ref_pac_s"], images=pngs[:1])
    assert np.isfinite(result["pac_s"]) and "model=clip_ViT-B-32.pth#" in result["signature"]


def test_the_command_line_gives_the_python_scores(checkpoint, pngs, tmp_path, capsys):
    from capeval.cli import main

    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in
                                 enumerate(["a dog runs", "two cats", "a red car"])]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({"0": ["a dog"], "1": ["cats sleeping", "two cats"], "2": ["a car"]}))
    listing = tmp_path / "images.txt"
    listing.write_text("\n".join(pngs) + "\n")
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--images", str(listing),
                 "--metrics", "clip_s,ref_clip_s", "--clip-model", checkpoint, "--json", "-"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = capeval.score(["a dog runs", "two cats", "a red car"], [["a dog"], ["cats sleeping", "two cats"],
                                                                        ["a car"]],
                             metrics=["clip_s", "ref_clip_s"], images=pngs, clip_model=checkpoint)
    for key in ("clip_s", "ref_clip_s"):
        assert printed[key] == pytest.approx(expected[key], abs=1e-6)
        assert np.allclose(printed["per_caption"][key], expected["per_caption"][key], atol=1e-6)


class _Decoder:
    """A tokenizer stand-in: row ``[i, ...]`` decodes to ``captions[i]``."""

    def __init__(self, captions):
        self.captions = captions

    def batch_decode(self, rows, skip_special_tokens=True):
        return [self.captions[int(row[0])] for row in rows]


class _EvalPrediction:
    def __init__(self, predictions, label_ids):
        self.predictions, self.label_ids = predictions, label_ids


def test_the_trainer_helper_scores_with_images_and_options(checkpoint, pngs):
    from capeval.hf import compute_metrics

    captions = ["a dog runs", "two cats", "a red car"]
    references = [["a dog"], ["cats sleeping", "two cats"], ["a car"]]
    metrics_fn = compute_metrics(_Decoder(captions), metrics=["clip_s", "ref_clip_s"], references=references,
                                 images=pngs, clip_model=checkpoint)
    got = metrics_fn(_EvalPrediction(np.array([[0, 9], [1, 9], [2, 9]]), None))
    expected = capeval.score(captions, references, metrics=["clip_s", "ref_clip_s"], images=pngs,
                             clip_model=checkpoint)
    assert got == {"clip_s": pytest.approx(expected["clip_s"], abs=1e-7),
                   "ref_clip_s": pytest.approx(expected["ref_clip_s"], abs=1e-7)}
