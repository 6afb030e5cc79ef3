"""Image inputs for the encoders: read, hash, decode to 8-bit RGB, with one documented rule per oddity.

Accepted items (a sequence of them; ``images[i]`` below is the item's position, named in every error):

* a path (``str`` / ``os.PathLike``) or the file's ``bytes``;
* a ``datasets.Image`` value: a decoded ``PIL.Image`` or, with ``decode=False``, ``{"bytes": ..., "path": ...}``
  (the bytes are used when present, else the path);
* a ``PIL.Image.Image``;
* a ``numpy`` array ``H×W`` (grey), ``H×W×1``, ``H×W×3`` (RGB) or ``H×W×4`` (RGBA), channels last; channels first
  (``1×H×W``, ``3×H×W``, ``4×H×W``, torch's layout) when the last axis cannot be channels (not 1, 3 or 4 long):
  ``uint8`` as is, ``uint16`` scaled by 255/65535, ``bool`` as 0/255, other integer types when their values lie in
  [0, 255], floats must lie in [0, 1]. Anything else is refused naming the item and the rule.
* a ``torch.Tensor`` (torchmetrics' ``CLIPScore`` inputs): its values as the numpy array above (``uint8`` as is,
  float in [0, 1]; ``C×H×W`` or ``H×W×C``); a 4-D tensor or array passed as ``images`` is a batch, one per prediction.
* Not accepted: a URL (``http://``, ``https://``, ...): capeval reads local files and never downloads; it is refused
  at once, naming the item.

Handling (the same for every encoder):

* **Missing file**: ``FileNotFoundError`` naming ``images[i]`` and the path. **Unreadable** (not an image,
  truncated, a 32-bit float image): ``ValueError`` naming ``images[i]``.
* **Not a regular file** (a directory, a FIFO, a device such as ``/dev/zero``, a socket): ``ValueError`` naming
  ``images[i]``, the path and what it is, from ``os.stat`` before the file is opened (opened with ``O_NONBLOCK``,
  so a FIFO never blocks); nothing is read.
* **File size**: a file above :data:`MAX_IMAGE_FILE_BYTES` (268,435,456 bytes = 256 MiB) is refused before it is
  read (``ValueError`` naming ``images[i]``); at most that many bytes + 1 are ever read.
* **Colour**: everything becomes 8-bit RGB. Greyscale, palette and CMYK via Pillow's ``convert("RGB")``;
  16-bit greyscale (``I;16``, ``I``) scaled by 255/65535 (Pillow's own conversion would clip it);
  transparency (RGBA, LA, palette with transparency) composited onto **white**. The EXIF orientation of
  files is applied (the picture the way a viewer shows it).
* **Size**: images above :data:`MAX_PIXELS` (178,956,970 pixels, Pillow's decompression-bomb limit) are
  refused with a ``ValueError`` naming the item; anything smaller is decoded (a 10,000² photo works; it is
  downscaled by the encoder's resize). The encoders' resolution rules (tiny images upscaled, native mode
  bounded) are in :func:`native_size`.
* **Aspect ratio** (files and in-memory images alike): a fixed-resolution encoder resizes the shorter side then
  crops the centre; when that resize would build more than :data:`RESIZE_MAX_PIXELS` pixels (16,777,216 = 4096²;
  at 256 px, an image over ~256:1 such as a 20000×1 strip), only the crop's pixels are resampled
  (:func:`resize_crop`: Pillow's arithmetic, the same pixels as the whole resize then the crop, bit for bit), so
  the memory stays that of the crop whatever the aspect ratio. Below the budget (every ordinary photo) the
  encoder's own transform runs unchanged. Native resolution bounds its size in :func:`native_size`.

The content key of an item (for the feature cache) is the SHA-256 of the file bytes for paths, ``bytes`` and
``datasets`` dicts, and of the decoded RGB pixels (with the size) for in-memory images and arrays.
"""
from __future__ import annotations

import functools
import hashlib
import io
import math
import os
import stat
import sys
import warnings
from dataclasses import dataclass
from typing import Any

from capeval.io import file_kind
from capeval.dependencies import require
from capeval.validation import ImageInputError  # its home is the foundation: input checks raise it too

#: The EXIF orientation tag (values 2-8 rotate or mirror the picture; 1 or none leave it as stored).
_ORIENTATION = 0x0112
#: Largest image file read (bytes): 268,435,456 (256 MiB); a larger file is refused before it is read.
MAX_IMAGE_FILE_BYTES = 256 * 1024 * 1024
#: Largest image decoded (pixels): Pillow's decompression-bomb error threshold (2 × ``Image.MAX_IMAGE_PIXELS``).
MAX_PIXELS = 178_956_970
#: Native resolution: the shorter side is upscaled to at least this many pixels (a 1×1 image becomes 32×32).
NATIVE_MIN_SIDE = 32
#: Native resolution: images above this many pixels are downscaled (aspect ratio kept) to fit (1,048,576 = 1024²).
NATIVE_MAX_PIXELS = 1024 * 1024
#: Largest image (pixels) a fixed-resolution encoder's resize builds before its centre crop: 16,777,216 (4096², 64 MiB
#: in Pillow's 4-byte RGB pixels); above, only the crop is resampled (:func:`resize_crop`).
RESIZE_MAX_PIXELS = 4096 * 4096


@dataclass
class ImageItem:
    """One input, read but not yet decoded: ``key`` is its content hash, ``label`` names it in errors."""

    index: int
    label: str
    key: str
    data: bytes | None = None
    image: Any = None  # a PIL RGB image for in-memory inputs
    path: str | None = None  # the file it was read from, when it names one

    def decode(self):
        """The image as an 8-bit RGB ``PIL.Image`` (see the module docstring for the rules); an image that cannot be
        decoded is an :class:`ImageInputError`."""
        if self.image is not None:
            return self.image
        try:
            return decode_bytes(self.data, self.label)
        except ImageInputError:
            raise
        except ValueError as err:
            raise _structured(err, self, self.index, self.path) from None


def _structured(err: ValueError, item: ImageItem | None, index: int, path: Any) -> ImageInputError:
    """``err``, raised with the label of image ``index`` (``images[3] (cat.png) ...``), as an
    :class:`ImageInputError`."""
    label = item.label if item is not None else _label(index, path if isinstance(path, (str, os.PathLike)) else None)
    text = str(err)
    if isinstance(err, ImageInputError) or not text.startswith(label):
        return err if isinstance(err, ImageInputError) else ImageInputError(index, None, ": " + text)
    return ImageInputError(index, path if isinstance(path, (str, os.PathLike)) else None, text[len(label):])


def _label(index: int, path: str | os.PathLike | None = None) -> str:
    return f"images[{index}]" + (f" ({os.fspath(path)})" if path is not None else "")



def _read_file(path: str | os.PathLike, label: str) -> bytes:
    """The bytes of the regular file ``path`` (rules in the module docstring: no device, FIFO or directory; at most
    :data:`MAX_IMAGE_FILE_BYTES`)."""
    def check(info) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{label}: cannot read the file: {file_kind(info.st_mode)}, not a regular file; pass "
                             "an image file.")
        if info.st_size > MAX_IMAGE_FILE_BYTES:
            raise ValueError(f"{label} is a {info.st_size / 2 ** 20:,.0f} MiB file, above capeval's limit of "
                             f"{MAX_IMAGE_FILE_BYTES / 2 ** 20:,.0f} MiB for an image file; downscale it first.")

    try:
        check(os.stat(path))  # before opening: a FIFO's open would wait for a writer
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{label}: no such image file.") from None
    except OSError as err:  # no permission, ...
        raise ValueError(f"{label}: cannot read the file ({err.strerror or err}).") from None
    try:
        check(os.fstat(fd))  # the file opened (the path may have been replaced in between)
        chunks, left = [], MAX_IMAGE_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise ValueError(f"{label}: cannot read the file ({err.strerror or err}).") from None
    finally:
        os.close(fd)
    if left <= 0:  # it grew past the limit while read
        raise ValueError(f"{label} is larger than capeval's limit of {MAX_IMAGE_FILE_BYTES / 2 ** 20:,.0f} MiB for "
                         "an image file; downscale it first.")
    return b"".join(chunks)


_URL_SCHEMES = ("http://", "https://", "ftp://", "s3://", "gs://", "hf://", "data:")


def read_item(item: Any, index: int) -> ImageItem:
    """Read ``item`` (path, bytes, ``datasets`` dict, PIL image or array) and hash its content; an item that cannot
    be read is an :class:`ImageInputError` (a missing file: ``FileNotFoundError``)."""
    try:
        return _read_item(item, index)
    except ImageInputError:
        raise
    except ValueError as err:
        path = item.get("path") if isinstance(item, dict) else item
        raise _structured(err, None, index, path) from None


def _read_item(item: Any, index: int) -> ImageItem:
    if isinstance(item, str) and item.strip().lower().startswith(_URL_SCHEMES):
        raise ValueError(f"{_label(index, item)} is a URL; capeval reads local image files only and never downloads: "
                         "download it first and pass the file's path (or its bytes).")
    if isinstance(item, (str, os.PathLike)):
        label = _label(index, item)
        data = _read_file(item, label)
        return ImageItem(index, label, hashlib.sha256(data).hexdigest(), data=data, path=os.fspath(item))
    if isinstance(item, (bytes, bytearray, memoryview)):
        data = bytes(item)
        return ImageItem(index, _label(index), hashlib.sha256(data).hexdigest(), data=data)
    if isinstance(item, dict) and ("bytes" in item or "path" in item):
        if item.get("bytes") is not None:
            data = bytes(item["bytes"])
            where = item.get("path")
            return ImageItem(index, _label(index, where), hashlib.sha256(data).hexdigest(), data=data,
                             path=None if where is None else os.fspath(where))
        if item.get("path") is not None:
            return _read_item(item["path"], index)
        raise ValueError(f"images[{index}] is a datasets.Image dict with neither 'bytes' nor 'path'.")
    label = _label(index)
    image = _in_memory_to_rgb(item, label)
    digest = hashlib.sha256(f"rgb8:{image.size[0]}x{image.size[1]}:".encode())
    digest.update(image.tobytes())
    return ImageItem(index, label, digest.hexdigest(), image=image)


def _in_memory_to_rgb(item: Any, label: str):
    Image = require("PIL.Image", what="reading images")
    if isinstance(item, Image.Image):
        _check_pixels(item.size, label)
        return to_rgb(item, label)
    np = require("numpy")
    if isinstance(item, np.ndarray):
        return to_rgb(array_to_image(item, label), label)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(item, torch.Tensor):
        return to_rgb(array_to_image(tensor_to_array(item), label), label)
    raise ValueError(f"{label} is a {type(item).__name__}, not an image: pass a path, bytes, a datasets.Image "
                     "value, a PIL image, an H×W(×C) numpy array or a C×H×W / H×W×C torch tensor.")


def tensor_to_array(tensor):
    """A torch tensor's values as a numpy array on the CPU (bfloat16, which numpy lacks, as float32): then the
    array rules apply, so a ``uint8`` tensor scores as the same pixels read from a file and a float tensor in [0, 1]
    as ``round(x × 255)``."""
    t = tensor.detach()
    if t.dtype == t.new_empty(0, dtype=__import__("torch").bfloat16).dtype:
        t = t.float()
    return t.cpu().numpy()


def array_to_image(array, label: str):
    """An ``H×W``, ``H×W×1``, ``H×W×3`` or ``H×W×4`` array as a PIL image (rules in the module docstring)."""
    np = require("numpy")
    Image = require("PIL.Image", what="reading images")
    a = np.asarray(array)
    if a.ndim == 3 and a.shape[0] in (1, 3, 4) and a.shape[2] not in (1, 3, 4):
        a = np.moveaxis(a, 0, -1)  # channels first (torch's C×H×W)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] in (3, 4))):
        raise ValueError(f"{label} is an array of shape {a.shape}; expected H×W, H×W×1, H×W×3 or H×W×4 "
                         "(channels last) or 1×H×W, 3×H×W, 4×H×W (channels first).")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"{label} is an empty array of shape {a.shape}.")
    _check_pixels((a.shape[1], a.shape[0]), label)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    elif a.dtype == np.uint16:
        a = _scale_16bit(a)
    elif np.issubdtype(a.dtype, np.floating):
        if not np.isfinite(a).all() or a.min() < 0 or a.max() > 1:
            raise ValueError(f"{label} is a float array with values outside [0, 1] (or NaN); float images must "
                             "be scaled to [0, 1] (or pass uint8).")
        a = np.round(a * 255).astype(np.uint8)
    elif np.issubdtype(a.dtype, np.integer) and a.dtype != np.uint8:
        if a.size and (a.min() < 0 or a.max() > 255):
            raise ValueError(f"{label} is a {a.dtype} array with values outside [0, 255]; pass uint8, uint16 "
                             "(0 to 65535), bool, or float in [0, 1].")
        a = a.astype(np.uint8)
    elif a.dtype != np.uint8:
        raise ValueError(f"{label} is a {a.dtype} array; pass uint8, uint16, other integers in [0, 255], bool or "
                         "float in [0, 1].")
    return Image.fromarray(np.ascontiguousarray(a))


def _scale_16bit(a):
    np = require("numpy")
    return np.round(a.astype(np.float64) * (255.0 / 65535.0)).astype(np.uint8)


def _check_pixels(size: tuple[int, int], label: str) -> None:
    w, h = size
    if w < 1 or h < 1:
        raise ValueError(f"{label} has size {w}×{h}; an image needs at least one pixel.")
    if w * h > MAX_PIXELS:
        raise ValueError(f"{label} is {w}×{h} = {w * h / 1e6:.1f} megapixels, above capeval's limit of "
                         f"{MAX_PIXELS / 1e6:.0f} MP (Pillow's decompression-bomb limit); downscale it first.")


def decode_bytes(data: bytes, label: str):
    """Decode encoded image bytes to 8-bit RGB, applying the EXIF orientation."""
    Image, ImageOps = require("PIL.Image", "PIL.ImageOps", what="reading images")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own limit is checked below
            image = Image.open(io.BytesIO(data))
            _check_pixels(image.size, label)
            image.load()
            if image.getexif().get(_ORIENTATION, 1) in range(2, 9):  # else exif_transpose would only copy the pixels
                image = ImageOps.exif_transpose(image)
    except Image.DecompressionBombError:
        raise ValueError(f"{label} is larger than Pillow's decompression-bomb limit; downscale it first.") from None
    except (OSError, SyntaxError, Image.UnidentifiedImageError, ValueError) as err:
        if isinstance(err, ValueError) and str(err).startswith(label):
            raise
        raise ValueError(f"{label} is not a readable image ({type(err).__name__}: {err}).") from None
    return to_rgb(image, label)


def _plain_jpeg_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` of a JPEG that :func:`decode_jpeg_rgb` may decode outside Pillow: baseline, extended or
    progressive Huffman coding, 8-bit samples, 1 or 3 components, no EXIF block (its orientation is Pillow's path),
    no Adobe colour transform marker, an end-of-image marker at the end (a truncated file is Pillow's to refuse);
    else ``None``."""
    if not data.startswith(b"\xff\xd8") or data.rfind(b"\xff\xd9", max(0, len(data) - 64)) < 0:
        return None
    size, i, n = None, 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            i += 2
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker == 0xDA:  # start of scan: every header segment has been seen
            return size
        if marker == 0xE1 and data[i + 4:i + 10] == b"Exif\x00\x00" or marker == 0xEE:
            return None
        if marker in (0xC0, 0xC1, 0xC2):
            if size is not None or i + 10 > n or data[i + 4] != 8 or data[i + 9] not in (1, 3):
                return None  # a second frame, a cut header, 12-bit samples, CMYK
            height, width = int.from_bytes(data[i + 5:i + 7], "big"), int.from_bytes(data[i + 7:i + 9], "big")
            if not width or not height:
                return None
            size = (width, height)
        elif 0xC3 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # lossless, arithmetic, hierarchical
            return None
        i += 2 + length
    return None


@functools.lru_cache(maxsize=1)
def _jpeg_decoder():
    """``(torch, torchvision's decode_jpeg operator, the RGB mode's number)`` or ``None`` without torchvision's image
    extension. The operator itself, not ``torchvision.io.decode_jpeg``: torchvision 0.29 deprecated its Python wrapper
    (a warning per call) in favour of TorchCodec; if the operator goes too, Pillow decodes everything."""
    try:
        import torch
        from torchvision.io import image as tv_image
        if not tv_image._has_image_ops():
            return None
        return torch, torch.ops.image.decode_jpeg, tv_image.ImageReadMode.RGB.value
    except (ImportError, AttributeError, RuntimeError):
        return None


def decode_jpeg_rgb(data: bytes, label: str):
    """The 8-bit RGB pixels (``H×W×3`` uint8 array) of a plain JPEG decoded by torchvision's libjpeg-turbo, which lets
    other threads run while it decodes (Pillow's reading holds the interpreter for about half its time); ``None``
    when the file is not a plain JPEG (:func:`_plain_jpeg_size`) or torchvision is missing: then :func:`decode_bytes`
    is the way. The pixels equal :func:`decode_bytes`'s (tested on JPEGs of every subsampling, quality, progressive
    and greyscale; measured on every JPEG of the benchmark data: ``benchmarks/jpeg_decoder_parity.py``)."""
    size = _plain_jpeg_size(data)
    if size is None:
        return None
    _check_pixels(size, label)
    decoder = _jpeg_decoder()
    if decoder is None:
        return None
    torch, decode, rgb = decoder
    np = require("numpy")
    try:
        pixels = decode(torch.frombuffer(bytearray(data), dtype=torch.uint8), rgb, False)
    except RuntimeError:
        return None  # Pillow's decoding names what is wrong
    if tuple(pixels.shape) != (3, size[1], size[0]):
        return None
    return np.ascontiguousarray(pixels.numpy().transpose(1, 2, 0))


def to_rgb(image, label: str):
    """``image`` as 8-bit RGB: 16-bit grey scaled, transparency composited onto white, the rest converted."""
    Image = require("PIL.Image", what="reading images")
    mode = image.mode
    if mode == "RGB":
        return image
    if mode.startswith("I;16") or mode == "I":
        np = require("numpy")
        a = np.asarray(image)
        if a.size and (a.min() < 0 or a.max() > 65535):
            raise ValueError(f"{label} is a 32-bit integer image with values outside 0..65535; convert it to "
                             "8-bit RGB first.")
        return Image.fromarray(_scale_16bit(a.astype(np.uint16))).convert("RGB")
    if mode == "F":
        raise ValueError(f"{label} is a 32-bit float image (mode F), whose range is unknown; convert it to 8-bit "
                         "RGB first (or pass a float array scaled to [0, 1]).")
    if mode in ("RGBA", "LA", "La", "RGBa", "PA") or (mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def native_size(size: tuple[int, int], label: str, *, min_side: int = NATIVE_MIN_SIDE,
                max_pixels: int = NATIVE_MAX_PIXELS) -> tuple[int, int]:
    """The (width, height) at which native-resolution mode encodes an image of ``size``.

    Unchanged when the shorter side is at least ``min_side`` and the area at most ``max_pixels``; else scaled
    (aspect ratio kept, rounded) so that it is. An aspect ratio too extreme for both raises ``ValueError``.
    """
    w, h = size
    scale = 1.0
    if min(w, h) < min_side:
        scale = min_side / min(w, h)
    if w * h * scale * scale > max_pixels:
        scale = math.sqrt(max_pixels / (w * h))
    new = (max(1, round(w * scale)), max(1, round(h * scale)))
    if min(new) < min_side:
        raise ValueError(f"{label} is {w}×{h}: too elongated for native resolution (its shorter side would be "
                         f"below {min_side} px within {max_pixels} pixels); use a fixed resolution such as 224.")
    return new


# -- bounded resizing ----------------------------------------------------------------------------------------------
# torchvision's Resize(shorter side) + CenterCrop on a PIL image is Pillow's resize of the whole image, then a crop.
# For an elongated image the whole resize is huge (20000×1 to 256 on the shorter side: 5,120,000×256 pixels, 5 GB in
# Pillow's 4-byte pixels) although only the crop's pixels are kept. Pillow's resampling is separable (a horizontal
# pass rounded to uint8, then a vertical one) and every output pixel depends only on its own row / column
# coefficients, so the crop's pixels can be computed alone, with Pillow's own arithmetic: below, reproduced in numpy.

#: Pillow's fixed-point precision of the resampling coefficients (``PRECISION_BITS`` in ``Resample.c``).
_PRECISION_BITS = 32 - 8 - 2


def _bilinear_filter(x):
    np = require("numpy")
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic_filter(x):
    np = require("numpy")
    a = -0.5
    x = np.abs(x)
    return np.where(x < 1.0, ((a + 2.0) * x - (a + 3.0)) * x * x + 1,
                    np.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def _pillow_filters():
    Image = require("PIL.Image", what="reading images")
    return {int(Image.Resampling.BILINEAR): (_bilinear_filter, 1.0),
            int(Image.Resampling.BICUBIC): (_bicubic_filter, 2.0)}


def _coefficients(in_size: int, out_size: int, first: int, count: int, resample: int):
    """Pillow's ``precompute_coeffs`` + ``normalize_coeffs_8bpc`` for output pixels ``first .. first+count-1`` of a
    resize of ``in_size`` to ``out_size`` pixels: ``(xmin [count], int64 weights [count, ksize])``, weights beyond a
    pixel's own window 0; the same double arithmetic in the same order, so the same integers."""
    np = require("numpy")
    filt, support = _pillow_filters()[resample]
    scale = float(in_size) / out_size
    filterscale = max(scale, 1.0)
    support = support * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    center = 0.0 + (np.arange(first, first + count, dtype=np.float64) + 0.5) * scale
    ss = 1.0 / filterscale
    xmin = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    xmax = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), in_size) - xmin
    weights = np.zeros((count, ksize), dtype=np.float64)
    ww = np.zeros(count, dtype=np.float64)
    for x in range(ksize):  # one tap at a time: the sum in C's order
        inside = x < xmax
        w = np.where(inside, filt(((x + xmin) - center + 0.5) * ss), 0.0)
        weights[:, x] = w
        ww = ww + w
    weights = np.where((ww != 0.0)[:, None], weights / np.where(ww != 0.0, ww, 1.0)[:, None], weights)
    scaled = weights * (1 << _PRECISION_BITS)
    ints = np.where(weights < 0, np.trunc(-0.5 + scaled), np.trunc(0.5 + scaled)).astype(np.int64)
    return xmin, ints


def _apply(pixels, xmin, weights, axis: int):
    """One pass of Pillow's 8-bit resampling along ``axis`` (1: horizontal, 0: vertical) of ``pixels``
    (``H×W×3`` uint8), output pixels given by ``xmin`` / ``weights`` (indices relative to ``pixels``)."""
    np = require("numpy")
    n = pixels.shape[axis]
    total = np.full((len(xmin),) + tuple(s for i, s in enumerate(pixels.shape) if i != axis),
                    1 << (_PRECISION_BITS - 1), dtype=np.int64)
    moved = np.moveaxis(pixels, axis, 0).astype(np.int64)
    for x in range(weights.shape[1]):
        index = np.minimum(xmin + x, n - 1)  # weights past the window are 0
        total += moved[index] * weights[:, x].reshape((-1,) + (1,) * (moved.ndim - 1))
    out = np.clip(total >> _PRECISION_BITS, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


def shorter_side_size(size: tuple[int, int], resize: int) -> tuple[int, int]:
    """torchvision's ``Resize(resize)`` output ``(width, height)`` for an image of ``size``: the shorter side
    ``resize``, the longer ``int(resize × long / short)``."""
    w, h = size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = resize, int(resize * long / short)
    return (new_short, new_long) if w <= h else (new_long, new_short)


def resize_crop(image, resize: int, crop: tuple[int, int], resample: int, label: str, standard=None):
    """torchvision's ``Resize(resize)`` (shorter side) then ``CenterCrop(crop)`` (``(width, height)``) of an RGB
    PIL image, within a memory budget.

    When the resized image has at most :data:`RESIZE_MAX_PIXELS` pixels: ``standard(image)`` (the encoder's own
    transform; ``None``: Pillow's resize and crop as torchvision calls them). Above (an image at least ~250 times
    longer than wide at 256 px): only the crop's pixels are resampled, with Pillow's arithmetic (bilinear or
    bicubic; the same pixels as the whole resize then the crop, tested), from the source pixels they read: memory
    ~ the crop, whatever the aspect ratio. Another filter, or a crop larger than the resized image, is refused with
    a ``ValueError`` naming the item.
    """
    Image = require("PIL.Image", what="reading images")
    w, h = image.size
    new_w, new_h = shorter_side_size((w, h), resize)
    cw, ch = crop
    if new_w * new_h <= RESIZE_MAX_PIXELS:
        if standard is not None:
            return standard(image)
        if (new_w, new_h) != (w, h):
            image = image.resize((new_w, new_h), resample)
        left, top = int(round((new_w - cw) / 2.0)), int(round((new_h - ch) / 2.0))
        return image.crop((left, top, left + cw, top + ch))
    if int(resample) not in _pillow_filters() or cw > new_w or ch > new_h:
        raise ValueError(f"{label} is {w}×{h}: too elongated to resize to {resize} px on its shorter side within "
                         f"{RESIZE_MAX_PIXELS:,} pixels (aspect ratio {max(w, h) / min(w, h):.0f}:1); crop it first.")
    np = require("numpy")
    left, top = int(round((new_w - cw) / 2.0)), int(round((new_h - ch) / 2.0))
    xmin, xw = _coefficients(w, new_w, left, cw, resample) if new_w != w else (None, None)
    ymin, yw = _coefficients(h, new_h, top, ch, resample) if new_h != h else (None, None)
    # the source window the crop reads (columns, rows), cut out before converting to an array
    x0, x1 = (left, left + cw) if xmin is None else (int(xmin[0]), int(xmin[-1]) + xw.shape[1])
    y0, y1 = (top, top + ch) if ymin is None else (int(ymin[0]), int(ymin[-1]) + yw.shape[1])
    x1, y1 = min(x1, w), min(y1, h)
    pixels = np.asarray(image.crop((x0, y0, x1, y1)).convert("RGB"), dtype=np.uint8)
    if xmin is not None:
        pixels = _apply(pixels, xmin - x0, xw, axis=1)
    if ymin is not None:
        pixels = _apply(pixels, ymin - y0, yw, axis=0)
    return Image.fromarray(pixels, "RGB")
