"""CIDEr-D's whole-data document frequencies on disk: counted by an external merge sort, looked up by block reads.

:func:`capeval.score_dataset` counts the document frequency of every 1- to 4-gram of every row's references before it
scores. :mod:`capeval.coco.compact_df` keeps that table in memory (24 bytes per distinct n-gram, in every process);
at the scale of a billion-row dataset it would be gigabytes per process. Here it lives in one file and memory stays
bounded whatever the data's size:

* :class:`DiskDocumentFrequencyCounter` adds chunks' counts to a sorted in-memory table of at most ``memory_entries``
  entries; a full table is written to disk as a sorted *run*; :meth:`~DiskDocumentFrequencyCounter.write` merges the
  runs (at most :data:`FAN_IN` at a time, :data:`MERGE_BLOCK` entries of each in memory) into the table file;
  :func:`merge_tables` merges tables counted over disjoint documents (one per process) the same way.
* :class:`DiskDocumentFrequency` is a :class:`~capeval.coco.document_frequency.DocumentFrequency` for
  :class:`~capeval.coco.cider.CiderD` that holds only a sparse index in memory (the first key of every
  :data:`BLOCK` entries: 16 bytes per 1,024 n-grams) and reads the blocks a lookup needs with ``os.pread`` (the
  operating system's page cache, not the process, holds the file).

Keys are :func:`capeval.coco.compact_df.gram_keys` (16-byte BLAKE2b digests, byte order), so the counts are exact
unless two n-grams share a 128-bit digest (below ``N² / 2¹²⁹`` for ``N`` distinct n-grams).

File format (``capeval-df/1``), little-endian: 8 bytes magic ``b"CAPEVDF1"``, 8 bytes the JSON header's length, the
JSON header (``format``, ``documents``, ``entries``, ``block``, ``keys_at``, ``counts_at``, ``index_at``,
``index_entries``, ``crc32``: of every byte after the header, checked on opening) padded to :data:`HEADER_BYTES`; then the sorted keys (16 bytes each), their ``int64`` counts, and
the index (every :data:`BLOCK`-th key). Written to a temporary file, flushed to disk and renamed.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import weakref
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from capeval.coco.compact_df import KEY_BYTES, DocumentFrequencyCounter, _merge, gram_keys
from capeval.coco.document_frequency import DocumentFrequency
from capeval.paths import file_mode

__all__ = ["DiskDocumentFrequency", "DiskDocumentFrequencyCounter", "FORMAT", "merge_tables", "read_header",
           "verify_table"]

FORMAT = "capeval-df/1"
MAGIC = b"CAPEVDF1"
#: Bytes reserved for magic, length and JSON header (the keys start here).
HEADER_BYTES = 4096
#: Entries per index block (the unit a lookup reads).
BLOCK = 1024
#: Runs merged at once; more are merged in rounds.
FAN_IN = 32
#: Entries of each run held in memory during a merge.
MERGE_BLOCK = 32_768
#: Entries a counter holds in memory before it writes them to disk as a sorted run (24 bytes each).
MEMORY_ENTRIES = 2_000_000
#: Entries of added chunks a counter collects before merging them into its sorted table.
MERGE_EVERY = 1_000_000
#: Blocks read at once by one lookup (at most ``MAX_READ_BLOCKS * BLOCK * 24`` bytes: 6 MB).
MAX_READ_BLOCKS = 256
_KEY = np.dtype(f"S{KEY_BYTES}")
_COUNT = np.dtype("<i8")


class _Run:
    """A sorted run on disk: ``entries`` keys at ``keys_at`` in ``keys_path`` and their counts at ``counts_at`` in
    ``counts_path`` (a spilled run's two files, or the regions of a table file), read front to back in blocks."""

    def __init__(self, keys_path: str | os.PathLike, keys_at: int, counts_path: str | os.PathLike, counts_at: int,
                 entries: int, owned: bool):
        self.keys_path, self.keys_at = str(keys_path), int(keys_at)
        self.counts_path, self.counts_at = str(counts_path), int(counts_at)
        self.entries, self.owned, self.read = int(entries), owned, 0

    @staticmethod
    def spilled(stem: Path) -> _Run:
        """The run in ``<stem>.keys`` / ``<stem>.counts`` (removed by :meth:`remove`)."""
        return _Run(f"{stem}.keys", 0, f"{stem}.counts", 0, os.path.getsize(f"{stem}.keys") // KEY_BYTES, True)

    @staticmethod
    def of_table(path: str | os.PathLike, header: dict) -> _Run:
        """The entries of the ``capeval-df/1`` file at ``path`` whose header is ``header`` (left in place by
        :meth:`remove`)."""
        return _Run(path, header["keys_at"], path, header["counts_at"], header["entries"], False)

    @staticmethod
    def write(stem: Path, keys: np.ndarray, counts: np.ndarray) -> _Run:
        for suffix, array in ((".keys", np.ascontiguousarray(keys, dtype=_KEY)),
                              (".counts", np.ascontiguousarray(counts, dtype=_COUNT))):
            with open(f"{stem}{suffix}", "wb") as handle:
                handle.write(memoryview(array).cast("B"))
        return _Run.spilled(stem)

    def next_block(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        n = min(size, self.entries - self.read)
        with open(self.keys_path, "rb") as handle:
            handle.seek(self.keys_at + self.read * KEY_BYTES)
            keys = np.frombuffer(handle.read(n * KEY_BYTES), dtype=_KEY)
        with open(self.counts_path, "rb") as handle:
            handle.seek(self.counts_at + self.read * 8)
            counts = np.frombuffer(handle.read(n * 8), dtype=_COUNT)
        if len(keys) != n or len(counts) != n:
            raise ValueError(f"{self.keys_path}: a sorted run ended early.")
        self.read += n
        return keys, counts

    @property
    def exhausted(self) -> bool:
        return self.read >= self.entries

    def remove(self) -> None:
        if self.owned:
            Path(self.keys_path).unlink(missing_ok=True)
            Path(self.counts_path).unlink(missing_ok=True)


def _merge_runs(runs: Sequence[_Run], block: int = MERGE_BLOCK) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The runs' keys in order, counts of equal keys added, as a stream of sorted blocks (no key in two blocks).

    Each step takes from every run's buffer the keys up to the smallest last buffered key of the runs that still
    have entries on disk: no later key can be smaller, so those keys are final."""
    buffers = [(np.zeros(0, _KEY), np.zeros(0, _COUNT)) for _ in runs]
    while True:
        for i, run in enumerate(runs):
            if not len(buffers[i][0]) and not run.exhausted:
                buffers[i] = run.next_block(block)
        live = [i for i in range(len(runs)) if len(buffers[i][0])]
        if not live:
            return
        pending = [buffers[i][0][-1] for i in live if not runs[i].exhausted]
        bound = min(pending) if pending else None
        taken_keys, taken_counts = [], []
        for i in live:
            keys, counts = buffers[i]
            cut = len(keys) if bound is None else int(np.searchsorted(keys, bound, side="right"))
            taken_keys.append(keys[:cut])
            taken_counts.append(counts[:cut])
            buffers[i] = (keys[cut:], counts[cut:])
        keys, counts = _merge(np.concatenate(taken_keys), np.concatenate(taken_counts))
        if len(keys):
            yield keys, counts


class DiskDocumentFrequencyCounter(DocumentFrequencyCounter):
    """Adds ``(grams, counts)`` of chunk after chunk (:meth:`add`, with the chunk's number of documents); :meth:`write`
    puts the table in a file.

    Memory: the sorted table (at most ``memory_entries`` entries, 24 bytes each; default :data:`MEMORY_ENTRIES`) plus
    the chunks not yet merged into it (at most ``merge_every`` entries; :data:`MERGE_EVERY`); a full table becomes a
    sorted run on disk in ``spill_dir``."""

    def __init__(self, spill_dir: str | os.PathLike, *, memory_entries: int | None = None,
                 merge_every: int | None = None):
        super().__init__(merge_every=MERGE_EVERY if merge_every is None else merge_every)
        self.spill_dir = Path(spill_dir)
        self.memory_entries = int(MEMORY_ENTRIES if memory_entries is None else memory_entries)
        if self.memory_entries < 1:
            raise ValueError("memory_entries must be positive.")
        self._runs: list[_Run] = []

    def _flush(self) -> None:
        super()._flush()
        if len(self._keys) >= self.memory_entries:
            self._spill()

    def table(self):
        raise TypeError("a DiskDocumentFrequencyCounter's table may be partly on disk: write(path) it, then read it "
                        "with DiskDocumentFrequency.open(path).")

    def _spill(self) -> None:
        if len(self._keys):
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            self._runs.append(_Run.write(self.spill_dir / f"run-{len(self._runs):06d}", self._keys, self._counts))
            self._keys, self._counts = np.zeros(0, _KEY), np.zeros(0, _COUNT)

    @property
    def runs(self) -> int:
        """Sorted runs written to disk so far."""
        return len(self._runs)

    def write(self, path: str | os.PathLike) -> dict:
        """The table into ``path`` (atomically); the runs are removed. Returns the file's header."""
        self._flush()
        if self._runs:
            self._spill()
            header = _write_merged(Path(path), self._runs, self.spill_dir, self.documents)
        else:
            blocks = iter([(self._keys, self._counts)] if len(self._keys) else [])
            header = _write_table(Path(path), blocks, self.documents)
        self._runs = []
        self._keys, self._counts = np.zeros(0, _KEY), np.zeros(0, _COUNT)
        shutil.rmtree(self.spill_dir, ignore_errors=True)
        return header


def merge_tables(paths: Sequence[str | os.PathLike], path: str | os.PathLike,
                 spill_dir: str | os.PathLike | None = None) -> dict:
    """One table at ``path`` from ``capeval-df/1`` tables counted over disjoint documents (counts and document counts
    added; e.g. one table per process); the inputs are left in place. Returns the new file's header."""
    headers = [read_header(p) for p in paths]  # each file's header read once
    runs = [_Run.of_table(p, header) for p, header in zip(paths, headers)]
    documents = sum(header["documents"] for header in headers)
    spill = Path(spill_dir) if spill_dir is not None else Path(path).parent / f".tmp-{Path(path).name}.runs"
    try:
        return _write_merged(Path(path), runs, spill, documents)
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _write_merged(path: Path, runs: list[_Run], spill_dir: Path, documents: int) -> dict:
    """Merge ``runs`` into the table at ``path``: in rounds of :data:`FAN_IN` runs (intermediate runs in
    ``spill_dir``), so that memory is ``FAN_IN`` blocks of :data:`MERGE_BLOCK` entries whatever the number of runs."""
    level = 0
    while len(runs) > FAN_IN:
        spill_dir.mkdir(parents=True, exist_ok=True)
        merged = []
        for start in range(0, len(runs), FAN_IN):
            group = runs[start:start + FAN_IN]
            stem = spill_dir / f"level{level + 1}-{len(merged):06d}"
            _write_run_stream(stem, _merge_runs(group))
            for run in group:
                run.remove()
            merged.append(_Run.spilled(stem))
        runs, level = merged, level + 1
    header = _write_table(path, _merge_runs(runs), documents)
    for run in runs:
        run.remove()
    return header


def _write_run_stream(stem: Path, blocks: Iterator[tuple[np.ndarray, np.ndarray]]) -> None:
    with open(f"{stem}.keys", "wb") as keys_out, open(f"{stem}.counts", "wb") as counts_out:
        for keys, counts in blocks:
            keys_out.write(memoryview(np.ascontiguousarray(keys)).cast("B"))
            counts_out.write(memoryview(np.ascontiguousarray(counts, dtype=_COUNT)).cast("B"))


def _write_table(path: Path, blocks: Iterator[tuple[np.ndarray, np.ndarray]], documents: int) -> dict:
    """Stream sorted ``(keys, counts)`` blocks into a ``capeval-df/1`` file at ``path`` (temporary file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the writer's pid in the name: capeval.paths.sweep_cache_folder can tell a killed writer's file
    fd, tmp = tempfile.mkstemp(prefix=f".tmp-{path.name}.{os.getpid()}.", dir=path.parent)
    os.fchmod(fd, file_mode())  # the umask's permissions (mkstemp makes it 0o600)
    counts_tmp = f"{tmp}.counts"
    index_tmp = f"{tmp}.index"
    try:
        entries = 0
        with os.fdopen(fd, "w+b") as out, open(counts_tmp, "w+b") as counts_out, open(index_tmp, "w+b") as index_out:
            out.truncate(HEADER_BYTES)  # the header's room, even when no entry follows
            out.seek(HEADER_BYTES)
            crc = 0  # CRC-32 of everything after the header, in file order (checked by DiskDocumentFrequency.open)
            for keys, counts in blocks:
                data = memoryview(np.ascontiguousarray(keys, dtype=_KEY)).cast("B")
                crc = zlib.crc32(data, crc)
                out.write(data)
                counts_out.write(memoryview(np.ascontiguousarray(counts, dtype=_COUNT)).cast("B"))
                first = (-entries) % BLOCK  # the first position in this block that starts an index block
                index_out.write(memoryview(np.ascontiguousarray(keys[first::BLOCK], dtype=_KEY)).cast("B"))
                entries += len(keys)
            header = {"format": FORMAT, "documents": int(documents), "entries": entries, "block": BLOCK,
                      "keys_at": HEADER_BYTES, "counts_at": HEADER_BYTES + entries * KEY_BYTES,
                      "index_at": HEADER_BYTES + entries * (KEY_BYTES + 8), "index_entries": -(-entries // BLOCK)}
            for side in (counts_out, index_out):
                side.seek(0)
                while chunk := side.read(1 << 22):
                    crc = zlib.crc32(chunk, crc)
                    out.write(chunk)
            header["crc32"] = crc
            text = json.dumps(header, sort_keys=True).encode("ascii")
            if 16 + len(text) > HEADER_BYTES:
                raise AssertionError("document-frequency header too long")
            out.seek(0)
            out.write(MAGIC + struct.pack("<Q", len(text)) + text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        return header
    finally:
        for name in (tmp, counts_tmp, index_tmp):
            if os.path.exists(name):
                os.unlink(name)


def verify_table(path: str | os.PathLike, header: dict | None = None) -> None:
    """``ValueError`` when the body of the ``capeval-df/1`` table at ``path`` does not have its header's CRC-32 (bytes
    changed anywhere after the header); nothing for a table without a recorded CRC."""
    header = read_header(path) if header is None else header
    if "crc32" not in header:
        return
    crc = 0
    with open(path, "rb") as handle:
        handle.seek(HEADER_BYTES)
        while chunk := handle.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    if crc != header["crc32"]:
        raise ValueError(f"{path}: the document-frequency table is damaged (its CRC-32 differs from its header's); "
                         "delete it and run again to count it again.")


def read_header(path: str | os.PathLike) -> dict:
    """The JSON header of a ``capeval-df/1`` file; ``ValueError`` when ``path`` is not one (or is cut short)."""
    with open(path, "rb") as handle:
        head = handle.read(HEADER_BYTES)
        size = handle.seek(0, os.SEEK_END)
    if len(head) < 16 or head[:8] != MAGIC:
        raise ValueError(f"{path} is not a capeval document-frequency table ({FORMAT}).")
    (length,) = struct.unpack("<Q", head[8:16])
    try:
        header = json.loads(head[16:16 + length])
    except ValueError as error:
        raise ValueError(f"{path}: unreadable document-frequency header ({error}).") from None
    expected = header.get("index_at", 0) + header.get("index_entries", 0) * KEY_BYTES
    if header.get("format") != FORMAT or size != expected:
        raise ValueError(f"{path}: not a complete {FORMAT} table ({size} bytes, the header says {expected}).")
    return header


@dataclass
class DiskDocumentFrequency(DocumentFrequency):
    """A :class:`DocumentFrequency` read from a ``capeval-df/1`` file (``df`` stays empty).

    In memory: the index (16 bytes per ``header["block"]`` entries). A lookup sorts the wanted keys, finds their
    blocks in the index and reads runs of adjacent blocks (at most :data:`MAX_READ_BLOCKS` at once) with
    ``os.pread``. A header that is not JSON, a file of another kind or one cut short: ``ValueError`` on opening."""

    path: str = ""
    header: dict = field(default_factory=dict)
    index: np.ndarray = field(default_factory=lambda: np.zeros(0, _KEY), repr=False)
    #: The open file of a table whose file was removed (:meth:`detach`); ``None``: ``path`` is opened per lookup.
    _fd: int | None = field(default=None, repr=False, compare=False)

    @classmethod
    def open(cls, path: str | os.PathLike, settings: dict | None = None, *, verify: bool = True
             ) -> DiskDocumentFrequency:
        """The table at ``path``; with ``verify`` (the default) its CRC-32 is checked first (one read of the file,
        about 1 GB/s), so a table damaged anywhere is a ``ValueError`` here, never a wrong count (tables written
        before the CRC was recorded are not checked)."""
        header = read_header(path)
        if verify and "crc32" in header:
            verify_table(path, header)
        with open(path, "rb") as handle:
            handle.seek(header["index_at"])
            index = np.frombuffer(handle.read(header["index_entries"] * KEY_BYTES), dtype=_KEY).copy()
        documents = header["documents"]
        settings = settings if settings is not None else {"source": "references", "rows": documents}
        return cls({}, documents, settings, str(path), header, index)

    def detach(self) -> None:
        """Keep the table open and remove its file, so that no file outlives this process, even one killed with
        SIGKILL (a table received by an engine's worker). A detached table cannot be sent to another process."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.unlink(self.path)
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        weakref.finalize(self, os.close, fd)

    def __getstate__(self) -> dict:
        if self._fd is not None:
            raise TypeError(f"the document-frequency table of {self.path} was detached from its file (its descriptor "
                            "is this process's): open the file in the other process instead.")
        return dict(self.__dict__)

    def __len__(self) -> int:
        return int(self.header.get("entries", 0))

    def lookup(self, grams: list[str]) -> np.ndarray:
        """Document frequency of each gram (0 when unseen), as float64."""
        out = np.zeros(len(grams), dtype=np.float64)
        if not len(grams) or not len(self):
            return out
        wanted = gram_keys(grams)
        order = np.argsort(wanted, kind="stable")
        wanted = wanted[order]
        block_of = np.maximum(np.searchsorted(self.index, wanted, side="right") - 1, 0)
        blocks = np.unique(block_of)
        # runs of adjacent blocks, each read at once (at most MAX_READ_BLOCKS blocks)
        breaks = np.flatnonzero((np.diff(blocks) != 1) | (np.arange(1, len(blocks)) % MAX_READ_BLOCKS == 0)) + 1
        found = np.zeros(len(wanted), dtype=np.float64)
        entries, keys_at, counts_at = len(self), self.header["keys_at"], self.header["counts_at"]
        block = int(self.header["block"])
        fd = os.open(self.path, os.O_RDONLY) if self._fd is None else self._fd
        try:
            for group in np.split(blocks, breaks):
                first = int(group[0]) * block
                stop = min(int(group[-1] + 1) * block, entries)
                keys = np.frombuffer(_pread(fd, (stop - first) * KEY_BYTES, keys_at + first * KEY_BYTES), dtype=_KEY)
                lo = int(np.searchsorted(block_of, group[0], side="left"))
                hi = int(np.searchsorted(block_of, group[-1], side="right"))
                part = wanted[lo:hi]
                at = np.minimum(np.searchsorted(keys, part), len(keys) - 1)
                hit = keys[at] == part
                if hit.any():
                    counts = np.frombuffer(_pread(fd, (stop - first) * 8, counts_at + first * 8), dtype=_COUNT)
                    found[lo:hi][hit] = counts[at[hit]]
        finally:
            if fd != self._fd:
                os.close(fd)
        out[order] = found
        return out


def _pread(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    while len(data) < size:  # pread may return fewer bytes than asked (large reads, signals)
        more = os.pread(fd, size - len(data), offset + len(data))
        if not more:
            raise ValueError(f"document-frequency table ended early at byte {offset + len(data)}.")
        data += more
    return data
