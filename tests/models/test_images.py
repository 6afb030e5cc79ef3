"""Bad and odd image inputs: a clear error naming the item, or the documented handling (capeval.models.images)."""
from __future__ import annotations

import io
import warnings

import pytest

np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")
from support.images import random_rgb  # noqa: E402

from capeval.models import images as image_io  # noqa: E402
from capeval.models.images import native_size, read_item  # noqa: E402


def decode(item, index=0):
    return read_item(item, index).decode()


def png_bytes(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


# -- unreadable input names the item ------------------------------------------------------------------------
def test_missing_file_names_index_and_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"images\[3\] \(.*nope\.jpg\): no such image file"):
        read_item(tmp_path / "nope.jpg", 3)


@pytest.mark.parametrize("content", [b"", b"this is not an image", b"\x89PNG\r\n\x1a\n" + b"\0" * 20])
def test_not_an_image(tmp_path, content):
    path = tmp_path / "bad.jpg"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"images\[2\] \(.*bad\.jpg\) is not a readable image"):
        decode(path, 2)


def test_truncated_jpeg(tmp_path):
    buf = io.BytesIO()
    Image.fromarray(random_rgb(0, (64, 64))).save(buf, format="JPEG")
    path = tmp_path / "cut.jpg"
    path.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(ValueError, match=r"images\[0\] \(.*cut\.jpg\) is not a readable image"):
        decode(path)


def test_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"images\[0\] .*cannot read the file"):
        read_item(tmp_path, 0)


@pytest.mark.parametrize("item, match", [
    (42, r"images\[5\] is a int, not an image"),
    ({"bytes": None, "path": None}, r"images\[5\] is a datasets.Image dict with neither"),
    (np.zeros((5, 64, 64), np.uint8), r"images\[5\] is an array of shape \(5, 64, 64\).*channels last"),
    (np.zeros((2, 3, 4, 3), np.uint8), r"images\[5\] is an array of shape \(2, 3, 4, 3\)"),
    (np.zeros((0, 4, 3), np.uint8), r"images\[5\] is an empty array"),
    (np.full((4, 4, 3), 1.5), r"images\[5\] is a float array with values outside \[0, 1\]"),
    (np.full((4, 4, 3), np.nan), r"images\[5\] is a float array"),
    (np.full((4, 4, 3), 300, np.int32), r"images\[5\] is a int32 array with values outside \[0, 255\]"),
    (np.full((4, 4, 3), -1, np.int64), r"images\[5\] is a int64 array with values outside"),
    (np.zeros((4, 4, 3), np.complex64), r"images\[5\] is a complex64 array"),
    ("https://example.com/cat.jpg", r"images\[5\] \(https://example.com/cat.jpg\) is a URL; .*never downloads"),
    (Image.new("F", (4, 4)), r"images\[5\] is a 32-bit float image"),
])
def test_bad_in_memory_items(item, match):
    with pytest.raises(ValueError, match=match):
        decode(item, 5)


# -- colour modes become 8-bit RGB --------------------------------------------------------------------------
def test_greyscale_cmyk_palette_become_rgb(tmp_path):
    grey = Image.fromarray(np.full((4, 4), 100, np.uint8))
    assert np.array(decode(grey))[0, 0].tolist() == [100, 100, 100]
    cmyk_path = tmp_path / "cmyk.jpg"
    Image.new("CMYK", (8, 8), (0, 255, 255, 0)).save(cmyk_path)  # pure red in CMYK
    red = np.array(decode(cmyk_path))[4, 4]
    assert red[0] > 200 and red[1] < 50 and red[2] < 50
    palette = Image.fromarray(random_rgb(1, (8, 8))).convert("P")
    assert decode(palette).mode == "RGB"


def test_transparency_is_composited_onto_white():
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[0, 0] = (255, 0, 0, 0)  # fully transparent red -> white
    rgba[0, 1] = (255, 0, 0, 255)  # opaque red stays red
    rgba[1, 0] = (0, 0, 0, 128)  # half-transparent black -> mid grey
    out = np.array(decode(Image.fromarray(rgba, "RGBA")))
    assert out[0, 0].tolist() == [255, 255, 255] and out[0, 1].tolist() == [255, 0, 0]
    assert 120 <= out[1, 0, 0] <= 135
    assert np.array_equal(np.array(decode(rgba)), out)  # an H×W×4 array is RGBA
    la = Image.fromarray(rgba[..., [0, 3]], "LA")
    assert np.array(decode(la))[0, 0].tolist() == [255, 255, 255]
    p = Image.new("P", (2, 2), 0)
    p.info["transparency"] = 0
    assert np.array(decode(p))[0, 0].tolist() == [255, 255, 255]


def test_16_bit_greyscale_is_scaled_not_clipped(tmp_path):
    values = np.array([[0, 257, 32768, 65535]], np.uint16)
    path = tmp_path / "grey16.png"
    Image.fromarray(values).save(path)
    assert Image.open(path).mode in ("I;16", "I")
    out = np.array(decode(path))[0, :, 0]
    assert out.tolist() == [0, 1, 128, 255]  # Pillow's own convert("RGB") would give [0, 255, 255, 255]
    assert np.array(decode(values))[0, :, 0].tolist() == [0, 1, 128, 255]  # uint16 arrays likewise


def test_array_dtypes():
    assert np.array(decode(np.ones((2, 2), bool)))[0, 0].tolist() == [255, 255, 255]
    ints = np.arange(48).reshape(4, 4, 3)  # int64 values in [0, 255] read as uint8
    assert np.array_equal(np.array(decode(ints)), ints.astype(np.uint8))
    chw = random_rgb(4, (6, 5))  # H×W×3; the same pixels channels first (torch's layout)
    assert np.array_equal(np.array(decode(np.moveaxis(chw, -1, 0))), chw)
    assert np.array(decode(np.full((2, 2, 1), 0.5)))[0, 0].tolist() == [128, 128, 128]
    arr = random_rgb(3, (5, 4))
    assert np.array_equal(np.array(decode(arr)), arr)


def test_exif_orientation_is_applied(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to view
    path = tmp_path / "rotated.jpg"
    Image.fromarray(random_rgb(0, (40, 20))).save(path, exif=exif)
    assert decode(path).size == (20, 40)


# -- content keys -------------------------------------------------------------------------------------------
def test_keys_follow_content_not_container(tmp_path):
    arr = random_rgb(7)
    path = tmp_path / "a.png"
    Image.fromarray(arr).save(path)
    data = path.read_bytes()
    by_path, by_bytes = read_item(path, 0), read_item(data, 1)
    by_dict, by_dict_path = read_item({"bytes": data, "path": "x.png"}, 2), read_item({"bytes": None, "path": path}, 3)
    assert by_path.key == by_bytes.key == by_dict.key == by_dict_path.key
    by_pil, by_array = read_item(Image.fromarray(arr), 4), read_item(arr, 5)
    assert by_pil.key == by_array.key != by_path.key  # in-memory images hash their pixels
    assert read_item(random_rgb(8), 6).key != by_array.key
    assert by_dict.label == "images[2] (x.png)"


# -- sizes --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size, expected", [
    ((500, 375), (500, 375)),  # a typical Flickr8k / COCO photo: unchanged
    ((1, 1), (32, 32)),  # tiny: the shorter side goes up to 32
    ((10, 40), (32, 128)),
    ((10_000, 10_000), (1024, 1024)),  # huge: down to 1 megapixel
    ((4000, 3000), (1182, 887)),
])
def test_native_size(size, expected):
    assert native_size(size, "x") == expected
    w, h = native_size(size, "x")
    assert min(w, h) >= image_io.NATIVE_MIN_SIDE and w * h <= image_io.NATIVE_MAX_PIXELS * 1.01


def test_native_size_refuses_extreme_aspect_ratios():
    with pytest.raises(ValueError, match=r"images\[1\] is 1×100000: too elongated for native resolution"):
        native_size((1, 100_000), "images[1]")


def test_pixel_limit_names_the_item(tmp_path, monkeypatch):
    path = tmp_path / "big.png"
    Image.new("RGB", (300, 200)).save(path)
    monkeypatch.setattr(image_io, "MAX_PIXELS", 50_000)
    with pytest.raises(ValueError, match=r"images\[4\] \(.*big\.png\) is 300×200 = 0.1 megapixels, above capeval's limit"):
        decode(path, 4)
    with pytest.raises(ValueError, match=r"images\[4\] is 300×200"):
        decode(np.zeros((200, 300, 3), np.uint8), 4)


def test_huge_image_decodes_without_a_bomb_warning(tmp_path):
    path = tmp_path / "huge.png"
    Image.new("L", (10_000, 10_000), 90).save(path)  # 100 MP: above Pillow's warning threshold (89.5 MP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        image = decode(path)
    assert image.size == (10_000, 10_000) and image.mode == "RGB"


# -- plain JPEGs decoded outside Pillow (capeval.models.images.decode_jpeg_rgb) ------------------------------------
def _jpeg(image, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="JPEG", **options)
    return buf.getvalue()


def test_plain_jpegs_decode_to_pillows_pixels_exactly():
    """Every subsampling, quality, progressive or not, optimised tables, greyscale, odd sizes: torchvision's decoding
    gives Pillow's pixels bit for bit (what lets the CLIP metrics use it)."""
    pytest.importorskip("torchvision")
    rng = np.random.default_rng(0)
    checked = 0
    for k in range(48):
        w, h = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        base = rng.integers(0, 256, size=(max(1, h // 8), max(1, w // 8), 3), dtype=np.uint8)
        image = Image.fromarray(base).resize((w, h), Image.BICUBIC)
        options = {"quality": int(rng.integers(5, 101)), "progressive": k % 3 == 0, "optimize": k % 4 == 0}
        if k % 6 == 0:
            image = image.convert("L")
        else:
            options["subsampling"] = k % 3
        try:
            data = _jpeg(image, **options)
        except OSError:  # Pillow cannot write some tiny progressive images: not an input to check
            continue
        fast = image_io.decode_jpeg_rgb(data, "images[0]")
        assert fast is not None, options
        expected = np.asarray(image_io.decode_bytes(data, "images[0]"))
        assert fast.dtype == np.uint8 and fast.shape == expected.shape and np.array_equal(fast, expected), options
        checked += 1
    assert checked >= 40


def test_jpegs_that_need_pillow_are_left_to_it():
    """EXIF (orientation), CMYK / Adobe, truncated files, PNGs: ``None``, so Pillow decodes them by its rules; a header
    above the pixel limit is refused naming the item before anything is decoded."""
    pytest.importorskip("torchvision")
    image = Image.fromarray(random_rgb(1, (40, 30)))
    plain = _jpeg(image)
    assert image_io.decode_jpeg_rgb(plain, "images[0]") is not None
    exif = Image.Exif()
    exif[0x0112] = 6
    assert image_io.decode_jpeg_rgb(_jpeg(image, exif=exif.tobytes()), "images[0]") is None
    assert image_io.decode_jpeg_rgb(_jpeg(image.convert("CMYK")), "images[0]") is None
    assert image_io.decode_jpeg_rgb(plain[:len(plain) // 2], "images[0]") is None
    assert image_io.decode_jpeg_rgb(png_bytes(image), "images[0]") is None
    sof = plain.index(b"\xff\xc0")
    twelve_bit = plain[:sof + 4] + b"\x0c" + plain[sof + 5:]
    assert image_io.decode_jpeg_rgb(twelve_bit, "images[0]") is None
    huge = plain[:sof + 5] + (60000).to_bytes(2, "big") + (60000).to_bytes(2, "big") + plain[sof + 9:]
    with pytest.raises(ValueError, match=r"images\[7\] is 60000×60000"):
        image_io.decode_jpeg_rgb(huge, "images[7]")
