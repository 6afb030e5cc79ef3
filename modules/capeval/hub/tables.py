"""Benchmark records → column tables with typed ``datasets`` features, one per (config, split).

The tables are built from the benchmark loaders (:mod:`capeval.judgments`), so a Hub dataset
holds exactly what ``load_benchmark`` yields, plus the protocol-neutral fields needed to rebuild
every protocol (e.g. Flickr8k keeps all 5 captions of the query image and a flag for the 158
self-reference pairs; PASCAL-50S keeps all 50 references and the EXPERT file's 5).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.judgments.records import CaptionRecord, PairRecord
from capeval.progress import progress

DATASET_NAMES = ("flickr8k", "composite", "pascal50s", "thumb")


@dataclass
class SplitTable:
    """Columns of one split of one config, with their ``datasets.Features``."""

    config: str
    split: str
    columns: dict[str, list[Any]]
    features: Any  # datasets.Features
    image_paths: list[Path | None] = field(default_factory=list)

    @property
    def num_rows(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0


def _features(spec: dict[str, Any], images: bool):
    from datasets import Features, Image

    return Features({**({"image": Image()} if images else {}), **spec})


def _str_list():
    from datasets import List, Value

    return List(Value("string"))


def _take(records: list, limit: int | None) -> list:
    return records if limit is None else records[:limit]


def _table(config: str, split: str, records: list, spec: dict[str, Any], row: Callable[[Any], dict], images: bool) -> SplitTable:
    columns: dict[str, list[Any]] = {name: [] for name in spec}
    for rec in records:
        values = row(rec)
        for name in spec:
            columns[name].append(values[name])
    return SplitTable(config, split, columns, _features(spec, images), [r.image_path for r in records] if images else [])


def flickr8k_tables(source: Path, images: bool = True, limit: int | None = None) -> list[SplitTable]:
    """Config ``expert`` (5,822 pairs, all of them) and, when the file exists, ``crowdflower``."""
    from datasets import List, Value

    from capeval.judgments.flickr8k import load_crowdflower, load_expert, read_token_file

    own = read_token_file(source / "flickr8k" / "Flickr8k.token.txt").by_image
    common = {
        "image_id": Value("string"), "caption_id": Value("string"), "caption": Value("string"),
        "references": _str_list(), "candidate_in_references": Value("bool"),
    }

    def base(rec: CaptionRecord) -> dict:
        return {"image_id": rec.image_id, "caption_id": rec.extra["caption_id"], "caption": rec.candidate,
                "references": [t for _, t in own[rec.image_id]],
                "candidate_in_references": bool(rec.extra["candidate_in_references"])}

    expert = load_expert(source, protocol="cui")
    tables = [_table("expert", "test", _take(expert.records, limit),
                     {**common, "expert_scores": List(Value("int8"))},
                     lambda r: {**base(r), "expert_scores": [int(s) for s in r.human_scores]}, images)]
    if (source / "flickr8k" / "CrowdFlowerAnnotations.txt").is_file():
        crowd = load_crowdflower(source, protocol="cui")
        spec = {**common, "fraction_yes": Value("float64"), "n_yes": Value("int32"), "n_no": Value("int32")}
        tables.append(_table("crowdflower", "test", _take(crowd.records, limit), spec,
                             lambda r: {**base(r), "fraction_yes": r.human_scores[0],
                                        "n_yes": r.extra["n_yes"], "n_no": r.extra["n_no"]}, images))
    return tables


COMPOSITE_SPLITS = {"8k": "flickr8k", "30k": "flickr30k", "coco": "mscoco"}
COMPOSITE_SOURCES = ("human", "model", "sdg")


def composite_tables(source: Path, images: bool = True, limit: int | None = None) -> list[SplitTable]:
    """Config ``default`` with splits ``flickr8k``, ``flickr30k``, ``mscoco``."""
    from datasets import ClassLabel, Value

    from capeval.judgments.composite import load_composite

    spec = {
        "image_file": Value("string"), "original_image_id": Value("string"), "txt_id": Value("string"),
        "candidate_position": Value("int8"), "source": ClassLabel(names=list(COMPOSITE_SOURCES)),
        "caption": Value("string"), "score": Value("int8"), "references": _str_list(),
        "removed_references": _str_list(),
    }
    tables = []
    for subset, split in COMPOSITE_SPLITS.items():
        kept = load_composite(source, subset=subset).records
        full = {r.source_id: r.references for r in load_composite(source, subset=subset, drop_matched_reference=False)}

        def row(r: CaptionRecord) -> dict:
            return {"image_file": r.image_id, "original_image_id": r.extra["original_image_id"],
                    "txt_id": r.extra["txt_id"], "candidate_position": r.extra["candidate_position"],
                    "source": COMPOSITE_SOURCES.index(r.system), "caption": r.candidate,
                    "score": int(r.human_scores[0]), "references": list(r.references),
                    "removed_references": [x for x in full[r.source_id] if x not in r.references]}

        tables.append(_table("default", split, _take(kept, limit), spec, row, images))
    return tables


def pascal50s_tables(source: Path, images: bool = True, limit: int | None = None) -> list[SplitTable]:
    """Config ``default``, split ``test``: 4,000 pairs with all 50 and the EXPERT file's 5 references."""
    from datasets import ClassLabel, Value

    from capeval.judgments.pascal50s import CATEGORIES, load_pascal50s

    all50 = load_pascal50s(source, references="all").records
    expert5 = {r.source_id: r.references for r in load_pascal50s(source, references="expert")}
    spec = {
        "image_id": Value("string"), "caption_a": Value("string"), "caption_b": Value("string"),
        "label": ClassLabel(names=["a", "b"]), "category": ClassLabel(names=list(CATEGORIES)),
        "references": _str_list(), "expert_references": _str_list(),
        "system_a": Value("int8"), "system_b": Value("int8"),
    }

    def row(r: PairRecord) -> dict:
        return {"image_id": r.image_id, "caption_a": r.candidates[0], "caption_b": r.candidates[1],
                "label": r.preferred, "category": CATEGORIES.index(r.category), "references": list(r.references),
                "expert_references": list(expert5[r.source_id]),
                "system_a": r.extra["systems"][0], "system_b": r.extra["systems"][1]}

    return [_table("default", "test", _take(all50, limit), spec, row, images)]


def thumb_tables(source: Path, images: bool = True, limit: int | None = None) -> list[SplitTable]:
    """Config ``default``, split ``test``: 2,500 captions with P, R, penalties and total."""
    from datasets import ClassLabel, Value

    from capeval.judgments.thumb import SYSTEMS, load_thumb

    spec = {
        "image_id": Value("string"), "seg_id": Value("string"), "set_id": Value("int32"),
        "system": ClassLabel(names=list(SYSTEMS)), "caption": Value("string"), "references": _str_list(),
        **{k: Value("float64") for k in ("P", "R", "Fl", "Con", "Inc", "total")},
        "candidate_in_references": Value("bool"),
    }

    def row(r: CaptionRecord) -> dict:
        return {"image_id": r.image_id, "seg_id": r.extra["seg_id"], "set_id": r.extra["set_id"],
                "system": SYSTEMS.index(r.system), "caption": r.candidate, "references": list(r.references),
                **{k: r.extra[k] for k in ("P", "R", "Fl", "Con", "Inc", "total")},
                "candidate_in_references": bool(r.extra["candidate_in_references"])}

    return [_table("default", "test", _take(load_thumb(source).records, limit), spec, row, images)]


TABLE_BUILDERS: dict[str, Callable[..., list[SplitTable]]] = {
    "flickr8k": flickr8k_tables, "composite": composite_tables, "pascal50s": pascal50s_tables, "thumb": thumb_tables,
}


def _image_bytes(path: Path) -> bytes:
    """The bytes of the image file ``path``: a regular file (never a device or FIFO a damaged data folder links to)
    of at most :data:`capeval.models.images.MAX_IMAGE_FILE_BYTES`, checked on the open file."""
    from capeval.io import InputFormatError, open_regular
    from capeval.models.images import MAX_IMAGE_FILE_BYTES

    with open_regular(path, MAX_IMAGE_FILE_BYTES) as handle:
        data = handle.read(MAX_IMAGE_FILE_BYTES + 1)
    if len(data) > MAX_IMAGE_FILE_BYTES:
        raise InputFormatError(f"{path}: larger than capeval's limit of {MAX_IMAGE_FILE_BYTES >> 20} MiB for an image "
                               "file.")
    return data


def image_cells(paths: Iterable[Path | None], desc: str) -> list[dict | None]:
    """``datasets.Image`` cells with the file bytes embedded (``None`` where there is no image)."""
    paths = list(paths)
    cache: dict[Path, dict] = {}
    cells: list[dict | None] = []
    for path in progress(paths, total=len(paths), desc=desc):
        if path is None:
            cells.append(None)
            continue
        if path not in cache:
            cache[path] = {"bytes": _image_bytes(path), "path": path.name}
        cells.append(cache[path])
    return cells
