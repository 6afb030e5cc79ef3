"""``CaptionLength``: the number of words of each caption, a baseline every benchmark report carries.

On detailed captions people prefer the longer caption often enough that length alone agrees with them better than
most metrics (CapArena, Cheng et al. 2025: caption-level agreement .585 for length against .576 for METEOR and .384
for CIDEr); on capeval's short-caption benchmarks it carries little (Kendall τ-c between word count and the
judgments between −.10 and .06). A metric that does no better than this row, or whose agreement with people falls to
nothing once length is held fixed (:func:`capeval.judgments.stats.partial_correlation`), is counting words.

A word is a run of non-space characters of the caption as given (``str.split``), so ``"a dog, running."`` has three
words; the corpus value is the mean over the captions. References are not read.
"""
from __future__ import annotations

from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput


def word_counts(captions: list[str]) -> list[float]:
    """The number of whitespace-separated words of each caption (``0.0`` for an empty one)."""
    return [float(len(caption.split())) for caption in captions]


class CaptionLength(CaptionMetric):
    """Caption length in words (see the module docstring): ``caption_length``, a count ≥ 0 per caption, the corpus
    value their mean."""

    name: ClassVar[str] = "caption_length"
    reads_references = False
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    uses_tokens: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {}

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        values = word_counts(list(batch.raw_predictions))
        corpus = sum(values) / len(values) if values else 0.0
        return MetricOutput(corpus={"caption_length": corpus}, per_caption={"caption_length": values},
                            signature="unit=words")
