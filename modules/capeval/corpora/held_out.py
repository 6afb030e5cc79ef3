"""Which images capeval's reported benchmarks evaluate: what no learned model may train or select on.

:data:`REPORTED_BENCHMARKS` names the benchmarks whose numbers capeval reports (BENCHMARKS.md);
:func:`benchmark_images` lists their image file names from the data directory. The training-data builders (LCEval's
pairs, :mod:`capeval.corpora.lceval_pairs`; the critic's COCO corpus, :mod:`capeval.corpora.coco_train2014`)
leave these images out and their tests check it.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["REPORTED_BENCHMARKS", "benchmark_images"]

REPORTED_BENCHMARKS = ("composite", "flickr8k-expert", "flickr8k-crowdflower", "pascal50s", "thumb", "abstract50s")


def benchmark_images(root: str | Path | None = None, names: Sequence[str] = REPORTED_BENCHMARKS) -> dict[str, set[str]]:
    """``{benchmark: image file names}`` of the reported benchmarks whose files exist under ``root``."""
    from capeval.judgments import load_benchmark

    found: dict[str, set[str]] = {}
    for name in names:
        try:
            bench = load_benchmark(name, root)
        except (FileNotFoundError, OSError):
            continue
        found[name] = {Path(r.image_id).name for r in bench.records}
    return found
