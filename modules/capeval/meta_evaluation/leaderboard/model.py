"""The leaderboard's model: its columns (:class:`Column`: benchmark, protocol or reference variant, COMPOSITE subset,
statistic, in a fixed order), capeval's cells (:class:`Cell`: a value in the column's unit, correlations in [-1, 1] or
accuracies in %, with its bootstrap interval and what is known of the metric's training data), the published
anchors' cells (:class:`AnchorCell`, :class:`AnchorRow`), the footnotes and the whole table (:class:`Leaderboard`)
with its JSON form."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from capeval.published import citations

#: Benchmarks in column order, with their names in headers.
BENCHMARK_LABELS = {
    "flickr8k-expert": "Flickr8k-Expert",
    "flickr8k-crowdflower": "CrowdFlower",
    "composite": "COMPOSITE",
    "pascal50s": "PASCAL-50S",
    "abstract50s": "ABSTRACT-50S",
    "thumb": "THumB",
    "nebula": "Nebula",
    "polaris": "Polaris",
    "detailcaps": "DetailCaps-4870",
    "caparena": "CapArena",
    "longcap-arena": "LongCap-Arena",
}
#: Known protocol / reference variants per benchmark, in column order (others follow: integers, then by name).
VARIANT_ORDER = {
    "flickr8k-expert": ("clipscore", "cui"),
    "flickr8k-crowdflower": ("clipscore", "cui"),
    "composite": ("minus-matched", "all"),
    "pascal50s": ("expert", "all"),
    "abstract50s": ("all",),
    "thumb": ("with_human",),
    "nebula": ("test", "validation", "train"),
    "polaris": ("test", "validation", "train"),
    "detailcaps": ("paper", "all"),
    "caparena": ("release",),
    "longcap-arena": ("test", "validation"),
}
SUBSET_ORDER = ("all", "8k", "30k", "coco", "desc", "rel", "flu")
STATISTIC_LABELS = {"tau_c": "τ-c", "tau_b": "τ-b", "pearson": "Pearson", "spearman": "Spearman", "avg": "avg %",
                    "agreement": "agreement"}
CORRELATION_STATISTICS = ("tau_c", "tau_b", "pearson", "spearman")
PAIRWISE = ("pascal50s", "abstract50s")
#: The marks: contaminated (footnote), protocol mismatch (footnote), unknown, not measured.
CONTAMINATED, PROTOCOL_MISMATCH, UNKNOWN, NOT_MEASURED = "†", "‡", "?", "—"
#: Headline statistic of a benchmark where it is not the protocol's own (``primary``), as ``capeval bench`` writes
#: it (``harness.HEADLINE_KEYS``): an older payload falls back to the same column.
HEADLINE_FALLBACK = {"composite": "tau_b"}
#: ``data/published.json`` spelling -> capeval result key, where they differ.
PUBLISHED_SPELLING = {"refclip_s": "ref_clip_s", "refpac_s": "ref_pac_s"}


def is_unknown(reason: str) -> bool:
    """A contamination reason saying the training data is not declared (``"unknown: ..."``), not an overlap."""
    return reason.lower().startswith("unknown:")


@dataclass(frozen=True)
class AnchorSpec:
    """A published metric shown below the capeval rows: ``metric`` is its key in ``data/published.json``.
    ``declared_images``: whether it reads the image, for a published-only metric; ``None`` for a metric capeval has,
    whose class says so (:attr:`reads_images`)."""

    name: str
    metric: str
    home: str  #: citation key of the metric's own paper (preferred source when several tables print it)
    declared_images: bool | None
    kind: str

    @property
    def reads_images(self) -> bool:
        """Whether the metric reads the image: its registered class's ``needs_images`` where capeval has the metric
        (``refclip_s`` is ``ref_clip_s``), else :attr:`declared_images`."""
        from capeval.registry import REGISTRY, metric_class

        key = PUBLISHED_SPELLING.get(self.metric, self.metric)
        name = next((n for n, spec in REGISTRY.items() if key in spec.keys), None)
        if name is not None:
            try:
                return bool(metric_class(name).needs_images)
            except (ImportError, AttributeError):
                pass
        return bool(self.declared_images)


@dataclass(frozen=True)
class Column:
    """One leaderboard column; ``statistic`` is ``tau_c`` / ``tau_b`` / ``pearson`` (in [-1, 1]) or ``avg`` (%)."""

    benchmark: str
    variant: str
    subset: str
    statistic: str

    @property
    def key(self) -> str:
        return "/".join((self.benchmark, self.variant, self.subset, self.statistic))

    @property
    def label(self) -> str:
        name = BENCHMARK_LABELS.get(self.benchmark, self.benchmark)
        stat = STATISTIC_LABELS.get(self.statistic, self.statistic)
        if self.benchmark.startswith("flickr8k"):
            return f"{name} ({self.variant}) {stat}"
        if self.benchmark == "composite":
            if self.subset != "all":
                name += "-" + (self.subset.upper() if self.subset == "coco" else self.subset)
            return f"{name}{'' if self.variant == 'minus-matched' else f' (refs: {self.variant})'} {stat}"
        if self.benchmark in PAIRWISE:
            return f"{name} (refs: {self.variant}) {stat}"
        if self.benchmark == "thumb":
            return f"{name} {'w/ Human' if self.variant == 'with_human' else self.variant} {stat}"
        if self.benchmark == "caparena":
            return f"{name} {stat}"
        if self.benchmark == "longcap-arena":
            return f"{name} {self.subset}{'' if self.variant == 'test' else f' ({self.variant})'} {stat}"
        return f"{name} ({self.variant}) {stat}"

    @property
    def unit(self) -> str:
        if self.statistic == "agreement":
            return "share of battles in [0, 1]"
        return "accuracy in %" if self.statistic == "avg" else "correlation in [-1, 1]"

    def sort_key(self) -> tuple:
        benchmarks = list(BENCHMARK_LABELS)
        bench = benchmarks.index(self.benchmark) if self.benchmark in benchmarks else len(benchmarks)
        known = VARIANT_ORDER.get(self.benchmark, ())
        if self.variant in known:
            variant: tuple = (0, known.index(self.variant), "")
        elif self.variant.isdigit():
            variant = (1, int(self.variant), "")
        else:
            variant = (2, 0, self.variant)
        subset = SUBSET_ORDER.index(self.subset) if self.subset in SUBSET_ORDER else len(SUBSET_ORDER)
        stats = list(STATISTIC_LABELS)
        stat = stats.index(self.statistic) if self.statistic in stats else len(stats)
        return bench, self.benchmark, variant, subset, self.subset, stat, self.statistic

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "benchmark": self.benchmark, "variant": self.variant, "subset": self.subset,
                "statistic": self.statistic, "label": self.label, "unit": self.unit}


@dataclass
class Cell:
    """A capeval measurement: ``value`` / ``ci`` in the column's unit; ``contamination`` None = unknown."""

    value: float | None
    ci: tuple[float, float] | None = None
    confidence: float | None = None
    n_resamples: int | None = None
    contamination: list[str] | None = None
    file: str = ""
    best: bool = False
    #: the metric's agreement with caption length held fixed (the payload's ``length_controlled.value``; its
    #: statistic differs from the column's: a partial correlation, or accuracy / agreement on length-matched pairs)
    length_controlled: float | None = None

    @property
    def clean(self) -> bool:
        """Known clean: the payload lists no contamination reason (None, unknown, is not clean)."""
        return self.contamination is not None and not self.contamination

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "ci": None if self.ci is None else list(self.ci), "confidence": self.confidence,
                "n_resamples": self.n_resamples, "contamination": self.contamination, "best": self.best,
                "file": self.file, "length_controlled": self.length_controlled}


@dataclass
class AnchorCell:
    """A published number: ``value`` in the column's unit, ``printed`` as the paper prints it (× ``scale``)."""

    value: float
    printed: float
    scale: int
    source: str  #: citation key of the table the number is printed in
    where: str
    protocol: str
    protocol_matches: bool
    mismatch: str | None = None
    via: str | None = None  #: citation key of the transcription the number was read from, if not the paper

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "printed": self.printed, "scale": self.scale, "source": self.source,
                "where": self.where, "via": self.via, "protocol": self.protocol,
                "protocol_matches": self.protocol_matches, "mismatch": self.mismatch}


@dataclass
class AnchorRow:
    spec: AnchorSpec
    cells: dict[str, AnchorCell] = field(default_factory=dict)
    not_shown: list[str] = field(default_factory=list)

    @property
    def citations(self) -> list[str]:
        return list(dict.fromkeys(c.source for c in self.cells.values()))

    @property
    def label(self) -> str:
        keys = ", ".join(self.citations)
        return f"{self.spec.name} [published: {keys}]" if keys else f"{self.spec.name} [published: none here]"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.spec.name, "metric": self.spec.metric, "reads_images": self.spec.reads_images,
                "kind": self.spec.kind, "citations": self.citations,
                "cells": {k: c.to_json() for k, c in self.cells.items()}, "not_shown": list(self.not_shown)}


@dataclass
class Footnote:
    id: int
    mark: str
    kind: str  #: "contamination" (†), "unknown" (?: training data not declared) or "protocol" (‡)
    text: str
    cells: list[tuple[str, str]] = field(default_factory=list)  #: (row label, column key)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "mark": self.mark, "kind": self.kind, "text": self.text,
                "cells": [{"row": r, "column": c} for r, c in self.cells]}


@dataclass
class Leaderboard:
    """The table :func:`build_leaderboard` makes; :func:`render` prints it, :meth:`to_json` is the JSON output."""

    columns: list[Column]
    rows: dict[str, dict[str, Cell]]  #: metric -> column key -> cell, metrics in first-seen order
    anchors: list[AnchorRow]
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the payloads' paired comparisons (``capeval bench --compare``), each with ``where`` (the column label) and
    #: ``a_row`` / ``b_row`` (the rows of A and B)
    comparisons: list[dict[str, Any]] = field(default_factory=list)

    @property
    def footnotes(self) -> list[Footnote]:
        """Contamination reasons (``†``; ``?`` for a reason beginning ``unknown:``, a model whose training data is not
        declared), then protocol mismatches of the anchors (``‡``), numbered together in order of first appearance
        (columns left to right, rows top to bottom)."""
        notes: dict[tuple[str, str], Footnote] = {}
        for col in self.columns:
            for metric, cells in self.rows.items():
                for reason in (cells[col.key].contamination or []) if col.key in cells else []:
                    mark, kind = (UNKNOWN, "unknown") if is_unknown(reason) else (CONTAMINATED, "contamination")
                    note = notes.setdefault((mark, reason), Footnote(len(notes) + 1, mark, kind, reason))
                    note.cells.append((metric, col.key))
        for col in self.columns:
            for anchor in self.anchors:
                cell = anchor.cells.get(col.key)
                if cell is not None and cell.mismatch:
                    note = notes.setdefault((PROTOCOL_MISMATCH, cell.mismatch),
                                            Footnote(len(notes) + 1, PROTOCOL_MISMATCH, "protocol", cell.mismatch))
                    note.cells.append((anchor.spec.name, col.key))
        return list(notes.values())

    def used_citations(self) -> dict[str, str]:
        cites = citations()
        keys = [k for a in self.anchors for c in a.cells.values() for k in (c.source, c.via) if k]
        return {k: cites.get(k, k) for k in dict.fromkeys(keys)}

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [c.to_json() for c in self.columns],
            "rows": [{"metric": m, "cells": {k: c.to_json() for k, c in cells.items()}}
                     for m, cells in self.rows.items()],
            "anchors": [a.to_json() for a in self.anchors],
            "footnotes": [f.to_json() for f in self.footnotes],
            "citations": self.used_citations(),
            "files": list(self.files),
            "notes": list(self.notes),
            "comparisons": [dict(c) for c in self.comparisons],
        }
