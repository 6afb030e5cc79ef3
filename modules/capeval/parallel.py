"""Multi-process scoring with ``accelerate``: the per-item heavy work split, the corpus statistics whole.

Every process validates, cleans and tokenises the whole corpus (cheap), then prepares its contiguous share of
the items for each metric that has per-item heavy work (:meth:`capeval.metric.CaptionMetric.prepare`: SPICE /
SPICE-U parsing and scene graphs, METEOR's statistics lines). The shares are gathered in item order
and the main process computes every metric on the whole corpus from them: CIDEr-D's document frequencies,
BLEU's corpus statistics, METEOR's aggregate and every corpus mean come from all items, so the result is
identical to one process. BLEU, ROUGE-L and CIDEr-D (milliseconds per thousand captions) run on the main
process only. ``sentence_cosine`` prepares each share's cosines (the encoding); a sentence vector depends on the
texts padded with it at float32 rounding level, so its values equal one process's to about 1e-7, not bit for bit.

Start the processes with ``capeval score --processes N`` (which runs ``accelerate launch``), or yourself::

    accelerate launch --multi_gpu --num_processes 2 -m capeval score --predictions P --references R
    torchrun --nproc_per_node 2 -m capeval score --predictions P --references R

Scoring runs on the CPU in every case (gloo). ``accelerate launch --cpu --num_processes N`` starts a
*single* process in accelerate 1.15 (it needs an MPI host file for several); ``--multi_gpu`` starts N
processes also on a machine without GPUs, as the ``torchrun`` line does.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from capeval.metric import CaptionMetric

__all__ = ["in_distributed_launch", "launch_command", "process_state", "score"]


def in_distributed_launch() -> bool:
    """Whether this process was started by ``accelerate launch`` / ``torchrun`` with several processes."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1")) > 1
    except ValueError:
        return False


def process_state():
    """accelerate's ``PartialState`` on the CPU (gloo): scoring is CPU work whatever GPUs the machine has."""
    from capeval.dependencies import require

    accelerate = require("accelerate", what="multi-process scoring")
    return partial_state(accelerate, cpu=True)


_CLOSE_REGISTERED: list[bool] = []


def partial_state(accelerate, **kwargs):
    """``accelerate.PartialState(**kwargs)``; when that call is what starts the process group (no group before), the
    group is also destroyed when the interpreter exits. Left to the interpreter's teardown, gloo's threads can be
    destroyed while still joinable, and the process then aborts at exit (SIGABRT, "terminate called without an
    active exception") after its work is done. A group the caller started is left alone."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - accelerate needs torch
        dist = None
    started_here = dist is not None and dist.is_available() and not dist.is_initialized()
    state = accelerate.PartialState(**kwargs)
    if started_here and dist.is_initialized() and not _CLOSE_REGISTERED:
        import atexit

        atexit.register(_destroy_process_group)
        _CLOSE_REGISTERED.append(True)
    return state


def _destroy_process_group() -> None:
    try:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - at exit nothing is left to report to
        pass


def launch_command(processes: int, module_args: Sequence[str]) -> list[str]:
    """The ``accelerate launch`` command line running ``python -m capeval <module_args>`` in ``processes`` processes."""
    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 2:
        raise ValueError(f"processes must be an integer of at least 2 to launch, got {processes!r}.")
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
            "-m", "capeval", *module_args]


class ProcessShare:
    """Splits a metric's :meth:`~capeval.metric.CaptionMetric.prepare` over the processes of ``state``."""

    def __init__(self, state) -> None:
        self.state = state
        self.is_main = bool(state.is_main_process)

    def __call__(self, metric: CaptionMetric, batch) -> list[Any] | None:
        """The gathered per-item entries of ``metric`` for ``batch`` (every process gets them), or ``None``."""
        if type(metric).prepare is CaptionMetric.prepare:
            return None  # no per-item heavy work: the main process computes it whole
        from accelerate.utils import gather_object

        with self.state.split_between_processes(list(range(len(batch)))) as mine:
            part = metric.prepare(batch.subset(mine)) if len(mine) else []
        if part is None or len(part) != len(mine):
            raise RuntimeError(f"{metric.name}: prepare() returned {None if part is None else len(part)} entries "
                               f"for {len(mine)} items on process {self.state.process_index}.")
        gathered = gather_object(list(part))
        if len(gathered) != len(batch):
            raise RuntimeError(f"{metric.name}: gathered {len(gathered)} entries for {len(batch)} items.")
        return gathered


def score(predictions: Sequence[str], references: Sequence[Any], metrics: Sequence[str] | str | None = None, *,
          state=None, **kwargs: Any) -> dict[str, Any] | None:
    """:func:`capeval.score` with the heavy per-item work split over the processes of ``state``.

    Call it in every process (all with the same arguments, ``images=`` included: every process validates all
    of them, and each metric's ``prepare`` sees its share through :meth:`~capeval.batch.CaptionBatch.subset`).
    The main process returns the result, identical to :func:`capeval.score`'s; the other processes return
    ``None``. ``state``: an ``accelerate.PartialState`` (default :func:`process_state`); with one process this
    is :func:`capeval.score`.
    """
    from capeval.api import score as score_one, score_shared

    state = process_state() if state is None else state
    if state.num_processes == 1:
        return score_one(predictions, references, metrics, **kwargs)
    share = ProcessShare(state)
    if not share.is_main:
        kwargs["progress"] = False
    result = score_shared(predictions, references, metrics, share=share, **kwargs)
    # the other processes wait for the main one's corpus scores: one leaving early tears its gloo threads
    # down under the others' feet (SIGABRT "terminate called without an active exception", result lost)
    state.wait_for_everyone()
    return result
