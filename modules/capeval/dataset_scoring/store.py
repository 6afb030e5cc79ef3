"""The output folder of :func:`capeval.score_dataset`: its manifest, one parquet shard per chunk, written atomically,
and the final ``result.json``.

Layout of ``DIR``:

* ``capeval-score-dataset.json``: the manifest (format and the settings of the run: input, columns, metrics,
  options, chunk size, capeval version). A folder whose manifest records other settings is refused and left as it is;
  a non-empty folder without one is not capeval's and is refused too. Input files are compared by name, size and
  content hash (:func:`~capeval.dataset_scoring.sources.input_changes`: a file touched but not changed resumes; a
  changed one is refused with what changed, then and now).
* ``cider-df.bin``: CIDEr-D's document frequencies over every row's references (the first pass), a sorted table on
  disk with its document count in the header (:mod:`capeval.coco.disk_df`); only when ``cider_d`` scores with
  ``cider_df="references"``. Folders begun by capeval 0.2.0 before it hold ``cider-df.parquet`` instead (read into
  memory; resumed as they are).
* ``shards/part-NNNNNN.parquet``: chunk N's rows (the id column, then one float column per per-caption result key,
  then ``coverage_<metric>`` for the metrics that report vocabulary coverage) with the chunk's record in the file's
  metadata (``capeval`` key: first row, row count, skipped rows, the chunk's signature, reference counts, the
  metrics' mergeable corpus states and their known / total token counts). Each is written to a temporary file in the
  same folder and renamed: a chunk is done exactly when its shard exists, so a run killed at any moment resumes
  without losing or repeating a row.
* ``result.json``: the corpus values under :func:`capeval.score`'s keys, the signature, the row count, the skipped
  rows, vocabulary coverage; written (atomically) once every shard exists.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capeval.advice import OPTION, words
from capeval.dataset_scoring.sources import input_changes
from capeval.validation import OptionError
from capeval.paths import write_bytes_atomic

MANIFEST = "capeval-score-dataset.json"
FORMAT = "capeval-score-dataset/1"
SHARDS = "shards"
CIDER_DF = "cider-df.bin"
#: The first pass's table as folders begun before the table on disk hold it (n-gram strings or digests, in memory).
CIDER_DF_PARQUET = "cider-df.parquet"
RESULT = "result.json"
PLAN = "plan.json"
META_KEY = b"capeval"


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file in the same folder, flushed to disk, then renamed; the file gets
    the umask's permissions (:func:`capeval.paths.write_bytes_atomic`)."""
    write_bytes_atomic(path, data)


def write_json(path: Path, payload: Any) -> None:
    write_atomic(path, (json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8"))


def remove_temporaries(folder: Path) -> list[Path]:
    """The temporary files and folders a killed run left (``.tmp-*``), removed."""
    import shutil

    removed = []
    for sub in (folder, folder / SHARDS):
        if sub.is_dir():
            for path in sub.glob(".tmp-*"):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path)
    return removed


#: Settings compared as a whole in the refusal message (the metric list reads better whole than key by key).
_WHOLE = ("metrics",)


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict) and prefix.rstrip(".") not in _WHOLE:
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    if prefix.rstrip(".") in _WHOLE and isinstance(old, dict) and isinstance(new, dict):
        old, new = list(old), list(new)
    return [] if old == new else [f"{prefix.rstrip('.')}: {old!r:.80} here, {new!r:.80} asked"]


def open_folder(folder: Path, settings: dict[str, Any]) -> bool:
    """Prepare ``folder`` for a run with ``settings``: a new or empty folder gets the manifest; one with the same
    settings is resumed (``True``); any other is refused with ``ValueError`` and left untouched."""
    manifest = folder / MANIFEST
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} is a file; the output of score_dataset is a folder.")
    if manifest.is_file():
        try:
            recorded = json.loads(manifest.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{manifest}: not readable JSON ({err.msg}); the folder was left as it is.") from None
        if recorded.get("format") != FORMAT:
            raise ValueError(f"{folder} holds a score_dataset output of format {recorded.get('format')!r}, not "
                             f"{FORMAT!r}; use another folder.")
        then, now = recorded.get("settings") or {}, json.loads(json.dumps(settings))
        changed = input_changes(then.get("input"), now.get("input"))
        if changed:
            raise OptionError(words(
                "output_dir", f"{folder} holds a run with other settings, so it was left untouched (another input: "
                + "; ".join(changed[:4]) + (f"; {len(changed) - 4} more" if len(changed) > 4 else "")
                + "). Use another ", OPTION, " folder, or the original input to resume it."))
        diff = _differences({k: v for k, v in then.items() if k != "input"},
                            {k: v for k, v in now.items() if k != "input"})
        if diff:
            raise OptionError(words(
                "output_dir", f"{folder} holds a run with other settings, so it was left untouched ("
                + "; ".join(diff[:6]) + (f"; {len(diff) - 6} more" if len(diff) > 6 else "")
                + "). Use another ", OPTION, " folder, or the same settings to resume it."))
        return True
    if folder.is_dir() and any(folder.iterdir()):
        raise ValueError(f"{folder} is not empty and holds no {MANIFEST}: not a score_dataset output folder, so it "
                         "was left untouched. Give an empty or new folder.")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SHARDS).mkdir(exist_ok=True)
    write_json(manifest, {"format": FORMAT, "settings": settings})
    return False


def shard_path(folder: Path, chunk: int) -> Path:
    return folder / SHARDS / f"part-{chunk:06d}.parquet"


def write_shard(folder: Path, chunk: int, columns: dict[str, list], record: dict[str, Any]) -> None:
    """Chunk ``chunk``'s ``columns`` and its ``record`` (metadata), atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(columns)
    table = table.replace_schema_metadata({META_KEY: json.dumps(record, allow_nan=False).encode("utf-8")})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    write_atomic(shard_path(folder, chunk), sink.getvalue().to_pybytes())


def read_record(path: Path) -> dict[str, Any] | None:
    """A shard's record (``None`` when the file is missing or unreadable: the chunk is then scored again)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[META_KEY])
    except (OSError, KeyError, ValueError):
        return None


def done_chunks(folder: Path) -> dict[int, dict[str, Any]]:
    """The chunks whose shard is there and readable: ``{chunk: record}``."""
    done = {}
    for path in sorted((folder / SHARDS).glob("part-*.parquet")):
        try:
            chunk = int(path.stem.split("-")[1])
        except (IndexError, ValueError):
            continue
        record = read_record(path)
        if record is not None:
            done[chunk] = record
    return done


def chunk_rows(record: dict[str, Any]) -> int:
    """The input rows of a chunk (scored and skipped) from its record."""
    return int(record["rows"]) + len(record["skipped"])


def read_columns(path: Path) -> dict[str, list]:
    """A shard's per-caption columns (read as one file: ``pq.read_table`` would first look for a dataset there)."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as shard:
        return shard.read().to_pydict()
