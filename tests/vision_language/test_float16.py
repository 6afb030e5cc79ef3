"""``clip_dtype="float16"`` is clipscore.py's GPU path: OpenAI's ``convert_weights`` mixed precision, float16
features, numpy float16 normalisation and scoring (:mod:`capeval.vision_language.half`).

The reference is OpenAI's own code (``clip.model.build_model`` on the saved state dict, as ``clip.load(...,
device="cuda", jit=False)`` builds it) run in half precision on the CPU, scored by the transcription of clipscore.py's
``main`` in ``tests/support/clip_reference.py`` (:func:`clipscore_gpu_scores`). capeval runs its float16 path on the
CPU through the test switch ``backends.HALF_ON_CPU`` (publicly float16 stays GPU-only).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("torchvision")

import capeval  # noqa: E402
from support import clip_reference as ref  # noqa: E402

#: capeval's float16 scores against the reference's: equal (same weights, same float16 op order: measured 0.0).
TOL = 0.0
CAPTIONS = ["a dog runs on the grass", "two cats sleep on a red blanket", "A man rides a bike down the street.",
            "a bowl of fruit", "people", "an orange cat and a grey cat are lying together & resting",
            "🙂 a smiling face", "a " * 90 + "very long caption"]
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping"], ["a man cycling", "a cyclist", "a bike"],
              ["fruit in a bowl"], ["a crowd of people"], ["two cats lying together"], ["a face"], ["a caption"]]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("fp16-images")
    rng = np.random.default_rng(1)
    paths = []
    for i, (w, h) in enumerate([(320, 240), (240, 320), (224, 224), (50, 30), (640, 480), (300, 200), (33, 400),
                                (120, 90)]):
        image = Image.fromarray(rng.integers(0, 255, size=(8, 8, 3), dtype=np.uint8)).resize((w, h), Image.BILINEAR)
        path = folder / f"img{i}.jpg"
        image.save(path, quality=90)
        paths.append(str(path))
    return paths


@pytest.fixture(autouse=True)
def half_on_cpu(monkeypatch):
    from capeval.vision_language import backends
    from capeval.vision_language.features import clear_feature_caches

    ref.require_clip_stack()
    monkeypatch.setattr(backends, "HALF_ON_CPU", True)
    backends.clear_loaded()
    clear_feature_caches()
    yield
    backends.clear_loaded()
    clear_feature_caches()


def _checkpoint(tmp_path, dims, seed=0):
    path = tmp_path / "tiny.pt"
    ref.save_state_dict(ref.random_openai_clip(dims, seed=seed), path)
    return path


def _score(images, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(CAPTIONS, REFERENCES, metrics=["clip_s", "ref_clip_s"], images=images,
                             clip_device="cpu", **options)


def _reference(path, images):
    return ref.clipscore_gpu_scores(ref.openai_gpu_model(path), images, CAPTIONS, REFERENCES)


@pytest.mark.parametrize("dims", [ref.TINY, ref.TINY_RN], ids=["vit", "resnet"])
def test_float16_equals_openai_half_precision_and_clipscore_numpy(tmp_path, images, dims):
    path = _checkpoint(tmp_path, dims)
    per, combined = _reference(path, images)
    assert per.dtype == np.float16 and (per > 0).sum() >= 2
    result = _score(images, clip_model=str(path), clip_dtype="float16")
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per.astype(np.float64)).max() <= TOL
    assert np.abs(np.array(result["per_caption"]["ref_clip_s"]) - combined.astype(np.float64)).max() <= TOL
    assert "dtype=float16" in result["signature"]


def test_the_weights_have_openais_dtypes_key_for_key(tmp_path):
    from capeval.vision_language.backends import load_clip

    path = _checkpoint(tmp_path, ref.TINY)
    openai = {k: v.dtype for k, v in ref.openai_gpu_model(path).state_dict().items()}
    ours = {k: v.dtype for k, v in load_clip(str(path), device="cpu", dtype="float16").model.state_dict().items()
            if k != "attn_mask"}
    assert ours == openai
    assert ours["ln_final.weight"] == torch.float32 and ours["text_projection"] == torch.float16


def test_a_transformers_folder_scores_as_the_same_weights_in_openais_layout(tmp_path, images):
    model = ref.random_openai_clip(ref.TINY, seed=0)
    path = _checkpoint(tmp_path, ref.TINY)
    folder = tmp_path / "hf"
    ref.to_transformers_folder(model, ref.TINY, folder)
    per, combined = _reference(path, images)
    result = _score(images, clip_model=str(folder), clip_dtype="float16")
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per.astype(np.float64)).max() <= TOL
    assert np.abs(np.array(result["per_caption"]["ref_clip_s"]) - combined.astype(np.float64)).max() <= TOL


def test_the_whole_model_cast_or_float32_scoring_would_differ(tmp_path, images):
    """What capeval did before (every weight, LayerNorm included, cast to float16; float32 normalisation and scoring)
    and the float32 path both differ from the reference on these captions: the equality above can fail."""
    from capeval.vision_language.backends import load_clip
    from capeval.vision_language.checkpoints import build_openai_clip, read_state_dict
    from capeval.vision_language.features import image_features, normalize_rows, text_features
    from capeval.vision_language.scores import image_text_scores

    path = _checkpoint(tmp_path, ref.TINY)
    per, _ = _reference(path, images)
    backend = load_clip(str(path), device="cpu", dtype="float16")
    backend.model = build_openai_clip(read_state_dict(path)).half()  # the old whole-model cast
    backend.fingerprint = "whole-model-cast"
    pictures = normalize_rows(image_features(backend, images).astype(np.float32))
    texts = normalize_rows(text_features(backend, CAPTIONS, prefix="A photo depicts ")[0].astype(np.float32))
    old = image_text_scores(pictures, texts, 2.5)
    assert np.abs(old - per).max() > 1e-4  # measured 7.1e-4 (TOL is 0)
    float32 = _score(images, clip_model=str(path))["per_caption"]["clip_s"]
    assert np.abs(np.array(float32) - per).max() > 1e-4


def test_float16_stays_refused_off_a_gpu_without_the_test_switch(tmp_path, images, monkeypatch):
    from capeval.vision_language import backends

    monkeypatch.setattr(backends, "HALF_ON_CPU", False)
    with pytest.raises(ValueError, match=r"float16.*only on a GPU"):
        _score(images, clip_model=str(_checkpoint(tmp_path, ref.TINY)), clip_dtype="float16")


def test_a_transformers_clip_that_is_not_openais_architecture_is_refused_in_float16(tmp_path, images):
    import json

    folder = tmp_path / "hf"
    ref.to_transformers_folder(ref.random_openai_clip(ref.TINY, seed=0), ref.TINY, folder)
    config = json.loads((folder / "config.json").read_text())
    config["text_config"]["num_attention_heads"] = 2  # 32-wide heads: OpenAI's build_model infers 64-wide ones
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"float16.*text tower \(2 heads of width 64"):
        _score(images, clip_model=str(folder), clip_dtype="float16")
    assert len(_score(images, clip_model=str(folder))["per_caption"]["clip_s"]) == len(CAPTIONS)  # float32 reads it
