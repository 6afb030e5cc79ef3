"""capeval's scorers inside a Ray Data pipeline: :func:`score` and :func:`corpus`.

>>> import ray, capeval.ray
>>> ds = ray.data.read_parquet("captions/")            # columns: prediction, references (a list of strings)
>>> scored = capeval.ray.score(ds, metrics=["bleu", "cider_d", "meteor"]).materialize()
>>> scored.write_parquet("scored/")                    # the input's columns, one column per result key, capeval_state
>>> capeval.ray.corpus(scored)                         # {"bleu_4": ..., "cider_d": ..., "signature": ..., "rows": ...}

* :func:`score` is a ``map_batches`` with a callable class: each actor loads the metrics' models once and scores one
  batch of rows at a time with :func:`capeval.api.score_with_states` (as :func:`capeval.score_dataset` scores a
  chunk). It adds one float column per per-caption result key (``bleu_4``, ``cider_d``...; ``coverage_<metric>`` for
  metrics that read a fixed vocabulary), ``capeval_error`` (why a row was skipped with ``on_error="skip"``, else
  null; a skipped row's scores are null) and ``capeval_state``: on the first row of each batch, a JSON string of
  what the batch's corpus values merge from (BLEU's counts, METEOR's statistics, token counts, the signature);
  null on the other rows. Drop it when it is not wanted (``scored.drop_columns(["capeval_state"])``).
* CIDEr-D's document frequencies (``cider_df="references"``, its default) are counted over every row's references
  first: a ``map_batches`` that counts each batch into a table, the tables merged here into one
  (:func:`capeval.coco.disk_df.merge_tables`), sent to every actor once. So :func:`score` runs the dataset once for
  that pass when CIDEr-D (or SPIDEr) is selected.
* :func:`corpus` reads a scored dataset (running it again unless it was materialised) and merges the batches' states
  (:class:`capeval.dataset_scoring.merge.CorpusMerge`): the corpus values equal :func:`capeval.score`'s on the same
  rows (means summed exactly; METEOR's statistics added in the order the batches arrive, equal to 1e-12).
* Metrics whose scores depend on how rows are batched (Polos' batches of 32) or on the whole set (SPICE-U) are
  refused: :func:`capeval.score_dataset` scores Polos (``engine="ray"`` runs it on a Ray cluster), :func:`capeval.score`
  SPICE-U.
* A bad row with ``on_error="raise"`` stops the pipeline where Ray Data runs it: Ray Data raises its own
  ``UserCodeException``, whose message holds capeval's line (``capeval.ray.score: row with id 'x': ...``).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from capeval.dataset_scoring.chunks import (ScoringRun, image_problem, jsonable, new_run, options_with_table,
                                            row_problem, score_rows, shard_of)
from capeval.dataset_scoring.first_pass import count_rows, options_with_table_bytes, table_of

#: The column that holds each batch's mergeable corpus state (JSON, on the batch's first row).
STATE_COLUMN = "capeval_state"
#: The column that says why a row was not scored (``on_error="skip"``); null for scored rows.
ERROR_COLUMN = "capeval_error"
#: Rows per batch by default.
DEFAULT_BATCH_SIZE = 1024
_ON_ERROR = ("raise", "skip")


def score(ds: Any, metrics: Any = None, *, prediction_column: str = "prediction",
          references_column: str = "references", image_column: str | None = None, id_column: str | None = None,
          batch_size: int = DEFAULT_BATCH_SIZE, on_error: str = "raise", concurrency: int | None = None,
          num_gpus: float = 0.0, cleanup: str = "thumb", tokenizer: str = "ptb",
          max_caption_chars: int | None = None, empty: str = "error", language_check: bool = True,
          **options: Any):
    """``ds`` (a ``ray.data.Dataset``) with capeval's per-caption columns added (see the module docstring).

    Args:
        metrics, cleanup, tokenizer, max_caption_chars (default: capeval's), empty, **options: as
            :func:`capeval.score`.
        prediction_column / references_column / image_column: the caption, its references (a string or a list of
            strings), one image per row (a path, ``{"bytes", "path"}``, or an array) for metrics that read images.
        id_column: named in the errors of bad rows (``row with id 'x': ...``); ``None``: the row's caption is.
        batch_size: rows per batch (positive): the unit an actor scores at once.
        on_error: ``"raise"`` (a bad row stops the pipeline, named in one line) or ``"skip"`` (its scores null,
            ``capeval_error`` says why, :func:`corpus` leaves it out and counts it).
        concurrency: scoring actors (``map_batches``' ``concurrency``; ``None``: Ray Data's choice).
        num_gpus: GPUs (or a fraction of one) each actor reserves, for metrics with models.
    """
    from capeval.ray.cluster import connect

    run = _pipeline_run(metrics, prediction_column, references_column, image_column, id_column, batch_size, on_error,
                        {"cleanup": cleanup, "tokenizer": tokenizer, "max_caption_chars": max_caption_chars,
                         "empty": empty}, options, language_check)
    ray = connect(what="capeval.ray.score")
    table = [ray.put(_count_table(ds, run, concurrency))] if run.cider_table else None
    return ds.map_batches(BatchScorer, batch_size=batch_size, batch_format="pyarrow", zero_copy_batch=True,
                          fn_constructor_kwargs={"run": run, "table": table}, compute=_actors(ray, concurrency),
                          num_gpus=num_gpus or None)


def _actors(ray, concurrency: int | None):
    """Ray Data's actor pool: ``concurrency`` actors, or from one to as many as Ray Data scales to."""
    if concurrency is None:
        return ray.data.ActorPoolStrategy(min_size=1)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r:.60}.")
    return ray.data.ActorPoolStrategy(size=concurrency)


def _pipeline_run(metrics, prediction_column, references_column, image_column, id_column, batch_size, on_error,
                  score_kwargs, options, language_check) -> ScoringRun:
    """The settings an actor scores with (a :class:`~capeval.dataset_scoring.chunks.ScoringRun` without data or
    folder); ``ValueError`` / ``TypeError`` for what cannot be scored batch by batch, before any work."""
    from capeval.api import split_options
    from capeval.dataset_scoring.chunks import chunk_multiples, whole_set_only
    from capeval.registry import metric_class, resolve
    from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, check_max_caption_chars

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r:.60}.")
    if on_error not in _ON_ERROR:
        raise ValueError(f"on_error must be one of {_ON_ERROR}, got {on_error!r:.60}.")
    if not isinstance(score_kwargs["tokenizer"], str):
        raise TypeError("capeval.ray.score takes the tokenizer by name (ptb, ptb-ctx, ptb-java).")
    selected = resolve(metrics)
    for name, why in whole_set_only(selected).items():
        raise ValueError(f"{name} cannot be scored in a Ray pipeline ({why}); score it with capeval.score on the "
                         "whole set.")
    for name in selected:
        for option, value in chunk_multiples([name], options).items():
            raise ValueError(f"{name} cannot be scored in a Ray pipeline (its scores depend on its batches of {value} "
                             f"({option})); score it with capeval.score_dataset(..., engine='ray') or capeval.score.")
    split_options(selected, options)  # unknown options fail here
    needs_images = [n for n in selected if getattr(metric_class(n), "needs_images", False)]
    if needs_images and image_column is None:
        raise ValueError(f"{', '.join(needs_images)} read(s) images: give image_column=, the column with one image "
                         "per row.")
    limit = score_kwargs["max_caption_chars"]
    score_kwargs = {**score_kwargs, "max_caption_chars": check_max_caption_chars(
        DEFAULT_MAX_CAPTION_CHARS if limit is None else limit)}
    return new_run(data=None, split=None, folder=Path("."), selected=selected, options=options,
                   columns={"prediction": prediction_column, "references": references_column,
                            "image": image_column if needs_images else None, "id": id_column},
                   chunk_size=batch_size, on_error=on_error, score_kwargs=score_kwargs, language_check=language_check,
                   progress=False)


def batch_rows(run: ScoringRun, batch) -> tuple[list[int], list, list, list | None, list[str | None]]:
    """``(scorable positions, predictions, references, images, why per row)`` of a pyarrow batch; a bad row raises
    with ``on_error="raise"`` (named by its id, else by its caption)."""
    cols = run.columns
    preds = batch.column(cols["prediction"]).to_pylist()
    refs = batch.column(cols["references"]).to_pylist()
    images = _column_values(batch, cols["image"]) if cols["image"] is not None else [None] * len(preds)
    ids = batch.column(cols["id"]).to_pylist() if cols["id"] is not None else None
    kept, kept_preds, kept_refs, kept_images, why_of = [], [], [], [], []
    for i, (pred, ref, image) in enumerate(zip(preds, refs, images)):
        why, row_refs = row_problem(pred, ref, image, run)
        if why is None and cols["image"] is not None:
            why = image_problem(image, i, cols["image"], decode=False)
        why_of.append(why)
        if why is not None:
            if run.on_error == "raise":
                who = f"row with id {ids[i]!r:.80}" if ids is not None else f"row with {cols['prediction']} " \
                                                                            f"{pred!r:.80}"
                raise ValueError(f"capeval.ray.score: {who}: {why}. on_error='skip' scores the other rows and "
                                 f"says why in {ERROR_COLUMN}.")
            continue
        kept.append(i)
        kept_preds.append(pred)
        kept_refs.append(row_refs)
        kept_images.append(image)
    return kept, kept_preds, kept_refs, (kept_images if cols["image"] is not None else None), why_of


def _column_values(batch, name: str) -> list:
    """A column's values as the metrics read images: strings and ``{"bytes", "path"}`` dicts as they are, Ray's
    tensor columns as numpy arrays."""
    import pyarrow as pa

    column = batch.column(name)
    if isinstance(column.type, pa.ExtensionType):
        return [array for chunk in column.chunks for array in chunk.to_numpy()]
    return column.to_pylist()


class BatchCounter:
    """``map_batches`` class of the first pass: each batch's reference document frequencies as a table's bytes
    (one output row per batch)."""

    def __init__(self, run: ScoringRun) -> None:
        self.run = run

    def __call__(self, batch):
        import pyarrow as pa

        _, preds, refs, _, _ = batch_rows(self.run, batch)
        data = table_of(lambda counter: count_rows(self.run, preds, refs, counter))
        return pa.table({"table": pa.array([data], type=pa.large_binary())})


def _count_table(ds, run: ScoringRun, concurrency: int | None) -> bytes:
    """The first pass: every batch counted by :class:`BatchCounter`, the tables merged; the whole table's bytes."""
    from capeval.coco.disk_df import merge_tables
    from capeval.dataset_scoring import store
    from capeval.scratch import scratch_folder

    import ray

    counted = ds.map_batches(BatchCounter, batch_size=run.chunk_size, batch_format="pyarrow",
                             fn_constructor_kwargs={"run": run}, compute=_actors(ray, concurrency))
    with scratch_folder("capeval-ray-df-") as tmp:
        parts = []
        for i, row in enumerate(counted.iter_rows()):
            path = tmp / f"part-{i:06d}.bin"
            path.write_bytes(row["table"])
            parts.append(path)
        merge_tables(parts, tmp / store.CIDER_DF, spill_dir=tmp / "merge")
        return (tmp / store.CIDER_DF).read_bytes()


class BatchScorer:
    """``map_batches`` class of :func:`score`: the metrics' models load once per actor (``capeval.loaded_models``);
    each batch gets its per-caption columns, ``capeval_error`` and ``capeval_state``."""

    def __init__(self, run: ScoringRun, table: list | None) -> None:
        from capeval.registry import metric_class

        self.run = run
        if table is None:
            self.options = options_with_table(run)
        else:  # the first pass's table, fetched once, opened from a file of this actor
            import ray

            self.options = options_with_table_bytes(run, ray.get(table[0]))
        self.coverage_names = [name for name in run.selected if metric_class(name).reports_coverage]
        self._said: set[type] = set()

    def __call__(self, batch):
        import pyarrow as pa

        run = self.run
        kept, preds, refs, images, why_of = batch_rows(run, batch)
        caught: dict[type, list] = {}
        result = states = None
        if preds:
            result, states = score_rows(run, preds, refs, images, self.options, caught)
        ids = batch.column(run.columns["id"]).to_pylist() if run.columns["id"] is not None else [None] * len(why_of)
        skipped = [{"row": None, "id": jsonable(ids[i]), "why": why} for i, why in enumerate(why_of) if why is not None]
        columns, record = shard_of(run, 0, (kept, preds, refs, skipped), result, states, self.coverage_names)
        record["selected"] = run.selected
        n = batch.num_rows
        for key, values in columns.items():
            if key == (run.columns["id"] or "row"):
                continue
            full: list[float | None] = [None] * n
            for position, value in zip(kept, values):
                full[position] = value
            batch = batch.append_column(key, pa.array(full, type=pa.float64()))
        batch = batch.append_column(ERROR_COLUMN, pa.array(why_of, type=pa.string()))
        state = [json.dumps(record, ensure_ascii=False, allow_nan=False)] + [None] * (n - 1)
        self._say(caught)
        return batch.append_column(STATE_COLUMN, pa.array(state, type=pa.large_string()))

    def _say(self, caught: dict[type, list]) -> None:
        """Each kind of warning once per actor."""
        import warnings

        for category, messages in caught.items():
            if category not in self._said:
                self._said.add(category)
                warnings.warn(messages[0], category, stacklevel=2)


def corpus(scored: Any) -> dict[str, Any]:
    """The corpus values of a dataset :func:`score` returned (or one written from it and read back): under
    :func:`capeval.score`'s keys, with ``signature``, ``rows`` (scored), ``skipped`` (``{"count", "rows"}``: the
    reasons) and, for metrics that read a fixed vocabulary, ``coverage`` / ``coverage_tokens``; equal to
    :func:`capeval.score` on the same rows."""
    from capeval.dataset_scoring.merge import CorpusMerge

    if STATE_COLUMN not in scored.columns():
        raise ValueError(f"this dataset has no {STATE_COLUMN} column: give capeval.ray.corpus what "
                         "capeval.ray.score returned.")
    merge: CorpusMerge | None = None
    sums: dict[str, list[float]] = {}  # every float column's per-batch sums, until the states say which are scores
    for batch in scored.iter_batches(batch_format="pyarrow", batch_size=None):
        for text in batch.column(STATE_COLUMN).drop_null().to_pylist():
            record = json.loads(text)
            if merge is None:
                merge = CorpusMerge(record["selected"])
            merge.add_record(record)
        for name in batch.column_names:
            column = batch.column(name)
            if str(column.type) == "double":
                sums.setdefault(name, []).append(math.fsum(column.drop_null().to_pylist()))
    if merge is None:
        raise ValueError("capeval.ray.corpus: the dataset has no row.")
    for keys in merge.selected.values():
        for key in keys:
            merge.add_values(key, sums.get(key, []))
    out = merge.result()
    if merge.non_english:
        from capeval.dataset_scoring.merge import warn_non_english

        warn_non_english(merge.non_english)
    return out
