"""Write a Hub-ready dataset folder: ``data/<config>/<split>-00000-of-00001.parquet`` + ``README.md``.

The parquet files carry the ``datasets`` features in their schema metadata, so
``datasets.load_dataset(folder)`` restores ``Image`` and ``ClassLabel`` columns; the README's YAML
declares the configs/splits (``configs:``), the features and sizes (``dataset_info:``), license,
task categories and size category, and its body is rendered from ``hub_cards/datasets/<name>.md``.

Images are embedded as bytes. Repeated images (one image judged with many captions) are stored
once per row group through parquet dictionary encoding, so the Flickr8k-Expert config with its
1,000 images is ~15 MB, not ~95 MB.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.judgments.files import resolve_root
from capeval.hub.cards import render_card
from capeval.hub.tables import DATASET_NAMES, TABLE_BUILDERS, SplitTable, image_cells

ROW_GROUP_SIZE = 500
DICTIONARY_PAGE_LIMIT = 64 << 20  # bytes; large enough to hold a row group's distinct images


@dataclass
class BuildReport:
    """What :func:`build_dataset` wrote."""

    name: str
    out: Path
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # "config/split" -> counts
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [f"{self.name}: wrote {self.out} in {self.seconds:.1f} s"]
        for key, c in self.splits.items():
            lines.append(f"  {key}: {c['rows']} rows, {c['images']} with image, {c['bytes'] / 1e6:.1f} MB")
        return "\n".join(lines)


def build_dataset(
    name: str,
    source: str | Path | None,
    out: str | Path,
    *,
    images: bool = True,
    limit: int | None = None,
    cards_dir: str | Path | None = None,
    overwrite: bool = False,
) -> BuildReport:
    """Build the Hub dataset ``name`` (``flickr8k``, ``composite``, ``pascal50s``, ``thumb``).

    Args:
        source: the data directory holding the original files (default: capeval's data dir).
        out: the folder to write; must be empty or absent unless ``overwrite``.
        images: embed images where they exist (``datasets.Image`` column); ``False`` leaves the
            column out (text-only build).
        limit: keep only the first ``limit`` rows of every split (for quick checks; the card then
            says the build is partial).
        cards_dir: folder with the card templates (default: ``hub_cards/datasets`` of the checkout).
    """
    if name not in TABLE_BUILDERS:
        raise ValueError(f"unknown dataset {name!r}; choose from {', '.join(DATASET_NAMES)}.")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of rows, got {limit}.")
    start = time.perf_counter()
    root = resolve_root(source)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise with_words(ValueError, words("overwrite", f"{out} is not empty; choose an empty folder or pass ",
                                               Setting(True), "."))
        shutil.rmtree(out)
    tables = TABLE_BUILDERS[name](root, images=images, limit=limit)
    report = BuildReport(name=name, out=out)
    written = []
    for table in tables:
        path = out / "data" / table.config / f"{table.split}-00000-of-00001.parquet"
        n_bytes, n_images = _write_parquet(table, path, images)
        report.splits[f"{table.config}/{table.split}"] = {"rows": table.num_rows, "images": n_images, "bytes": n_bytes}
        written.append((table, path, n_bytes))
    card = render_card(name, written, out, images=images, limit=limit, cards_dir=cards_dir)
    (out / "README.md").write_text(card, encoding="utf-8")
    report.seconds = time.perf_counter() - start
    return report


def _write_parquet(table: SplitTable, path: Path, images: bool) -> tuple[int, int]:
    import pyarrow.parquet as pq
    from datasets import Dataset

    columns = dict(table.columns)
    n_images = 0
    if images:
        cells = image_cells(table.image_paths, f"{table.config}/{table.split} images")
        n_images = sum(c is not None for c in cells)
        columns = {"image": cells, **columns}
    arrow = Dataset.from_dict(columns, features=table.features).data.table
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(arrow, path, row_group_size=ROW_GROUP_SIZE, use_dictionary=True,
                   dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT)
    return path.stat().st_size, n_images
