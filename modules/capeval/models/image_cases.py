"""The image inputs users hand over, written as files and objects, with what capeval promises for each.

:func:`image_cases` builds every kind of image input users pass in a folder (photos from phones and the web, odd encodings,
in-memory images, broken files) and says, per case, what must happen when it is passed as ``images=[item]``: a finite
score in range (``"score"``) or an error of a given type whose message names ``images[0]`` (and the path for files).
``benchmarks/image_inputs.py`` prints the table through every entry point; ``tests/core/test_image_inputs.py`` checks
it. Deterministic (fixed pixels), written with Pillow and numpy only.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.dependencies import require


@dataclass(frozen=True)
class ImageCase:
    """``item`` (a path string, bytes, a PIL image, an array or a ``datasets.Image`` value), ``expect``: ``"score"`` or
    the name of the exception class; ``match``: a regular expression the error message must contain;
    ``is_file``: the item is a path (so the CLI's ``--images`` list can carry it)."""

    name: str
    item: Any
    expect: str
    match: str = ""
    is_file: bool = False


def _photo(size=(64, 48)):
    """A deterministic RGB picture with structure (gradients and a disc), as a numpy array ``H×W×3``."""
    np = require("numpy")
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    r = (255 * x / max(w - 1, 1)).astype(np.uint8)
    g = (255 * y / max(h - 1, 1)).astype(np.uint8)
    b = np.where((x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2, 220, 40).astype(np.uint8)
    return np.stack([r, g, b], axis=-1)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width × height`` pixels with almost no data: a decompression bomb's front."""
    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + \
        chunk(b"IEND", b"")


def image_cases(folder: str | Path) -> list[ImageCase]:
    """Write the file cases into ``folder`` (created) and return every case, in a stable order."""
    np = require("numpy")
    Image = require("PIL.Image", what="writing the image cases")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    photo = _photo()
    pil = Image.fromarray(photo)

    def save(name: str, image, **kwargs) -> str:
        path = folder / name
        image.save(path, **kwargs)
        return str(path)

    jpeg = save("photo.jpg", pil, quality=90)
    rgba = Image.fromarray(np.dstack([photo, np.linspace(0, 255, photo.shape[1], dtype=np.uint8)[None, :]
                                      .repeat(photo.shape[0], 0)]), "RGBA")
    grey16 = Image.new("I;16", pil.size)
    grey16.frombytes((photo[..., 0].astype("<u2") * 257).tobytes())
    exif = pil.rotate(90, expand=True)
    exif_info = Image.Exif()
    exif_info[0x0112] = 6  # rotate 90° clockwise to view: the sensor's pixels lie on their side
    cases = [
        ImageCase("JPEG photo", jpeg, "score", is_file=True),
        ImageCase("PNG with alpha", save("alpha.png", rgba), "score", is_file=True),
        ImageCase("CMYK JPEG", save("cmyk.jpg", pil.convert("CMYK"), quality=90), "score", is_file=True),
        ImageCase("16-bit greyscale PNG", save("grey16.png", grey16), "score", is_file=True),
        ImageCase("greyscale PNG", save("grey.png", pil.convert("L")), "score", is_file=True),
        ImageCase("palette GIF", save("palette.gif", pil.convert("P", palette=Image.Palette.ADAPTIVE)), "score",
                  is_file=True),
        ImageCase("1×1 image", save("one.png", Image.new("RGB", (1, 1), (200, 30, 30))), "score", is_file=True),
        ImageCase("4000×3 strip", save("strip.png", Image.new("RGB", (4000, 3), (30, 200, 30))), "score",
                  is_file=True),
        ImageCase("EXIF-rotated JPEG", save("exif.jpg", exif, quality=90, exif=exif_info.tobytes()), "score",
                  is_file=True),
        ImageCase("WebP", save("photo.webp", pil), "score", is_file=True),
        ImageCase("file bytes", Path(jpeg).read_bytes(), "score"),
        ImageCase("PIL.Image", pil, "score"),
        ImageCase("PIL.Image RGBA", rgba, "score"),
        ImageCase("array uint8 H×W×3", photo, "score"),
        ImageCase("array float32 3×H×W in [0, 1]", np.moveaxis(photo, -1, 0).astype(np.float32) / 255, "score"),
        ImageCase("array uint16 H×W", photo[..., 0].astype(np.uint16) * 257, "score"),
        ImageCase("array bool H×W", photo[..., 0] > 128, "score"),
        ImageCase("array int64 H×W×4 in [0, 255]", np.dstack([photo, np.full(photo.shape[:2], 255)]).astype(np.int64),
                  "score"),
        ImageCase("datasets.Image value (bytes)", {"bytes": Path(jpeg).read_bytes(), "path": "photo.jpg"}, "score"),
        ImageCase("datasets.Image value (path)", {"bytes": None, "path": jpeg}, "score"),
        ImageCase("array float in [0, 255]", photo.astype(np.float32), "ValueError", r"images\[0\] is a float array"),
        ImageCase("array 5×H×W", np.zeros((5, 8, 8), np.uint8), "ValueError", r"images\[0\] is an array of shape"),
    ]
    truncated = folder / "truncated.jpg"
    truncated.write_bytes(Path(jpeg).read_bytes()[:400])
    empty = folder / "empty.jpg"
    empty.write_bytes(b"")
    text = folder / "notes.jpg"
    text.write_text("this is not a picture\n", encoding="utf-8")
    bomb = folder / "bomb.png"
    bomb.write_bytes(_png_header_only(60_000, 60_000))
    (folder / "a-folder.jpg").mkdir(exist_ok=True)
    cases += [
        ImageCase("truncated JPEG", str(truncated), "ValueError", r"images\[0\] \(.*truncated\.jpg\)", True),
        ImageCase("zero-byte file", str(empty), "ValueError", r"images\[0\] \(.*empty\.jpg\)", True),
        ImageCase("text file named .jpg", str(text), "ValueError", r"images\[0\] \(.*notes\.jpg\)", True),
        ImageCase("PNG header claiming 60,000×60,000", str(bomb), "ValueError",
                  r"images\[0\] \(.*bomb\.png\).*decompression-bomb", True),
        ImageCase("missing path", str(folder / "missing.jpg"), "FileNotFoundError",
                  r"images\[0\] \(.*missing\.jpg\): no such image file", True),
        ImageCase("a directory", str(folder / "a-folder.jpg"), "ValueError", r"images\[0\] \(.*a-folder\.jpg\)", True),
        ImageCase("URL string", "https://example.com/cat.jpg", "ValueError", r"images\[0\] .* is a URL"),
    ]
    return cases


__all__ = ["ImageCase", "image_cases"]
