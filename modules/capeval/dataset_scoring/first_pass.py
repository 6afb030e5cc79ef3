"""The first pass of :func:`capeval.score_dataset`: CIDEr-D's document frequencies over every row's references,
counted in shares (one per process, chunk ``k`` in share ``k % world``) and merged into ``cider-df.bin``
(:mod:`capeval.coco.dataset_pass`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from capeval.dataset_scoring import store
from capeval.dataset_scoring.chunks import ScoringRun, chunk_rows, options_with_table, wanted_columns
from capeval.dataset_scoring.lifecycle import check_parent


def counted(run: ScoringRun) -> bool:
    """Whether the first pass's table is there (from a previous run of this folder) and whole: a ``cider-df.bin``
    that fails its check (:meth:`capeval.coco.disk_df.DiskDocumentFrequency.open`: damaged anywhere, cut short) is
    removed with one warning and counted again (the count is deterministic, so the shards scored with it stay
    right)."""
    from capeval.coco.dataset_pass import table_is_whole

    path = run.folder / store.CIDER_DF
    if path.is_file() and table_is_whole(path):
        return True
    return (run.folder / store.CIDER_DF_PARQUET).is_file()


def share_path(folder: Path, rank: int, world: int) -> Path:
    return folder / f"cider-df.part-{rank:05d}-of-{world:05d}.bin"


def count_share(run: ScoringRun, rank: int, world: int) -> None:
    """The first pass, this process's share: CIDEr-D's document frequencies over the references of the scorable rows
    of chunks ``k`` with ``k % world == rank`` (one document per row), into ``cider-df.bin`` when ``world`` is 1,
    else into this share's part (merged by :func:`merge_shares_of`). A share already counted is kept. Memory stays
    bounded: the counter writes sorted runs to ``.tmp-cider-df-runs-<rank>/`` and merges them into its table
    (:mod:`capeval.coco.disk_df`)."""
    if counted(run):
        return
    target = run.folder / store.CIDER_DF if world == 1 else share_path(run.folder, rank, world)
    if target.is_file():
        return
    from capeval.coco.dataset_pass import DatasetDocumentFrequencyCount
    from capeval.progress import progress

    source = run.open()
    counter = DatasetDocumentFrequencyCount(run.folder / f".tmp-cider-df-runs-{rank}")
    with progress(None, total=source.num_rows, desc="score-dataset: CIDEr-D document frequencies",
                  enabled=run.progress if rank == 0 else False) as bar:
        bar.unit = "rows"
        for k, n, batch in source.chunks(run.chunk_size, wanted_columns(run), lambda k: k % world == rank):
            check_parent()
            bar.update(n)
            if batch is None:
                continue
            count_chunk(run, k, batch, source.base_dir, counter)
    counter.write(target)
    del counter
    if world == 1:
        remove_shares(run.folder)  # parts an interrupted run with more processes left
    from capeval.dependencies import release_freed_memory

    release_freed_memory()  # the pass's n-gram strings were freed: hand their pages back before the scoring starts


def count_chunk(run: ScoringRun, k: int, batch: dict[str, list], base_dir: Path | None, counter) -> None:
    """Add the references of chunk ``k``'s scorable rows to ``counter`` (a
    :class:`~capeval.coco.dataset_pass.DatasetDocumentFrequencyCount`), one document per row; a bad row raises as in
    the scoring (``on_error="raise"``)."""
    _, preds, refs, _, _, _ = chunk_rows(run, k, batch, base_dir)
    count_rows(run, preds, refs, counter)


def count_rows(run: ScoringRun, preds: list[str], refs: list[list[str]], counter) -> None:
    """Add the references of scorable rows to ``counter``, one document per row, tokenised as the run scores them."""
    from capeval.validation import normalize_inputs

    if not preds:
        return
    preds, refs = normalize_inputs(preds, refs, empty=run.score_kwargs["empty"])
    counter.add(preds, refs, cleanup=run.score_kwargs["cleanup"], tokenizer=run.score_kwargs["tokenizer"])


def chunk_table(run: ScoringRun, k: int, batch: dict[str, list], base_dir: Path | None) -> bytes:
    """The bytes of a table file of chunk ``k``'s document frequencies alone (:func:`count_chunk`, :func:`table_of`)."""
    return table_of(lambda counter: count_chunk(run, k, batch, base_dir, counter))


def table_of(count) -> bytes:
    """The bytes of a table file (``capeval-df/1``) of what ``count(counter)`` adds to a new counter, counted in a
    temporary folder: what an engine without a shared folder sends back to be merged (tables over disjoint rows merge
    into the whole table exactly: :func:`capeval.coco.disk_df.merge_tables`)."""
    from capeval.coco.dataset_pass import DatasetDocumentFrequencyCount
    from capeval.scratch import scratch_folder

    with scratch_folder("capeval-df-") as tmp:
        counter = DatasetDocumentFrequencyCount(tmp / "runs")
        count(counter)
        counter.write(tmp / "table.bin")
        return (tmp / "table.bin").read_bytes()


def options_with_table_bytes(run: ScoringRun, table: bytes) -> dict[str, Any]:
    """The run's metric options with the first pass's table, from the table's bytes (sent by an engine without a
    shared folder): written to a scratch folder of this process, opened, and its file removed at once
    (:meth:`~capeval.coco.disk_df.DiskDocumentFrequency.detach`), so that nothing is left behind when the process is
    killed."""
    import dataclasses

    from capeval.coco.disk_df import DiskDocumentFrequency
    from capeval.scratch import scratch_folder

    with scratch_folder("capeval-df-") as folder:
        store.write_atomic(folder / store.CIDER_DF, table)
        options = options_with_table(dataclasses.replace(run, folder=folder))
        for value in {id(value): value for value in options.values()}.values():
            if isinstance(value, DiskDocumentFrequency):
                value.detach()
    return options


def merge_shares_of(run: ScoringRun, world: int) -> None:
    """``cider-df.bin`` from the ``world`` processes' parts (then removed, with parts of interrupted runs that had
    another number of processes)."""
    if counted(run):
        return
    from capeval.coco.dataset_pass import merge_shares

    parts = [share_path(run.folder, rank, world) for rank in range(world)]
    missing = [p.name for p in parts if not p.is_file()]
    if missing:
        raise RuntimeError(f"{run.folder}: the first pass's part(s) {', '.join(missing[:4])} are missing: a process "
                           "did not finish counting; run the same call again.")
    merge_shares(parts, run.folder / store.CIDER_DF, spill_dir=run.folder / ".tmp-cider-df-merge")
    remove_shares(run.folder)


def remove_shares(folder: Path) -> None:
    for part in folder.glob("cider-df.part-*.bin"):
        part.unlink(missing_ok=True)
