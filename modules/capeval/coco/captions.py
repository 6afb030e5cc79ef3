"""The COCO 2014 captions shipped inside pycocoevalcap 1.2's ``spice/spice-1.0.jar``.

``captions_train2014.json``: 82,783 images, 414,113 captions; ``captions_val2014.json``: 40,504
images, 202,654 captions (CC BY 4.0). Read straight from the jar (a zip file); nothing is copied.
"""
from __future__ import annotations

import json
import zipfile
from functools import lru_cache

from capeval.paths import spice_jar

SPLITS = ("train2014", "val2014")


@lru_cache(maxsize=2)
def load_coco_annotations(split: str) -> dict:
    """The raw COCO annotation JSON (``images``, ``annotations``, ...) for ``split``."""
    if split not in SPLITS:
        raise ValueError(f"Unknown COCO split {split!r}; choose one of {SPLITS}.")
    with zipfile.ZipFile(spice_jar()) as jar:
        with jar.open(f"coco/annotations/captions_{split}.json") as fh:
            return json.load(fh)


def coco_captions(split: str) -> dict[int, list[str]]:
    """``{image_id: [caption, ...]}`` in annotation order, for every image of ``split``."""
    data = load_coco_annotations(split)
    out: dict[int, list[str]] = {img["id"]: [] for img in data["images"]}
    for ann in data["annotations"]:
        out[ann["image_id"]].append(ann["caption"])
    return out
