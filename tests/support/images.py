"""Self-made test images (random pixels, written as lossless PNG), never copies of benchmark data."""
from __future__ import annotations

from pathlib import Path


def random_rgb(seed: int, size: tuple[int, int] = (64, 48)):
    """An ``H×W×3`` uint8 array of seeded noise (``size`` is width, height)."""
    import numpy as np

    return np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)


def write_pngs(folder: Path, n: int, size: tuple[int, int] = (64, 48), seed: int = 0) -> list[Path]:
    """``n`` noise PNGs ``img000.png`` ... in ``folder`` (created); their paths, sorted."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / f"img{i:03d}.png"
        Image.fromarray(random_rgb(seed + i, size)).save(path)
        paths.append(path)
    return paths
