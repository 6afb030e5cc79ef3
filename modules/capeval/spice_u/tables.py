"""Named uniqueness tables: the COCO train2014 table shipped with capeval, or any file built by
``capeval spice_u build-uniqueness``."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.spice_u.uniqueness import UniquenessTable

SHIPPED = {"coco-train2014": "coco_train2014.tsv.gz"}


def shipped_path(name: str) -> Path:
    return Path(str(resources.files("capeval") / "data" / "spice_u" / SHIPPED[name]))


@lru_cache(maxsize=4)
def load_table(name_or_path: str) -> UniquenessTable:
    """Load a shipped table by name (``coco-train2014``) or a table file by path (cached per process)."""
    if name_or_path in SHIPPED:
        path = shipped_path(name_or_path)
        if not path.is_file():
            raise with_words(FileNotFoundError, words(
                "spice_u_table", f"the shipped SPICE-U table {path} is missing from this installation; rebuild it "
                "with `capeval spice_u build-uniqueness --corpus coco-train2014 --out FILE` and pass ",
                Setting(shown="FILE"), "."))
        return UniquenessTable.load(path)
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"SPICE-U uniqueness table {name_or_path!r} not found: give a file built by "
            f"`capeval spice_u build-uniqueness` or one of {sorted(SHIPPED)}."
        )
    return UniquenessTable.load(path)


def table_label(name_or_path: str, table: UniquenessTable) -> str:
    """Short signature value: the table name (or file stem), its image count and parser version."""
    label = name_or_path if name_or_path in SHIPPED else Path(name_or_path).name.split(".")[0]
    return f"{label}:{table.n_images}img:parser={table.meta.get('parser', '?')}"
