"""Reading one split of a Hugging Face Hub dataset without downloading anything.

A Hub dataset stored as parquet shards (``data/<split>-00000-of-00002.parquet``, as ``push_to_hub`` writes them and
the dataset card's ``configs`` names them) is found, in this order:

1. under a local folder (``hf download --repo-type dataset <id> --local-dir <folder>``):
   ``<folder>/data/<split>-*.parquet``, or ``<folder>/<split>-*.parquet``;
2. in the Hugging Face hub cache (``HF_HOME`` / ``HF_HUB_CACHE``), through
   ``huggingface_hub.snapshot_download(..., local_files_only=True)``, which never touches the network;
3. in the ``datasets`` cache, through ``datasets.load_dataset(<id>, split=...)``, only when ``HF_HUB_OFFLINE`` (or
   ``HF_DATASETS_OFFLINE``) is set: online, ``load_dataset`` would download the whole dataset.

:func:`read_split` returns the text columns as rows; an image column is read only when asked for
(:attr:`HubSplit.images`), as ``datasets.Image`` values (``{"bytes": ..., "path": ...}``, not decoded). Needs the
``bench`` extra (``pyarrow``; ``huggingface_hub`` and ``datasets`` for places 2 and 3).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TRUE = {"1", "true", "yes", "on"}
#: Where a split's shards lie under a local folder, best first (``{}``: the split).
SHARD_PATTERNS = ("data/{}-*.parquet", "{}-*.parquet")
INSTALL = 'pip install "capeval[bench]"'


@dataclass
class HubSplit:
    """One split of a Hub dataset: ``rows`` (the text columns asked for, one dict per row, in file order),
    ``image_names`` (the file name each image column value carries, ``None`` where it has none; ``[]`` without an
    image column), ``images`` (a function reading the image column, one value per row) and where they came from:
    ``kind`` (``"hub-parquet"``, ``"hub-cache"`` or ``"datasets-cache"``) and ``files``."""

    rows: list[dict[str, Any]]
    image_names: list[str | None]
    images: Callable[[], list[Any]] | None
    kind: str
    files: list[Path] = field(default_factory=list)


def offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` is set to a true value (1, true, yes, on)."""
    return any(os.environ.get(var, "").strip().lower() in _TRUE for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def shard_patterns(folder: Path, split: str) -> list[str]:
    """The shard globs looked for under a local folder, best first."""
    return [str(folder / pattern.format(split)) for pattern in SHARD_PATTERNS]


def find_shards(folder: Path, split: str) -> list[Path]:
    """The parquet shards of ``split`` under ``folder`` (``data/<split>-*.parquet`` first), sorted; ``[]`` if none."""
    for pattern in SHARD_PATTERNS:
        shards = sorted(folder.glob(pattern.format(split)))
        if shards:
            return shards
    return []


def cached_snapshot(repo_id: str) -> tuple[Path | None, str]:
    """``(folder, why)``: the hub cache's snapshot of dataset ``repo_id`` (never downloaded), or ``None`` and why."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None, f"huggingface_hub is not installed ({INSTALL})"
    try:
        return Path(snapshot_download(repo_id, repo_type="dataset", local_files_only=True)), ""
    except Exception as err:  # noqa: BLE001 - not cached, a damaged cache: the caller reports every place
        return None, f"not cached ({type(err).__name__})"


def read_parquet(shards: Sequence[Path], columns: Sequence[str], image_column: str | None, kind: str) -> HubSplit:
    """The ``columns`` of ``shards`` (in order) as rows; the image column's file names now, its values on demand.

    ``ValueError`` naming the shard and the columns it has when one of ``columns`` (or the image column) is missing.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"reading a Hub dataset's parquet files needs pyarrow: {INSTALL}") from None
    wanted = [*columns, *([image_column] if image_column else [])]
    rows: list[dict[str, Any]] = []
    names: list[str | None] = []
    for shard in shards:
        present = pq.read_schema(shard).names
        missing = [c for c in wanted if c not in present]
        if missing:
            raise ValueError(f"{shard}: no column {', '.join(map(repr, missing))}; it has {', '.join(present)}.")
        rows += pq.read_table(shard, columns=list(columns)).to_pylist()
        if image_column:
            names += pq.read_table(shard, columns=[f"{image_column}.path"]).column(0).to_pylist()

    def images() -> list[Any]:
        return [value for shard in shards for value in pq.read_table(shard, columns=[image_column]).column(0)
                .to_pylist()]

    return HubSplit(rows, names, images if image_column else None, kind, list(shards))


def read_datasets_cache(repo_id: str, split: str, columns: Sequence[str], image_column: str | None) -> HubSplit:
    """Split ``split`` of ``repo_id`` from the ``datasets`` cache (call it only offline: see the module docstring).

    ``FileNotFoundError`` when it is not cached; ``ValueError`` naming a missing column."""
    try:
        import datasets
    except ImportError:
        raise FileNotFoundError(f"the datasets library is not installed ({INSTALL})") from None
    try:
        ds = datasets.load_dataset(repo_id, split=split)
    except Exception as err:  # noqa: BLE001 - offline and not cached, unknown split: one clear error
        raise FileNotFoundError(f"not in the datasets cache ({type(err).__name__}: {str(err).splitlines()[0][:160]})"
                                ) from None
    wanted = [*columns, *([image_column] if image_column else [])]
    missing = [c for c in wanted if c not in ds.column_names]
    if missing:
        raise ValueError(f"datasets cache of {repo_id} ({split}): no column {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(ds.column_names)}.")
    rows = ds.select_columns(list(columns)).to_list()
    names: list[str | None] = []
    if image_column:
        names = [p for chunk in ds.data.column(image_column).chunks for p in chunk.field("path").to_pylist()]

    def images() -> list[Any]:
        return list(ds.cast_column(image_column, datasets.Image(decode=False))[image_column])

    return HubSplit(rows, names, images if image_column else None, "datasets-cache")


__all__ = ["HubSplit", "cached_snapshot", "find_shards", "offline", "read_datasets_cache", "read_parquet",
           "shard_patterns"]
