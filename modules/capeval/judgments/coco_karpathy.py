"""COCO Karpathy test split captions (as committed with SMURF, Feinglass & Yang 2021); no judgments.

Files under ``<data dir>/coco_karpathy_test/``:

* ``karpathy_ref.json``: ``[{"image_id": "COCO_val2014_*.jpg", "caption"}]``, 20,010 references over
  5,000 images (4,990 with 4, 10 with 5).
* ``karpathy_cand.json``: 20,000 items, exactly 4 per image in a fixed order: the held-out 5th human
  caption, then three model captioners (unnamed in the source; called ``model_1..3`` here).

For system-level analysis and as training data. ``systems=`` selects which of
``human, model_1, model_2, model_3`` to load (default all).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from capeval.judgments.files import COCO_IMAGE_DIRS, image_finder, read_json, resolve_root
from capeval.judgments.records import Benchmark, CaptionRecord

SYSTEMS = ("human", "model_1", "model_2", "model_3")
FORMAT = '[{"image_id": "COCO_val2014_<id>.jpg", "caption": "..."}, ...]'


def _items(path: Path) -> list[tuple[str, str]]:
    data = read_json(path, f"{path.name}: {FORMAT}")
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list {FORMAT}.")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or "image_id" not in item or "caption" not in item:
            raise ValueError(f"{path}: item {i} needs 'image_id' and 'caption'.")
        out.append((str(item["image_id"]), str(item["caption"]).strip()))
    return out


def load_coco_karpathy(
    root: str | Path | None = None,
    *,
    systems: Sequence[str] = SYSTEMS,
    image_dir: str | Path | None = None,
) -> Benchmark:
    """4 candidate captions per Karpathy test image with the image's other human captions as references."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown or not systems:
        raise ValueError(f"systems must be a non-empty subset of {SYSTEMS}, got {list(systems)}.")
    base = resolve_root(root) / "coco_karpathy_test"
    ref_path, cand_path = base / "karpathy_ref.json", base / "karpathy_cand.json"
    refs: dict[str, list[str]] = defaultdict(list)
    for image, caption in _items(ref_path):
        refs[image].append(caption)
    cands: dict[str, list[str]] = defaultdict(list)
    for image, caption in _items(cand_path):
        cands[image].append(caption)
    find_image = image_finder(base.parent, image_dir, COCO_IMAGE_DIRS)
    records = []
    for image, captions in cands.items():
        if len(captions) != len(SYSTEMS):
            raise ValueError(f"{cand_path}: image {image!r} has {len(captions)} candidates; expected {len(SYSTEMS)}.")
        if image not in refs:
            raise ValueError(f"{cand_path}: image {image!r} has no references in {ref_path.name}.")
        for system, caption in zip(SYSTEMS, captions):
            if system not in systems:
                continue
            records.append(CaptionRecord(
                benchmark="coco-karpathy-test", source_id=f"{image}|{system}", image_id=image,
                image_path=find_image(image), candidate=caption, references=tuple(refs[image]),
                human_scores=(), system=system,
            ))
    return Benchmark(
        name="coco-karpathy-test", records=records, settings={"systems": ",".join(systems)},
        statistic="none", files=[ref_path, cand_path],
    )
