"""File helpers shared by the loaders: locating the data, clear missing-file errors, image lookup."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from capeval.io import parse_json_lines
from capeval.paths import data_dir


def resolve_root(root: str | Path | None) -> Path:
    """``root`` if given, else the capeval data directory (``FileNotFoundError`` when there is none)."""
    if root is not None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"data directory {path} does not exist.")
        return path
    found = data_dir(required=True)
    assert found is not None
    return found


def require_file(path: Path, fmt: str) -> Path:
    """Return ``path`` or raise ``FileNotFoundError`` naming it and the format expected there."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; expected {fmt}.")
    return path


def read_json(path: Path, fmt: str) -> Any:
    require_file(path, fmt)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno}); expected {fmt}.") from None


def read_jsonl(path: Path, fmt: str) -> list[dict]:
    require_file(path, fmt)
    return parse_json_lines(path.read_text(encoding="utf-8"), path, f"; expected {fmt}")


class ImageFinder:
    """Find an image by file name in the first of several candidate folders that holds it.

    Folders are listed once (not stat'ed per image), so looking up thousands of names is cheap.
    """

    def __init__(self, folders: Iterable[Path]):
        self.folders = [f for f in folders if f.is_dir()]
        self._index: dict[str, Path] = {}
        for folder in reversed(self.folders):  # earlier folders win
            for entry in folder.iterdir():
                self._index[entry.name] = entry

    def __call__(self, file_name: str) -> Path | None:
        return self._index.get(file_name)


def image_finder(root: Path, image_dir: str | Path | None, defaults: Iterable[str]) -> ImageFinder:
    """An :class:`ImageFinder` over ``image_dir`` (when given) or the default folders under ``root``."""
    if image_dir is not None:
        folder = Path(image_dir).expanduser()
        if not folder.is_dir():
            raise FileNotFoundError(f"image_dir {folder} is not a directory.")
        return ImageFinder([folder])
    return ImageFinder(root / d for d in defaults)


def find_with_suffixes(find_image: Callable[[str], Path | None], name: str, suffixes: Iterable[str]) -> Path | None:
    """The first image ``find_image`` finds of ``name`` with each of ``suffixes`` appended (``""``: as named)."""
    for suffix in suffixes:
        path = find_image(name + suffix)
        if path is not None:
            return path
    return None


def kept_images(images: Callable[[], list[Any]] | None, kept: Sequence[int], n_rows: int
                ) -> Callable[[], list[Any]] | None:
    """The embedded images (a function reading one per row) of the rows ``kept`` (all rows when none was skipped)."""
    if images is None or len(kept) == n_rows:
        return images

    def pick() -> list[Any]:
        values = images()
        return [values[i] for i in kept]

    return pick


def norm_space(text: str) -> str:
    """Collapse whitespace runs and strip (the only normalisation loaders apply to caption text)."""
    return " ".join(text.split())


#: Where each image collection is looked for under the data directory, best first
#: (original-resolution folders, when someone adds them, before the re-encoded copies in shared/).
FLICKR8K_IMAGE_DIRS = ("flickr8k/Flicker8k_Dataset", "flickr8k/Flickr8k_Dataset", "flickr8k/images", "flickr8k/images-224")
PASCAL_IMAGE_DIRS = ("pascal50s/images",)
COCO_IMAGE_DIRS = ("coco/val2014", "coco_val2014_images")
