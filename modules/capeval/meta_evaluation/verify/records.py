"""The rows of ``capeval verify``: one published number and what became of it (:class:`Row`), the measurement that
serves it (:class:`Job`) and why it is not compared (:class:`Skip`). ``published``, ``measured``, ``delta`` and
``tolerance`` are on the scale the source prints (``scale`` 100: τ × 100; accuracies in percent)."""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

#: The three statuses, and the keys every JSON row has.
STATUSES = ("reproduced", "differs", "skipped")
REQUIRED_KEYS = ("metric", "benchmark", "published", "measured", "tolerance", "status", "source")
#: Why a row is skipped (``skip_kind`` of every skipped JSON row), in the order the summary lists them: the model
#: weights are not here; the benchmark files or images are not here; the published number cannot be reproduced with
#: what exists (unreleased data, an unstated protocol); capeval has no such metric; anything else (``--fast``, a
#: missing Python package, a failed measurement).
SKIP_KINDS = ("weights", "data", "irreproducible", "not_in_capeval", "other")


@dataclass(frozen=True)
class Skip:
    """Why a row is not compared, as data, decided where the skip is: ``kind`` (:data:`SKIP_KINDS`), ``text`` (the
    whole reason: the row's ``reason``), ``missing`` (a few words naming what is missing or why: rows with the same
    ``kind`` and ``missing`` form one line of the summary) and ``fix`` (what makes the row run here, e.g. the command
    that fetches the weights; ``None`` where nothing here can)."""

    kind: str
    text: str
    missing: str = ""
    fix: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise ValueError(f"skip kind must be one of {', '.join(SKIP_KINDS)}, got {self.kind!r}")


#: How the statistics read in a row's ``what`` (``"clipscore τ-c"``).
STAT_LABELS = {"tau": "τ", "tau_b": "τ-b", "tau_c": "τ-c", "pearson": "Pearson", "spearman": "Spearman",
               "accuracy": "accuracy %", "corpus_score": "corpus", "rubric": "mean", "strictly_best_worst": "count"}


@dataclass(frozen=True)
class Job:
    """One measurement that serves several rows: ``kind`` ``"bench"`` (a ``capeval bench`` run of ``name`` with
    ``settings``), ``"thumb-rubric"`` (THumB's rubric aggregation) or ``"example"`` (an example output)."""

    kind: str
    name: str
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.settings)
        return f"{self.name}{f' ({extra})' if extra else ''}" + (" rubric" if self.kind == "thumb-rubric" else "")


@dataclass
class Row:
    """One published number and what became of it (see the module docstring for the fields' units)."""

    metric: str  #: capeval's result key where capeval has the metric, else the published name
    benchmark: str  #: ``capeval bench``'s name, or an example's (``clipscore-example`` ...)
    published: float
    source: str  #: citation key of the table the number is printed in
    where: str
    statistic: str
    protocol: str
    field: str | None = None  #: sub-key: PASCAL-50S category, THumB system or P/R/total, example set ...
    scale: int = 1
    decimals: int = 1
    tolerance: float | None = None
    tolerance_rule: str = ""
    measured: float | None = None
    status: str = "skipped"
    reason: str | None = None
    via: str | None = None  #: citation key of the transcription the number was read from, if not the paper
    published_as: str | None = None  #: the metric's spelling in published.json, where it differs from ``metric``
    scores: str | None = None  #: Nebula: the human scores the number was published on (``original`` / ``corrected``)
    job: Job | None = dc_field(default=None, repr=False)
    lookup: tuple = dc_field(default=(), repr=False)  #: path into the job's result
    factor: float = dc_field(default=1.0, repr=False)  #: measured = result × factor (the printed scale)
    error: bool = False  #: the measurement failed (``reason`` says how)
    skip: Skip | None = dc_field(default=None, repr=False)  #: why the row is skipped, as data (``reason`` its text)

    @property
    def delta(self) -> float | None:
        return None if self.measured is None else self.measured - self.published

    def skip_because(self, why: Skip | str | None) -> None:
        """Record why the row is not compared (a :class:`Skip`; a bare string, e.g. from a custom probe, is of kind
        ``other``); ``None`` changes nothing."""
        if why is None:
            return
        self.skip = why if isinstance(why, Skip) else Skip("other", str(why), str(why))
        self.reason = self.skip.text

    @property
    def skip_kind(self) -> str | None:
        """:data:`SKIP_KINDS` entry of a skipped row (``other`` where no :class:`Skip` was recorded), else ``None``."""
        if self.status != "skipped":
            return None
        return self.skip.kind if self.skip is not None else "other"

    @property
    def what(self) -> str:
        """``"clipscore τ-c"``, ``"expert-5-refs accuracy % HC"``, ``"test-corrected (corrected scores) τ-c"``:
        protocol, Nebula's scores variant, statistic and field."""
        parts = [self.protocol, *([f"({self.scores} scores)"] if self.scores else []),
                 STAT_LABELS.get(self.statistic, self.statistic)]
        if self.field:
            parts.append(self.field)
        return " ".join(p for p in parts if p)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "benchmark": self.benchmark, "published": self.published,
                "measured": self.measured, "tolerance": self.tolerance, "status": self.status,
                "source": self.source, "where": self.where, "via": self.via, "field": self.field,
                "statistic": self.statistic, "protocol": self.protocol, "scale": self.scale,
                "delta": self.delta, "tolerance_rule": self.tolerance_rule, "reason": self.reason,
                "published_as": self.published_as, "scores": self.scores, "error": self.error,
                "skip_kind": self.skip_kind,
                "fix": self.skip.fix if self.skip is not None and self.status == "skipped" else None}

