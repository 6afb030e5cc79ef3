""":func:`capeval.score_dataset`'s Ray engine (``engine="ray"``): the chunks scored by a pool of Ray actors, the
output folder written by this process (the driver) as the local engine writes it.

* The driver reads the input chunk by chunk (:meth:`~capeval.dataset_scoring.sources.Source.chunks`: the chunks
  with a shard are not read again), puts each chunk's rows in Ray's object store and hands it to an actor; an actor
  scores it with :func:`~capeval.dataset_scoring.chunks.chunk_shard`, the function every engine scores a chunk with,
  and sends back the shard's columns and record, which the driver writes atomically
  (:func:`~capeval.dataset_scoring.store.write_shard`). So the shards, ``result.json`` and the corpus values
  (BLEU's counts and METEOR's statistics merged in chunk order, every other corpus value an exact mean) are those
  of the local engine, and a folder begun by one engine is resumed by the other. A model computes in float32 with
  the threads of the CPUs an actor reserves, so its scores can differ from the local engine's in the last bits.
* CIDEr-D's first pass: each actor counts a chunk's reference document frequencies into a table and sends its bytes
  back; the driver merges the tables (:func:`capeval.coco.disk_df.merge_tables`) into ``cider-df.bin`` and sends the
  table's bytes to every actor once (Ray's object store), where it is opened from a temporary file. No folder is
  shared between the driver and the actors; image paths must be readable where the actors run (the local machine's
  paths on a local Ray), or the image column must hold the images' bytes (a ``datasets.Image`` column).
* Each actor is a process that keeps its loaded models (``capeval.loaded_models``) for every chunk it scores: a model
  loads once per actor. ``ray_gpus_per_actor`` gives each actor a GPU (or a share of one): Ray makes it the actor's
  ``cuda:0``.
* Faults: an actor that dies (killed, out of memory, its node lost) is restarted by Ray and the chunk it held is
  sent to it again, up to :data:`TASK_RETRIES` times per chunk; a chunk that kills its actor more often fails the
  run, naming the chunk's rows. A bad row raises as with the local engine (``row N (id ...)``, one line) or is
  skipped (``on_error="skip"``). The driver writes each shard as it arrives, so a run whose driver is killed resumes
  with the same call (the chunks written are kept; a first pass cut short is counted again).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.dataset_scoring import store
from capeval.dataset_scoring.chunks import ScoringRun, chunk_shard, options_with_table, say_caught, wanted_columns
from capeval.dataset_scoring.first_pass import chunk_table, counted, options_with_table_bytes

#: Times a chunk is sent again to a restarted actor after its actor died while holding it.
TASK_RETRIES = 3
#: CPUs each actor reserves.
CPUS_PER_ACTOR = 1
#: Chunks handed to each actor at once (one scored while the next one's rows arrive).
IN_FLIGHT_PER_ACTOR = 2


@dataclass(frozen=True)
class RaySettings:
    """Where and how the Ray engine runs.

    ``address``: ``ray.init``'s (``None``: a Ray this process started, ``$RAY_ADDRESS``, or a new local one);
    ``actors``: how many scoring actors (``None``: as many as the cluster holds at once: one per CPU, or per
    ``gpus_per_actor`` of its GPUs); ``gpus_per_actor``: GPUs (or a fraction of one) each actor reserves, ``0`` for
    CPU actors. Each actor reserves one CPU."""

    address: str | None = None
    actors: int | None = None
    gpus_per_actor: float = 0.0

    def check(self) -> None:
        """``ValueError`` for a setting the engine cannot run with, before any work."""
        if self.actors is not None and (isinstance(self.actors, bool) or not isinstance(self.actors, int)
                                        or self.actors < 1):
            raise ValueError(f"ray_actors must be a positive integer, got {self.actors!r:.60}.")
        value = self.gpus_per_actor
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"ray_gpus_per_actor must be a number >= 0, got {value!r:.60}.")
        if self.address is not None and not isinstance(self.address, str):
            raise TypeError(f"ray_address must be a string, got {type(self.address).__name__}.")


class ChunkWorker:
    """A Ray actor's work: chunks counted (:func:`~capeval.dataset_scoring.first_pass.chunk_table`) and scored
    (:func:`~capeval.dataset_scoring.chunks.chunk_shard`) with the run's settings (``run`` without its data)."""

    def __init__(self, run: ScoringRun) -> None:
        self.run = run
        self._options: dict[str, Any] | None = None

    def count(self, k: int, batch: dict[str, list], base_dir: Path | None) -> bytes:
        return chunk_table(self.run, k, batch, base_dir)

    def score(self, k: int, batch: dict[str, list], base_dir: Path | None, table: list | None) -> tuple:
        """``(columns, record, warnings)`` of chunk ``k``; ``table``: ``[ref]`` of the first pass's table bytes (in
        a list, so that Ray hands over the reference and the bytes are fetched once per actor)."""
        caught: dict[type, list] = {}
        columns, record = chunk_shard(self.run, k, batch, base_dir, self._options_for(table), caught)
        return columns, record, [(category, messages) for category, messages in caught.items()]

    def _options_for(self, table: list | None) -> dict[str, Any]:
        if self._options is None:
            if table is None:
                self._options = options_with_table(self.run)
            else:
                import ray

                self._options = options_with_table_bytes(self.run, ray.get(table[0]))
        return self._options


def connected(settings: RaySettings) -> RaySettings:
    """``settings`` once Ray is connected (:func:`capeval.ray.cluster.connect`) and the number of actors known:
    errors about the cluster (no GPU for GPU actors, an address given to a Ray already started) come before the
    output folder is touched."""
    from capeval.ray.cluster import cluster_slots, connect

    ray = connect(settings.address, what="score_dataset(engine='ray')")
    actors = settings.actors or cluster_slots(ray, CPUS_PER_ACTOR, settings.gpus_per_actor)
    return dataclasses.replace(settings, address=None, actors=actors)


def run_on_ray(run: ScoringRun, settings: RaySettings) -> None:
    """The first pass (when CIDEr-D needs it and it is not done) and the chunks without a shard, on Ray (``settings``
    from :func:`connected`); then ``plan.json``. :func:`capeval.dataset_scoring.merge.finalize` merges the shards as
    for the local engine."""
    from capeval.ray.cluster import connect

    ray = connect(settings.address, what="score_dataset(engine='ray')")
    actors = settings.actors or 1
    remote = ray.remote(max_restarts=-1, max_task_retries=TASK_RETRIES)(ChunkWorker)
    light = dataclasses.replace(run, data=None, source=None, progress=False)
    pool = [remote.options(num_cpus=CPUS_PER_ACTOR, num_gpus=settings.gpus_per_actor).remote(light)
            for _ in range(actors)]
    try:
        table = None
        if run.cider_table:
            if not counted(run):
                _first_pass(ray, run, pool)
            table = [ray.put((run.folder / store.CIDER_DF).read_bytes())]
        _score_chunks(ray, run, pool, table)
    finally:
        for actor in pool:
            ray.kill(actor)


def _first_pass(ray, run: ScoringRun, pool: list) -> None:
    """Each chunk's table counted by an actor, the tables merged into ``cider-df.bin`` (parts under a temporary
    folder of the output, removed)."""
    import shutil

    from capeval.coco.disk_df import merge_tables

    parts_dir = run.folder / ".tmp-ray-cider-df"
    shutil.rmtree(parts_dir, ignore_errors=True)
    parts_dir.mkdir()
    parts: list[Path] = []

    def keep(k: int, table_bytes: bytes, rows: int) -> None:
        path = parts_dir / f"part-{k:06d}.bin"
        path.write_bytes(table_bytes)
        parts.append(path)

    _dispatch(ray, run, pool, lambda actor, k, batch, base_dir: actor.count.remote(k, batch, base_dir),
              keep, wanted=lambda k: True, desc="score-dataset: CIDEr-D document frequencies")
    merge_tables(sorted(parts), run.folder / store.CIDER_DF, spill_dir=parts_dir / "merge")
    shutil.rmtree(parts_dir, ignore_errors=True)


def _score_chunks(ray, run: ScoringRun, pool: list, table: list | None) -> None:
    """The chunks without a shard scored by the actors, each shard written as it arrives; then ``plan.json``."""
    done = store.done_chunks(run.folder)
    caught: dict[type, list] = {}

    def keep(k: int, scored: tuple, rows: int) -> None:
        columns, record, seen = scored
        store.write_shard(run.folder, k, columns, record)
        for category, messages in seen:
            caught.setdefault(category, []).extend(messages)

    chunks, rows_total = _dispatch(
        ray, run, pool, lambda actor, k, batch, base_dir: actor.score.remote(k, batch, base_dir, table), keep,
        wanted=lambda k: k not in done, desc="score-dataset",
        initial=sum(store.chunk_rows(record) for record in done.values()))
    store.write_json(run.folder / store.PLAN, {"chunks": chunks, "input_rows": rows_total})
    say_caught(caught)


def _dispatch(ray, run: ScoringRun, pool: list, submit, keep, *, wanted, desc: str, initial: int = 0
              ) -> tuple[int, int]:
    """Every wanted chunk of the input submitted to the actors in turn (at most :data:`IN_FLIGHT_PER_ACTOR` each
    waiting), ``keep(k, result, rows)`` called here as results arrive (in any order); ``(chunks, rows)`` of the
    whole input. A failed chunk raises the task's own error (``row N (id ...)``), or, when its actor died more than
    :data:`TASK_RETRIES` times, a ``RuntimeError`` naming its rows."""
    from capeval.progress import progress

    source = run.open()
    pending: dict[Any, tuple[int, int]] = {}  # object ref -> (chunk, rows)
    chunks = rows_total = turn = 0
    with progress(None, total=source.num_rows, desc=desc, enabled=run.progress, initial=initial) as bar:
        bar.unit = "rows"
        for k, n, batch in source.chunks(run.chunk_size, wanted_columns(run), wanted):
            chunks, rows_total = k + 1, rows_total + n
            if batch is None:
                continue
            while len(pending) >= IN_FLIGHT_PER_ACTOR * len(pool):
                _collect(ray, run, pending, keep, bar, wait_for=1)
            ref = submit(pool[turn % len(pool)], k, ray.put(batch), source.base_dir)
            pending[ref] = (k, n)
            turn += 1
        while pending:
            _collect(ray, run, pending, keep, bar, wait_for=1)
    return chunks, rows_total


def _collect(ray, run: ScoringRun, pending: dict, keep, bar, wait_for: int) -> None:
    """Wait for ``wait_for`` of the ``pending`` chunks and keep them (or raise their error)."""
    from ray.exceptions import RayActorError, RayTaskError

    from capeval.ray.cluster import task_error

    ready, _ = ray.wait(list(pending), num_returns=wait_for)
    for ref in ready:
        k, n = pending.pop(ref)
        try:
            result = ray.get(ref)
        except RayActorError as err:
            first = k * run.chunk_size
            raise RuntimeError(f"score_dataset: chunk {k} (rows {first}-{first + n - 1}): its Ray actor died "
                               f"{TASK_RETRIES + 1} times while scoring it ({' '.join(str(err).split())[:200]}). "
                               "The chunks written so far are kept; the same call resumes.") from None
        except RayTaskError as err:
            raise task_error(err) from None
        keep(k, result, n)
        bar.update(n)
