"""Document frequencies for CIDEr-D: from the scored references (pycocoevalcap) or COCO val2014.

:func:`reference_document_frequency` gives pycocoevalcap's (``cider_df="references"``): one document
per scored item, its references. The rest of this module builds ``cider_df="coco-val2014"``:

The document frequency of an n-gram (n = 1..4) is the number of COCO val2014 images (40,504 images,
202,654 captions, read by :func:`capeval.coco.captions.coco_captions`) among whose captions it occurs. The
captions go through the same clean-up and tokenizer as the batch being scored, so the table is
computed once per (clean-up, tokenizer) and cached as JSON under
``capeval.paths.cache_dir("cider_df")`` (written atomically: a temporary file then ``os.replace``).
CIDEr-D then uses ``log(40504)`` as its reference-length term.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from capeval.coco.ngrams import BatchNgrams, ngrams_of
from capeval.paths import cache_dir
from capeval.text import Tokenizer, clean_all, get_tokenizer

__all__ = [
    "DocumentFrequency", "coco_document_frequency", "document_frequency_from_captions", "reference_document_frequency",
]

#: Bumped when the table's format or computation changes (old cache files are then ignored).
FORMAT_VERSION = 1
SPLIT = "val2014"


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
    name = f"coco-{SPLIT}_clean-{settings['cleanup']}_tok-{settings['tokenizer']}_{key}.json"
    return cache_dir("cider_df") / name


def _write_atomic(path: Path, payload: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_MEMORY: dict[str, DocumentFrequency] = {}
_LOCK = threading.Lock()


def coco_document_frequency(
    cleanup: str | None = "thumb", tokenizer: str | Tokenizer = "ptb"
) -> DocumentFrequency:
    """The COCO val2014 document-frequency table for this clean-up and tokenizer (cached)."""
    tok = get_tokenizer(tokenizer)
    cleanup_name = "none" if cleanup is None else cleanup
    settings = {
        "corpus": f"coco-{SPLIT}",
        "cleanup": cleanup_name,
        "tokenizer": tok.name,
        "n": 4,
        "format": FORMAT_VERSION,
    }
    path = _cache_path(settings)
    with _LOCK:
        if str(path) in _MEMORY:
            return _MEMORY[str(path)]
        table = _load(path, settings)
        if table is None:
            table = _compute(settings, cleanup_name, tok)
            _write_atomic(
                path,
                {"settings": settings, "n_documents": table.n_documents, "df": table.df},
            )
        _MEMORY[str(path)] = table
        return table


def _load(path: Path, settings: dict) -> DocumentFrequency | None:
    if not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # unreadable or truncated by hand: recompute
    if payload.get("settings") != settings:
        return None
    return DocumentFrequency(df=payload["df"], n_documents=int(payload["n_documents"]), settings=settings)


def _compute(settings: dict, cleanup: str, tok: Tokenizer) -> DocumentFrequency:
    from capeval.coco.captions import coco_captions

    captions = coco_captions(SPLIT)
    images = [caps for caps in captions.values() if caps]
    cleaned = [clean_all(caps, cleanup) for caps in images]
    unique = list(dict.fromkeys(c for caps in cleaned for c in caps))
    table = dict(zip(unique, tok.tokenize(unique)))
    documents = [[table[c] for c in caps] for caps in cleaned]
    return DocumentFrequency(
        df=document_frequency_from_captions(documents), n_documents=len(images), settings=settings
    )
