"""Image and text features of a CLIP backend, each image decoded and encoded once, each text encoded once.

**Images** (:func:`image_features`): every input kind :mod:`capeval.models.images` reads (paths, bytes,
``datasets.Image`` values, PIL images, arrays), decoded by its rules to 8-bit RGB (EXIF orientation applied,
transparency composited onto white, 16-bit scaled), then the reference preprocessing of clipscore.py and PAC-S:
bicubic resize of the shorter side to the model's resolution (Pillow's, through torchvision), centre crop, to
tensor, CLIP's mean / std. On ordinary RGB or greyscale files this gives the reference's pixels exactly (tested); the
reference differs on odd files only: it ignores EXIF orientation, drops transparency without compositing, resizes
palette images with nearest-neighbour and clips 16-bit images (see the metric card). Decoding runs on a thread pool
(:data:`DECODE_WORKERS`), in steps of :data:`STEP_IMAGES` distinct images, so memory stays bounded, and the main
thread encodes each batch as soon as its pixels are there; plain JPEG files are decoded by torchvision's libjpeg-turbo
operator (:data:`FAST_JPEG`; Pillow's pixels bit for bit), which lets the other threads run while Pillow's reading
would hold the interpreter. On a GPU the threads hand over uint8 pixels and ``ToTensor`` / ``Normalize`` run there as
an exact table lookup (:class:`_ReferencePreprocess`). The same path given twice is read once, and the same content
(SHA-256 of the file bytes or pixels) is encoded once.

**Texts** (:func:`text_features`): ``prefix + text`` tokenized as the reference (:mod:`.tokenizer`); each distinct
token sequence is encoded once, in batches of similar lengths.

Both keep their features per process in bounded least-recently-used tables keyed by the model's weight fingerprint,
its dtype and the content (:data:`IMAGE_CACHE_ENTRIES`, :data:`TEXT_CACHE_ENTRIES`): a second metric of the same call
(``clip_s`` and ``ref_clip_s``, or ``polos``) or a second call re-uses them. Features are kept as the model gives them and
returned as float32 numpy arrays (float16 for ``dtype="float16"``, as clipscore.py's GPU path keeps them:
:mod:`.half`), L2-normalised as clipscore.py normalises them (a zero vector stays zero, so no NaN),
or raw with ``normalize=False`` (Polos reads the unnormalised ``encode_image`` / ``encode_text`` outputs).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from capeval.dependencies import require
from capeval.progress import progress as progress_bar
from capeval.vision_language.backends import ClipBackend, features_to_cpu
from capeval.vision_language.tokenizer import encode_texts, pad_batch

#: Threads decoding and preprocessing images (the JPEG decoder and Pillow's resize let the others run). At most 8, as
#: the reference's DataLoader workers: on a 16-core H100 machine 8 threads scored 1,000 images in 1.52 s, 16 in 1.70 s
#: (one run each, BENCHMARKS.md), the interpreter's lock being what they share.
DECODE_WORKERS = max(1, min(8, os.cpu_count() or 1))
#: Distinct images read, decoded and encoded per step (bounds the memory held for pixels and file bytes).
STEP_IMAGES = 512
#: Text batches handed to the model before their features are copied back (and the device waited for) together.
TEXT_BATCHES_IN_FLIGHT = 32
#: Features kept per process (about 2 KB each for a 512-d model).
IMAGE_CACHE_ENTRIES = 50_000
TEXT_CACHE_ENTRIES = 200_000
#: Decode plain JPEG files with torchvision's libjpeg-turbo, which lets the other threads run (the same pixels as
#: Pillow's: :func:`capeval.models.images.decode_jpeg_rgb`); other files, and everything when false, through Pillow.
FAST_JPEG = True
#: Normalise the pixels on the model's device (``None`` = off the CPU only; tests force it on to check both paths agree).
NORMALIZE_ON_DEVICE: bool | None = None
#: Version of the preprocessing below: part of every image-feature cache key.
PREPROCESS_VERSION = "clip-reference-1"


class _LRU:
    def __init__(self, size: int):
        self.size, self.data, self.lock = size, OrderedDict(), threading.Lock()

    def get(self, key):
        with self.lock:
            value = self.data.get(key)
            if value is not None:
                self.data.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.data.clear()


_IMAGES = _LRU(IMAGE_CACHE_ENTRIES)
_TEXTS = _LRU(TEXT_CACHE_ENTRIES)


def clear_feature_caches() -> None:
    """Empty both per-process feature tables (tests, benchmarks of a cold start)."""
    _IMAGES.clear()
    _TEXTS.clear()


class _ReferencePreprocess:
    """clipscore.py's / PAC-S's preprocessing of an RGB PIL image, in two halves.

    :meth:`geometry_uint8` (in the decoding threads): bicubic resize of the shorter side and centre crop (torchvision
    on the PIL image, i.e. Pillow), as an ``R×R×3`` uint8 array. :meth:`normalize` (on the model's device, a batch at a
    time): ``ToTensor`` and ``Normalize`` as a lookup in :attr:`table`, the ``3×256`` float32 values
    ``(v / 255 - mean[c]) / std[c]`` computed once with the reference's float32 operations in its order, so every pixel
    is bit for bit the reference's value whatever the device's arithmetic (tested; a GPU's division by a scalar
    multiplies by the reciprocal, which can differ by one unit in the last place). Calling the object does both on one
    image and returns a ``3×R×R`` float32 array (:meth:`normalize_array`: the same lookup in numpy, for the CPU)."""

    def __init__(self, resolution: int, mean: Sequence[float], std: Sequence[float]):
        np = require("numpy")
        transforms = require("torchvision.transforms", what="CLIP image preprocessing")
        self.resolution = resolution
        self.geometry = transforms.Compose([
            transforms.Resize(resolution, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(resolution),
        ])
        values = np.arange(256, dtype=np.uint8).astype(np.float32) / np.float32(255)
        self.table = ((values[None, :] - np.asarray(mean, dtype=np.float32)[:, None])
                      / np.asarray(std, dtype=np.float32)[:, None]).astype(np.float32)
        self._tables: dict[Any, Any] = {}

    def geometry_uint8(self, image, label: str = "image"):
        """``R×R×3`` uint8: the resized, centre-cropped RGB pixels (an image already ``R×R`` as it is: resizing it
        to its own size and cropping all of it copy the pixels unchanged). An elongated image whose resize would
        exceed :data:`capeval.models.images.RESIZE_MAX_PIXELS` has only its crop resampled, the same pixels
        (:func:`capeval.models.images.resize_crop`)."""
        np = require("numpy")
        Image = require("PIL.Image")
        from capeval.models.images import resize_crop

        if image.size == (self.resolution, self.resolution):
            return np.asarray(image, dtype=np.uint8)
        side = self.resolution
        return np.asarray(resize_crop(image, side, (side, side), Image.Resampling.BICUBIC, label, self.geometry),
                          dtype=np.uint8)

    def decoded_uint8(self, rgb, label: str = "image"):
        """:meth:`geometry_uint8` of an ``H×W×3`` uint8 array (a JPEG decoded by torchvision)."""
        if rgb.shape[:2] == (self.resolution, self.resolution):
            return rgb
        Image = require("PIL.Image")
        return self.geometry_uint8(Image.fromarray(rgb, "RGB"), label)

    def normalize(self, pixels, device=None):
        """``[B, R, R, 3]`` uint8 tensor -> ``[B, 3, R, R]`` float32 on ``device`` (default: where ``pixels`` are)."""
        torch = require("torch")
        device = pixels.device if device is None else torch.device(device)
        table = self._tables.get(device)
        if table is None:
            table = self._tables[device] = torch.from_numpy(self.table.reshape(-1)).to(device)
        channels = torch.arange(3, device=device, dtype=torch.long).mul_(256).view(1, 3, 1, 1)
        index = pixels.to(device, non_blocking=True).permute(0, 3, 1, 2).long().add_(channels)
        return table[index]

    def normalize_array(self, pixels):
        """One ``R×R×3`` uint8 array -> ``3×R×R`` float32 (the same lookup in numpy, for the CPU path: it runs in the
        decoding threads, which numpy's ``take`` lets run in parallel)."""
        np = require("numpy")
        return np.stack([np.take(self.table[c], pixels[..., c]) for c in range(3)])

    def __call__(self, image):
        return self.normalize_array(self.geometry_uint8(image))


def reference_transform(resolution: int, mean: Sequence[float], std: Sequence[float]) -> _ReferencePreprocess:
    """The reference preprocessing for a model of ``resolution`` pixels (see :class:`_ReferencePreprocess`)."""
    return _ReferencePreprocess(resolution, mean, std)


def normalize_rows(features):
    """Each row divided by its L2 norm, as clipscore.py does: in float32, or for float16 features (``dtype="float16"``)
    in float16 as clipscore.py's GPU path (:func:`.half.normalize_rows_float16`); an all-zero row stays zero."""
    np = require("numpy")
    if getattr(features, "dtype", None) == np.float16:
        from capeval.vision_language.half import normalize_rows_float16

        return normalize_rows_float16(features)
    features = np.asarray(features, dtype=np.float32)
    norms = np.sqrt(np.sum(features ** 2, axis=1, keepdims=True))
    return np.divide(features, norms, out=np.zeros_like(features), where=norms > 0)


def _backend_key(backend: ClipBackend) -> tuple[str, str]:
    return backend.fingerprint, backend.dtype


def image_features(backend: ClipBackend, images: Sequence[Any], *, batch_size: int = 64,
                   progress: bool | None = None, desc: str = "CLIP images", normalize: bool = True):
    """``[len(images), D]`` float32 features, one row per entry of ``images``, L2-normalised unless ``normalize`` is
    false (see the module docstring).

    Errors name the entry (``images[i]``): missing file, unreadable, not an image, too large.
    """
    np = require("numpy")
    torch = require("torch", what="CLIP image features")
    from capeval.models.images import decode_jpeg_rgb, read_item

    transform = reference_transform(backend.resolution, backend.mean, backend.std)
    base = (*_backend_key(backend), PREPROCESS_VERSION)
    # the same path string (or the same object) read once
    first_of: dict[Any, int] = {}
    owners: list[int] = []
    for i, item in enumerate(images):
        ident = os.fspath(item) if isinstance(item, (str, os.PathLike)) else id(item)
        owners.append(first_of.setdefault(ident, i))
    distinct = sorted(set(owners))
    keys: dict[int, str] = {}
    rows: dict[str, Any] = {}

    # on a GPU the threads hand over uint8 pixels (4x fewer bytes to copy) normalised there; on the CPU they normalise
    normalize_in_threads = (not NORMALIZE_ON_DEVICE if NORMALIZE_ON_DEVICE is not None
                            else backend.device.type == "cpu")

    def pixels_of(item):
        rgb = decode_jpeg_rgb(item.data, item.label) if FAST_JPEG and item.data is not None else None
        pixels = (transform.geometry_uint8(item.decode(), item.label) if rgb is None
                  else transform.decoded_uint8(rgb, item.label))
        return transform.normalize_array(pixels) if normalize_in_threads else pixels

    def load(index: int):
        item = read_item(images[index], index)
        key = item.key
        if key in rows or _IMAGES.get((*base, key)) is not None:
            return index, key, None
        return index, key, pixels_of(item)

    in_flight: list[tuple[list[str], Any]] = []  # batches handed to the model, their features not yet copied back

    def encode(names: list[str], pixels: dict[str, Any]) -> None:
        batch = _host_batch([pixels.pop(k) for k in names], pinned=backend.device.type == "cuda")
        pixels_in = batch if normalize_in_threads else transform.normalize(backend.to_device(batch))
        in_flight.append((names, backend.image_features(pixels_in, to_cpu=False)))
        rows.update(dict.fromkeys(names))  # placeholders: these are being encoded

    # decoding runs ahead in the threads while the main thread encodes each batch as soon as its pixels are there
    with progress_bar(None, total=len(distinct), desc=desc, enabled=progress) as bar, \
            ThreadPoolExecutor(DECODE_WORKERS) as pool:
        for start in range(0, len(distinct), STEP_IMAGES):
            step = distinct[start:start + STEP_IMAGES]
            pending: dict[str, Any] = {}
            loaded = pool.map(load, step)  # (submits the whole step)
            _copy_back(in_flight, rows, _IMAGES, base)  # the last step's features, while this step decodes
            for index, key, pixels in loaded:
                keys[index] = key
                cached = _IMAGES.get((*base, key))
                if cached is not None:
                    rows[key] = cached
                elif key not in rows and key not in pending:  # (evicted since load() looked: decode it now)
                    pending[key] = pixels if pixels is not None else pixels_of(read_item(images[index], index))
                    if len(pending) == batch_size:
                        encode(list(pending), pending)
                bar.update()
            if pending:
                encode(list(pending), pending)
        _copy_back(in_flight, rows, _IMAGES, base)
    gathered = _gather(rows, [keys[owner] for owner in owners])
    return normalize_rows(gathered) if normalize else gathered


def text_features(backend: ClipBackend, texts: Sequence[str], *, prefix: str, batch_size: int = 256,
                  progress: bool | None = None, desc: str = "CLIP texts", normalize: bool = True):
    """``([len(texts), D] float32 features, the encoding)`` for ``prefix + text`` of each text, L2-normalised unless
    ``normalize`` is false; the encoding (:func:`.tokenizer.encode_texts`) names the truncated positions."""
    encoded = encode_texts(texts, prefix, backend.context_length)
    base = _backend_key(backend)
    rows: dict[tuple[int, ...], Any] = {}
    missing = []
    for ids in dict.fromkeys(encoded.ids):
        cached = _TEXTS.get((*base, ids))
        if cached is not None:
            rows[ids] = cached
        else:
            missing.append(ids)
    missing.sort(key=len)  # batches of similar lengths: little padding
    in_flight: list[tuple[list, Any]] = []  # (token sequences, their features on the model's device)
    with progress_bar(None, total=len(missing), desc=desc, enabled=progress) as bar:
        for start in range(0, len(missing), batch_size):
            chunk = missing[start:start + batch_size]
            # float16: the full context, as clip.tokenize pads (the shorter batch rounds otherwise: measured 0.002)
            width = backend.context_length if backend.dtype == "float16" else None
            in_flight.append((chunk, backend.text_features(pad_batch(chunk, width), to_cpu=False)))
            if len(in_flight) == TEXT_BATCHES_IN_FLIGHT:
                _copy_back(in_flight, rows, _TEXTS, base)
            bar.update(len(chunk))
        _copy_back(in_flight, rows, _TEXTS, base)
    gathered = _gather(rows, encoded.ids)
    return (normalize_rows(gathered) if normalize else gathered), encoded


def _copy_back(in_flight: list[tuple[list, Any]], rows: dict, cache: _LRU, base: tuple) -> None:
    """The features of the batches in flight (``(keys, features on the model's device)`` each, in order) copied back
    in one copy, which waits for the device once, into ``rows`` and ``cache`` (under ``(*base, key)``); the list is
    emptied."""
    if not in_flight:
        return
    features = features_to_cpu([out for _, out in in_flight])
    for key, row in zip((key for keys, _ in in_flight for key in keys), features, strict=True):
        rows[key] = row
        cache.put((*base, key), row)
    in_flight.clear()


def _host_batch(arrays: list[Any], *, pinned: bool):
    """``arrays`` stacked into one CPU tensor; in page-locked memory when ``pinned`` (bound for a GPU: copied there
    without waiting for the work already queued)."""
    np = require("numpy")
    torch = require("torch")
    if pinned:
        first = torch.from_numpy(arrays[0])
        try:
            batch = torch.empty((len(arrays), *first.shape), dtype=first.dtype, pin_memory=True)
        except RuntimeError:  # no page-locked memory to be had: an ordinary batch (its copy waits for the device)
            pass
        else:
            np.stack(arrays, out=batch.numpy())
            return batch
    return torch.from_numpy(np.stack(arrays))


def _gather(rows: dict, keys: Sequence) -> Any:
    """``[len(keys), D]``: the feature row of each key, in order, in the rows' dtype (float32 when there are none,
    ``D`` = 0 then)."""
    np = require("numpy")
    first = next(iter(rows.values())) if rows else None
    out = np.zeros((len(keys), 0 if first is None else first.shape[0]),
                   dtype=np.float32 if first is None else first.dtype)
    for i, key in enumerate(keys):
        out[i] = rows[key]
    return out


__all__ = ["DECODE_WORKERS", "IMAGE_CACHE_ENTRIES", "PREPROCESS_VERSION", "STEP_IMAGES", "TEXT_CACHE_ENTRIES",
           "clear_feature_caches", "image_features", "normalize_rows", "reference_transform", "text_features"]
