"""Measuring for ``capeval verify``: one run per :class:`~capeval.meta_evaluation.verify.records.Job` with every metric
its rows need: ``capeval bench``'s harness (with its score cache), :func:`capeval.thumb.score` for THumB's rubric
tables, :func:`capeval.score` for the example outputs; and reading a row's value out of the result."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from capeval.meta_evaluation.verify.examples import example_sets
from capeval.meta_evaluation.verify.metric_facts import image_metrics
from capeval.meta_evaluation.verify.records import Job


def measure(job: Job, keys: Sequence[str], *, use_cache: bool = True, show_progress: bool | None = None) -> dict:
    """The result of ``job`` for the result keys ``keys`` (what :attr:`Row.lookup` paths index)."""
    if job.kind == "bench":
        return measure_bench(job, keys, use_cache=use_cache, show_progress=show_progress)
    if job.kind == "thumb-rubric":
        return measure_thumb_rubric(show_progress=show_progress)
    return measure_example(job, keys, show_progress=show_progress)


def measure_bench(job: Job, keys: Sequence[str], *, use_cache: bool = True, show_progress: bool | None = None) -> dict:
    """A ``capeval bench`` run of the job's benchmark and settings: its per-metric results."""
    from capeval.meta_evaluation.harness import run_benchmark

    settings = dict(job.settings)
    return run_benchmark(job.name, list(keys), protocol=settings.get("protocol"), refs=settings.get("refs"),
                         scores=settings.get("scores"), use_cache=use_cache, show_progress=show_progress).results


def measure_thumb_rubric(*, show_progress: bool | None = None) -> dict:
    """THumB 1.0's rubric aggregation (:func:`capeval.thumb.score`), each system's ``total_ci`` as the ± half-width
    the paper prints."""
    from capeval import thumb
    from capeval.paths import data_dir

    path = data_dir(required=True) / "thumb" / "mscoco_THumB-1.0.jsonl"  # type: ignore[operator]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    result = thumb.score([r["P"] for r in rows], [r["R"] for r in rows], [r["Fl"] for r in rows],
                         [r["Con"] for r in rows], [r["Inc"] for r in rows], systems=[r["SYS"] for r in rows],
                         images=[r["seg_id"] for r in rows], progress=show_progress)
    for entry in result["systems"].values():
        low, high = entry["total_ci"]
        entry["total_ci"] = (high - low) / 2  # the paper prints the ± half-width
    return result


def measure_example(job: Job, keys: Sequence[str], *, show_progress: bool | None = None) -> dict:
    """:func:`capeval.score` of each set of an example output: ``{key: value}`` for a single set, else
    ``{key: {set name: value}}``."""
    import warnings

    from capeval.api import score
    from capeval.coco.cider import SmallCorpusWarning

    with_images = any(k in image_metrics() for k in keys)
    out: dict[str, Any] = {}
    for name, (preds, refs, images) in example_sets(job.name, with_images).items():
        extra = {"images": [str(p) for p in images]} if with_images and images is not None else {}
        with warnings.catch_warnings():  # the reference scripts take CIDEr-D's df from the 2 images' references too
            warnings.simplefilter("ignore", SmallCorpusWarning)
            result = score(preds, refs, metrics=list(keys), cleanup="none", progress=show_progress, **extra)
        for key in keys:
            if name is None:
                out[key] = result[key]
            else:
                out.setdefault(key, {})[name] = result[key]
    return out


def extract(result: Mapping[str, Any], path: Sequence[Any]) -> float | None:
    """The number at ``path`` in ``result`` (a row's :attr:`~capeval.meta_evaluation.verify.records.Row.lookup`), or
    ``None`` where there is none."""
    value: Any = result
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

