""":func:`score_dataset`: score a dataset where it lives, in chunks, resumably, over processes or machines.

The numbers are :func:`capeval.score`'s on the whole data (the rows that were not skipped), corpus values included:

* per caption, every metric but two scores an item from that item alone, so a chunk's per-caption values are the
  whole call's; CIDEr-D's depend on document frequencies over every row's references, so with ``cider_df=
  "references"`` a first pass counts them over all rows (split over the processes like the chunks, each share a
  sorted table on disk, merged into ``cider-df.bin``: :mod:`capeval.coco.disk_df`) and each chunk scores with that
  table (:class:`~capeval.coco.disk_df.DiskDocumentFrequency`, read block by block); Polos normalises over its
  batches of 32, so the chunk size must be a multiple of ``polos_batch_size``; SPICE-U's uniqueness is a property of
  the whole set and is refused;
* per corpus, BLEU's summed counts and METEOR's statistics lines are kept per chunk (the metrics' mergeable
  :attr:`~capeval.metric.MetricOutput.state`) and merged in row order; every other corpus value is the mean of the
  per-caption values, summed exactly (``math.fsum``) over the shards. A metric whose corpus value is neither is
  refused when its first chunk shows it.

Chunk ``k`` holds rows ``[k * chunk_size, (k + 1) * chunk_size)`` of the input in its order; with ``processes=N`` (or
``accelerate launch``), chunk ``k`` goes to process ``k % N``. Each chunk is written once, atomically
(:mod:`capeval.dataset_scoring.store`), so the output is the same whatever the number of processes and however
often the run was interrupted.
"""
from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from capeval.advice import Setting, with_words, words
from capeval.dataset_scoring import store
from capeval.dataset_scoring.sources import Source, open_source
from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, OptionError
from capeval.registry import metric_class

ON_ERROR = ("raise", "skip")
DEFAULT_CHUNK_SIZE = 2000
#: Metrics that cannot be scored chunk by chunk, and why.
#: Skipped rows named in result.json (all of them are counted).
MAX_LISTED = 1000


@dataclass
class _Run:
    """Everything a process needs to score its chunks (picklable: sent to spawned workers)."""

    data: Any
    split: str | None
    folder: Path
    selected: dict[str, list[str]]
    columns: dict[str, str | None]
    chunk_size: int
    on_error: str
    score_kwargs: dict[str, Any]
    options: dict[str, Any]
    language_check: bool
    progress: bool | None
    cider_table: bool = False
    #: Whether a selected metric refuses captions over ``max_caption_chars`` (checked per row).
    limits_length: bool = False
    source: Source | None = field(default=None, repr=False)

    def open(self) -> Source:
        if self.source is None:
            self.source = open_source(self.data, split=self.split)
        return self.source

    def __getstate__(self):
        state = dict(self.__dict__)
        state["source"] = None
        return state


def score_dataset(
    data: Any,
    metrics: Sequence[str] | str | None = None,
    output_dir: str | os.PathLike | None = None,
    *,
    prediction_column: str = "prediction",
    references_column: str = "references",
    image_column: str | None = None,
    id_column: str | None = "id",
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    split: str | None = None,
    processes: int = 1,
    on_error: str = "raise",
    cleanup: str = "thumb",
    tokenizer: str = "ptb",
    max_caption_chars: int | None = DEFAULT_MAX_CAPTION_CHARS,
    empty: str = "error",
    language_check: bool = True,
    progress: bool | None = None,
    **options: Any,
) -> dict[str, Any] | None:
    """Score every row of ``data`` with ``metrics`` into ``output_dir`` (see :mod:`capeval.dataset_scoring`).

    Args:
        data: a ``datasets.Dataset`` / ``IterableDataset`` (or a ``DatasetDict`` with ``split``), a path of a parquet
            or JSON-lines file or of a folder of them (sorted by name), or a Hub dataset id with ``split`` (streamed).
        metrics: as :func:`capeval.score` (default BLEU, METEOR, ROUGE-L, CIDEr-D).
        output_dir: the output folder (new, empty, or one this function wrote with the same settings: resumed).
        prediction_column / references_column: the caption and its references (one string or a list of strings).
        image_column: one image per row (a path, relative paths resolved against the data files' folder, or a
            ``datasets.Image`` value), for metrics that read images.
        id_column: copied into the output shards; ``None`` writes the row number (``row``) instead.
        chunk_size: rows per chunk (memory and the granularity of resuming); positive.
        processes: score the chunks in this many processes on this machine (``accelerate launch`` does the same
            across GPUs and machines, see :func:`capeval.dataset_scoring.distributed_state`).
        on_error: a row with an empty or missing prediction or references, a wrong type, a caption over
            ``max_caption_chars``, or (for a metric that reads images) an image that is missing, not a regular file
            or not a readable image: ``"raise"`` (``ValueError`` naming the row, counted from 0 in the input's order,
            and its id) or ``"skip"`` (left out of every score, listed in ``result.json``). Images are read (not decoded)
            before a chunk is scored; when its scoring fails, its rows' images are decoded one by one to find the
            rows at fault, and the chunk is scored again without them (each image is decoded once when all are
            readable).
        cleanup, tokenizer, max_caption_chars, empty, language_check, **options: as :func:`capeval.score`.

    Returns:
        The content of ``output_dir/result.json``: corpus values under :func:`capeval.score`'s keys,
        ``"signature"``, ``"rows"`` (scored), ``"skipped"`` (``{"count", "rows": [{"row", "id", "why"}]}``),
        ``"chunks"``, and for metrics that read a fixed vocabulary ``"coverage"`` (as :func:`capeval.score`'s, from
        the chunks' token counts added up) with ``"coverage_tokens"`` (``{metric: {"known", "total"}}``); ``None`` in
        a non-main process of a distributed run.
    """
    from capeval.registry import metric_class, resolve
    from capeval.validation import check_max_caption_chars

    _check_arguments(output_dir, on_error, chunk_size, processes, tokenizer)
    folder = Path(output_dir)
    limit = check_max_caption_chars(max_caption_chars)
    selected = resolve(metrics)
    needs_images = _check_metrics(selected, options, chunk_size, image_column)
    columns = {"prediction": prediction_column, "references": references_column,
               "image": image_column if needs_images else None, "id": id_column}
    cider_table = any(_counts_documents(metric_class(n), options) for n in selected)  # cider_d, spider
    run = _Run(data=data, split=split, folder=folder, selected=selected, columns=columns, chunk_size=chunk_size,
               on_error=on_error, score_kwargs={"cleanup": cleanup, "tokenizer": tokenizer, "max_caption_chars": limit,
                                                "empty": empty},
               options=dict(options), language_check=language_check, progress=progress, cider_table=cider_table,
               limits_length=any(metric_class(n).limits_length for n in selected))
    state = distributed_state() if processes == 1 else None
    _open_output(run, main=state is None or state.is_main_process)
    if state is not None:
        return _run_in_launch(run, state)
    _run_here(run, processes)
    return _finalize(run)


def _open_output(run: _Run, main: bool) -> None:
    """Check the input's columns; in the main process, open the output folder (new, or resumed when it holds the
    same settings: ``store.open_folder``) and remove what an interrupted run left half-written."""
    source = run.open()
    _check_columns(source, run.columns)
    if not main:
        return
    settings = {"input": source.fingerprint, "columns": run.columns, "metrics": run.selected,
                "options": _jsonable(run.options), "chunk_size": run.chunk_size, "on_error": run.on_error,
                **_jsonable(run.score_kwargs), "capeval": _version()}
    resumed = store.open_folder(run.folder, settings)
    store.remove_temporaries(run.folder)
    if resumed and run.progress is not False:
        _say_resuming(run.folder, source.num_rows, run.chunk_size)


def _check_arguments(output_dir, on_error: str, chunk_size: int, processes: int, tokenizer: Any) -> None:
    """``TypeError`` / ``ValueError`` / ``ImportError`` for arguments :func:`score_dataset` cannot run with, before any
    work."""
    if output_dir is None:
        raise TypeError("score_dataset needs output_dir= (the folder the shards and result.json go to).")
    try:
        import pyarrow  # noqa: F401  (the shards are parquet)
    except ImportError as err:
        raise ImportError('score_dataset writes parquet shards with pyarrow: pip install "capeval[bench]"') from err
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r:.60}.")
    for name, value in (("chunk_size", chunk_size), ("processes", processes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r:.60}.")
    if not isinstance(tokenizer, str):
        raise TypeError("score_dataset takes the tokenizer by name (ptb, ptb-ctx, ptb-java): the settings are "
                        "recorded in the output folder.")


def _check_metrics(selected: dict[str, list[str]], options: dict[str, Any], chunk_size: int,
                   image_column: str | None) -> list[str]:
    """The selected metrics that read images; ``ValueError`` for a metric that cannot be chunked, a chunk size it
    cannot take, an unknown option or a missing image column."""
    from capeval.api import split_options
    from capeval.registry import metric_class

    for name, why in whole_set_only(selected).items():
        if why:
            raise ValueError(f"{name} cannot be scored chunk by chunk ({why}); score it with "
                             "capeval.score on the whole set.")
    check_chunk_size(selected, options, chunk_size)
    split_options(selected, options)  # unknown options fail here, before any work
    needs_images = [n for n in selected if getattr(metric_class(n), "needs_images", False)]
    if needs_images and image_column is None:
        raise OptionError(words("image_column", f"{', '.join(needs_images)} read(s) images: give ",
                                Setting(shown="COLUMN"), ", the column with one image per row."))
    return needs_images


def _run_in_launch(run: _Run, state) -> dict[str, Any] | None:
    """The passes in one process of an ``accelerate launch`` (``state``): the first pass's shares, the main process's
    merge, the chunks; the result (main process) or ``None``."""
    state.wait_for_everyone()
    if run.cider_table and not _counted(run):
        _count_share(run, state.process_index, state.num_processes)
        state.wait_for_everyone()
        if state.is_main_process:
            _merge_shares(run, state.num_processes)
        state.wait_for_everyone()
    _score_chunks(run, state.process_index, state.num_processes)
    state.wait_for_everyone()
    return _finalize(run) if state.is_main_process else None


def _run_here(run: _Run, processes: int) -> None:
    """The passes on this machine: in this process, or in ``processes`` spawned workers."""
    if processes == 1:
        if run.cider_table:
            _count_share(run, 0, 1)
        _score_chunks(run, 0, 1)
        return
    if run.cider_table and not _counted(run):
        _spawn(run, processes, "count")
        _merge_shares(run, processes)
    _spawn(run, processes, "score")


#: Seconds the processes of an ``accelerate launch`` wait for each other at a barrier (``$CAPEVAL_DISTRIBUTED_TIMEOUT``
#: overrides it): the main process's merge of the first pass, or the last process's share of a pass on a resumed run,
#: may take hours on a large dataset, where NCCL's own default gives up after 10 minutes. A process that fails ends
#: the launch (torchrun stops the others), so a long wait here is not a hang.
DISTRIBUTED_TIMEOUT_S = 7 * 24 * 3600


def distributed_timeout():
    """The barrier timeout of :data:`DISTRIBUTED_TIMEOUT_S` / ``$CAPEVAL_DISTRIBUTED_TIMEOUT`` as a ``timedelta``."""
    from datetime import timedelta

    text = os.environ.get("CAPEVAL_DISTRIBUTED_TIMEOUT", "").strip()
    try:
        seconds = float(text) if text else float(DISTRIBUTED_TIMEOUT_S)
    except ValueError:
        raise ValueError(f"CAPEVAL_DISTRIBUTED_TIMEOUT must be a number of seconds, got {text!r:.40}.") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"CAPEVAL_DISTRIBUTED_TIMEOUT must be a positive number of seconds, got {text!r:.40}.")
    return timedelta(seconds=seconds)


def distributed_state():
    """accelerate's ``PartialState`` when this process is one of several launched by ``accelerate launch`` /
    torchrun (``WORLD_SIZE`` > 1), else ``None``: the processes split the chunks, the main one writes the result.
    The process group it starts waits :func:`distributed_timeout` at a barrier (a group the caller started keeps
    its own timeout)."""
    from capeval.parallel import in_distributed_launch, partial_state

    if not in_distributed_launch():
        return None
    from capeval.dependencies import require

    accelerate = require("accelerate", what="score_dataset under accelerate launch")
    try:
        import torch
    except ImportError:
        torch = None
    gpus = torch is not None and torch.cuda.is_available()
    # without GPUs: gloo, so the processes still know their ranks
    state = partial_state(accelerate, cpu=not gpus, timeout=distributed_timeout())
    if gpus:  # each process's learned metrics on its own GPU
        torch.cuda.set_device(state.local_process_index % torch.cuda.device_count())
    return state


def _say_resuming(folder: Path, num_rows: int | None, chunk_size: int) -> None:
    """``resuming: k of n chunks done`` on stderr (``n``: from the row count when the input says it, else from
    ``plan.json`` when an earlier run reached the end, else left out)."""
    import json

    from capeval.progress import is_quiet, write

    if is_quiet():
        return
    done = len(store.done_chunks(folder))
    total = -(-num_rows // chunk_size) if num_rows is not None else None
    if total is None and (folder / store.PLAN).is_file():
        try:
            total = int(json.loads((folder / store.PLAN).read_text(encoding="utf-8"))["chunks"])
        except (OSError, ValueError, KeyError, TypeError):
            total = None
    write(f"resuming: {done:,} of {total:,} chunks done" if total is not None else f"resuming: {done:,} chunks done")


def _version() -> str:
    from capeval._version import __version__

    return __version__


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return f"{type(value).__name__}:{value!r:.200}"


def _check_columns(source: Source, columns: dict[str, str | None]) -> None:
    """Every named column exists (when the source says which it has): ``ValueError`` naming the missing one."""
    if source.columns is None:
        return
    for role, name in columns.items():
        if name is not None and name not in source.columns:
            hint = " (id_column=None numbers the rows instead)" if role == "id" else ""
            raise ValueError(f"{source.description} has no column {name!r} ({role} column){hint}; its columns: "
                             f"{', '.join(source.columns)}.")


def _wanted(run: _Run) -> list[str]:
    return list(dict.fromkeys(c for c in run.columns.values() if c is not None))


def _row_problem(pred: Any, refs: Any, image: Any, run: _Run) -> tuple[str | None, list[str] | None]:
    """``(why the row cannot be scored or None, its references as a list)``."""
    limit = run.score_kwargs["max_caption_chars"]
    cols = run.columns
    if not isinstance(pred, str):
        return f"{cols['prediction']} is {type(pred).__name__}, not a string", None
    if not pred.strip() and run.score_kwargs["empty"] == "error":
        return f"{cols['prediction']} is empty (empty='zero' scores it 0)", None
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, (list, tuple)) or not refs:
        return f"{cols['references']} is {'an empty list' if isinstance(refs, (list, tuple)) else type(refs).__name__}" \
               ", not a reference string or a non-empty list of them", None
    for j, ref in enumerate(refs):
        if not isinstance(ref, str) or not ref.strip():
            return f"{cols['references']}[{j}] is {'empty' if isinstance(ref, str) else type(ref).__name__}", None
    if limit is not None and run.limits_length:
        longest = max([pred, *refs], key=len)
        if len(longest) > limit:
            return f"a caption of {len(longest):,} characters exceeds max_caption_chars={limit:,}", None
    if cols["image"] is not None and image is None:
        return f"{cols['image']} is missing", None
    return None, list(refs)


def chunk_multiples(selected: Iterable[str], options: dict[str, Any]) -> dict[str, int]:
    """``{option: value}`` of the options that the selected metrics say a chunk size must be a multiple of
    (:attr:`capeval.metric.CaptionMetric.chunk_multiple_of`), at the values ``options`` give or their defaults."""
    found = {}
    for name in selected:
        cls = metric_class(name)
        option = cls.chunk_multiple_of
        if option is not None:
            found[option] = int(options.get(option) or cls.option_defaults()[option])
    return found


def check_chunk_size(selected: Iterable[str], options: dict[str, Any], chunk_size: int) -> None:
    """``ValueError`` unless ``chunk_size`` is a multiple of every value :func:`chunk_multiples` names."""
    for option, value in chunk_multiples(selected, options).items():
        if chunk_size % value:
            names = [n for n in selected if metric_class(n).chunk_multiple_of == option]
            raise ValueError(f"{', '.join(names)} scores in batches of {value} ({option}) that a score depends on "
                             f"slightly; chunk_size must be a multiple of it (got {chunk_size}).")


def whole_set_only(selected: Iterable[str]) -> dict[str, str]:
    """``{metric: why}`` of the selected metrics that cannot be scored chunk by chunk."""
    return {name: metric_class(name).whole_set_only for name in selected if metric_class(name).whole_set_only}


def _counts_documents(cls: type, options: dict[str, Any]) -> bool:
    """Whether the metric class reads document frequencies that a first pass must count over every row (its
    :attr:`~capeval.metric.CaptionMetric.document_frequency_option` at ``"references"``, its default)."""
    option = cls.document_frequency_option
    return option is not None and options.get(option, "references") == "references"


def _chunk_rows(run: _Run, k: int, batch: dict[str, list], source: Source, decode: bool = False):
    """``(ids, predictions, references, images, skipped, rows)`` of chunk ``k``'s scorable rows (``rows``: their
    numbers in the input); a bad row raises with ``on_error="raise"``. With a metric that reads images, each row's
    image is read here (a missing file, a FIFO or device, a file over the limit is a bad row like the others, named by
    its row and id; skipped with ``on_error="skip"``), and with ``decode`` also decoded, so that one that is not a
    readable image is such a bad row too rather than an error inside a metric's batch. The metrics decode every image
    anyway, so :func:`_score_chunks` first reads only (one decode per image) and checks with ``decode`` the chunks
    whose scoring fails."""
    cols = run.columns
    n = len(batch[cols["prediction"]])
    first = k * run.chunk_size
    ids = batch[cols["id"]] if cols["id"] is not None else list(range(first, first + n))
    images = batch[cols["image"]] if cols["image"] is not None else [None] * n
    kept_ids, preds, refs, imgs, skipped, kept_rows = [], [], [], [], [], []
    for i in range(n):
        why, row_refs = _row_problem(batch[cols["prediction"]][i], batch[cols["references"]][i], images[i], run)
        image = _image(images[i], source) if why is None and cols["image"] is not None else None
        if why is None and cols["image"] is not None:
            why = _image_problem(image, first + i, cols["image"], decode)
        if why is not None:
            if run.on_error == "raise":
                raise OptionError(words("on_error", f"row {first + i} (id {ids[i]!r:.80}): {why}. ", Setting("skip"),
                                        " scores the other rows and lists this one in result.json.",
                                        item="rows", index=first + i))
            skipped.append({"row": first + i, "id": _jsonable(ids[i]), "why": why})
            continue
        kept_ids.append(ids[i])
        kept_rows.append(first + i)
        preds.append(batch[cols["prediction"]][i])
        refs.append(row_refs)
        imgs.append(image)
    return kept_ids, preds, refs, (imgs if cols["image"] is not None else None), skipped, kept_rows


def _image_problem(value: Any, row: int, column: str, decode: bool = True) -> str | None:
    """Why the image of input row ``row`` cannot be read (missing file, a FIFO or device, too large, and with
    ``decode`` not an image), with the image named by ``column`` instead of :mod:`capeval.models.images`'
    ``images[i]``; ``None`` when it reads (and decodes)."""
    from capeval.models.images import read_item

    try:
        item = read_item(value, row)  # regular files only, within the size limit (a FIFO is never opened blocking)
        if decode and item.data is not None:
            item.decode()
    except (ValueError, TypeError, OSError) as err:
        from capeval.models.images import ImageInputError

        text = err.named(f"{column} ({err.path})" if err.path else column) if isinstance(err, ImageInputError) \
            else str(err).replace(f"images[{row}]", column, 1)  # a missing file (FileNotFoundError)
        return " ".join(text.split()).rstrip(".")
    return None


def _in_row_words(err: BaseException, rows: list[int], ids: list[Any], column: str | None) -> BaseException | None:
    """A metric's :class:`~capeval.models.images.ImageInputError` about its ``index``-th image (the ``index``-th
    scored row of a chunk) as an error naming the input row, its id and the column; ``None`` for any other error."""
    from capeval.models.images import ImageInputError

    if not isinstance(err, ImageInputError) or not 0 <= err.index < len(rows):
        return None
    i = err.index
    item = column or "image"
    text = err.named(f"{item} ({err.path})" if err.path else item)
    return ValueError(f"row {rows[i]} (id {ids[i]!r:.80}): {text}")


def _image(value: Any, source: Source) -> Any:
    if isinstance(value, str) and not os.path.isabs(value) and source.base_dir is not None:
        candidate = source.base_dir / value
        if candidate.exists() or not os.path.exists(value):
            return str(candidate)
    return value


def _counted(run: _Run) -> bool:
    """Whether the first pass's table is there (from a previous run of this folder) and whole: a ``cider-df.bin``
    that fails its check (:meth:`capeval.coco.disk_df.DiskDocumentFrequency.open`: damaged anywhere, cut short) is
    removed with one warning and counted again (the count is deterministic, so the shards scored with it stay
    right)."""
    from capeval.coco.dataset_pass import table_is_whole

    path = run.folder / store.CIDER_DF
    if path.is_file() and table_is_whole(path):
        return True
    return (run.folder / store.CIDER_DF_PARQUET).is_file()


def _share_path(folder: Path, rank: int, world: int) -> Path:
    return folder / f"cider-df.part-{rank:05d}-of-{world:05d}.bin"


def _count_share(run: _Run, rank: int, world: int) -> None:
    """The first pass, this process's share: CIDEr-D's document frequencies over the references of the scorable rows
    of chunks ``k`` with ``k % world == rank`` (one document per row), into ``cider-df.bin`` when ``world`` is 1,
    else into this share's part (merged by :func:`_merge_shares`). A share already counted is kept. Memory stays
    bounded: the counter writes sorted runs to ``.tmp-cider-df-runs-<rank>/`` and merges them into its table
    (:mod:`capeval.coco.disk_df`)."""
    if _counted(run):
        return
    target = run.folder / store.CIDER_DF if world == 1 else _share_path(run.folder, rank, world)
    if target.is_file():
        return
    from capeval.coco.dataset_pass import DatasetDocumentFrequencyCount
    from capeval.progress import progress
    from capeval.validation import normalize_inputs

    source = run.open()
    counter = DatasetDocumentFrequencyCount(run.folder / f".tmp-cider-df-runs-{rank}")
    with progress(None, total=source.num_rows, desc="score-dataset: CIDEr-D document frequencies",
                  enabled=run.progress if rank == 0 else False) as bar:
        bar.unit = "rows"
        for k, n, batch in source.chunks(run.chunk_size, _wanted(run), lambda k: k % world == rank):
            _check_parent()
            bar.update(n)
            if batch is None:
                continue
            _, preds, refs, _, _, _ = _chunk_rows(run, k, batch, source)
            if not preds:
                continue
            preds, refs = normalize_inputs(preds, refs, empty=run.score_kwargs["empty"])
            counter.add(preds, refs, cleanup=run.score_kwargs["cleanup"], tokenizer=run.score_kwargs["tokenizer"])
    counter.write(target)
    del counter
    if world == 1:
        _remove_shares(run.folder)  # parts an interrupted run with more processes left
    from capeval.dependencies import release_freed_memory

    release_freed_memory()  # the pass's n-gram strings were freed: hand their pages back before the scoring starts


def _merge_shares(run: _Run, world: int) -> None:
    """``cider-df.bin`` from the ``world`` processes' parts (then removed, with parts of interrupted runs that had
    another number of processes)."""
    if _counted(run):
        return
    from capeval.coco.dataset_pass import merge_shares

    parts = [_share_path(run.folder, rank, world) for rank in range(world)]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise RuntimeError(f"{run.folder}: the first pass's part(s) {', '.join(missing[:4])} are missing: a process "
                           "did not finish counting; run the same call again.")
    merge_shares(parts, run.folder / store.CIDER_DF, spill_dir=run.folder / ".tmp-cider-df-merge")
    _remove_shares(run.folder)


def _remove_shares(folder: Path) -> None:
    for part in folder.glob("cider-df.part-*.bin"):
        part.unlink(missing_ok=True)


def _cider_table(run: _Run):
    """The first pass's table: on disk (``cider-df.bin``), or in memory from a folder begun before that format."""
    from capeval.coco.dataset_pass import open_legacy_parquet_table, open_table

    if (run.folder / store.CIDER_DF).is_file():
        return open_table(run.folder / store.CIDER_DF)  # checked once per process
    return open_legacy_parquet_table(run.folder / store.CIDER_DF_PARQUET, store.META_KEY)


def _score_chunks(run: _Run, rank: int, world: int) -> None:
    """Score the chunks ``k`` with ``k % world == rank`` that have no shard yet; then record how many chunks the
    input has (``plan.json``)."""
    from capeval.progress import progress
    from capeval.registry import metric_class

    source = run.open()
    options = _options_with_table(run)
    caught: dict[type, list] = {}
    coverage_names = [name for name in run.selected if metric_class(name).reports_coverage]
    chunks = rows_total = 0
    done = store.done_chunks(run.folder)  # scored before this run: the bar starts after them (rate, ETA: this run's)
    with progress(None, total=source.num_rows, desc="score-dataset", enabled=run.progress if rank == 0 else False,
                  initial=sum(store.chunk_rows(record) for record in done.values())) as bar:
        bar.unit = "rows"
        def mine(k: int) -> bool:  # this process's chunks that have no shard yet
            return k % world == rank and k not in done

        for k, n, batch in source.chunks(run.chunk_size, _wanted(run), mine):
            _check_parent()
            chunks, rows_total = k + 1, rows_total + n
            if batch is None:
                if k not in done:  # another process's chunk of this run
                    bar.update(n)
                continue
            ids, preds, refs, skipped, result, states = _score_chunk(run, k, batch, source, options, caught)
            columns, record = _shard_of(run, k, (ids, preds, refs, skipped), result, states, coverage_names)
            store.write_shard(run.folder, k, columns, record)
            bar.update(n)
    store.write_json(run.folder / store.PLAN, {"chunks": chunks, "input_rows": rows_total})
    for category, messages in caught.items():
        more = f" (and {len(messages) - 1} more such warning(s) over the chunks)" if len(messages) > 1 else ""
        warnings.warn(f"{messages[0]}{more}", category, stacklevel=3)


def _options_with_table(run: _Run) -> dict[str, Any]:
    """The metrics' options, the first pass's document-frequency table given to every metric that reads one."""
    from capeval.registry import metric_class

    options = dict(run.options)
    if run.cider_table:
        table = _cider_table(run)
        for name in run.selected:
            option = metric_class(name).document_frequency_option
            if option is not None:
                options[option] = table
    return options


def _score_chunk(run: _Run, k: int, batch: dict[str, list], source: Source, options: dict[str, Any],
                 caught: dict[type, list]) -> tuple:
    """``(ids, predictions, references, skipped, result, states)`` of chunk ``k`` (``result`` / ``states`` ``None``
    when no row is left to score). When the scoring fails and the chunk has images, its images are decoded one by
    one: a row whose image does not decode is named (or skipped) as any bad row and the rest scored again; if every
    image decodes, the metric's own error is raised in the rows' words."""
    ids, preds, refs, images, skipped, kept_rows = _chunk_rows(run, k, batch, source)
    result = states = None
    if preds:
        try:
            result, states = _score_rows(run, preds, refs, images, options, caught)
        except (ValueError, TypeError, OSError) as err:
            if images is None:
                raise
            checked = _chunk_rows(run, k, batch, source, decode=True)
            if len(checked[4]) == len(skipped):  # no such image: the metric's own error, in row words
                renamed = _in_row_words(err, kept_rows, ids, run.columns["image"])
                if renamed is None:
                    raise
                raise renamed from None
            ids, preds, refs, images, skipped, kept_rows = checked
            if preds:
                result, states = _score_rows(run, preds, refs, images, options, caught)
    return ids, preds, refs, skipped, result, states


def _shard_of(run: _Run, k: int, rows: tuple, result: dict | None, states: dict | None,
              coverage_names: list[str]) -> tuple[dict[str, list], dict[str, Any]]:
    """``(columns, record)`` of chunk ``k``'s shard: the per-caption values by result key (and coverage), and what
    the corpus values are merged from (states, signature, reference counts, coverage counts, non-English rows)."""
    from capeval.language import non_english_positions

    ids, preds, refs, skipped = rows
    record: dict[str, Any] = {"chunk": k, "first_row": k * run.chunk_size, "rows": len(preds),
                              "skipped": skipped, "signature": None, "nrefs": [], "states": {},
                              "coverage": {}, "non_english": []}
    id_name = run.columns["id"] or "row"
    columns: dict[str, list] = {id_name: ids}
    if not preds:
        for keys in run.selected.values():
            for key in keys:
                columns[key] = []
        for name in coverage_names:
            columns[f"coverage_{name}"] = []
        return columns, record
    for name, keys in run.selected.items():
        for key in keys:
            columns[key] = [float(v) for v in result["per_caption"][key]]
        if states[name]["state"] is not None:
            record["states"][name] = states[name]["state"]
        else:
            _check_mean(name, keys, result)
        if states[name]["coverage"] is not None:  # token counts: added up over the chunks
            record["coverage"][name] = states[name]["coverage"]
            columns[f"coverage_{name}"] = [None if v is None else float(v)  # None: no token
                                           for v in result["coverage_per_caption"][name]]
    record["signature"] = result["signature"]
    record["signature_fields"] = [list(field) for field in result["signature"].fields]
    record["nrefs"] = sorted({len(r) for r in refs})
    if run.language_check:
        positions = sorted({i for i, _ in non_english_positions(preds, refs)})
        record["non_english"] = [_jsonable(ids[i]) for i in positions]
    return columns, record


def _score_rows(run: _Run, preds: list[str], refs: list[list[str]], images: list | None, options: dict,
                caught: dict[type, list]) -> tuple[dict, dict]:
    """``score_with_states`` of one chunk's scorable rows; its warnings are added to ``caught`` (said once per kind
    for the whole run), those of a failed call are dropped with it."""
    from capeval.api import score_with_states

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result, states = score_with_states(preds, refs, list(run.selected), images=images, progress=False,
                                           language_check=False, **run.score_kwargs, **options)
    for w in seen:
        caught.setdefault(w.category, []).append(str(w.message))
    return result, states


def _check_mean(name: str, keys: list[str], result: dict) -> None:
    """A metric without a mergeable state must have corpus value = mean of per-caption values (else refuse)."""
    for key in keys:
        values = result["per_caption"][key]
        mean = math.fsum(values) / len(values)
        if abs(mean - result[key]) > 1e-9 * max(1.0, abs(mean)):
            raise ValueError(f"{key}'s corpus value is not the mean of its per-caption values ({result[key]!r} vs "
                             f"{mean!r}), and {name} keeps no mergeable corpus state: it cannot be scored chunk by "
                             "chunk. Score it with capeval.score on the whole set.")


#: The pid of the process that spawned this worker (``None`` outside :func:`_spawn`'s workers): a worker whose
#: parent is gone (its ``getppid()`` changed) stops before its next chunk.
_PARENT: int | None = None
#: How long :func:`_spawn` waits for a worker to stop after SIGTERM before it kills it (seconds).
STOP_GRACE_S = 5.0


class _Stopped(SystemExit):
    """SIGTERM in a worker: it unwinds (its ``finally`` clean-up runs) and exits with 143, without a traceback."""


def _stop_quietly(signum, frame):
    raise _Stopped(128 + signum)


def _become_worker(parent: int) -> None:
    """A spawned worker's first steps: Ctrl-C is the parent's to handle (the worker ignores SIGINT: a Ctrl-C at the
    terminal reaches every process of the group), SIGTERM (sent by the parent) ends it quietly, and it dies with its
    parent. The parent started it with SIGINT and SIGTERM blocked (so that a signal during its start-up cannot print
    a traceback): unblocked here, after the handlers are set."""
    global _PARENT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_quietly)
    from capeval.workers import die_with_parent

    die_with_parent(signal.SIGKILL)
    _PARENT = parent
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    _check_parent()  # the parent died before the death signal was set


def _check_parent() -> None:
    """In a worker whose parent is gone (killed: the worker was handed to another process), stop at once (the chunks
    are written atomically: nothing is half-written; the same call resumes)."""
    if _PARENT is not None and os.getppid() != _PARENT:
        os._exit(1)


def _worker(run: _Run, rank: int, world: int, task: str = "score", parent: int | None = None) -> None:
    if parent is not None:
        _become_worker(parent)
    from capeval.workers import take_own_gpu

    take_own_gpu(rank)  # on a machine with several GPUs, each worker's learned metrics on its own
    try:
        (_count_share if task == "count" else _score_chunks)(run, rank, world)
    except _Stopped:
        raise
    except BaseException:
        store.write_atomic(run.folder / f".error-{rank}.txt", traceback.format_exc().encode("utf-8"))
        raise


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM blocked in this thread (they stay pending and arrive when the block ends): the processes
    started meanwhile inherit the block, so they cannot be interrupted before they set their own handlers."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _stop(workers: list) -> None:
    """Stop the workers still running: SIGTERM (each unwinds and exits quietly), then SIGKILL after
    :data:`STOP_GRACE_S`; every one joined."""
    alive = [w for w in workers if w.pid is not None and w.is_alive()]
    for w in alive:
        w.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for w in alive:
        w.join(max(0.0, deadline - time.monotonic()))
    for w in alive:
        if w.is_alive():
            w.kill()
            w.join()


def _spawn(run: _Run, processes: int, task: str) -> None:
    """Chunk ``k`` to process ``k % processes``, each a fresh (spawned) Python process, for ``task`` (``"count"``:
    the first pass's shares; ``"score"``); the first failure raises.

    Signals: Ctrl-C (``KeyboardInterrupt``) or SIGTERM (the command line's ``Terminated``) in this process stops the
    workers (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`) before it goes on up, so one line is said (by the
    command line) and no worker runs on; the workers ignore SIGINT and exit quietly on SIGTERM; a worker dies with this
    process (``PR_SET_PDEATHSIG`` on Linux, else at its next chunk). Chunks are written atomically, so a stopped run
    leaves whole shards only, and the same call resumes."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    for stale in run.folder.glob(".error-*.txt"):
        stale.unlink()
    workers = [context.Process(target=_worker, args=(run, rank, processes, task, os.getpid()),
                               name=f"capeval-score-dataset-{task}-{rank}")
               for rank in range(processes)]
    try:
        with _signals_held():
            for w in workers:
                w.start()
        for w in workers:
            w.join()
    except BaseException:
        _stop(workers)
        raise
    failed = [(rank, w.exitcode) for rank, w in enumerate(workers) if w.exitcode != 0]
    if failed:
        rank, code = failed[0]
        path = run.folder / f".error-{rank}.txt"
        detail = path.read_text(encoding="utf-8").strip().splitlines()[-1] if path.is_file() else f"exit code {code}"
        raise RuntimeError(f"score_dataset: process {rank} of {processes} failed: {detail}. The chunks written so far "
                           "are kept; the same call resumes.")


class ExactSum:
    """A float sum kept exactly (Shewchuk's non-overlapping partials, as ``math.fsum`` keeps them): :meth:`value` is
    ``math.fsum`` of every value added, in memory that does not grow with their number."""

    def __init__(self) -> None:
        self._partials: list[float] = []
        self._special = 0.0  # inf / nan, which the partials cannot hold: added as floats are

    def add(self, x: float) -> None:
        x = float(x)
        if not math.isfinite(x):
            self._special += x
            return
        partials, i = self._partials, 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def value(self) -> float:
        total = math.fsum(self._partials)
        return total + self._special if self._special else total


def _finalize(run: _Run) -> dict[str, Any]:
    """Merge the shards in chunk order into ``result.json``."""
    import json

    from capeval.registry import metric_class

    plan_path = run.folder / store.PLAN
    if not plan_path.is_file():
        raise RuntimeError(f"{run.folder}: no {store.PLAN}; the scoring did not reach the end of the input.")
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    sums: dict[str, ExactSum] = {}
    merged: dict[str, Any] = {}  # per metric with a mergeable state: merge_state over the chunks, in order
    tokens: dict[str, list[int]] = {}
    rows, skipped_count, skipped, nrefs, non_english = 0, 0, [], set(), []
    signature = record_fields = None
    for k in range(plan["chunks"]):
        path = store.shard_path(run.folder, k)
        record = store.read_record(path)
        if record is None:
            raise RuntimeError(f"{path} is missing or unreadable: chunk {k} was not scored; run the same call again.")
        rows += record["rows"]
        skipped_count += len(record["skipped"])
        skipped.extend(record["skipped"][: max(0, MAX_LISTED - len(skipped))])
        nrefs.update(record["nrefs"])
        non_english.extend(record["non_english"][: max(0, 10 - len(non_english))])
        if signature is None and record["signature"]:
            signature = record["signature"]
            record_fields = [tuple(field) for field in record.get("signature_fields") or ()]
        if record["rows"]:
            columns = store.read_columns(path)
            for keys in run.selected.values():
                for key in keys:
                    sums.setdefault(key, ExactSum()).add(math.fsum(columns[key]))
            for name, state in record["states"].items():
                merged[name] = metric_class(name).merge_state(merged.get(name), state)
            for name, (known, total) in record.get("coverage", {}).items():
                counts = tokens.setdefault(name, [0, 0])
                counts[0], counts[1] = counts[0] + known, counts[1] + total
    if rows == 0:
        raise ValueError(f"score_dataset: no row of the input could be scored ({skipped_count} skipped).")
    result: dict[str, Any] = {}
    for name, keys in run.selected.items():
        if name in merged:  # merged chunk by chunk: one chunk's state in memory at a time; the keys asked for (as
            # capeval.score reports them, and the shards hold them per caption)
            corpus = metric_class(name).corpus_from_merged(merged[name])
            result.update({key: corpus[key] for key in keys})
        else:
            result.update({key: sums[key].value() / rows for key in keys})
    from capeval.signature import Signature

    stored = record_fields or Signature.of(signature).fields  # a chunk written before the fields were kept: parsed
    result["signature"] = Signature(stored).with_field("nrefs", str(next(iter(nrefs))) if len(nrefs) == 1 else "var")
    if tokens:  # as capeval.score's result["coverage"]: the share of the prediction tokens read that it knows
        result["coverage"] = {name: known / total if total else None for name, (known, total) in tokens.items()}
        result["coverage_tokens"] = {name: {"known": known, "total": total} for name, (known, total) in tokens.items()}
    result["rows"] = rows
    result["skipped"] = {"count": skipped_count, "rows": skipped}
    result["chunks"] = plan["chunks"]
    result["shards"] = f"{store.SHARDS}/part-*.parquet"
    if non_english and run.language_check:
        from capeval.language import NonEnglishWarning

        warnings.warn(with_words(NonEnglishWarning, words(
            "language_check", f"rows with id(s) {', '.join(map(repr, non_english))} hold captions that do not look "
            "English (script or function words); capeval's metrics were built for English captions. ", Setting(False),
            " silences this.")), stacklevel=3)
        result["non_english_ids"] = non_english
    store.write_json(run.folder / store.RESULT, result)
    return result
