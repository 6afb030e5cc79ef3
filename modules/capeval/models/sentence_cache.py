"""On-disk cache of sentence vectors: a text is encoded once per encoder settings, later calls read its vector.

Why: an evaluation's references are the same from one call to the next (a model scored after every epoch, a
benchmark rerun, a Space asked twice), and encoding is nearly all of ``sentence_cosine``'s time on a CPU (about 500
texts/s with all-MiniLM-L6-v2 on 2 cores). With the cache only the texts never seen before are encoded.

>>> import numpy as np, tempfile
>>> store = SentenceVectorStore("demo-settings", dim=3, path=tempfile.mkdtemp() + "/vectors.sqlite")
>>> store.put_many(["a dog"], np.array([[0.6, 0.8, 0.0]], dtype=np.float32))
>>> sorted(store.get_many(["a dog", "a cat"]))  # only what is stored
['a dog']

Layout: ``<cache dir>/sentence_vectors/vectors.sqlite``, one row per (settings, text): ``settings`` names the
encoder (:func:`~capeval.models.sentence_encoder.encoder_identity`: the PyPI package's version, a folder's file
hash, or a Hub id), its ``max_length`` and a hash of the encoder code, so another model, a model swapped under the
same folder, or a changed pooling never reads these vectors; ``text`` is the SHA-256 of the text's UTF-8 bytes
(first 16 bytes). Values: the float32 vector exactly as the encoder returned it (1.5 KB for 384 dimensions, about
2.2 KB a text on disk with its keys; the 20,000 Karpathy-test candidates and their references, 34,325 distinct
texts, take 74 MB).

Size: the file holds at most :data:`MAX_TEXTS` texts (150,000, about 330 MB, all encoders together); past it the
least recently used tenth is removed, so the new captions a training run produces every epoch do not pile up, while
its references, read every epoch, stay (a row read is marked as used at most once an hour, so reads rarely write).

A cached vector is the one the text got when first encoded, in whatever batch it was padded with: it equals a fresh
encoding to float32 rounding (about 1e-7), so scores with and without the cache agree to that level.

Safety, as capeval's other caches: WAL mode, a busy timeout and retries let several processes read and write at
once; each write is one transaction, so ``kill -9`` never leaves half a row; a row of the wrong length or with a
NaN / inf is ignored (the text is encoded again and the row replaced); a file that is not an SQLite database, found
when opening it or damaged anywhere and met by any later read or write, is moved aside
(:func:`capeval.paths.quarantine_cache_file`) and rebuilt, with one warning; a folder or file that cannot be
written (read-only, disk full) is still read and keeps the new vectors in memory for the rest of the process, with one
:class:`~capeval.models.feature_cache.CacheUnwritableWarning`.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.models.feature_cache import CacheUnwritableWarning
from capeval.models.sentence_encoder import SentenceEncoder
from capeval.sqlite_retry import is_locked
from capeval.validation import warn_at_caller

__all__ = ["CachedSentenceEncoder", "SentenceVectorStore", "cached_sentence_encoder", "encoder_settings"]

# A rowid table: a 1.5 KB vector fits in a leaf page beside its key (a WITHOUT ROWID table would give every row
# an overflow page: 4.7 KB a text on disk instead of 2.2 KB, keys and indexes included).
_SCHEMA = ("""
CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY,
    settings TEXT NOT NULL,
    text BLOB NOT NULL,
    vector BLOB NOT NULL,
    used INTEGER NOT NULL,
    UNIQUE (settings, text)
)
""", "CREATE INDEX IF NOT EXISTS vectors_by_use ON vectors (used)")
_PROBE = "SELECT id, settings, text, vector, used FROM vectors LIMIT 1"
#: Texts the cache file holds at most (all encoders together; about 2.2 KB each on disk for 384 dimensions, so
#: about 330 MB): past it the least recently used tenth is removed. A training run's new captions of every epoch would
#: otherwise pile up; its references, read every epoch, stay.
MAX_TEXTS = 150_000
#: A row read is marked as used again at most this often (seconds): reads rarely write.
REFRESH_SECONDS = 3600
#: Keys looked up per SELECT (SQLite's parameter limit is 32,766 in recent versions, 999 in old ones).
_LOOKUP_CHUNK = 900
#: Rows written per transaction.
_WRITE_CHUNK = 4096


def _now() -> float:
    """The clock of the ``used`` column (seconds; tests replace it)."""
    return time.time()


def text_key(text: str) -> bytes:
    """The first 16 bytes of SHA-256 of ``text`` in UTF-8 (lone surrogates escaped, so every str has a key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def encoder_settings(name: str | os.PathLike | None, max_length: int) -> str:
    """The cache's settings string for an encoder loaded by :func:`~capeval.models.sentence_encoder.load_sentence_encoder`:
    its identity, ``max_length`` and a hash of the encoder code (the pooling and normalisation)."""
    from capeval.models.sentence_encoder import encoder_code_hash, encoder_identity

    return f"{encoder_identity(name)};len={int(max_length)};code={encoder_code_hash()}"


class SentenceVectorStore:
    """``text -> float32 vector [dim]`` for one ``settings`` string, in an SQLite file (see the module docstring)."""

    def __init__(self, settings: str, dim: int, path: str | os.PathLike | None = None) -> None:
        self.settings, self.dim = settings, int(dim)
        self._memory: dict[bytes, np.ndarray] | None = None
        self._conn: sqlite3.Connection | None = None
        if path is None:
            from capeval.paths import cache_root

            path = cache_root() / "sentence_vectors" / "vectors.sqlite"
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
        except (OSError, sqlite3.DatabaseError) as err:  # cannot be written, or locked past every retry
            from capeval.sqlite_retry import is_access_error

            self._to_memory(err, keep_reading=is_access_error(err) and not is_locked(err))

    @property
    def in_memory(self) -> bool:
        """Whether the vectors live in memory (the cache file could not be written)."""
        return self._memory is not None

    def _open(self) -> None:
        from capeval.sqlite_retry import connect_or_rebuild

        self._conn = connect_or_rebuild(self.path, _SCHEMA, _PROBE)

    def _to_memory(self, err: BaseException, *, keep_reading: bool = False) -> None:
        """New vectors go to memory from now on; with ``keep_reading`` the file (read-only, full) is still read, and a
        file that could not be opened for writing is opened read-only when it can."""
        from capeval.sqlite_retry import connect_read_only

        if not keep_reading:
            self.close()
        elif self._conn is None and self.path.is_file():
            try:
                self._conn = connect_read_only(self.path, _PROBE)
            except sqlite3.DatabaseError:
                self._conn = None
        if self._memory is None:
            self._memory = {}
            reading = "reading what it holds and " if self._conn is not None else ""
            warn_at_caller(f"capeval sentence-vector cache: {self.path} cannot be written ({type(err).__name__}: "
                           f"{err}); {reading}keeping sentence vectors in memory for this process (set "
                           "CAPEVAL_CACHE_DIR to a writable folder to keep them across runs).", CacheUnwritableWarning)

    def _damaged(self, err: sqlite3.DatabaseError) -> None:
        """A statement met a damaged file (or one locked past every retry): move it aside and start a new one (one
        :class:`~capeval.paths.CacheRebuiltWarning`), else keep vectors in memory (one unwritable warning)."""
        from capeval.paths import CacheRebuiltWarning, quarantine_cache_file
        from capeval.sqlite_retry import connect_shared, is_access_error

        if is_locked(err) or is_access_error(err):
            self._to_memory(err, keep_reading=not is_locked(err))
            return
        self.close()
        target = quarantine_cache_file(self.path, "", warn=False)
        try:
            self._conn = connect_shared(self.path, _SCHEMA, _PROBE)
        except (OSError, sqlite3.DatabaseError) as again:
            self._to_memory(again)
            return
        where = f"moved aside to {target.name}" if target is not None else "deleted"
        warn_at_caller(f"capeval sentence-vector cache: {self.path} is not a usable SQLite database ({err}); {where} "
                       "and rebuilt (its vectors are encoded again; CAPEVAL_CACHE_DIR sets the cache folder).",
                       CacheRebuiltWarning)

    def _valid(self, blob: Any) -> np.ndarray | None:
        if not isinstance(blob, bytes) or len(blob) != 4 * self.dim:
            return None
        vector = np.frombuffer(blob, dtype="<f4")
        return vector if np.isfinite(vector).all() else None

    def get_many(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those ``texts`` that are stored (float32 ``[dim]``, read-only); a damaged row
        counts as missing. Rows read are marked as used (at most every :data:`REFRESH_SECONDS`)."""
        keys = {text_key(t): t for t in dict.fromkeys(texts)}
        found: dict[str, np.ndarray] = {}
        if self._memory is not None:
            found = {text: self._memory[key] for key, text in keys.items() if key in self._memory}
            if self._conn is None:
                return found
        listed, stale = [k for k, t in keys.items() if t not in found], []
        now = int(_now())
        for start in range(0, len(listed), _LOOKUP_CHUNK):
            chunk = listed[start:start + _LOOKUP_CHUNK]
            try:
                rows = self._conn.execute(
                    f"SELECT text, vector, used FROM vectors WHERE settings = ? AND text IN "
                    f"({','.join('?' * len(chunk))})", [self.settings, *chunk]).fetchall()
            except sqlite3.DatabaseError as err:  # damaged under us: the rest are missing, the file is rebuilt
                self._damaged(err)
                return found
            for key, blob, used in rows:
                vector = self._valid(blob)
                if vector is not None and key in keys:
                    found[keys[key]] = vector
                    if not isinstance(used, int) or used < now - REFRESH_SECONDS:
                        stale.append(key)
        if stale:
            self._mark_used(stale, now)
        return found

    def _mark_used(self, keys: list[bytes], now: int) -> None:
        """Set ``used`` of these rows to ``now`` (best effort: a locked or read-only file keeps the old times)."""
        from capeval.sqlite_retry import retry_locked

        def update():
            with self._conn:
                self._conn.execute("BEGIN IMMEDIATE")
                for start in range(0, len(keys), _LOOKUP_CHUNK):
                    chunk = keys[start:start + _LOOKUP_CHUNK]
                    self._conn.execute(f"UPDATE vectors SET used = ? WHERE settings = ? AND text IN "
                                       f"({','.join('?' * len(chunk))})", [now, self.settings, *chunk])

        try:
            retry_locked(update, retries=3)
        except sqlite3.DatabaseError:
            pass

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` for ``texts[i]`` (rows that are not finite, or not ``dim`` wide, are skipped)."""
        vectors = np.asarray(vectors, dtype="<f4")
        if vectors.ndim != 2 or vectors.shape != (len(texts), self.dim):
            raise ValueError(f"put_many needs [{len(texts)}, {self.dim}] vectors, got {vectors.shape}.")
        finite = np.isfinite(vectors).all(axis=1)
        now = int(_now())
        rows = [(self.settings, text_key(t), vectors[i].tobytes(), now) for i, t in enumerate(texts) if finite[i]]
        if self._memory is not None:
            self._memory.update((key, np.frombuffer(blob, dtype="<f4")) for _, key, blob, _ in rows)
            if len(self._memory) > MAX_TEXTS:  # the oldest entries first (dicts keep insertion order)
                for key in list(self._memory)[: len(self._memory) - int(0.9 * MAX_TEXTS)]:
                    del self._memory[key]
            return
        from capeval.sqlite_retry import retry_locked

        for start in range(0, len(rows), _WRITE_CHUNK):
            chunk = rows[start:start + _WRITE_CHUNK]
            try:
                retry_locked(lambda: self._write(chunk))
            except sqlite3.DatabaseError as err:
                from capeval.sqlite_retry import is_access_error

                if is_locked(err) or is_access_error(err):  # read-only file, full disk, locked: the rest in memory
                    self._to_memory(err, keep_reading=not is_locked(err))
                else:
                    self._damaged(err)  # a new file, or memory
                self.put_many([t for i, t in enumerate(texts) if finite[i]][start:], vectors[finite][start:])
                return
        if rows:
            try:
                retry_locked(self._evict, retries=3)
            except sqlite3.DatabaseError:
                pass  # a locked or damaged file: the next write tries again

    def _evict(self) -> int:
        """Past :data:`MAX_TEXTS` rows, remove the least recently used down to 90 % of it; the number removed."""
        (count,) = self._conn.execute("SELECT COUNT(*) FROM vectors INDEXED BY vectors_by_use").fetchone()
        if count <= MAX_TEXTS:
            return 0
        excess = count - int(0.9 * MAX_TEXTS)
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("DELETE FROM vectors WHERE id IN (SELECT id FROM vectors INDEXED BY vectors_by_use "
                               "ORDER BY used LIMIT ?)", (excess,))
        return excess

    def _write(self, rows: list[tuple]) -> None:
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany("INSERT OR REPLACE INTO vectors (settings, text, vector, used) VALUES (?, ?, ?, ?)",
                                   rows)

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None


class CachedSentenceEncoder:
    """A loaded sentence encoder whose :meth:`encode` reads stored vectors and encodes only the texts never stored
    (then stores them). Same interface as :class:`~capeval.models.sentence_encoder.SentenceEncoder`."""

    def __init__(self, encoder: Any, store: SentenceVectorStore) -> None:
        self.encoder, self.store = encoder, store
        self.name, self.max_length = encoder.name, encoder.max_length
        #: texts read from the store / encoded, over this object's life (for reports and tests)
        self.hits = self.misses = 0

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def device(self):
        return self.encoder.device

    def encode(self, texts: Sequence[str], *, batch_size: int = 128, progress_bar: bool | None = None) -> np.ndarray:
        """``[len(texts), dim]`` float32 unit vectors: stored ones read, the others encoded and stored."""
        if isinstance(texts, str):
            raise TypeError("encode takes a list of texts, not one string.")
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        found = self.store.get_many(unique)
        missing = [t for t in unique if t not in found]
        self.hits += len(unique) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = np.asarray(self.encoder.encode(missing, batch_size=batch_size, progress_bar=progress_bar),
                               dtype=np.float32)
            self.store.put_many(missing, fresh)
            found.update(zip(missing, fresh))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = found[text]
        return out

    similarity = SentenceEncoder.similarity  # the same dot products, over this class's encode


_STORES: dict[tuple[str, str, int], SentenceVectorStore] = {}


def cached_sentence_encoder(name: str | os.PathLike | None = None, *, device: Any = None, max_length: int = 256,
                            root: str | os.PathLike | None = None) -> Any:
    """:func:`~capeval.models.sentence_encoder.load_sentence_encoder` (kept per process) with its vectors cached in
    ``root`` (default ``<cache dir>/sentence_vectors``); the store is opened once per process, folder and settings.

    Only encoders whose identity can be checked are cached: the offline default (its package's version) and a local
    folder (a hash of its files). A Hub id is returned uncached: its weights can change under the same name."""
    from capeval.models import sentence_encoder

    name = sentence_encoder.DEFAULT_SENTENCE_ENCODER if name is None else name
    encoder = sentence_encoder.load_sentence_encoder(name, device=device, max_length=max_length)
    if not (sentence_encoder.is_default_encoder(name) or os.path.isdir(os.fspath(name))):
        return encoder
    settings = encoder_settings(name, max_length)
    if root is None:
        from capeval.paths import cache_root

        folder = cache_root() / "sentence_vectors"
    else:
        folder = Path(root)
    key = (str(folder), settings, encoder.dim)
    store = _STORES.get(key)
    if store is None or (not store.in_memory and not store.path.exists()):  # a cache folder emptied under us
        if store is not None:
            store.close()
        store = _STORES[key] = SentenceVectorStore(settings, encoder.dim, folder / "vectors.sqlite")
    return CachedSentenceEncoder(encoder, store)
