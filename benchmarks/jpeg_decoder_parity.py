"""Pixels of capeval's fast JPEG path (torchvision's libjpeg-turbo operator, ``capeval.models.images.decode_jpeg_rgb``)
against Pillow's decoding (``decode_bytes``): seeded generated JPEGs (every subsampling, quality 5-100, progressive,
optimised tables, greyscale, sizes 1-700 px) and every ``*.jpg`` / ``*.jpeg`` file under the data folder.

    python benchmarks/jpeg_decoder_parity.py [--generated 600] [--data ../shared/data]

Prints how many files took the fast path and how many of those differ from Pillow's pixels (0 expected).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def generated(count: int):
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for k in range(count):
        w, h = int(rng.integers(1, 700)), int(rng.integers(1, 700))
        base = rng.integers(0, 256, size=(max(1, h // int(rng.integers(1, 40))), max(1, w // int(rng.integers(1, 40))),
                                          3), dtype=np.uint8)
        image = Image.fromarray(base).resize((w, h), Image.BICUBIC)
        if k % 7 == 0:
            image = image.convert("L")
        if k % 11 == 0:
            image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        options = {"quality": int(rng.integers(5, 101)), "progressive": k % 3 == 0, "optimize": k % 5 == 0}
        if image.mode == "RGB":
            options["subsampling"] = int(rng.integers(0, 3))
        buf = io.BytesIO()
        try:
            image.save(buf, "JPEG", **options)
        except OSError:  # Pillow cannot write some tiny progressive images
            continue
        yield f"generated[{k}]", buf.getvalue()


def compare(items) -> dict:
    import numpy as np

    from capeval.models.images import decode_bytes, decode_jpeg_rgb

    seen = fast = 0
    differ = []
    for label, data in items:
        seen += 1
        pixels = decode_jpeg_rgb(data, label)
        if pixels is None:
            continue
        fast += 1
        expected = np.asarray(decode_bytes(data, label))
        if pixels.shape != expected.shape or not np.array_equal(pixels, expected):
            differ.append(label)
    return {"files": seen, "fast_path": fast, "differ": len(differ), "first_differing": differ[:5]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generated", type=int, default=600)
    p.add_argument("--data", default=os.environ.get("CAPEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    args = p.parse_args()
    print("generated:", compare(generated(args.generated)))
    files = sorted(p for p in Path(args.data).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    print(f"files under {args.data}:", compare((str(f), f.read_bytes()) for f in files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
