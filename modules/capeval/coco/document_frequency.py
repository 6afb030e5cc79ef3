"""Document frequencies for CIDEr-D: from the scored references (pycocoevalcap) or COCO val2014.

:func:`reference_document_frequency` gives pycocoevalcap's (``cider_df="references"``): one document
per scored item, its references. The rest of this module builds ``cider_df="coco-val2014"``:

The document frequency of an n-gram (n = 1..4) is the number of COCO val2014 images (40,504 images,
202,654 captions, read by :func:`capeval.coco.captions.coco_captions`) among whose captions it occurs. The
captions are tokenised as written by the batch's tokenizer (like every token a metric sees: the
clean-up never reaches tokens), so the table is computed once per tokenizer (:func:`document_frequency_arrays`:
one sort per n-gram order, no sparse matrix) and cached under ``capeval.paths.cache_dir("cider_df")`` in a
compact binary file: :data:`MAGIC`, a one-line JSON header (settings, sizes, CRC-32 of the rest), the counts as
little-endian ``uint32``, then the grams' UTF-8 text joined by newlines, in sorted order (never a pickle). It is read
back as a :class:`SortedDocumentFrequency` (a split, no dict of 1.6 million grams unless many are looked up).
CIDEr-D then uses ``log(40504)`` as its reference-length term.

Cache robustness: a table is written to a temporary file named after the writing process, then moved
into place with ``os.replace`` (:func:`capeval.paths.atomic_write`, the umask's permissions), so a reader never
sees half a file. Temporary files left by a killed writer (its process is gone, or the file is over an hour old)
are deleted by the next call. A cache file that cannot be read or has the wrong shape is rebuilt, with a
:class:`CacheRebuiltWarning`; a cache folder that cannot be written (read-only, disk full) keeps the table in memory
for the process, with one :class:`~capeval.paths.CacheUnwritableWarning` naming the folder and ``CAPEVAL_CACHE_DIR``.
"""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import threading
import zlib
from bisect import bisect_left
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from capeval.coco.ngrams import BatchNgrams
from capeval.paths import CacheRebuiltWarning, CacheUnwritableWarning, atomic_write, cache_dir, cache_root
from capeval.text import Tokenizer, get_tokenizer
from capeval.validation import warn_at_caller

__all__ = [
    "CacheRebuiltWarning", "DocumentFrequency", "SortedDocumentFrequency", "coco_document_frequency",
    "document_frequency_arrays", "document_frequency_from_captions", "reference_document_frequency",
]

#: Bumped when the table's format or computation changes (old cache files are then ignored).
#: 2: captions are tokenised as written (version 1 tokenised them after the clean-up).
#: 3: a binary file (:data:`MAGIC`, JSON header line, ``uint32`` counts, sorted newline-joined grams), not JSON.
FORMAT_VERSION = 3
#: The first bytes of a cache file.
MAGIC = b"capeval-cider-df\n"
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


class SortedDocumentFrequency(DocumentFrequency):
    """A :class:`DocumentFrequency` held as its grams in sorted order (``grams``, a list of ``str``) and their
    document frequencies (``counts``, aligned). :meth:`lookup` searches by bisection; ``df`` (a dict) is built on
    first use, or once the grams looked up reach a quarter of the table's (a dict is then cheaper)."""

    def __init__(self, grams: list[str], counts: np.ndarray, n_documents: int, settings: dict):
        self.grams = grams
        self.counts = counts
        self.n_documents = n_documents
        self.settings = settings
        self._df: dict[str, int] | None = None
        self._counts_list: list[int] | None = None
        self._looked_up = 0

    @classmethod
    def from_arrays(cls, grams: list[str], counts: np.ndarray, n_documents: int,
                    settings: dict) -> SortedDocumentFrequency:
        """The table of ``grams`` (distinct, any order) and their ``counts``."""
        order = sorted(range(len(grams)), key=grams.__getitem__)
        return cls([grams[i] for i in order], np.asarray(counts)[np.array(order, dtype=np.int64)], n_documents,
                   settings)

    @property
    def df(self) -> dict[str, int]:  # type: ignore[override]
        if self._df is None:
            self._df = dict(zip(self.grams, self.counts.tolist()))
        return self._df

    def __repr__(self) -> str:
        return f"SortedDocumentFrequency({len(self.grams)} grams, n_documents={self.n_documents}, {self.settings})"

    def lookup(self, grams: list[str]) -> np.ndarray:
        """Document frequency of each gram (0 when unseen), as float64."""
        self._looked_up += len(grams)
        if self._df is not None or 4 * self._looked_up > len(self.grams):
            return super().lookup(grams)
        if self._counts_list is None:
            self._counts_list = self.counts.tolist()
        table, counts, size = self.grams, self._counts_list, len(self.grams)

        def one(gram: str) -> int:
            at = bisect_left(table, gram)
            return counts[at] if at < size and table[at] == gram else 0

        return np.fromiter(map(one, grams), dtype=np.float64, count=len(grams))


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


def document_frequency_arrays(
    documents: Sequence[Sequence[Sequence[str]]], n: int = 4
) -> tuple[list[str], np.ndarray]:
    """``(grams, counts)``: every 1..n-gram of the tokenised captions (grouped by document) and the number of
    documents among whose captions it occurs (``int64``, all >= 1).

    Grams are spelled as their tokens joined by single spaces, the tokens re-split on whitespace as pycocoevalcap
    does (``" ".join(tokens).split()``), so no gram holds a newline. The same table as counting each document's
    captions as the references of one item (:func:`reference_document_frequency` of
    :func:`capeval.coco.ngrams.ngrams_of`), with one sort of ``(gram, document)`` keys per order instead of a sparse
    matrix.
    """
    captions = [c for doc in documents for c in doc]
    n_docs = len(documents)
    words = list(chain.from_iterable(captions))
    raw = {w: i for i, w in enumerate(dict.fromkeys(words))}
    raw_ids = np.fromiter(map(raw.__getitem__, words), dtype=np.int64, count=len(words))
    lengths = np.fromiter(map(len, captions), dtype=np.int64, count=len(captions))
    pieces = [w.split() for w in raw]
    if all(len(p) == 1 and p[0] == w for p, w in zip(pieces, raw)):  # tokens as given: nothing to re-split
        names, tok = list(raw), raw_ids
    else:  # " ".join(tokens).split() is each token's own split(), concatenated
        vocab = {w: i for i, w in enumerate(dict.fromkeys(chain.from_iterable(pieces)))}
        n_pieces = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        piece_ids = np.fromiter((vocab[w] for p in pieces for w in p), dtype=np.int64, count=int(n_pieces.sum()))
        piece_start = np.cumsum(n_pieces) - n_pieces
        per_token = n_pieces[raw_ids]
        caption_of_token = np.repeat(np.arange(len(captions), dtype=np.int64), lengths)
        lengths = np.bincount(caption_of_token, weights=per_token, minlength=len(captions)).astype(np.int64)
        first_piece = np.repeat(np.cumsum(per_token) - per_token, per_token)
        within = np.arange(int(per_token.sum()), dtype=np.int64) - first_piece
        tok = piece_ids[np.repeat(piece_start[raw_ids], per_token) + within]
        names = list(vocab)
    n_tokens = tok.size
    if not n_tokens:
        return [], np.zeros(0, dtype=np.int64)
    n_caps = np.fromiter(map(len, documents), dtype=np.int64, count=n_docs)
    doc = np.repeat(np.repeat(np.arange(n_docs, dtype=np.int64), n_caps), lengths)
    ends = np.cumsum(lengths)
    remaining = np.repeat(ends, lengths) - np.arange(n_tokens, dtype=np.int64)  # tokens from here to the end (>= 1)
    n_names = np.int64(max(len(names), 1))
    grams: list[str] = []
    counts: list[np.ndarray] = []
    prev_ids, prev_strings, prev_types = tok, names, len(names)  # order-(k-1) gram id at each start token
    limit = np.iinfo(np.int64).max
    for k in range(1, n + 1):
        valid = np.flatnonzero(remaining >= k)
        if not valid.size:
            break
        # an order-k gram is (order-(k-1) gram id, last token id); in the sort key, then the document
        key = tok[valid] if k == 1 else prev_ids[valid] * n_names + tok[valid + k - 1]
        key_bound = len(names) if k == 1 else prev_types * int(n_names)
        distinct = None
        if key_bound * n_docs > limit:  # the combined key would overflow: number the grams first
            distinct, key = np.unique(key, return_inverse=True)
            key = key.reshape(-1).astype(np.int64)
        combined = key * np.int64(n_docs) + doc[valid]
        order = np.argsort(combined)
        combined = combined[order]
        gram_key = combined // n_docs
        new_gram = np.empty(gram_key.size, dtype=bool)
        new_gram[0] = True
        np.not_equal(gram_key[1:], gram_key[:-1], out=new_gram[1:])
        new_pair = np.empty(combined.size, dtype=bool)
        new_pair[0] = True
        np.not_equal(combined[1:], combined[:-1], out=new_pair[1:])
        gram_id = np.cumsum(new_gram) - 1  # of each sorted occurrence
        counts.append(np.bincount(gram_id[new_pair]))
        keys = gram_key[new_gram] if distinct is None else distinct[gram_key[new_gram]]
        if k == 1:
            strings = [names[t] for t in keys.tolist()]
        else:
            strings = [prev_strings[p] + " " + names[t]
                       for p, t in zip((keys // n_names).tolist(), (keys % n_names).tolist())]
        grams.extend(strings)
        if k < n:
            prev_ids = np.zeros(n_tokens, dtype=np.int64)
            prev_ids[valid[order]] = gram_id
            prev_strings, prev_types = strings, len(strings)
    return grams, np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


def document_frequency_from_captions(
    documents: list[list[list[str]]], n: int = 4
) -> dict[str, int]:
    """``{gram: number of documents containing it}`` for tokenised captions grouped by document."""
    grams, counts = document_frequency_arrays(documents, n)
    return dict(zip(grams, counts.tolist()))


def _cache_path(settings: dict) -> Path:
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    name = f"coco-{SPLIT}_tok-{settings['tokenizer']}_{key}.df"
    return cache_dir("cider_df") / name


def _encode(settings: dict, table: DocumentFrequency) -> list[bytes]:
    """The cache file's bytes, in pieces: magic, header line, ``uint32`` counts, newline-joined grams (sorted)."""
    if not isinstance(table, SortedDocumentFrequency):
        table = SortedDocumentFrequency.from_arrays(list(table.df), np.fromiter(table.df.values(), dtype=np.int64,
                                                    count=len(table.df)), table.n_documents, settings)
    if table.n_documents >= 2**32:
        raise ValueError("a document-frequency cache file holds at most 2**32 - 1 documents.")
    counts = table.counts.astype("<u4").tobytes()
    text = "\n".join(table.grams).encode("utf-8")
    header = {"settings": settings, "n_documents": int(table.n_documents), "n_grams": len(table.grams),
              "text_bytes": len(text), "crc32": zlib.crc32(text, zlib.crc32(counts))}
    return [MAGIC, json.dumps(header, sort_keys=True).encode("utf-8") + b"\n", counts, text]


def _write_atomic(path: Path, chunks: Iterable[bytes]) -> None:
    # the writer's pid is in the name, so that a later call can tell a dead writer's leftovers; the file gets the
    # umask's permissions
    with atomic_write(path, fsync=False, prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp") as raw:
        for chunk in chunks:
            raw.write(chunk)


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
    try:
        path = _cache_path(settings)
        unwritable = None
    except OSError as err:  # the cache folder cannot be created: computed and kept in memory
        path, unwritable = cache_root() / "cider_df" / "unwritable", err
    with _LOCK:
        if str(path) in _MEMORY:
            return _MEMORY[str(path)]
        if unwritable is None:
            remove_stale_temp_files(path.parent)
        table = _load(path, settings)
        if table is None:
            from capeval.progress import announce

            with announce(f"building CIDEr-D's COCO val2014 document frequencies for {tok.name} (once; cached in "
                          f"{path.parent})"):
                table = _compute(settings, tok)
            if unwritable is None:
                try:
                    _write_atomic(path, _encode(settings, table))
                except OSError as err:  # read-only folder, full disk: the table is kept for this process
                    unwritable = err
            if unwritable is not None:
                warn_at_caller(f"CIDEr-D document-frequency cache {path.parent} cannot be written "
                               f"({type(unwritable).__name__}: {unwritable}); the table is kept in memory for this "
                               "process and built again by the next one (set CAPEVAL_CACHE_DIR to a writable folder "
                               "with free space).", CacheUnwritableWarning)
        _MEMORY[str(path)] = table
        return table


def _load(path: Path, settings: dict) -> DocumentFrequency | None:
    """The cached table, or ``None`` (with a :class:`CacheRebuiltWarning` when a file was there but unusable)."""
    if not path.is_file():
        return None
    try:
        data = path.read_bytes()
    except OSError as err:
        return _unusable(path, f"cannot be read ({type(err).__name__}: {err})")
    if not data.startswith(MAGIC):
        return _unusable(path, f"is not a capeval CIDEr-D document-frequency file (it starts {data[:16]!r})")
    end = data.find(b"\n", len(MAGIC))
    try:
        if end < 0:
            raise ValueError("no header line")
        header = json.loads(data[len(MAGIC):end].decode("utf-8"))
    except ValueError as err:  # not UTF-8, not JSON
        return _unusable(path, f"cannot be read (its header: {type(err).__name__}: {err})")
    problem = _header_problem(header, settings)
    if problem:
        return _unusable(path, problem)
    n_grams, n_documents = header["n_grams"], header["n_documents"]
    counts_at = end + 1
    text_at = counts_at + 4 * n_grams
    if len(data) != text_at + header["text_bytes"]:
        return _unusable(path, f"has {len(data)} bytes where its header announces {text_at + header['text_bytes']} "
                               "(truncated or damaged)")
    body = memoryview(data)[counts_at:]
    if zlib.crc32(body) != header.get("crc32"):
        return _unusable(path, "is damaged (its CRC-32 differs from its header's)")
    counts = np.frombuffer(data, dtype="<u4", count=n_grams, offset=counts_at)
    if counts.min() < 1 or counts.max() > n_documents:
        return _unusable(path, "has document frequencies that are not integers in [1, n_documents]")
    try:
        grams = data[text_at:].decode("utf-8").split("\n")
    except UnicodeDecodeError as err:
        return _unusable(path, f"cannot be read (its grams: {type(err).__name__}: {err})")
    if len(grams) != n_grams:
        return _unusable(path, f"holds {len(grams)} grams where its header announces {n_grams}")
    return SortedDocumentFrequency(grams, counts.astype(np.int64), n_documents, settings)


def _header_problem(header, settings: dict) -> str | None:
    if not isinstance(header, dict):
        kind = {list: "list", str: "string", type(None): "null", bool: "boolean"}.get(type(header), "number")
        return f"has a JSON {kind} as its header, not an object"
    if header.get("settings") != settings:
        return f"was written for other settings ({header.get('settings')!r:.120})"
    n = header.get("n_documents")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return f"has n_documents={n!r:.40}, not a positive integer"
    for field in ("n_grams", "text_bytes"):
        value = header.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"has {field}={value!r:.40}: no 'df' table"
    return None


def _unusable(path: Path, why: str) -> None:
    warn_at_caller(f"CIDEr-D document-frequency cache {path} {why}; rebuilding it.", CacheRebuiltWarning)
    return None


@contextlib.contextmanager
def _gc_paused():
    """Cyclic garbage collection off: building millions of token lists and strings (none in a cycle) otherwise
    triggers full collections that double the build's time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compute(settings: dict, tok: Tokenizer) -> DocumentFrequency:
    from capeval.coco.captions import coco_captions

    with _gc_paused():
        captions = coco_captions(SPLIT)
        images = [caps for caps in captions.values() if caps]
        unique = list(dict.fromkeys(c for caps in images for c in caps))
        table = dict(zip(unique, tok.tokenize(unique)))
        grams, counts = document_frequency_arrays([[table[c] for c in caps] for caps in images])
        return SortedDocumentFrequency.from_arrays(grams, counts, len(images), settings)
