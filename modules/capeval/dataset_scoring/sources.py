"""Where :func:`capeval.score_dataset` reads rows from: a ``datasets.Dataset`` / ``IterableDataset``, a Hub dataset id
(streamed through ``datasets``), or parquet / JSON-lines files or folders of shards.

Every source yields its rows in one fixed order, as column batches of exactly ``size`` rows (the last may be shorter),
and has a JSON-able ``fingerprint`` that identifies the input (an output folder refuses another input).
:meth:`Source.chunks` gives the same batches numbered, and skips the work for those a process does not want: parquet
files read only the row groups of wanted chunks (located by the files' metadata) and a ``Dataset`` slices only
wanted chunks, and JSON-lines files parse only the lines of wanted chunks (the others are counted), so N processes
do not each convert every row to Python objects; streams are read through.

Files are read as :mod:`capeval.io` reads prediction files: only regular files (a FIFO, a device such as
``/dev/zero`` or a socket given as the data is refused in one line, without blocking), a JSON-lines line or a JSON
list file of at most :func:`capeval.io.max_input_bytes`, an object naming a key twice refused naming the file, the
line and the key, bytes that are not UTF-8 refused naming the line and the byte offset, and a parquet file pyarrow
cannot read named in one line with pyarrow's reason.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import Setting, with_words, words

#: File name endings read as parquet / JSON lines.
PARQUET = (".parquet",)
JSONL = (".jsonl", ".json")


@dataclass
class Source:
    """One input. ``columns``: the column names when known before reading (``None`` for a stream that does not say);
    ``num_rows``: the row count when known (progress bars, ETA); ``base_dir``: where relative image paths are
    resolved (the data files' folder)."""

    description: str
    fingerprint: dict[str, Any]
    columns: list[str] | None
    num_rows: int | None
    _batches: Any = field(repr=False, default=None)
    base_dir: Path | None = None
    _chunks: Any = field(repr=False, default=None)

    def batches(self, size: int, columns: Sequence[str]) -> Iterator[dict[str, list]]:
        """``{column: values}`` of ``size`` consecutive rows at a time, in the source's order."""
        return _rechunk(self._batches(size, list(columns)), size)

    def chunks(self, size: int, columns: Sequence[str],
               wanted: Callable[[int], bool]) -> Iterator[tuple[int, int, dict[str, list] | None]]:
        """``(k, rows, batch)`` for chunk ``k`` = the ``k``-th batch of :meth:`batches`: ``batch`` only when
        ``wanted(k)``, else ``None`` (with its row count; sources that can do so skip reading it)."""
        if self._chunks is not None:
            yield from self._chunks(size, list(columns), wanted)
            return
        for k, batch in enumerate(self.batches(size, columns)):
            yield k, len(next(iter(batch.values()))), (batch if wanted(k) else None)


def _rechunk(batches: Iterator[dict[str, list]], size: int) -> Iterator[dict[str, list]]:
    """The rows of ``batches`` regrouped into batches of exactly ``size`` (the last may be shorter)."""
    pending: dict[str, list] | None = None
    for batch in batches:
        if pending is None:
            pending = {k: list(v) for k, v in batch.items()}
        else:
            for k, v in batch.items():
                pending[k].extend(v)
        while pending and len(next(iter(pending.values()))) >= size:
            yield {k: v[:size] for k, v in pending.items()}
            pending = {k: v[size:] for k, v in pending.items()}
    if pending and len(next(iter(pending.values()))):
        yield pending


def open_source(data: Any, *, split: str | None = None) -> Source:
    """The :class:`Source` of ``data``: a ``datasets.Dataset`` / ``IterableDataset`` (or a ``DatasetDict`` with
    ``split``), a path of a parquet / JSON-lines file or of a folder of them (read in sorted name order), or a Hub
    dataset id (``split`` required; streamed)."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if path.exists():
            if not path.is_dir():
                _check_regular(path)
            return _file_source(path)
        if isinstance(data, os.PathLike) or not str(data).strip():
            raise FileNotFoundError(f"{data}: no such file or folder.")
        return _hub_source(str(data), split)
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is in the extra that score_dataset needs
        datasets = None
    if datasets is not None:
        if isinstance(data, datasets.DatasetDict) or isinstance(data, datasets.IterableDatasetDict):
            if split is None:
                raise ValueError(f"data is a DatasetDict with splits {sorted(data)}: give split=.")
            if split not in data:
                raise ValueError(f"split {split!r} is not one of {sorted(data)}.")
            data = data[split]
        if isinstance(data, datasets.Dataset):
            return _dataset_source(data)
        if isinstance(data, datasets.IterableDataset):
            return _iterable_source(data, description="an IterableDataset")
    raise TypeError(f"data must be a datasets.Dataset or IterableDataset, a Hub dataset id or the path of parquet / "
                    f"JSON-lines files; got {type(data).__name__}.")


def _dataset_source(ds) -> Source:
    import datasets

    def columns_view(columns: list[str]):
        view = ds.select_columns(columns)
        for name in columns:  # image values as {"bytes", "path"}: capeval decodes only for metrics that read them
            if isinstance(view.features[name], datasets.Image) and view.features[name].decode:
                view = view.cast_column(name, datasets.Image(decode=False))
        return view

    def batches(size: int, columns: list[str]) -> Iterator[dict[str, list]]:
        view = columns_view(columns)
        for start in range(0, len(view), size):
            yield view[start:start + size]

    def chunks(size: int, columns: list[str], wanted: Callable[[int], bool]):
        view = columns_view(columns)
        for k, start in enumerate(range(0, len(view), size)):
            yield k, min(size, len(view) - start), (view[start:start + size] if wanted(k) else None)

    return Source(f"a Dataset of {len(ds):,} rows", {"kind": "datasets.Dataset", "fingerprint": ds._fingerprint,
                                                     "rows": len(ds)}, list(ds.column_names), len(ds), batches,
                  _chunks=chunks)


def _iterable_source(ds, *, description: str, identity: dict | None = None) -> Source:
    import datasets

    info = ds.info
    total = None
    split = getattr(ds, "split", None)
    if info is not None and info.splits and split is not None and str(split) in info.splits:
        total = info.splits[str(split)].num_examples or None

    def batches(size: int, columns: list[str]) -> Iterator[dict[str, list]]:
        view = ds.select_columns(columns)
        features = view.features or {}
        for name in columns:
            if isinstance(features.get(name), datasets.Image) and features[name].decode:
                view = view.cast_column(name, datasets.Image(decode=False))
        yield from view.iter(batch_size=size)

    fingerprint = identity or {"kind": "datasets.IterableDataset", "name": getattr(info, "dataset_name", None),
                               "config": getattr(info, "config_name", None), "split": str(split),
                               "version": str(getattr(info, "version", None))}
    columns = list(ds.column_names) if ds.column_names is not None else None
    return Source(description, fingerprint, columns, total, batches)


def _hub_source(dataset_id: str, split: str | None) -> Source:
    if not split:
        raise with_words(ValueError, words("split", f"{dataset_id!r} is not a file or folder here; as a Hugging "
                                           "Face Hub dataset id it needs a split (", Setting(shown="SPLIT"), ")."))
    import datasets

    ds = datasets.load_dataset(dataset_id, split=split, streaming=True)
    return _iterable_source(ds, description=f"the Hub dataset {dataset_id} ({split}, streamed)",
                            identity={"kind": "hub", "id": dataset_id, "split": split})


def _check_regular(path: Path) -> None:
    """``ValueError`` in one line unless ``path`` is a regular file (checked without opening it: a FIFO never
    blocks)."""
    import stat

    from capeval.io import file_kind

    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is {file_kind(mode)}, not a regular file or a folder; score-dataset reads parquet "
                         "or JSON-lines files (save the data to a file first).")


def _parquet_error(path: Path, err: BaseException) -> ValueError:
    """pyarrow's error about ``path`` as one line naming the file."""
    reason = " ".join(str(err).split()) or type(err).__name__
    return ValueError(f"{path}: not a readable parquet file ({type(err).__name__}: {reason:.300}).")


def _parquet_errors() -> tuple[type, ...]:
    import pyarrow as pa

    return (pa.ArrowException, OSError, ValueError)


def _data_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(PARQUET + JSONL)
                   and not any(part.startswith(".") for part in p.relative_to(path).parts))
    if not files:
        raise FileNotFoundError(f"{path}: no parquet (.parquet) or JSON-lines (.jsonl / .json) file in this folder.")
    return files


def files_fingerprint(kind: str, root: Path, files: list[Path]) -> dict[str, Any]:
    """The identity of data files: per file its name (relative to ``root``), size (bytes) and the SHA-256 of its
    content (:func:`capeval.paths.file_digest`: streamed, about 1 s per GB, and remembered per path, size and time
    stamp, so an unchanged file is read once; a file that was touched but not changed is read again and matches).
    The content, not the time stamp: a parquet footer alone would miss an edit that keeps every page's size. The
    time stamp (``mtime_ns``) is recorded for the messages only (:func:`input_changes` does not compare it)."""
    from capeval.paths import file_digest

    return {"kind": kind, "files": [{"name": str(f.relative_to(root)) if f != root else f.name,
                                     "size": f.stat().st_size, "sha256": file_digest(f),
                                     "mtime_ns": f.stat().st_mtime_ns} for f in files]}


def input_changes(then: Any, now: Any) -> list[str]:
    """What differs between two input fingerprints, in words (``[]``: the same input). Files are compared by name,
    size and content hash; a folder begun before content hashes (``[name, size, mtime_ns]`` per file) matches files
    with the same name, size and time stamp."""
    if then == now:
        return []
    if not (isinstance(then, dict) and isinstance(now, dict) and "files" in then and "files" in now):
        return [f"the input was {_input_words(then)}, now {_input_words(now)}"]
    old = {}
    for f in then["files"]:
        if isinstance(f, list):  # [name, size, mtime_ns]: recorded before content hashes
            old[f[0]] = {"name": f[0], "size": f[1], "mtime_ns": f[2]}
        else:
            old[f["name"]] = f
    new = {f["name"]: f for f in now["files"]}
    changes = []
    if then.get("kind") != now.get("kind"):
        changes.append(f"{then.get('kind')} files then, {now.get('kind')} now")
    for name in [n for n in old if n not in new]:
        changes.append(f"{name} is gone")
    for name in [n for n in new if n not in old]:
        changes.append(f"{name} is new")
    for name in [n for n in old if n in new]:
        a, b = old[name], new[name]
        if "sha256" not in a:  # recorded before content hashes: the same name, size and time stamp match
            if a.get("size") != b["size"] or a.get("mtime_ns") != b.get("mtime_ns"):
                changes.append(f"{name}: {a.get('size'):,} bytes modified {_when(a.get('mtime_ns'))} then, "
                               f"{b['size']:,} bytes modified {_when(b.get('mtime_ns'))} now")
        elif a.get("size") != b["size"] or a.get("sha256") != b["sha256"]:
            changes.append(f"{name}: {a.get('size'):,} bytes, sha256 {str(a.get('sha256'))[:12]} then; {b['size']:,} "
                           f"bytes, sha256 {b['sha256'][:12]} now")
    return changes


def _when(mtime_ns: Any) -> str:
    import datetime

    if not isinstance(mtime_ns, int):
        return "at an unknown time"
    return datetime.datetime.fromtimestamp(mtime_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")


def _input_words(fingerprint: Any) -> str:
    if not isinstance(fingerprint, dict):
        return repr(fingerprint)[:80]
    kind = fingerprint.get("kind")
    if kind == "hub":
        return f"the Hub dataset {fingerprint.get('id')} ({fingerprint.get('split')})"
    if kind == "datasets.Dataset":
        return f"a Dataset of {fingerprint.get('rows')} rows (fingerprint {str(fingerprint.get('fingerprint'))[:12]})"
    if "files" in fingerprint:
        return f"{len(fingerprint['files'])} {kind} file(s)"
    return str(kind)


def _file_source(path: Path) -> Source:
    files = _data_files(path)
    kinds = {"parquet" if f.name.lower().endswith(PARQUET) else "jsonl" for f in files}
    if len(kinds) > 1:
        raise ValueError(f"{path}: mixes parquet and JSON-lines files; give one kind.")
    (kind,) = kinds
    fingerprint = files_fingerprint(kind, path, files)
    base = path if path.is_dir() else path.parent
    if kind == "parquet":
        import pyarrow.parquet as pq

        metas = []
        for f in files:
            try:
                metas.append(pq.ParquetFile(f))
            except _parquet_errors() as err:
                raise _parquet_error(f, err) from None
        columns = list(metas[0].schema_arrow.names)
        for f, meta in zip(files[1:], metas[1:]):
            if list(meta.schema_arrow.names) != columns:
                raise ValueError(f"{f}: its columns {list(meta.schema_arrow.names)} differ from {files[0].name}'s "
                                 f"{columns}; every shard needs the same columns.")
        total = sum(meta.metadata.num_rows for meta in metas)

        def batches(size: int, wanted: list[str]) -> Iterator[dict[str, list]]:
            for f in files:
                reading = iter(pq.ParquetFile(f).iter_batches(batch_size=size, columns=wanted))
                while True:
                    try:
                        record_batch = next(reading, None)
                    except _parquet_errors() as err:
                        raise _parquet_error(f, err) from None
                    if record_batch is None:
                        break
                    yield record_batch.to_pydict()

        def chunks(size: int, wanted_columns: list[str], wanted: Callable[[int], bool]):
            yield from _parquet_chunks(files, metas, size, wanted_columns, wanted)

        return Source(f"{len(files)} parquet file(s) under {path}", fingerprint, columns, total, batches, base,
                      _chunks=chunks)

    first = next((row for f in files for row in _json_rows(f)), None)
    if first is None:
        raise ValueError(f"{path}: the JSON-lines files hold no row.")

    def batches(size: int, wanted: list[str]) -> Iterator[dict[str, list]]:
        return (batch for _, _, batch in _json_chunks(files, size, wanted, lambda k: True))

    def chunks(size: int, wanted_columns: list[str], wanted: Callable[[int], bool]):
        yield from _json_chunks(files, size, wanted_columns, wanted)

    return Source(f"{len(files)} JSON-lines file(s) under {path}", fingerprint, list(first), None, batches, base,
                  _chunks=chunks)


def _parquet_chunks(files: list[Path], metas: list, size: int, columns: list[str],
                    wanted: Callable[[int], bool]) -> Iterator[tuple[int, int, dict[str, list] | None]]:
    """Chunks of ``size`` rows over the files' row groups in order; a wanted chunk reads the row groups it overlaps
    (the last ones read are kept, so that neighbouring chunks in one row group read it once)."""
    import bisect

    groups = []  # (file index, row group, first row, rows)
    first = 0
    for fi, meta in enumerate(metas):
        for g in range(meta.metadata.num_row_groups):
            rows = meta.metadata.row_group(g).num_rows
            if rows:
                groups.append((fi, g, first, rows))
                first += rows
    starts = [g[2] for g in groups]
    kept: dict[tuple[int, int], Any] = {}
    for k in range(-(-first // size)):
        lo, hi = k * size, min(first, (k + 1) * size)
        if not wanted(k):
            yield k, hi - lo, None
            continue
        pieces, used = [], {}
        i = bisect.bisect_right(starts, lo) - 1
        while i < len(groups) and groups[i][2] < hi:
            fi, g, start, rows = groups[i]
            table = kept.get((fi, g))
            if table is None:
                try:
                    table = metas[fi].read_row_group(g, columns=columns)
                except _parquet_errors() as err:
                    raise _parquet_error(files[fi], err) from None
            used[(fi, g)] = table
            a, b = max(lo, start) - start, min(hi, start + rows) - start
            pieces.append(table.slice(a, b - a))
            i += 1
        kept = used  # only the row groups of this chunk stay in memory
        batch = pieces[0].to_pydict()
        for piece in pieces[1:]:  # as Python lists: files may store a column with other Arrow types
            for name, values in piece.to_pydict().items():
                batch[name].extend(values)
        yield k, hi - lo, batch


def _json_chunks(files: list[Path], size: int, columns: list[str],
                 wanted: Callable[[int], bool]) -> Iterator[tuple[int, int, dict[str, list] | None]]:
    """Chunks of ``size`` rows over the JSON-lines files in order; the rows of a chunk that is not wanted are counted,
    not parsed (:func:`_json_rows` with ``parse``): N processes do not each parse every line."""
    k, n = 0, 0
    take = wanted(0)
    batch = {c: [] for c in columns} if take else None
    for f in files:
        for row in _json_rows(f, lambda: take):  # asked before each row: the answer for the chunk it falls in
            if batch is not None:
                for c in columns:
                    batch[c].append(row.get(c))
            n += 1
            if n == size:
                yield k, n, batch
                k, n = k + 1, 0
                take = wanted(k)
                batch = {c: [] for c in columns} if take else None
    if n:
        yield k, n, batch


def _json_rows(f: Path, parse: Callable[[], bool] | None = None) -> Iterator[dict | None]:
    """The rows of a JSON-lines file (or of a JSON list of objects), read with the bounds of :mod:`capeval.io`: a
    regular file, lines (a list file) of at most :func:`capeval.io.max_input_bytes`, no key twice in an object, UTF-8;
    each refusal one line naming the file and the line. ``parse``: asked before each row of a JSON-lines file; when it
    answers ``False`` the row is ``None``, its line decoded but not parsed (a blank line is still no row, bytes that
    are not UTF-8 still refused: every reader of the file counts the same rows)."""
    from capeval.io import (DuplicateKeyError, decode_utf8, duplicate_key_message, loads, max_input_bytes,
                            open_regular, parse_json_text)

    limit = max_input_bytes()
    with open_regular(f) as handle:
        if handle.read(1) == b"[":  # a JSON list of objects
            handle.seek(0)
            data = handle.read(limit + 1)
            if len(data) > limit:
                raise ValueError(f"{f}: a JSON list file of more than {limit:,} bytes (CAPEVAL_MAX_INPUT_BYTES raises "
                                 "the limit); write it as JSON lines, one object per line, which are read line by line.")
            text = decode_utf8(data, str(f))
            try:
                items = loads(text)
            except DuplicateKeyError as err:
                raise ValueError(duplicate_key_message(str(f), err.key)) from None
            except json.JSONDecodeError as err:
                raise ValueError(f"{f}:{err.lineno}: not JSON ({err.msg}).") from None
            except RecursionError:
                raise ValueError(f"{f}: JSON nested too deeply.") from None
            if not isinstance(items, list):
                raise ValueError(f"{f}: expected JSON lines (one object per line) or a JSON list of objects.")
            yield from (_object(item, f, n) for n, item in enumerate(items, 1))
            return
        handle.seek(0)
        offset, n = 0, 0
        while True:
            raw = handle.readline(limit + 1)
            if not raw:
                return
            n += 1
            if len(raw) > limit:
                raise ValueError(f"{f}:{n}: a line of more than {limit:,} bytes (CAPEVAL_MAX_INPUT_BYTES raises the "
                                 "limit); is this a JSON-lines file?")
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as err:
                start = err.start + (3 if n == 1 and raw.startswith(b"\xef\xbb\xbf") else 0)
                raise ValueError(f"{f}:{n}: not UTF-8 text (invalid byte 0x{raw[start]:02x} at byte offset "
                                 f"{offset + start:,}).") from None
            offset += len(raw)
            if not line.strip():
                continue
            if parse is not None and not parse():
                yield None
                continue
            yield _object(parse_json_text(line, f"{f}:{n}", "a JSON object"), f, n)


def _object(item: Any, path: Path, line: int) -> dict:
    if not isinstance(item, dict):
        raise ValueError(f"{path}:{line}: expected a JSON object per row, got {type(item).__name__}.")
    return item
