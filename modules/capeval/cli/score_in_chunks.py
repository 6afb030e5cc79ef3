"""``capeval score`` on inputs too large to score in memory: the files streamed into an index on disk, the paired rows
scored by :func:`capeval.score_dataset` chunk by chunk, the per-caption output read back shard by shard.

:func:`capeval.score` holds every caption's tokens, n-gram counts and per-caption results at once (about 12 KB per
caption with two references for BLEU + ROUGE-L + CIDEr-D), so a million captions would need over 10 GB. Above
:data:`IN_MEMORY_MAX_PREDICTIONS` predictions (counted first, without reading the rest of the file: :func:`streamable`),
``capeval score`` never holds the inputs either. In a temporary folder (``$TMPDIR``, removed at the end, also on an
error or Ctrl-C) :mod:`capeval.io.stream` reads both files one item at a time into an SQLite index (with the in-memory
readers' checks and messages), which finds duplicate prediction ids, prediction ids without references and reference
ids without predictions by query, and pairs the two (by image id when both files have ids, else by position); the
paired rows (prediction, references, image) go to a JSON-lines file, which :func:`capeval.score_dataset` scores chunk
by chunk in :func:`chunk_processes` processes (one per CPU, at most four), whose numbers are :func:`capeval.score`'s
on the whole data (its corpus sums are exact, so the order of the chunks does not matter). The printed table, the
signature and the ``--json`` result have the same keys as the in-memory route; per-caption scores (``--per-caption``,
``--json``) are read back from the chunks' shards, one shard at a time, in prediction order: the ``--json`` file is
written piece by piece (the same bytes as ``json.dumps`` of the whole result), the per-caption table with the widths
of a first pass over the shards (:func:`capeval.render.text_table_lines`: the in-memory route's table). The main
process's memory does not grow with the number of rows, but for ``--images`` / ``--image-dir``: their image paths
are held as one list (one path per prediction).

Routes that stay in memory whatever the size: ``--duplicate-ids split``, ``--features``, ``--processes N`` (which
already splits the work), and metrics that :func:`capeval.score_dataset` cannot score chunk by chunk (SPICE-U).
Measured figures and their command: ``BENCHMARKS.md`` ("capeval score on a million captions").
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

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


def streamable(args: Any, selected: dict[str, list[str]], main_process: bool, predictions: Path) -> bool:
    """Whether ``capeval score`` takes the chunked route: more than :func:`in_memory_limit` predictions (counted up to
    one more, :func:`capeval.io.stream.count_items`), metrics :func:`chunkable`, and none of the routes that stay in
    memory."""
    from capeval.io.stream import count_items
    from capeval.parallel import in_distributed_launch

    if (args.duplicate_ids == "split" or not main_process or in_distributed_launch() or getattr(args, "features", False)
            or not chunkable(selected)):
        return False
    limit = in_memory_limit()
    return count_items(predictions, limit) > limit


def warn_unscored(count: int, total: int, examples: list[Any]) -> None:
    """The warning about ``count`` of the ``total`` reference image ids that no prediction names."""
    import sys

    print(f"capeval score: warning: {count} of {total} reference image(s) have no prediction and "
          f"take no part in the scores, e.g. {examples!r}", file=sys.stderr)


class Scored:
    """The chunked route's result, read from its temporary folder while it exists: ``n`` predictions, ``result``
    (corpus values, signature, coverage; no per-caption lists), ``keyed`` (the predictions have ids)."""

    def __init__(self, index, folder: Path, keys: list[str], n: int, keyed: bool, result: dict[str, Any],
                 chunks: int) -> None:
        self.index, self.folder, self.keys, self.n, self.keyed, self.result = index, folder, keys, n, keyed, result
        self.chunks = chunks

    def shards(self) -> Iterator[dict[str, list]]:
        from capeval.dataset_scoring import store

        for k in range(self.chunks):
            yield store.read_columns(store.shard_path(self.folder, k))

    def column(self, key: str) -> Iterator[Any]:
        for shard in self.shards():
            yield from shard[key]

    def rows(self) -> Iterator[tuple[Any, str, list]]:
        """``(id or position, caption, [value of each key])`` in prediction order."""
        ids = self.index.ids() if self.keyed else iter(range(self.n))
        captions = self.index.captions()
        for shard in self.shards():
            for values in zip(*(shard[key] for key in self.keys)):
                yield next(ids), next(captions), list(values)

    def payload(self, per_caption: bool) -> dict[str, Any]:
        """The ``--json`` payload (:func:`capeval.cli.output.write_json_streamed`): the in-memory route's keys."""
        from capeval.cli.output import Lazy

        out = dict(self.result)
        if per_caption:
            out["per_caption"] = {key: Lazy(lambda key=key: self.column(key)) for key in self.keys}
        if self.keyed:
            out["image_ids"] = Lazy(self.index.ids)
        return out


@contextmanager
def scored_files(args: Any, paths: tuple[Path, Path], *, metrics: Any, selected: dict[str, list[str]],
                 options: dict[str, Any], images_of) -> Iterator[Scored]:
    """Score the files ``paths`` (predictions, references) chunk by chunk in a temporary folder; the :class:`Scored`
    result while the folder exists. ``images_of(ids, n)``: the image paths of the predictions (``ids``: an iterator of
    their ids, or ``None``), or ``None``."""
    import sys

    from capeval.io.stream import Index, read_predictions
    from capeval.scratch import scratch_folder
    from capeval.validation import check_lengths

    pred_path, ref_path = paths
    with scratch_folder("capeval-score-") as tmp:
        index = Index(tmp / "index.sqlite")
        try:
            with references_read_beside(ref_path, tmp / "references.sqlite") as references:
                keyed = read_predictions(pred_path, index, allow_empty=args.empty == "zero")
                refs_keyed, n_refs = references()
            index.attach_references(tmp / "references.sqlite", n_refs)
            by_id = refs_keyed and keyed
            n = index.n_preds
            images = images_of(index.ids() if keyed else None, n)
            if by_id:
                count, examples = index.unscored()
                if count:
                    warn_unscored(count, index.reference_ids(), examples)
                index.check_paired()
            else:
                check_lengths(n, index.n_refs)
            print(f"capeval score: {n} predictions: scoring in chunks of rows (as capeval score-dataset) in "
                  "bounded memory", file=sys.stderr)
            rows = tmp / "rows.jsonl"
            _write_rows(rows, index.paired_texts(by_id), keyed, images)
            result, chunks = _score_rows(rows, n, keyed, images is not None, metrics=metrics, selected=selected,
                                         options=options, out=tmp / "out")
            yield Scored(index, tmp / "out", [k for ks in selected.values() for k in ks], n, keyed, result, chunks)
        finally:
            index.close()


@contextmanager
def references_read_beside(path: Path, index_path: Path) -> Iterator[Callable[[], tuple[bool, int]]]:
    """The references file ``path`` read into an index of its own at ``index_path`` by a spawned process, while this
    one reads the predictions (the two files' reading, on two CPUs); the context's value waits for it: ``(whether the
    references carry ids, how many items)``, or raises what the reading raised (the in-memory reader's refusal, in one
    line). The process ignores Ctrl-C (this process handles it) and is stopped when the context ends before it. In a
    daemonic process (a ``multiprocessing`` pool's worker, which may not start one) the value reads the file itself."""
    import multiprocessing

    from capeval.dataset_scoring.lifecycle import signals_held, stop_workers

    if multiprocessing.current_process().daemon:  # a pool's worker may not start processes: read here, in turn
        yield lambda: _references_into(path, index_path)
        return
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    worker = context.Process(target=_read_references_into, args=(path, index_path, sending, os.getpid()),
                             name="capeval-score-references")
    with signals_held():
        worker.start()
    sending.close()

    def outcome() -> tuple[bool, int]:
        try:
            answer = receiving.recv()
        except EOFError:
            answer = RuntimeError(f"capeval score: the process reading {path} ended without an answer.")
        worker.join()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    try:
        yield outcome
    finally:
        stop_workers([worker])
        receiving.close()


def _read_references_into(path: Path, index_path: Path, sending, parent: int) -> None:
    """:func:`references_read_beside`'s process: :func:`capeval.io.stream.read_references` into a new index."""
    from capeval.dataset_scoring.lifecycle import become_worker

    become_worker(parent)
    try:
        answer: Any = _references_into(path, index_path)
    except Exception as err:  # sent as it is (the message is the user's line)
        answer = err
    try:
        sending.send(answer)
    except Exception:  # an error that does not pickle: its words
        sending.send(RuntimeError(str(answer)))


def _references_into(path: Path, index_path: Path) -> tuple[bool, int]:
    """:func:`capeval.io.stream.read_references` of ``path`` into a new index at ``index_path``: ``(whether the
    references carry ids, how many items)``."""
    from capeval.io.stream import Index, read_references

    index = Index(index_path)
    try:
        return read_references(path, index), index.n_refs
    finally:
        index.close()


def _write_rows(path: Path, paired: Iterator[tuple[str, str, str | None]], keyed: bool,
                images: list[Any] | None) -> None:
    """The paired rows as JSON lines (``prediction``, ``references``, then ``id`` when ``keyed`` and ``image`` when
    given), from :meth:`~capeval.io.stream.Index.paired_texts` (references and ids already JSON text, put in as they
    are)."""
    from capeval.io import JSON_UNESCAPED

    encode = JSON_UNESCAPED.encode
    with path.open("w", encoding="utf-8") as out:
        for i, (prediction, references, id_json) in enumerate(paired):
            line = f'{{"prediction": {encode(prediction)}, "references": {references}'
            if keyed:
                line += f', "id": {id_json}'
            if images is not None:  # score_dataset resolves relative paths against this file: absolute here
                line += f', "image": {encode(os.path.abspath(images[i]))}'
            out.write(line + "}\n")


def _score_rows(rows: Path, n: int, keyed: bool, with_images: bool, *, metrics: Any, selected: dict[str, list[str]],
                options: dict[str, Any], out: Path) -> tuple[dict[str, Any], int]:
    """``(result, chunks)``: :func:`capeval.score_dataset` of the rows file into ``out``, with :func:`capeval.score`'s
    keys (corpus values, ``signature``, ``coverage`` when reported)."""
    from capeval.dataset_scoring import score_dataset

    options = dict(options)
    result = score_dataset(str(rows), metrics, out, id_column="id" if keyed else None,
                           image_column="image" if with_images else None,
                           chunk_size=_chunk_size(selected, options), processes=chunk_processes(), **options)
    if result["rows"] != n:  # on_error="raise": a row it could not score raised
        raise RuntimeError(f"capeval score: {n - result['rows']} of {n} rows were not scored in chunks.")
    keys = [key for ks in selected.values() for key in ks]
    scores = {key: result[key] for key in keys}
    scores["signature"] = result["signature"]
    for name in ("coverage", "non_english_ids"):
        if name in result:
            scores[name] = result[name]
    return scores, result["chunks"]
