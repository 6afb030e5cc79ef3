"""Checking a catalog model's files before they are read: a damaged model gives one error, never a wrong number.

Two sources of truth, both the files' SHA-256 (hex):

* :data:`MANIFEST` (``capeval/data/model_files.json``): ``{model name: {file path in its folder: sha256}}`` for every
  catalog model whose files this source tree holds (bundled in ``capeval/pretrained/``, Hub repos in
  ``hub_models/``). Written by ``python -m capeval.model_integrity write`` after a model is built;
  ``tests/core/test_model_integrity.py`` fails when it and the files disagree.
* The Hugging Face cache itself: a snapshot's files are links to ``blobs/<name>``, where ``<name>`` is the SHA-256 of
  the content for LFS files (64 hex digits) or the git blob id (SHA-1 of ``blob <size>\\0`` + content, 40 hex digits)
  for the others; so any model fetched from the Hub is checked, listed in the manifest or not.

:func:`verify_model_folder` checks the files of one resolved folder; a hash is computed once per (path, size,
modification time) in a process. A file that is missing or differs raises :class:`DamagedModelError` (a
``ValueError``) naming the model, the file and how to get it back (``capeval models fetch NAME`` after deleting it,
or reinstalling capeval for a bundled model). Folders given as paths (a model you trained) are not checked: there is
no record of what they should hold.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

#: The manifest's place inside the package.
MANIFEST = Path(__file__).resolve().parent / "data" / "model_files.json"
_HASHES: dict[tuple, str] = {}


class DamagedModelError(ValueError):
    """A catalog model file whose content is not the published one (or that is missing)."""


@lru_cache(maxsize=1)
def manifest() -> dict[str, dict[str, str]]:
    """:data:`MANIFEST`'s content (``{}`` when absent: an install built without it checks the Hub cache only)."""
    try:
        return json.loads(MANIFEST.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _digest(path: Path, algorithm: str, git_blob: bool = False) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, algorithm, git_blob)
    if key not in _HASHES:
        digest = hashlib.new(algorithm)
        if git_blob:
            digest.update(b"blob %d\0" % st.st_size)
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def sha256_of(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's content."""
    return _digest(Path(path), "sha256")


def _hub_blob_problem(link: Path) -> str | None:
    """Why a Hugging Face cache snapshot file differs from the blob name it links to, or ``None``."""
    target = Path(os.path.realpath(link))
    name = target.name
    if target.parent.name != "blobs" or not all(c in "0123456789abcdef" for c in name):
        return None  # not a cache blob (a plain copy): nothing to compare with
    if len(name) == 64:
        return None if sha256_of(target) == name else "its SHA-256 differs from the Hub's"
    if len(name) == 40:
        return None if _digest(target, "sha1", git_blob=True) == name else "its git blob id differs from the Hub's"
    return None


def verify_model_folder(name: str, folder: str | os.PathLike, *,
                        advice: str = "delete the model's folder and fetch it again") -> None:
    """Check that ``folder`` (where catalog model ``name`` resolved) holds the published files.

    ``DamagedModelError`` naming the first file that is missing or differs and ending with ``advice`` (how to get
    the files back; see the module docstring)."""
    folder = Path(folder)
    expected = manifest().get(name, {})
    for relative, digest in expected.items():
        path = folder / relative
        if not path.is_file():
            raise DamagedModelError(f"model {name!r}: {path} is missing; {advice}.")
        if sha256_of(path) != digest:
            raise DamagedModelError(f"model {name!r}: {path} is damaged (its SHA-256 differs from the published "
                                    f"file's); {advice}.")
    for path in sorted(folder.rglob("*")):
        if path.is_symlink() and path.is_file():
            problem = _hub_blob_problem(path)
            if problem:
                raise DamagedModelError(f"model {name!r}: {path} is damaged ({problem}); {advice}.")


def _read_when_scoring(relative: str) -> bool:
    """Whether a model file can change a score: weights, configurations, vocabularies, tokenizers; not its card
    (``*.md``) nor its training records (``training*.json``), which a Hub upload may rewrite."""
    base = relative.rsplit("/", 1)[-1]
    return not (base.endswith(".md") or base.startswith("training") or base.startswith("."))


def folder_hashes(folder: str | os.PathLike) -> dict[str, str]:
    """``{file path relative to folder: sha256}`` of the files under ``folder`` that can change a score
    (sorted)."""
    folder = Path(folder)
    files = [path for path in sorted(folder.rglob("*")) if path.is_file() and "__pycache__" not in path.parts]
    return {path.relative_to(folder).as_posix(): sha256_of(path)
            for path in files if _read_when_scoring(path.relative_to(folder).as_posix())}


def source_folders() -> dict[str, Path]:
    """``{catalog name: folder}`` of the models whose files this source tree holds: ``capeval/pretrained/*`` and the
    checkout's ``hub_models/*``."""
    from capeval.catalog import MODELS

    package = Path(__file__).resolve().parent
    roots = [package / "pretrained", package.parents[1] / "hub_models"]
    found = {}
    for root in roots:
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if folder.is_dir() and folder.name in MODELS:
                    found.setdefault(folder.name, folder)
    return found


def write_manifest() -> Path:
    """Write :data:`MANIFEST` from :func:`source_folders` (run after building a model)."""
    payload = {name: folder_hashes(folder) for name, folder in source_folders().items()}
    MANIFEST.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    manifest.cache_clear()
    return MANIFEST


if __name__ == "__main__":
    if sys.argv[1:] != ["write"]:
        sys.exit("usage: python -m capeval.model_integrity write")
    print(f"wrote {write_manifest()}")
