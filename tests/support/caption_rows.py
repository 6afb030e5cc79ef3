"""Seeded caption rows for the dataset-scoring tests, written as JSON lines; the shards an output folder holds."""
from __future__ import annotations

import json
import random
from pathlib import Path

WORDS = ("a man woman dog cat two people red blue small large sits stands runs rides holds on in near the with of "
         "street beach field table bike horse ball grass water snow park building tree car").split()


def make_rows(n: int, seed: int = 0) -> list[dict]:
    """``n`` rows with an id, a prediction and 1–5 references, drawn from a small vocabulary (seeded)."""
    rng = random.Random(seed)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))

    return [{"id": f"img{i:05d}", "prediction": caption(), "references": [caption() for _ in range(rng.randint(1, 5))]}
            for i in range(n)]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def shards(folder: Path) -> dict[str, list]:
    import pyarrow.dataset as ds

    return ds.dataset(str(folder / "shards"), format="parquet").to_table().to_pydict()


def rows_with_images(folder: Path, n: int, seed: int) -> tuple[str, list[dict]]:
    """``(a random tiny CLIP checkpoint, n rows with an integer id and an image column of the bundled photos)``;
    skips without torch and open_clip."""
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    from capeval.vision_language.random_weights import write_random_models

    paths = write_random_models(folder, tiny=True, seed=3)
    images = (folder / "images.txt").read_text().split()
    rows = [{"id": i, "prediction": r["prediction"], "references": r["references"], "image": images[i % len(images)]}
            for i, r in enumerate(make_rows(n, seed=seed))]
    return str(paths["clip_model"]), rows
