"""Judgment sets of (image, candidate, references, human score in [0, 1]) items: the loader Nebula and Polaris share.

A :class:`JudgmentSet` names one such set (its Hub dataset, the Hub's split names and columns, the released sizes);
:func:`load_judgment_set` reads the first of these that exists under ``<data dir>/<name>/`` (``split`` picks the
file or the Hub split; ``"train"``, ``"validation"`` (also ``"valid"``, ``"val"``) or ``"test"``):

1. EXPERT's annotation file ``<name>_<split>.json`` (repository hjkim811/EXPERT, ``annotations/``; it distributes
   test files, e.g. ``nebula_test.json``, 3,298 items): a JSON list of ``{"imgid": <md5-like id>, "mt": <candidate>,
   "refs": [<5, 6 or 10 references, some of them "">], "score": <float in [0, 1]>}``;
2. the authors' CSV ``<name>_<split>.csv`` (Polos's ``polaris_{train,val,test}.csv``, DENEB's ``nebula_test.csv``):
   columns ``mt``, ``refs`` (a Python list literal), ``score``, ``imgid``;
3. the Hub dataset's parquet shards, under ``<name>/``, in the Hugging Face hub cache, then (offline only) in the
   ``datasets`` cache (:mod:`capeval.judgments.hub_dataset`), with the columns the dataset card documents.

None of them: ``FileNotFoundError`` naming every place looked in and how to fetch one.

Items. Candidate and references keep their text with whitespace runs collapsed (:func:`files.norm_space`). Empty or
whitespace-only references are dropped (counted in the notes); an item left with no reference is skipped (no
reference-based metric can score it; counted in the notes, the first indices named). A malformed item raises
``ValueError`` naming the file, ``items[<index>]`` (the position in the file or split, from 0) and the field.
``CaptionRecord.source_id`` is ``"<split>/<index>"``.

Images. The JSON and CSV files name an image by ``imgid``: ``<data dir>/<name>/images/<imgid>`` (also with
``.jpg`` / ``.png``) or ``image_dir=``; :meth:`Benchmark.images` is ``None`` when one of them is missing. The Hub
datasets carry their images: :meth:`Benchmark.images` returns their ``datasets.Image`` values
(``{"bytes", "path"}``), read on first use.

Statistic: Kendall tau-c (in [-1, 1]) between metric and human score over all items, one row per item.
"""
from __future__ import annotations

import ast
import csv
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.hub_cli import download_command
from capeval.judgments.files import (find_with_suffixes, image_finder, kept_images, norm_space, read_json,
                                     resolve_root)
from capeval.judgments.hub_dataset import (HubSplit, cached_snapshot, find_shards, offline, read_datasets_cache,
                                            read_parquet, shard_patterns)
from capeval.judgments.records import Benchmark, CaptionRecord

SPLITS = ("train", "validation", "test")
#: Accepted ``split`` values -> the split they mean.
SPLIT_ALIASES = {"train": "train", "validation": "validation", "valid": "validation", "val": "validation",
                 "test": "test"}
#: Split -> the ``<name>_<suffix>`` file names looked for, in order.
FILE_SPLITS = {"train": ("train",), "validation": ("val", "valid", "validation"), "test": ("test",)}
EXPERT_FORMAT = 'a JSON list of {"imgid": <id>, "mt": <candidate>, "refs": [<references>], "score": <0-1>}'
CSV_FORMAT = "CSV with columns mt, refs (a Python list literal), score (0-1), imgid"
IMAGE_SUFFIXES = ("", ".jpg", ".png")
#: How many skipped items the note names.
_NAMED = 5
#: Rounding slack of a human score (a mean of ratings) around [0, 1].
_SLACK = 1e-9


@dataclass(frozen=True)
class Columns:
    """Where an item's fields are: the candidate, the references (a list), the human score in [0, 1], the column
    naming the image (``None``: the image value's own file name) and the image column (``None``: images are files)."""

    candidate: str
    references: str
    score: str
    image_id: str | None
    image: str | None = None


#: The EXPERT JSON's and the authors' CSV's field names.
FILE_COLUMNS = Columns("mt", "refs", "score", "imgid")


@dataclass(frozen=True)
class JudgmentSet:
    """One judgment set: registry ``name`` (also its folder under the data directory), ``hub_repo``, the Hub's name
    of each split (``hub_splits``), the number of items each released split holds (``sizes``) and the Hub
    dataset's ``columns`` (as its card documents them)."""

    name: str
    hub_repo: str
    hub_splits: Mapping[str, str]
    sizes: Mapping[str, int]
    columns: Columns


@dataclass
class _Source:
    """The rows of one source, before validation."""

    kind: str  # "expert-json", "csv", "hub-parquet", "hub-cache", "datasets-cache"
    where: str  # what errors name: a file, or the shards / cache read
    rows: list[Any]
    columns: Columns
    files: list[Path] = field(default_factory=list)
    image_names: list[str | None] = field(default_factory=list)
    images: Callable[[], list[Any]] | None = None


def canonical_split(split: str) -> str:
    """``"valid"`` → ``"validation"``...; ``ValueError`` naming the accepted values for anything else."""
    key = str(split).strip().lower()
    if key not in SPLIT_ALIASES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_ALIASES)}, got {split!r}.")
    return SPLIT_ALIASES[key]


def load_judgment_set(spec: JudgmentSet, root: str | Path | None = None, *, split: str = "test",
                      image_dir: str | Path | None = None) -> Benchmark:
    """The :class:`Benchmark` of ``spec``'s ``split`` (see the module docstring for the files and the items)."""
    split = canonical_split(split)
    data_root = resolve_root(root)
    base = data_root / spec.name
    source = _find_source(spec, base, split)
    find_image = image_finder(data_root, image_dir, (f"{spec.name}/images",)) if source.images is None else None
    records: list[CaptionRecord] = []
    kept: list[int] = []
    skipped: list[int] = []
    dropped = 0
    for i, row in enumerate(source.rows):
        candidate, references, n_empty, score, image_id = _parse(row, i, source)
        dropped += n_empty
        if not references:
            skipped.append(i)
            continue
        image_id = image_id or f"{split}/{i}"
        kept.append(i)
        records.append(CaptionRecord(
            benchmark=spec.name,
            source_id=f"{split}/{i}",
            image_id=image_id,
            image_path=find_with_suffixes(find_image, image_id, IMAGE_SUFFIXES) if find_image else None,
            candidate=candidate,
            references=references,
            human_scores=(score,),
            extra={"index": i, "split": split, "empty_references_dropped": n_empty},
        ))
    if not records:
        raise ValueError(f"{source.where}: no item with a candidate and a non-empty reference.")
    return Benchmark(
        name=spec.name,
        records=records,
        settings={"split": split, "source": source.kind},
        statistic="kendall_c",
        files=source.files,
        notes=_notes(spec, split, source, dropped, skipped, data_root),
        embedded_images=kept_images(source.images, kept, len(source.rows)),
    )


def loader(spec: JudgmentSet) -> Callable[..., Benchmark]:
    """``load_<name>(root=None, *, split="test", image_dir=None) -> Benchmark``: :func:`load_judgment_set` of
    ``spec``, the loader :func:`capeval.judgments.load_benchmark` calls."""

    def load(root: str | Path | None = None, *, split: str = "test", image_dir: str | Path | None = None
             ) -> Benchmark:
        return load_judgment_set(spec, root, split=split, image_dir=image_dir)

    load.__name__ = load.__qualname__ = f"load_{spec.name}"
    load.__doc__ = (f"{spec.name}'s ``split`` (``train``, ``validation`` or ``test``, the default) as a Benchmark; "
                    f"files and lookup order: :mod:`capeval.judgments.judgment_sets`.")
    return load


# -- finding the files -------------------------------------------------------------------------------------------
def _find_source(spec: JudgmentSet, base: Path, split: str) -> _Source:
    """The first source of ``spec``'s ``split`` that exists (module docstring); ``FileNotFoundError`` naming all."""
    looked: list[str] = []
    for suffix, reader in ((".json", _read_expert_json), (".csv", _read_csv)):
        for name in FILE_SPLITS[split]:
            path = base / f"{spec.name}_{name}{suffix}"
            if path.is_file():
                return reader(path)
            looked.append(str(path))
    hub_split = spec.hub_splits[split]
    cols = spec.columns
    text_columns = [cols.candidate, cols.references, cols.score, *([cols.image_id] if cols.image_id else [])]
    found = _hub_shards(spec.hub_repo, base, hub_split, looked)
    hub: HubSplit | None = None
    if found is not None:
        kind, shards = found
        hub = read_parquet(shards, text_columns, cols.image, kind)
        where = str(shards[0].parent / f"{hub_split}-*.parquet")
    elif offline():
        where = f"{spec.hub_repo} {hub_split} split (datasets cache)"
        try:
            hub = read_datasets_cache(spec.hub_repo, hub_split, text_columns, cols.image)
        except FileNotFoundError as err:
            looked.append(f"the datasets cache of {spec.hub_repo} ({err})")
    else:
        looked.append(f"the datasets cache of {spec.hub_repo} (not read: online, load_dataset would download it; set "
                      "HF_HUB_OFFLINE=1 to read the cache)")
    if hub is None:
        raise FileNotFoundError(
            f"{looked[0]} not found; expected EXPERT's annotation file ({EXPERT_FORMAT}). Also looked for: "
            f"{'; '.join(looked[1:])}. Fetch the Hub dataset: "
            f"`{download_command(spec.hub_repo, repo_type='dataset', local_dir=str(base))}`, or put a file in EXPERT's "
            f"annotation format at {looked[0]} (github.com/hjkim811/EXPERT's annotations/ folder distributes "
            f"{Path(looked[0]).name}).")
    return _Source(hub.kind, where, hub.rows, cols, hub.files, hub.image_names, hub.images)


def _hub_shards(repo_id: str, base: Path, hub_split: str, looked: list[str]) -> tuple[str, list[Path]] | None:
    """``(kind, shards)`` of ``hub_split`` under ``base`` or in the hub cache; else ``None``, ``looked`` extended."""
    shards = find_shards(base, hub_split)
    if shards:
        return "hub-parquet", shards
    looked += shard_patterns(base, hub_split)
    snapshot, why = cached_snapshot(repo_id)
    if snapshot is not None:
        shards = find_shards(snapshot, hub_split)
        if shards:
            return "hub-cache", shards
        why = f"cached at {snapshot}, without {hub_split} shards"
    looked.append(f"the Hugging Face hub cache of {repo_id} ({why})")
    return None


def _read_expert_json(path: Path) -> _Source:
    rows = read_json(path, EXPERT_FORMAT)
    if not isinstance(rows, list):
        raise ValueError(f"{path}: expected {EXPERT_FORMAT}, got a JSON {type(rows).__name__}.")
    return _Source("expert-json", str(path), rows, FILE_COLUMNS, [path])


def _read_csv(path: Path) -> _Source:
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in ("mt", "refs", "score", "imgid") if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)}; expected {CSV_FORMAT}.")
        rows = list(reader)
    return _Source("csv", str(path), rows, FILE_COLUMNS, [path])


# -- one item ----------------------------------------------------------------------------------------------------
def _parse(row: Any, i: int, source: _Source) -> tuple[str, tuple[str, ...], int, float, str | None]:
    """``(candidate, non-empty references, empty references dropped, score, image id)`` of item ``i``."""
    cols, where = source.columns, source.where
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: items[{i}] is a {type(row).__name__}; expected {EXPERT_FORMAT}.")

    def value(key: str) -> Any:
        if key not in row:
            raise ValueError(f'{where}: items[{i}] has no field "{key}".')
        return row[key]

    candidate = value(cols.candidate)
    if not isinstance(candidate, str) or not candidate.strip():
        raise ValueError(f'{where}: items[{i}]["{cols.candidate}"] must be a non-empty caption, got {candidate!r}.')
    references, n_empty = _references(value(cols.references), f'{where}: items[{i}]["{cols.references}"]')
    score = _score(value(cols.score), f'{where}: items[{i}]["{cols.score}"]')
    if cols.image_id:
        image_id = value(cols.image_id)
        if isinstance(image_id, bool) or not isinstance(image_id, (str, int)) or not str(image_id).strip():
            raise ValueError(f'{where}: items[{i}]["{cols.image_id}"] must name an image, got {image_id!r}.')
        image_id = str(image_id).strip()
    else:
        name = source.image_names[i] if i < len(source.image_names) else None
        image_id = Path(name).name if name else None
    return norm_space(candidate), references, n_empty, score, image_id


def _references(value: Any, what: str) -> tuple[tuple[str, ...], int]:
    """The non-empty references of a list (a CSV's Python list literal too) and how many empty ones were dropped."""
    if isinstance(value, str):  # the authors' CSV: "['a dog runs .', ...]"
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ValueError(f"{what} must be a list of references, got the text {value[:80]!r}.") from None
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of references, got {type(value).__name__}.")
    kept = []
    for j, ref in enumerate(value):
        if not isinstance(ref, str):
            raise ValueError(f"{what}[{j}] must be a string, got {ref!r}.")
        if ref.strip():
            kept.append(norm_space(ref))
    return tuple(kept), len(value) - len(kept)


def _score(value: Any, what: str) -> float:
    """A human score: a finite number in [0, 1] (a CSV's text parsed)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{what} must be a number in [0, 1], got the text {value!r}.") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number in [0, 1], got {value!r}.")
    if not math.isfinite(value) or not -_SLACK <= value <= 1.0 + _SLACK:
        raise ValueError(f"{what} must be a number in [0, 1], got {value!r}.")
    return float(value)


# -- the benchmark -----------------------------------------------------------------------------------------------


def _notes(spec: JudgmentSet, split: str, source: _Source, dropped: int, skipped: list[int], data_root: Path
           ) -> list[str]:
    where = Path(source.where)  # shown without this machine's folders
    if source.kind in ("hub-cache", "datasets-cache"):
        shown = f"the Hugging Face {source.kind.split('-')[0]} cache of {spec.hub_repo} ({spec.hub_splits[split]})"
    else:
        shown = str(where.relative_to(data_root) if where.is_relative_to(data_root) else where)
    notes = [f"read from {shown} ({source.kind})"]
    if dropped:
        notes.append(f"{dropped} empty reference(s) dropped")
    if skipped:
        named = ", ".join(f"items[{i}]" for i in skipped[:_NAMED]) + (", ..." if len(skipped) > _NAMED else "")
        notes.append(f"{len(skipped)} item(s) skipped: no non-empty reference ({named})")
    released = spec.sizes.get(split)
    if released is not None and len(source.rows) != released:
        notes.append(f"{len(source.rows):,} items read; the released {spec.name} {split} split has {released:,}")
    return notes


__all__ = ["Columns", "FILE_COLUMNS", "JudgmentSet", "SPLITS", "canonical_split", "load_judgment_set", "loader"]
