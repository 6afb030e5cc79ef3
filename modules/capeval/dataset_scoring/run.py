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

Chunk ``k`` holds rows ``[k * chunk_size, (k + 1) * chunk_size)`` of the input in its order; with ``processes=N``, to
the first of the N processes to reach it (:func:`spawn`); under ``accelerate launch``, to process ``k % N``; with
``engine="ray"``, to the next free Ray actor
(:mod:`capeval.dataset_scoring.ray_engine`). Each chunk is written once, atomically
(:mod:`capeval.dataset_scoring.store`), so the output is the same whatever the number of processes and however
often the run was interrupted.
"""
from __future__ import annotations

import math
import os
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.advice import Setting, words
from capeval.dataset_scoring import store
from capeval.dataset_scoring.chunks import (ScoringRun, check_chunk_size, chunk_shard, jsonable, new_run,
                                            options_with_table, say_caught, wanted_columns, whole_set_only)
from capeval.dataset_scoring.first_pass import count_share, counted, merge_shares_of
from capeval.dataset_scoring.lifecycle import Stopped, become_worker, check_parent, signals_held, stop_workers
from capeval.dataset_scoring.merge import InOrder, finalize
from capeval.dataset_scoring.sources import Source
from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, OptionError

ON_ERROR = ("raise", "skip")
DEFAULT_CHUNK_SIZE = 2000
#: The engines that run the chunks: this machine's processes (or ``accelerate launch``), or a Ray cluster.
ENGINES = ("local", "ray")


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
    engine: str = "local",
    ray_address: str | None = None,
    ray_actors: int | None = None,
    ray_gpus_per_actor: float = 0.0,
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
        engine: ``"local"`` (this process, ``processes`` of them, or ``accelerate launch``) or ``"ray"`` (Ray actors
            score, this process writes: :mod:`capeval.dataset_scoring.ray_engine`; ``pip install "capeval[ray]"``);
            the output is the same, so either engine resumes the other's folder. With ``"ray"``: ``ray_address``
            (``ray.init``'s; ``None``: a Ray already started here, ``$RAY_ADDRESS`` or a new local one), ``ray_actors``
            (``None``: one per CPU, or per ``ray_gpus_per_actor`` GPUs, of the cluster), ``ray_gpus_per_actor``.

    Returns:
        The content of ``output_dir/result.json``: corpus values under :func:`capeval.score`'s keys,
        ``"signature"``, ``"rows"`` (scored), ``"skipped"`` (``{"count", "rows": [{"row", "id", "why"}]}``),
        ``"chunks"``, and for metrics that read a fixed vocabulary ``"coverage"`` (as :func:`capeval.score`'s, from
        the chunks' token counts added up) with ``"coverage_tokens"`` (``{metric: {"known", "total"}}``); ``None`` in
        a non-main process of a distributed run.
    """
    from capeval.registry import resolve
    from capeval.validation import check_max_caption_chars

    _check_arguments(output_dir, on_error, chunk_size, processes, tokenizer)
    ray_settings = _engine_settings(engine, processes, ray_address, ray_actors, ray_gpus_per_actor)
    limit = check_max_caption_chars(max_caption_chars)
    selected = resolve(metrics)
    needs_images = _check_metrics(selected, options, chunk_size, image_column)
    columns = {"prediction": prediction_column, "references": references_column,
               "image": image_column if needs_images else None, "id": id_column}
    run = new_run(data=data, split=split, folder=Path(output_dir), selected=selected, columns=columns,
                  chunk_size=chunk_size, on_error=on_error, options=options, language_check=language_check,
                  score_kwargs={"cleanup": cleanup, "tokenizer": tokenizer, "max_caption_chars": limit, "empty": empty},
                  progress=progress)
    state = distributed_state() if processes == 1 and ray_settings is None else None
    _open_output(run, main=state is None or state.is_main_process)
    if state is not None:
        return _run_in_launch(run, state)
    return finalize(run, _run_here(run, processes, ray_settings))


def _engine_settings(engine: Any, processes: int, address: Any, actors: Any, gpus_per_actor: Any):
    """The Ray engine's settings (``None`` for the local engine); ``ValueError`` for an unknown engine, Ray
    settings without ``engine="ray"``, or ``processes`` with it; ``ImportError`` when Ray is not installed."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r:.60}.")
    if engine == "local":
        given = [name for name, value, default in (("ray_address", address, None), ("ray_actors", actors, None),
                                                    ("ray_gpus_per_actor", gpus_per_actor, 0.0)) if value != default]
        if given:
            raise ValueError(f"{', '.join(given)} only apply with engine='ray'.")
        return None
    if processes != 1:
        raise ValueError("processes= is the local engine's; with engine='ray' the actors split the chunks "
                         "(ray_actors=N).")
    from capeval.dataset_scoring.ray_engine import RaySettings, connected
    from capeval.ray.cluster import require_ray

    settings = RaySettings(address=address, actors=actors, gpus_per_actor=gpus_per_actor)
    settings.check()
    require_ray("score_dataset(engine='ray')")
    if _in_launch():
        raise ValueError("engine='ray' runs on a Ray cluster, not under accelerate launch / torchrun: run it in one "
                         "process.")
    return connected(settings)


def _in_launch() -> bool:
    from capeval.parallel import in_distributed_launch

    return in_distributed_launch()


def _open_output(run: ScoringRun, main: bool) -> None:
    """Check the input's columns; in the main process, open the output folder (new, or resumed when it holds the
    same settings: ``store.open_folder``) and remove what an interrupted run left half-written."""
    source = run.open()
    _check_columns(source, run.columns)
    if not main:
        return
    settings = {"input": source.fingerprint, "columns": run.columns, "metrics": run.selected,
                "options": jsonable(run.options), "chunk_size": run.chunk_size, "on_error": run.on_error,
                **jsonable(run.score_kwargs), "capeval": _version()}
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


def _run_in_launch(run: ScoringRun, state) -> dict[str, Any] | None:
    """The passes in one process of an ``accelerate launch`` (``state``): the first pass's shares, the main process's
    merge, the chunks; the result (main process) or ``None``."""
    state.wait_for_everyone()
    if run.cider_table and not counted(run):
        count_share(run, state.process_index, state.num_processes)
        state.wait_for_everyone()
        if state.is_main_process:
            merge_shares_of(run, state.num_processes)
        state.wait_for_everyone()
    _score_chunks(run, state.process_index, state.num_processes)
    state.wait_for_everyone()
    return finalize(run) if state.is_main_process else None


def _run_here(run: ScoringRun, processes: int, ray_settings=None) -> InOrder | None:
    """The passes from this process: in it, in ``processes`` spawned workers, or on Ray (``ray_settings``); the
    shards merged while the workers scored (:class:`~capeval.dataset_scoring.merge.InOrder`), if any."""
    if ray_settings is not None:
        from capeval.dataset_scoring.ray_engine import run_on_ray

        run_on_ray(run, ray_settings)
        return None
    if processes == 1:
        if run.cider_table:
            count_share(run, 0, 1)
        _score_chunks(run, 0, 1)
        return None
    return spawn(run, processes, COUNT_THEN_SCORE if run.cider_table and not counted(run) else "score")


#: :func:`spawn`'s task of workers that count their share of the first pass, wait while the parent merges the shares,
#: then score (one process start and one set of imports and loaded metrics per worker for both passes).
COUNT_THEN_SCORE = "count+score"
#: Seconds between two looks at the first pass's shares (parent) or at the merged table's event (worker).
POLL_S = 0.05
#: Seconds between two looks, while the workers score, for shards to merge.
MERGE_POLL_S = 0.5


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


def _check_columns(source: Source, columns: dict[str, str | None]) -> None:
    """Every named column exists (when the source says which it has): ``ValueError`` naming the missing one."""
    if source.columns is None:
        return
    for role, name in columns.items():
        if name is not None and name not in source.columns:
            hint = " (id_column=None numbers the rows instead)" if role == "id" else ""
            raise ValueError(f"{source.description} has no column {name!r} ({role} column){hint}; its columns: "
                             f"{', '.join(source.columns)}.")


def _score_chunks(run: ScoringRun, rank: int, world: int, claims=None) -> None:
    """Score the chunks that have no shard yet: those ``k`` with ``k % world == rank``, or with ``claims`` (a shared
    counter, :func:`spawn`'s workers) each chunk the first process to reach it claims (a process ready for its next
    chunk takes the next one no process took: none waits at the end for another); then record how many chunks the
    input has (``plan.json``)."""
    from capeval.progress import progress

    source = run.open()
    options = options_with_table(run)
    caught: dict[type, list] = {}
    chunks = rows_total = 0
    done = store.done_chunks(run.folder)  # scored before this run: the bar starts after them (rate, ETA: this run's)
    with progress(None, total=source.num_rows, desc="score-dataset", enabled=run.progress if rank == 0 else False,
                  initial=sum(store.chunk_rows(record) for record in done.values())) as bar:
        bar.unit = "rows"
        def mine(k: int) -> bool:  # this process's chunks that have no shard yet
            if k in done:
                return False
            if claims is None:
                return k % world == rank
            with claims.get_lock():  # every process reaches the chunks in order: one above the counter is free
                if claims.value > k:
                    return False
                claims.value = k + 1
                return True

        for k, n, batch in source.chunks(run.chunk_size, wanted_columns(run), mine):
            check_parent()
            chunks, rows_total = k + 1, rows_total + n
            if batch is None:
                if k not in done:  # another process's chunk of this run
                    bar.update(n)
                continue
            columns, record = chunk_shard(run, k, batch, source.base_dir, options, caught)
            store.write_shard(run.folder, k, columns, record)
            bar.update(n)
    store.write_json(run.folder / store.PLAN, {"chunks": chunks, "input_rows": rows_total})
    say_caught(caught)


def worker_main(run: ScoringRun, rank: int, world: int, task: str = "score", parent: int | None = None,
                merged=None, claims=None) -> None:
    """A spawned worker's ``task``: ``"score"``, or :data:`COUNT_THEN_SCORE` (``merged``: the event the parent sets
    once the shares are merged); ``claims``: the chunks' shared counter (:func:`_score_chunks`)."""
    if parent is not None:
        become_worker(parent)
    from capeval.workers import take_own_gpu

    take_own_gpu(rank)  # on a machine with several GPUs, each worker's learned metrics on its own
    try:
        if task == COUNT_THEN_SCORE:
            count_share(run, rank, world)
            while not merged.wait(POLL_S):
                check_parent()
        _score_chunks(run, rank, world, claims)
    except Stopped:
        raise
    except BaseException:
        store.write_atomic(run.folder / f".error-{rank}.txt", traceback.format_exc().encode("utf-8"))
        raise


def spawn(run: ScoringRun, processes: int, task: str) -> InOrder:
    """The chunks scored by ``processes`` fresh (spawned) Python processes, each taking the next chunk no other took
    (the first pass: chunk ``k`` counted by process ``k % processes``), for ``task`` (``"score"``, or
    :data:`COUNT_THEN_SCORE`: once every worker's share of the first pass is written, this process merges them and
    lets the workers score); the first failure raises. While the workers score, this process merges the shards
    written so far (returned, for :func:`~capeval.dataset_scoring.merge.finalize`).

    Signals: Ctrl-C (``KeyboardInterrupt``) or SIGTERM (the command line's ``Terminated``) in this process stops the
    workers (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`) before it goes on up, so one line is said (by the
    command line) and no worker runs on; the workers ignore SIGINT and exit quietly on SIGTERM; a worker dies with this
    process (``PR_SET_PDEATHSIG`` on Linux, else at its next chunk). Chunks are written atomically, so a stopped run
    leaves whole shards only, and the same call resumes."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    for stale in run.folder.glob(".error-*.txt"):
        stale.unlink()
    merged = context.Event() if task == COUNT_THEN_SCORE else None
    claims = context.Value("q", 0)
    workers = [context.Process(target=worker_main, args=(run, rank, processes, task, os.getpid(), merged, claims),
                               name=f"capeval-score-dataset-{rank}")
               for rank in range(processes)]
    try:
        with signals_held():
            for w in workers:
                w.start()
        ended = None
        if merged is not None:
            ended = _first_ended_before_counting(run, workers)
            if ended is None:
                merge_shares_of(run, processes)
                merged.set()
            else:  # a worker ended before every share was written: the others are stopped, its own end said below
                stop_workers(workers)
        in_order = InOrder(run)
        for w in workers:
            while w.exitcode is None:
                w.join(MERGE_POLL_S)
                if ended is None:
                    in_order.catch_up()
    except BaseException:
        stop_workers(workers)
        raise
    failed = [(rank, w.exitcode) for rank, w in enumerate(workers) if w.exitcode != 0]
    if ended is not None:
        failed = [(ended, workers[ended].exitcode)]
    if failed:
        rank, code = failed[0]
        path = run.folder / f".error-{rank}.txt"
        detail = path.read_text(encoding="utf-8").strip().splitlines()[-1] if path.is_file() else f"exit code {code}"
        raise RuntimeError(f"score_dataset: process {rank} of {processes} failed: {detail}. The chunks written so far "
                           "are kept; the same call resumes.")
    return in_order


def _first_ended_before_counting(run: ScoringRun, workers: list) -> int | None:
    """Wait until every worker's share of the first pass is written (``None``), or a worker ended first (its rank)."""
    import time

    from capeval.dataset_scoring.first_pass import share_path

    world = len(workers)
    while not all(share_path(run.folder, rank, world).is_file() for rank in range(world)):
        for rank, w in enumerate(workers):
            if w.exitcode is not None:
                return rank
        time.sleep(POLL_S)
    return None
