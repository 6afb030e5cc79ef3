"""A fake image-reading metric for the image plumbing tests (``needs_images = True``; no torch, no decoding).

Its score of item ``i`` is a number in [0, 1) derived from the content hash of ``images[i]``
(:func:`capeval.models.images.read_item`: file bytes for paths, decoded pixels for in-memory images), so a
test can tell which image reached which prediction. ``prepare`` does the per-item work, so multi-process
scoring (:mod:`capeval.parallel`) splits it over the processes like SPICE's parsing.

Register it for one test with :func:`register` (a ``monkeypatch``) or, in a fresh process, :func:`install`.
"""
from __future__ import annotations

from typing import Any

from capeval.metric import CaptionMetric, MetricOutput

#: The registry name of the fake metric.
NAME = "fake_img"


def image_score(item: Any, index: int = 0) -> float:
    """The fake metric's score of one image: the first 32 bits of its content hash, scaled to [0, 1)."""
    from capeval.models.images import read_item

    return int(read_item(item, index).key[:8], 16) / 2**32


class FakeImageMetric(CaptionMetric):
    """Scores each prediction by a hash of its image; reads ``batch.images`` only."""

    name = NAME
    uses_tokens = False
    needs_images = True
    options: dict[str, Any] = {}

    def prepare(self, batch) -> list[float]:
        assert batch.images is not None and len(batch.images) == len(batch), "images did not reach the metric"
        return [image_score(item, i) for i, item in enumerate(batch.images)]

    def compute(self, batch) -> MetricOutput:
        values = self._prepared if self._prepared is not None else self.prepare(batch)
        if len(values) != len(batch):
            raise ValueError(f"{self.name}: {len(values)} prepared entries for {len(batch)} items.")
        values = [float(v) for v in values]
        return MetricOutput({NAME: sum(values) / len(values)}, {NAME: values}, "img=sha256")


def _spec():
    from capeval.registry import MetricSpec

    return MetricSpec(NAME, __name__, "FakeImageMetric", (NAME,))


def register(monkeypatch) -> str:
    """Register the fake metric in :data:`capeval.registry.REGISTRY` for one test; its name."""
    from capeval import registry

    monkeypatch.setitem(registry.REGISTRY, NAME, _spec())
    return NAME


def install() -> str:
    """Register the fake metric for the rest of this process (subprocesses of a test); its name."""
    from capeval import registry

    registry.REGISTRY[NAME] = _spec()
    return NAME
