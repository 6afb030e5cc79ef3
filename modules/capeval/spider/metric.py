"""``Spider``: SPIDEr, the mean of CIDEr-D and SPICE (Liu et al., "Improved Image Captioning via Policy Gradient
optimization of SPIDEr", ICCV 2017), as aac-metrics defines it (``aac_metrics.functional.spider``).

Per caption ``(cider_d + spice) / 2`` and for the corpus ``(corpus cider_d + corpus spice) / 2``, with CIDEr-D on
pycocoevalcap's ×10 scale (0 to 10) and SPICE's F in [0, 1]: SPIDEr lies in [0, 5.5], and CIDEr-D dominates it
(good COCO models: CIDEr-D 1.2-1.4, SPICE 0.2-0.25, SPIDEr 0.7-0.8). Both corpus values are means over captions, so
the corpus SPIDEr is the mean of the per-caption ones (to rounding).

The parts are capeval's own ``cider_d`` and ``spice`` with the same options (``cider_df``, ``spice_*``); the
signature field records both parts' settings. When the call also reports ``cider_d`` or ``spice``, SPIDEr reads
their outputs instead of computing them again (:meth:`capeval.batch.CaptionBatch.computed`), and in a multi-process
run SPICE's parsing is prepared once.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.coco.cider import CiderD
from capeval.metric import CaptionMetric, MetricOutput
from capeval.spice.metric import Spice


def spider_from_parts(cider_d: float | Sequence[float], spice: float | Sequence[float]) -> float | list[float]:
    """SPIDEr from CIDEr-D (×10 scale, 0 to 10) and SPICE F (0 to 1): ``(cider_d + spice) / 2``, for two numbers
    (a corpus value) or elementwise for two equally long sequences (per caption)."""
    if isinstance(cider_d, (int, float)) and isinstance(spice, (int, float)):
        return (float(cider_d) + float(spice)) / 2.0
    if len(cider_d) != len(spice):
        raise ValueError(f"spider: {len(cider_d)} CIDEr-D values but {len(spice)} SPICE values; give one of each "
                         "per caption.")
    return [(float(c) + float(s)) / 2.0 for c, s in zip(cider_d, spice)]


class Spider(CaptionMetric):
    """SPIDEr = (CIDEr-D + SPICE) / 2, per caption and for the corpus (see the module docstring).

    Options: CIDEr-D's (``cider_df``) and SPICE's (``spice_parser_model``, ``spice_workers``, ``spice_input``,
    ``spice_synonyms``, ...), with their defaults and meanings; ``spice_detailed`` is accepted for SPICE's sake
    and adds nothing to ``spider``.

    Result key: ``spider`` (0 to 5.5), its per-caption list under ``per_caption``.
    """

    name: ClassVar[str] = "spider"
    code_packages = ("capeval.coco", "capeval.spice")
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    document_frequency_option: ClassVar[str | None] = "cider_df"
    uses_tokens: ClassVar[bool] = True
    limits_length: ClassVar[bool] = True  # SPICE's parsing
    options: ClassVar[dict[str, Any]] = {**CiderD.options, **Spice.options}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.cider = CiderD(**{k: self.config[k] for k in CiderD.options})
        self.spice = Spice(**{k: self.config[k] for k in Spice.options})
        self.reads_text = self.spice.reads_text

    @classmethod
    def check_available(cls) -> None:
        Spice.check_available()

    def _parts(self, batch: CaptionBatch) -> tuple[CaptionMetric, CaptionMetric]:
        """The CIDEr-D and SPICE to read: the call's own when it reports them (same options), else this metric's."""
        metrics = batch.metrics
        return metrics.get(CiderD.name, self.cider), metrics.get(Spice.name, self.spice)

    def prepare(self, batch: CaptionBatch) -> list[Any]:
        """SPICE's per-item work (:meth:`capeval.spice.metric.Spice.prepare`), or one ``None`` per item when the call
        also reports ``spice``, whose own entries SPIDEr then reads."""
        if Spice.name in batch.metrics:
            return [None] * len(batch)
        return self.spice.prepare(batch)

    def use_prepared(self, prepared: list[Any] | None) -> None:
        if prepared is not None and all(entry is None for entry in prepared):
            prepared = None
        self.spice.use_prepared(prepared)

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        cider, spice = self._parts(batch)
        c, s = batch.computed(cider), batch.computed(spice)
        return MetricOutput(
            corpus={"spider": spider_from_parts(c.corpus["cider_d"], s.corpus["spice"])},
            per_caption={"spider": spider_from_parts(c.per_caption["cider_d"], s.per_caption["spice"])},
            signature=f"cider_d[{c.signature}]+spice[{s.signature}]",
        )

    def close(self) -> None:
        self.spice.close()
