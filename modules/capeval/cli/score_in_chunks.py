"""``capeval score`` on inputs too large to score in memory: the paired rows go to :func:`capeval.score_dataset`.

:func:`capeval.score` holds every caption's tokens, n-gram counts and per-caption results at once (about 12 KB per
caption with two references for BLEU + ROUGE-L + CIDEr-D), so a million captions would need over 10 GB. Above
:data:`IN_MEMORY_MAX_PREDICTIONS` predictions, ``capeval score`` instead writes the paired rows (prediction,
references, image) once to a JSON-lines file in a temporary folder (``$TMPDIR``, removed at the end, also on an error
or Ctrl-C), frees them, and scores that file chunk by chunk with :func:`capeval.score_dataset` in :func:`chunk_processes`
processes (one per CPU, at most four), whose numbers are
:func:`capeval.score`'s on the whole data (its corpus sums are exact, so the order of the chunks does not matter).
The printed table, the signature and the ``--json`` result have the same keys as the in-memory route; per-caption
scores (``--per-caption``, ``--json``) are read back from the chunks' shards in prediction order.

Routes that stay in memory whatever the size: ``--duplicate-ids split``, ``--features``, ``--processes N`` (which
already splits the work), and metrics that :func:`capeval.score_dataset` cannot score chunk by chunk (SPICE-U).
Measured figures and their command: ``BENCHMARKS.md`` ("capeval score on a million captions").
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: Predictions above which ``capeval score`` scores chunk by chunk (rows; ``$CAPEVAL_SCORE_IN_MEMORY_MAX`` overrides
#: it, 0 always chunks).
IN_MEMORY_MAX_PREDICTIONS = 100_000


def in_memory_limit() -> int:
    """:data:`IN_MEMORY_MAX_PREDICTIONS`, or ``$CAPEVAL_SCORE_IN_MEMORY_MAX`` when set (a non-negative integer)."""
    raw = os.environ.get("CAPEVAL_SCORE_IN_MEMORY_MAX")
    if raw is None or not raw.strip():
        return IN_MEMORY_MAX_PREDICTIONS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"CAPEVAL_SCORE_IN_MEMORY_MAX must be a non-negative integer (predictions), got {raw!r:.40}.")
    return value


def chunkable(selected: dict[str, list[str]]) -> bool:
    """Whether every selected metric can be scored chunk by chunk by :func:`capeval.score_dataset`."""
    from capeval.dataset_scoring.chunks import whole_set_only

    return not whole_set_only(selected)


#: Processes the chunks are scored in at most (each loads the metrics' data and models once).
MAX_CHUNK_PROCESSES = 4


def chunk_processes() -> int:
    """Processes that score the chunks: the CPUs this process may use, at most :data:`MAX_CHUNK_PROCESSES`; 1 in a
    ``multiprocessing`` child (a worker of a pool that already runs one per CPU)."""
    from capeval.workers import pool_size

    return pool_size(MAX_CHUNK_PROCESSES)


def _chunk_size(selected: dict[str, list[str]], options: dict[str, Any]) -> int:
    """:data:`capeval.dataset_scoring.DEFAULT_CHUNK_SIZE`, rounded up to a multiple of every batch size a selected
    metric's scores depend on (:func:`capeval.dataset_scoring.chunks.chunk_multiples`: Polos's)."""
    from capeval.dataset_scoring import DEFAULT_CHUNK_SIZE
    from capeval.dataset_scoring.chunks import chunk_multiples

    size = DEFAULT_CHUNK_SIZE
    for batch in chunk_multiples(selected, options).values():
        size = -(-size // batch) * batch
    return size


def _write_rows(path: Path, ids: list[Any] | None, predictions: list[str], references: list[list[str]],
                images: list[Any] | None) -> None:
    with path.open("w", encoding="utf-8") as out:
        for i, prediction in enumerate(predictions):
            row: dict[str, Any] = {"prediction": prediction, "references": references[i]}
            if ids is not None:
                row["id"] = ids[i]
            if images is not None:
                row["image"] = os.path.abspath(images[i])  # score_dataset resolves relative paths against this file
            out.write(json.dumps(row, ensure_ascii=False))
            out.write("\n")


def score_in_chunks(ids: list[Any] | None, predictions: list[str], references: list[list[str]],
                    images: list[Any] | None, *, metrics: Any, selected: dict[str, list[str]],
                    options: dict[str, Any], per_caption: bool) -> dict[str, Any]:
    """Score the paired rows through :func:`capeval.score_dataset` in a temporary folder.

    ``predictions``, ``references`` and ``images`` are emptied once written (the caller's lists: the memory they hold
    is what this route saves); ``ids`` are kept. Returns :func:`capeval.score`'s keys (corpus values,
    ``signature``, ``coverage`` when reported) and, when ``per_caption``, ``per_caption`` in prediction order.
    """
    from capeval.dataset_scoring import score_dataset
    from capeval.dataset_scoring import store

    n = len(predictions)
    with tempfile.TemporaryDirectory(prefix="capeval-score-") as tmp:
        rows = Path(tmp) / "rows.jsonl"
        _write_rows(rows, ids, predictions, references, images)
        predictions.clear()
        references.clear()
        if images is not None:
            images.clear()
        from capeval.dependencies import release_freed_memory

        release_freed_memory()  # the rows' strings were freed: their pages back to the system while the chunks score
        options = dict(options)
        result = score_dataset(str(rows), metrics, Path(tmp) / "out", id_column="id" if ids is not None else None,
                               image_column="image" if images is not None else None,
                               chunk_size=_chunk_size(selected, options), processes=chunk_processes(), **options)
        if result["rows"] != n:  # on_error="raise": a row it could not score raised
            raise RuntimeError(f"capeval score: {n - result['rows']} of {n} rows were not scored in chunks.")
        keys = [key for ks in selected.values() for key in ks]
        out = {key: result[key] for key in keys}
        out["signature"] = result["signature"]
        for name in ("coverage", "non_english_ids"):
            if name in result:
                out[name] = result[name]
        if per_caption:
            columns: dict[str, list] = {key: [] for key in keys}
            for k in range(result["chunks"]):
                shard = store.read_columns(store.shard_path(Path(tmp) / "out", k))
                for key in keys:
                    columns[key].extend(shard[key])
            out["per_caption"] = columns
    return out
