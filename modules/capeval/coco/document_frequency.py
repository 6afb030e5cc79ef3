"""Document frequencies for CIDEr-D: from the scored references (pycocoevalcap) or COCO val2014.

:func:`reference_document_frequency` gives pycocoevalcap's (``cider_df="references"``): one document
per scored item, its references. The rest of this module builds ``cider_df="coco-val2014"``:

The document frequency of an n-gram (n = 1..4) is the number of COCO val2014 images (40,504 images,
202,654 captions, read by :func:`capeval.coco.captions.coco_captions`) among whose captions it occurs. The
captions are tokenised as written by the batch's tokenizer (like every token a metric sees: the
clean-up never reaches tokens), so the table is computed once per tokenizer and cached as JSON under
``capeval.paths.cache_dir("cider_df")``. CIDEr-D then uses ``log(40504)`` as its reference-length term.

Cache robustness: a table is written to a temporary file named after the writing process, then moved
into place with ``os.replace``, so a reader never sees half a file. Temporary files left by a killed
writer (its process is gone, or the file is over an hour old) are deleted by the next call. A cache
file that cannot be read or has the wrong shape is rebuilt, with a :class:`CacheRebuiltWarning`.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from capeval.coco.ngrams import BatchNgrams, ngrams_of
from capeval.paths import CacheRebuiltWarning, atomic_write, cache_dir
from capeval.text import Tokenizer, get_tokenizer
from capeval.validation import warn_at_caller

__all__ = [
    "CacheRebuiltWarning", "DocumentFrequency", "coco_document_frequency", "document_frequency_from_captions",
    "reference_document_frequency",
]

#: Bumped when the table's format or computation changes (old cache files are then ignored).
#: 2: captions are tokenised as written (version 1 tokenised them after the clean-up).
FORMAT_VERSION = 2
SPLIT = "val2014"
#: A temporary file whose writer cannot be identified is removed once it is this old (seconds).
STALE_TEMP_SECONDS = 3600.0


@dataclass
class DocumentFrequency:
    """``df[gram]`` (gram = its tokens joined by single spaces) over ``n_documents`` documents."""

    df: dict[str, int]
    n_documents: int
    settings: dict

    def lookup(self, grams: list[str]) -> np.ndarray:
        """Document frequency of each gram (0 when unseen), as float64."""
        get = self.df.get
        return np.fromiter((get(g, 0) for g in grams), dtype=np.float64, count=len(grams))


def reference_document_frequency(ng: BatchNgrams) -> tuple[np.ndarray, int]:
    """``(df per gram column, number of documents)`` with one document per item (its references)."""
    refs = ng.refs
    # references of one item are consecutive rows: view them as one row per item, merge duplicates
    ref_end = np.r_[ng.ref_start[1:], refs.shape[0]]
    per_item = sp.csr_matrix(
        (refs.data, refs.indices, refs.indptr[np.r_[ng.ref_start, ref_end[-1:]]]),
        shape=(ng.hyp.shape[0], refs.shape[1]),
    )
    per_item.sum_duplicates()
    df = np.bincount(per_item.indices, minlength=refs.shape[1]).astype(np.float64)
    return df, ng.hyp.shape[0]


def document_frequency_from_captions(
    documents: list[list[list[str]]], n: int = 4
) -> dict[str, int]:
    """``{gram: number of documents containing it}`` for tokenised captions grouped by document."""
    # each document's captions act as the references of one (empty) prediction
    ng = ngrams_of([[] for _ in documents], documents, n)
    df, _ = reference_document_frequency(ng)
    grams = ng.table.gram_strings()
    return {g: int(c) for g, c in zip(grams, df.tolist()) if c > 0}


def _cache_path(settings: dict) -> Path:
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    name = f"coco-{SPLIT}_tok-{settings['tokenizer']}_{key}.json"
    return cache_dir("cider_df") / name


def _write_atomic(path: Path, payload: dict) -> None:
    # the writer's pid is in the name, so that a later call can tell a dead writer's leftovers; the file gets the
    # umask's permissions
    with atomic_write(path, fsync=False, prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp") as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8")
        json.dump(payload, fh, ensure_ascii=False, separators=(",", ":"))
        fh.flush()
        fh.detach()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but belongs to someone else, or cannot tell: keep the file
    return True


def remove_stale_temp_files(directory: Path, max_age: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Delete ``*.tmp`` files left in ``directory`` by writers that were killed; return them.

    A file named ``<name>.<pid>.<random>.tmp`` is stale when process ``pid`` no longer exists (or the
    file is older than ``max_age`` seconds, in case the pid was reused); any other ``*.tmp`` file
    when it is older than ``max_age``.
    """
    removed = []
    now = time.time()
    for tmp in directory.glob("*.tmp"):
        parts = tmp.name.rsplit(".", 3)
        pid = int(parts[1]) if len(parts) == 4 and parts[1].isdigit() else None
        try:
            age = now - tmp.stat().st_mtime
        except OSError:
            continue
        if (pid is not None and pid != os.getpid() and not _pid_alive(pid)) or age > max_age:
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                pass
    return removed


_MEMORY: dict[str, DocumentFrequency] = {}
_LOCK = threading.Lock()


def coco_document_frequency(
    cleanup: str | None = "thumb", tokenizer: str | Tokenizer = "ptb"
) -> DocumentFrequency:
    """The COCO val2014 document-frequency table for this tokenizer (cached).

    ``cleanup`` is accepted for compatibility and ignored: tokens never see the clean-up.
    """
    tok = get_tokenizer(tokenizer)
    settings = {
        "corpus": f"coco-{SPLIT}",
        "tokenizer": tok.name,
        "n": 4,
        "format": FORMAT_VERSION,
    }
    path = _cache_path(settings)
    with _LOCK:
        if str(path) in _MEMORY:
            return _MEMORY[str(path)]
        remove_stale_temp_files(path.parent)
        table = _load(path, settings)
        if table is None:
            from capeval.progress import announce

            with announce(f"building CIDEr-D's COCO val2014 document frequencies for {tok.name} (once; cached in "
                          f"{path.parent})"):
                table = _compute(settings, tok)
            _write_atomic(
                path,
                {"settings": settings, "n_documents": table.n_documents, "df": table.df},
            )
        _MEMORY[str(path)] = table
        return table


def _load(path: Path, settings: dict) -> DocumentFrequency | None:
    """The cached table, or ``None`` (with a :class:`CacheRebuiltWarning` when a file was there but unusable)."""
    if not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:  # truncated, not UTF-8, not JSON
        return _unusable(path, f"cannot be read ({type(err).__name__}: {err})")
    problem = _shape_problem(payload, settings)
    if problem:
        return _unusable(path, problem)
    return DocumentFrequency(df=payload["df"], n_documents=payload["n_documents"], settings=settings)


def _shape_problem(payload, settings: dict) -> str | None:
    if not isinstance(payload, dict):
        kind = {list: "list", str: "string", type(None): "null", bool: "boolean"}.get(type(payload), "number")
        return f"holds a JSON {kind}, not an object"
    if payload.get("settings") != settings:
        return f"was written for other settings ({payload.get('settings')!r:.120})"
    n = payload.get("n_documents")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return f"has n_documents={n!r:.40}, not a positive integer"
    df = payload.get("df")
    if not isinstance(df, dict) or not df:
        return "has no 'df' table"
    if not all(type(c) is int and 0 < c <= n for c in df.values()):
        return "has document frequencies that are not integers in [1, n_documents]"
    return None


def _unusable(path: Path, why: str) -> None:
    warn_at_caller(f"CIDEr-D document-frequency cache {path} {why}; rebuilding it.", CacheRebuiltWarning)
    return None


def _compute(settings: dict, tok: Tokenizer) -> DocumentFrequency:
    from capeval.coco.captions import coco_captions

    captions = coco_captions(SPLIT)
    images = [caps for caps in captions.values() if caps]
    unique = list(dict.fromkeys(c for caps in images for c in caps))
    table = dict(zip(unique, tok.tokenize(unique)))
    documents = [[table[c] for c in caps] for caps in images]
    return DocumentFrequency(
        df=document_frequency_from_captions(documents), n_documents=len(images), settings=settings
    )
