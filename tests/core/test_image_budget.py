"""Image doors bounded in memory: only regular files are read (``/dev/zero``, a FIFO, a directory refused
in one line, at once), at most ``MAX_IMAGE_FILE_BYTES``; an elongated image (20000×1) resized for a fixed-resolution
encoder never builds more than ``RESIZE_MAX_PIXELS`` pixels, and its crop has the same pixels as the whole resize then
the crop (torchvision's ``Resize`` + ``CenterCrop``, bit for bit)."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from capeval.models import images

Image = pytest.importorskip("PIL.Image")


def _within(seconds: float, call):
    """``call()``'s exception (or ``None``), failing if it takes longer than ``seconds`` (a FIFO must not block)."""
    box: dict = {}

    def run():
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            box["err"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return box.get("err")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_refused_in_one_line_without_reading():
    err = _within(5, lambda: images.read_item("/dev/zero", 3))
    assert isinstance(err, ValueError)
    assert str(err) == ("images[3] (/dev/zero): cannot read the file: a character device, not a regular file; "
                        "pass an image file.")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    err = _within(5, lambda: images.read_item(str(fifo), 0))
    assert isinstance(err, ValueError) and "\n" not in str(err)
    assert str(err).startswith(f"images[0] ({fifo}): cannot read the file: a FIFO (named pipe), not a regular file")
    err = _within(5, lambda: images.read_item({"bytes": None, "path": str(fifo)}, 1))  # a datasets.Image dict
    assert isinstance(err, ValueError) and str(err).startswith("images[1]")


def test_a_directory_and_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match=r"^images\[0\] \(.*\): cannot read the file: a directory, not a regular"):
        images.read_item(str(tmp_path), 0)
    with pytest.raises(FileNotFoundError, match=r"^images\[1\] \(.*missing\.png\): no such image file"):
        images.read_item(tmp_path / "missing.png", 1)


def test_a_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "big.png"
    Image.new("RGB", (64, 64), (1, 2, 3)).save(path)
    assert images.read_item(path, 0).decode().size == (64, 64)
    monkeypatch.setattr(images, "MAX_IMAGE_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match=r"^images\[0\] \(.*big\.png\) is a 0 MiB file, above capeval's limit"):
        images.read_item(path, 0)
    monkeypatch.setattr(images, "MAX_IMAGE_FILE_BYTES", path.stat().st_size)
    assert images.read_item(path, 0).data == path.read_bytes()


@pytest.mark.parametrize("resample", ["BICUBIC", "BILINEAR"])
def test_the_cropped_resize_equals_torchvision_resize_then_crop(resample, monkeypatch):
    """Forced through the bounded path (budget 0), every size gives torchvision's pixels exactly: elongated both ways,
    upscaled and downscaled, ordinary photo shapes, 1×1, sides left unchanged."""
    transforms = pytest.importorskip("torchvision.transforms")
    mode = getattr(transforms.InterpolationMode, resample)
    filt = getattr(Image.Resampling, resample)
    rng = np.random.default_rng(54)
    sizes = [(3000, 1), (1, 3000), (2000, 3), (7, 999), (640, 480), (480, 640), (1000, 999), (300, 200), (1, 1),
             (256, 2000), (2000, 256), (224, 224), (1234, 5), (3, 700)]
    sizes += [(int(rng.integers(1, 1500)), int(rng.integers(1, 200))) for _ in range(12)]
    monkeypatch.setattr(images, "RESIZE_MAX_PIXELS", 0)
    for resize, crop in ((256, 224), (224, 224), (64, 56), (40, 40)):
        reference = transforms.Compose([transforms.Resize(resize, interpolation=mode), transforms.CenterCrop(crop)])
        for size in sizes:
            if resize > 64 and max(size) / min(size) > 20:
                continue  # the whole resize would take seconds and GBs: elongated ones at the small sizes
            image = Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))
            ours = images.resize_crop(image, resize, (crop, crop), filt, "images[0]")
            assert np.array_equal(np.asarray(ours), np.asarray(reference(image))), (resize, size)


class _ResizeSpy:
    """Records the size of every image Pillow's resize builds."""

    def __init__(self, monkeypatch):
        self.sizes: list[tuple[int, int]] = []
        original = Image.Image.resize

        def resize(image, size, *args, **kwargs):
            self.sizes.append(tuple(size))
            return original(image, size, *args, **kwargs)

        monkeypatch.setattr(Image.Image, "resize", resize)

    def largest(self) -> int:
        return max((w * h for w, h in self.sizes), default=0)


@pytest.fixture(scope="module")
def encoder():
    pytest.importorskip("torch")
    pytest.importorskip("timm")
    from capeval.models.image_encoder import load_image_encoder

    return load_image_encoder(pretrained=False, cache=False)  # the critic's encoder (efficientnet-lite0), random


def test_a_20000x1_png_through_the_critic_encoder_is_bounded(encoder, tmp_path, monkeypatch):
    path = tmp_path / "strip.png"
    Image.new("RGB", (20000, 1), (30, 160, 60)).save(path)
    assert path.stat().st_size < 1000
    spy = _ResizeSpy(monkeypatch)
    pixels = encoder._pixels(images.read_item(path, 0).decode(), "images[0]")
    assert pixels.shape == (224, 224, 3) and (pixels == (30, 160, 60)).all()
    assert spy.largest() <= images.RESIZE_MAX_PIXELS  # unbounded: 5,120,000×256 = 1.3 G pixels
    assert tuple(encoder.encode([path, str(path)]).shape) == (2, encoder.feature_dim)


def test_in_memory_strips_are_bounded_too(encoder, monkeypatch):
    rng = np.random.default_rng(0)
    spy = _ResizeSpy(monkeypatch)
    strip = rng.integers(0, 256, (1, 50000, 3), dtype=np.uint8)
    for item in (strip, Image.fromarray(strip), strip.transpose(1, 0, 2), Image.fromarray(strip[0, :, 0])):
        assert encoder._pixels(images.read_item(item, 0).decode(), "images[0]").shape == (224, 224, 3)
    assert spy.largest() <= images.RESIZE_MAX_PIXELS
    assert tuple(encoder.encode([strip, Image.fromarray(strip)]).shape) == (2, encoder.feature_dim)


def test_the_bounded_path_gives_the_encoder_the_same_pixels(encoder, monkeypatch):
    """An elongated image small enough for the whole resize: the same features forced through the cropped path."""
    rng = np.random.default_rng(1)
    items = [rng.integers(0, 256, (2, 3000, 3), dtype=np.uint8), rng.integers(0, 256, (300, 200, 3), dtype=np.uint8)]
    whole = [encoder._pixels(images.read_item(a, 0).decode()) for a in items]
    monkeypatch.setattr(images, "RESIZE_MAX_PIXELS", 0)
    cropped = [encoder._pixels(images.read_item(a, 0).decode()) for a in items]
    assert all(np.array_equal(a, b) for a, b in zip(whole, cropped))


def test_the_clip_preprocessing_is_bounded(monkeypatch):
    pytest.importorskip("torchvision")
    from capeval.vision_language.features import reference_transform

    transform = reference_transform(224, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    spy = _ResizeSpy(monkeypatch)
    strip = np.random.default_rng(2).integers(0, 256, (1, 50000, 3), dtype=np.uint8)
    assert transform.geometry_uint8(Image.fromarray(strip), "images[0]").shape == (224, 224, 3)
    assert transform.decoded_uint8(strip.transpose(1, 0, 2).copy(), "images[0]").shape == (224, 224, 3)
    assert spy.largest() <= images.RESIZE_MAX_PIXELS
    photo = Image.fromarray(np.random.default_rng(3).integers(0, 256, (213, 320, 3), dtype=np.uint8))
    assert np.array_equal(transform.geometry_uint8(photo), np.asarray(transform.geometry(photo)))


def test_an_unusable_image_is_an_error_with_its_fields(tmp_path):
    """Callers name the item in their own words from the error's fields (index, path, problem), never by reading its
    message back."""
    import os

    from capeval.models.images import ImageInputError, read_item

    fake = tmp_path / "notes.png"
    fake.write_text("not a picture")
    with pytest.raises(ImageInputError) as err:
        read_item(str(fake), 4).decode()
    assert err.value.index == 4 and err.value.path == str(fake)
    assert str(err.value).startswith(f"images[4] ({fake}) is not a readable image")
    assert err.value.named("the image column").startswith("the image column is not a readable image")
    os.mkfifo(tmp_path / "pipe.png")
    with pytest.raises(ImageInputError) as err:
        read_item(str(tmp_path / "pipe.png"), 0)
    assert err.value.index == 0 and "FIFO" in err.value.problem
    with pytest.raises(ImageInputError) as err:
        read_item({"bytes": b"junk", "path": "cat.png"}, 2).decode()
    assert err.value.index == 2 and err.value.path == "cat.png"
