"""``capeval leaderboard``: one metric × benchmark table from ``capeval bench --json`` payloads.

**Columns**: one per (benchmark, protocol or reference variant, COMPOSITE subset, statistic) found in the payloads,
in a fixed order: Flickr8k-Expert (clipscore, then cui), CrowdFlower, COMPOSITE (all, then the 8k / 30k / COCO
subsets), PASCAL-50S (refs: expert, all, then k), ABSTRACT-50S, THumB (with Human). The header names the
statistic: Kendall τ-c / τ-b or Pearson r (unitless, in [-1, 1]; printed ``.472``), or ``avg %`` (PASCAL-50S /
ABSTRACT-50S mean pairwise accuracy over the categories, in percent; printed ``80.2``).

**Rows**: the capeval metrics (result keys, the union over the payloads; the same key from several files is one
row, and a cell given twice keeps the later file's value, with a note), then the published anchors of
``data/published.json`` (:data:`ANCHORS`): numbers printed in papers, never measured by capeval, each labelled with
the citation key(s) of the table(s) it comes from.

**A cell** reads a result's ``headline`` (``{"statistic", "value", "ci": [low, high] | null, "confidence",
"n_resamples"}``) when the payload has one; an older payload without it falls back to the benchmark's own field
(``primary`` / ``tau_c`` / ``tau_b`` / ``avg`` / ``with_human.total``) with no interval. ``contamination`` (a list of
reasons the metric's training data overlaps the benchmark; ``[]`` = clean) marks the cell ``†n`` (footnote n
gives the reason and every cell it marks; a reason beginning ``unknown:``, training data not declared, marks it
``?n``); a payload without the field marks it ``?`` (unknown); ``—`` = not measured; ``n/a`` = measured but not a
finite number. An older COMPOSITE payload falls back to τ-b, the statistic ``capeval bench`` now heads it with.
The best value of a column among the metrics known to be clean is bold in markdown (``best`` in JSON); a
contaminated or unknown value is never the best. An anchor whose published protocol differs from the column's is
marked ``‡n`` (the footnote says how).

**JSON** (:meth:`Leaderboard.to_json`, ``capeval leaderboard --json``)::

    {"columns": [{"key", "benchmark", "variant", "subset", "statistic", "label", "unit"}],
     "rows": [{"metric", "cells": {COLUMN_KEY: {"value", "ci", "confidence", "n_resamples",
                                                 "contamination", "best", "file"}}}],
     "anchors": [{"name", "metric", "reads_images", "kind", "citations",
                  "cells": {COLUMN_KEY: {"value", "printed", "scale", "source", "where", "via",
                                         "protocol", "protocol_matches", "mismatch"}},
                  "not_shown": [str]}],
     "footnotes": [{"id", "mark", "kind": "contamination" | "unknown" | "protocol", "text",
                    "cells": [{"row", "column"}]}],
     "citations": {KEY: str}, "files": [str], "notes": [str]}

``value``: the column's unit (correlations in [-1, 1], accuracies in %); ``ci``: ``[low, high]`` in the same unit or
null; ``contamination``: a list, or null when the payload does not say; ``printed`` / ``scale``: the anchor's number
as the paper prints it (``scale`` 100: τ × 100). ``files`` are the payloads read, in order.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.catalog import MODEL_OPTIONS
from capeval.published import citations, published
from capeval.registry import judged_benchmarks
from capeval.render import markdown_table, terminal_width, text_table
from capeval.render import wrap as wrap_words

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
}
SUBSET_ORDER = ("all", "8k", "30k", "coco")
STATISTIC_LABELS = {"tau_c": "τ-c", "tau_b": "τ-b", "pearson": "Pearson", "spearman": "Spearman", "avg": "avg %"}
CORRELATION_STATISTICS = ("tau_c", "tau_b", "pearson", "spearman")
PAIRWISE = ("pascal50s", "abstract50s")
#: published statistic -> column statistic (``tau`` is left out: the papers do not say which Kendall τ).
_PUBLISHED_STATISTIC = {"tau_c": "tau_c", "tau_b": "tau_b", "pearson": "pearson", "spearman": "spearman",
                        "accuracy": "avg"}
#: How the published protocols read, for the protocol-mismatch footnotes.
_PROTOCOL_WORDS = {
    "clipscore": "the CLIPScore protocol",
    "cui": "Cui et al.'s protocol",
    "random-5-refs": "5 references drawn at random (mean of 5 draws)",
    "expert-5-refs": "the EXPERT file's 5 references",
    "all-50-refs": "all references",
    "random-refs": "randomly sampled references",
    "lceval-test-7996": "the LCEval authors' 7,996-caption test split",
    "with_human": "the 2,500 captions with Human",
    "without_human": "the 2,000 captions without Human",
}
CONTAMINATED, PROTOCOL_MISMATCH, UNKNOWN, NOT_MEASURED = "†", "‡", "?", "—"
#: Headline statistic of a benchmark where it is not the protocol's own (``primary``), as ``capeval bench`` writes
#: it (``harness.HEADLINE_KEYS``): an older payload falls back to the same column.
HEADLINE_FALLBACK = {"composite": "tau_b"}


def _is_unknown(reason: str) -> bool:
    """A contamination reason saying the training data is not declared (``"unknown: ..."``), not an overlap."""
    return reason.lower().startswith("unknown:")


@dataclass(frozen=True)
class AnchorSpec:
    """A published metric shown below the capeval rows: ``metric`` is its key in ``data/published.json``."""

    name: str
    metric: str
    home: str  #: citation key of the metric's own paper (preferred source when several tables print it)
    reads_images: bool
    kind: str


#: The published anchors, in row order.
ANCHORS = (
    AnchorSpec("CLIP-S", "clip_s", "hessel2021", True, "vision-language model (CLIP ViT-B/32), no references"),
    AnchorSpec("RefCLIP-S", "refclip_s", "hessel2021", True, "vision-language model (CLIP ViT-B/32) + references"),
    AnchorSpec("PAC-S", "pac_s", "sarto2023", True, "vision-language model (PAC-S CLIP ViT-B/32), no references"),
    AnchorSpec("RefPAC-S", "refpac_s", "sarto2023", True, "vision-language model (PAC-S CLIP ViT-B/32) + references"),
    AnchorSpec("Polos", "polos", "wada2024", True, "vision-language model (CLIP + SimCSE), trained on Polaris"),
    AnchorSpec("BERT-S++", "bert_s_pp", "hessel2021", False, "text only: BERTScore re-weighted over the references"),
    AnchorSpec("TIGEr", "tiger", "hessel2021", True, "image regions (SCAN text-image grounding) + references"),
    AnchorSpec("NUBIA", "nubia", "hessel2021", False, "text only: learned text-similarity metric"),
)


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
        return f"{name} ({self.variant}) {stat}"

    @property
    def unit(self) -> str:
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

    @property
    def clean(self) -> bool:
        """Known clean: the payload lists no contamination reason (None, unknown, is not clean)."""
        return self.contamination is not None and not self.contamination

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "ci": None if self.ci is None else list(self.ci), "confidence": self.confidence,
                "n_resamples": self.n_resamples, "contamination": self.contamination, "best": self.best,
                "file": self.file}


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
                    mark, kind = (UNKNOWN, "unknown") if _is_unknown(reason) else (CONTAMINATED, "contamination")
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


# -- reading payloads --------------------------------------------------------------------------------------------


def payload_problem(obj: Any) -> str | None:
    """Why ``obj`` is not a ``capeval bench --json`` payload (``{benchmark, settings, results, notes}``), or None."""
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    missing = [k for k in ("benchmark", "results") if k not in obj]
    if missing:
        return f"no {' or '.join(repr(k) for k in missing)} key"
    if obj["benchmark"] not in judged_benchmarks():
        return f"benchmark {obj['benchmark']!r} is not one capeval bench scores ({', '.join(judged_benchmarks())})"
    if not isinstance(obj["results"], dict) or not all(isinstance(v, dict) for v in obj["results"].values()):
        return "'results' is not an object of per-metric objects"
    if not isinstance(obj.get("settings", {}), dict):
        return "'settings' is not an object"
    return None


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg}, line {err.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not JSON (not UTF-8 text)") from None


def read_payloads(paths: Iterable[str | Path]) -> tuple[list[tuple[str, dict]], list[str]]:
    """``([(file, payload), ...], skipped)`` for files and directories of ``capeval bench --json`` payloads.

    A directory contributes every ``*.json`` directly inside it (sorted by name) that is a bench payload; the others
    are listed in ``skipped`` (``"FILE: why"``). A file named explicitly must be one: ``ValueError`` naming it
    otherwise; a missing path raises ``FileNotFoundError``; no payload at all raises ``ValueError``.
    """
    found: list[tuple[str, dict]] = []
    skipped: list[str] = []
    paths = [Path(p) for p in paths]
    for path in paths:
        if path.is_dir():
            for file in sorted(p for p in path.glob("*.json") if p.is_file()):
                try:
                    obj = _load_json(file)
                except ValueError as err:
                    skipped.append(str(err))
                    continue
                why = payload_problem(obj)
                if why:
                    skipped.append(f"{file}: not a capeval bench payload ({why})")
                else:
                    found.append((str(file), obj))
        elif path.exists():
            obj = _load_json(path)
            why = payload_problem(obj)
            if why:
                raise ValueError(f"{path}: not a capeval bench payload ({why}); expected the "
                                 "{benchmark, settings, results} object `capeval bench --json` writes")
            found.append((str(path), obj))
        else:
            raise FileNotFoundError(2, "No such file or directory", str(path))
    if not found:
        why = f"; skipped {'; '.join(skipped)}" if skipped else ""
        raise ValueError(f"no capeval bench payload in {', '.join(map(str, paths))} (write them with "
                         f"`capeval bench BENCHMARK --metrics ... --json FILE`){why}")
    return found, skipped


# -- building ----------------------------------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    """A finite float, or None (missing, not a number, NaN, ±inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _variant_and_subset(benchmark: str, settings: Mapping[str, Any]) -> tuple[str, str]:
    if benchmark.startswith("flickr8k"):
        return str(settings.get("protocol") or "clipscore"), "all"
    if benchmark == "composite":
        return str(settings.get("refs") or "minus-matched"), str(settings.get("subset") or "all")
    if benchmark == "pascal50s":
        return str(settings.get("refs") or "expert"), "all"
    if benchmark == "abstract50s":
        return str(settings.get("refs") or "all"), "all"
    if benchmark in ("nebula", "polaris"):
        return str(settings.get("split") or "test"), "all"
    return "with_human", "all"


def _fallback_statistic(benchmark: str, variant: str, entry: Mapping[str, Any]) -> str:
    """The benchmark's own statistic for a payload without ``headline`` (the harness's ``primary`` if recorded)."""
    if benchmark in PAIRWISE:
        return "avg"
    if benchmark == "thumb":
        return "pearson"
    if benchmark in HEADLINE_FALLBACK:
        return HEADLINE_FALLBACK[benchmark]
    if entry.get("primary") in CORRELATION_STATISTICS:
        return str(entry["primary"])
    return "tau_c" if benchmark == "flickr8k-expert" and variant == "clipscore" else "tau_b"


def _fallback_value(benchmark: str, entry: Mapping[str, Any], statistic: str) -> Any:
    if benchmark == "thumb":
        return (entry.get("with_human") or {}).get("total")
    return entry.get(statistic)


def _cell(entry: Mapping[str, Any], benchmark: str, variant: str, statistic: str | None, file: str,
          where: str) -> tuple[str, Cell]:
    """``(statistic, cell)`` of one result entry (or one COMPOSITE subset entry)."""
    headline = entry.get("headline")
    contamination = entry.get("contamination")
    if contamination is not None:
        if not isinstance(contamination, list) or not all(isinstance(r, str) for r in contamination):
            raise ValueError(f"{file}: {where}['contamination'] is not a list of reasons")
        contamination = list(contamination)
    if isinstance(headline, dict):
        stat = str(headline.get("statistic") or statistic or _fallback_statistic(benchmark, variant, entry))
        ci = headline.get("ci")
        low, high = (_number(ci[0]), _number(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)
        return stat, Cell(_number(headline.get("value")), None if low is None or high is None else (low, high),
                          _number(headline.get("confidence")),
                          headline.get("n_resamples") if isinstance(headline.get("n_resamples"), int) else None,
                          contamination, file)
    stat = statistic or _fallback_statistic(benchmark, variant, entry)
    raw = _fallback_value(benchmark, entry, stat)
    if raw is None:
        raise ValueError(f"{file}: {where} has neither a 'headline' nor the {stat!r} value of {benchmark}")
    return stat, Cell(_number(raw), contamination=contamination, file=file)


def row_label(metric: str, entry: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """The row a result lands in: the result key, followed by the model in parentheses for a learned metric
    (``critic (critic-flickr8k-joint)``), so that two models of one metric are two rows. The model comes from the
    entry's ``models`` (written by ``capeval bench``), else from the payload's model option (older files)."""
    models = entry.get("models")
    if isinstance(models, list) and len(models) == 1 and isinstance(models[0], str):
        return f"{metric} ({models[0]})"
    option = MODEL_OPTIONS.get(metric.split("@")[0])
    chosen = (settings.get("metric_options") or {}).get(option) if option else None
    return f"{metric} ({chosen})" if isinstance(chosen, str) else metric


def _payload_cells(payload: Mapping[str, Any], file: str) -> Iterable[tuple[Column, str, Cell]]:
    benchmark = payload["benchmark"]
    settings = payload.get("settings") or {}
    variant, subset = _variant_and_subset(benchmark, settings)
    for key, entry in payload["results"].items():
        metric = row_label(key, entry, settings)
        where = f"results[{key!r}]"
        stat, cell = _cell(entry, benchmark, variant, None, file, where)
        yield Column(benchmark, variant, subset, stat), metric, cell
        subsets = entry.get("subsets") if benchmark == "composite" else None
        for name, sub in (subsets or {}).items():
            if isinstance(sub, dict):
                sub_stat, sub_cell = _cell(sub, benchmark, variant, None if "headline" in sub else stat, file,
                                           f"{where}['subsets'][{name!r}]")
                yield Column(benchmark, variant, str(name), sub_stat), metric, sub_cell


def build_leaderboard(payloads: Iterable[Mapping[str, Any] | tuple[str, Mapping[str, Any]]]) -> Leaderboard:
    """The metric × benchmark table of ``payloads`` (``capeval bench --json`` objects, or ``(file, object)`` pairs;
    a cell given by two files with different values keeps the later one, with a note
    as :func:`read_payloads` returns them), with the published anchors of the columns found."""
    columns: dict[str, Column] = {}
    rows: dict[str, dict[str, Cell]] = {}
    files: list[str] = []
    notes: list[str] = []
    payloads_list: list[tuple[str, Mapping[str, Any]]] = []
    for i, item in enumerate(payloads):
        file, payload = item if isinstance(item, tuple) else (f"payload {i + 1}", item)
        why = payload_problem(payload)
        if why:
            raise ValueError(f"{file}: not a capeval bench payload ({why})")
        files.append(file)
        payloads_list.append((file, payload))
        for column, metric, cell in _payload_cells(payload, file):
            columns.setdefault(column.key, column)
            row = rows.setdefault(metric, {})
            if column.key in row and row[column.key].value != cell.value:
                notes.append(f"{metric} × {column.label}: given by {row[column.key].file} and {file}; "
                             f"the later one ({file}) is shown")
            row[column.key] = cell
    comparisons = [c for item in payloads_list for c in _comparisons(*item)]
    ordered = sorted(columns.values(), key=Column.sort_key)
    for col in ordered:
        clean = [c for cells in rows.values() if (c := cells.get(col.key)) and c.clean and c.value is not None]
        top = max((c.value for c in clean), default=None)
        for c in clean:
            c.best = c.value == top
    return Leaderboard(ordered, rows, [_anchor_row(spec, ordered) for spec in ANCHORS], files, notes, comparisons)


def _comparisons(file: str, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The payload's ``comparisons`` with the column they belong to and the row labels of A and B."""
    benchmark = payload["benchmark"]
    settings = payload.get("settings") or {}
    variant, subset = _variant_and_subset(benchmark, settings)
    out = []
    for comp in payload.get("comparisons") or []:
        if not isinstance(comp, Mapping) or not {"a", "b", "difference", "ci"} <= set(comp):
            continue
        where_variant, where_subset = variant, subset
        if comp.get("subset") in ("with_human", "without_human"):
            where_variant = comp["subset"]
        elif comp.get("subset"):
            where_subset = str(comp["subset"])
        column = Column(benchmark, where_variant, where_subset, str(comp.get("statistic", "")))
        results = payload.get("results") or {}
        out.append({**comp, "where": column.label, "file": file,
                    "a_row": row_label(comp["a"], results.get(comp["a"], {}), settings),
                    "b_row": row_label(comp["b"], results.get(comp["b"], {}), settings)})
    return out


# -- published anchors -------------------------------------------------------------------------------------------


def _published_value(entry: Mapping[str, Any], metric: str, statistic: str) -> float | None:
    """The number ``entry`` prints for ``metric`` that fits a column of ``statistic`` (pairwise: its ``avg``;
    THumB: Pearson with ``total``), as printed (× the entry's ``scale``)."""
    value = entry["values"].get(metric)
    if isinstance(value, dict):
        value = value.get("avg" if statistic == "avg" else "total")
    return _number(value)


def _protocol(column: Column, entry: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Whether ``entry``'s protocol is the column's; if not, the footnote saying how they differ."""
    proto = str(entry.get("protocol"))
    words = _PROTOCOL_WORDS.get(proto, f"protocol {proto!r}")
    if column.benchmark.startswith("flickr8k"):
        ok = proto == column.variant
        return ok, None if ok else f"published under {words}; this column uses the {column.variant} protocol"
    if column.benchmark == "composite":
        ok = proto == "clipscore" and column.variant == "minus-matched"
        if ok:
            return True, None
        mine = ("the rated caption's reference removed" if column.variant == "minus-matched"
                else f"refs={column.variant}")
        return False, f"published under {words}; this column: all 11,985 captions, {mine}"
    if column.benchmark in PAIRWISE:
        wanted = {"random-5-refs": "5", "expert-5-refs": "expert", "all-50-refs": "all"}.get(proto)
        ok = wanted == column.variant
        return ok, None if ok else f"published with {words}; this column: refs={column.variant}"
    ok = proto == column.variant
    mine = _PROTOCOL_WORDS.get(column.variant, column.variant)
    return ok, None if ok else f"published on {words}; this column: {mine}"


def _anchor_row(spec: AnchorSpec, columns: Sequence[Column]) -> AnchorRow:
    row = AnchorRow(spec)
    for column in columns:
        if column.subset != "all":  # the papers print whole-benchmark numbers only
            continue
        candidates = []
        other: list[str] = []
        for order, entry in enumerate(published(column.benchmark)):
            stat = _PUBLISHED_STATISTIC.get(entry["statistic"])
            if stat is None or spec.metric not in entry["values"]:
                continue
            value = _published_value(entry, spec.metric, stat)
            if value is None:
                continue
            original = (entry.get("original") or {}).get(spec.metric) or {}
            source, where = original.get("source", entry["source"]), original.get("where", entry["where"])
            if stat != column.statistic:
                other.append(f"{STATISTIC_LABELS.get(stat, stat)} {value:g} ({source}, {where})")
                continue
            ok, mismatch = _protocol(column, entry)
            scale = int(entry["scale"])
            digits = _printed_decimals(value) + (0 if stat == "avg" else len(str(scale)) - 1)
            shown = round(value * 100 / scale if stat == "avg" else value / scale, digits)
            cell = AnchorCell(shown, value, scale, source, where, str(entry["protocol"]), ok, mismatch,
                              entry["source"] if original else None)
            candidates.append(((not ok, source != spec.home, order), cell))
        if candidates:
            row.cells[column.key] = min(candidates, key=lambda c: c[0])[1]
        elif other:
            row.not_shown.append(f"{column.label}: published only as {'; '.join(other)}, another statistic")
    return row


# -- rendering ---------------------------------------------------------------------------------------------------


def _signed(value: float | None, statistic: str | None) -> str:
    """A difference with its sign: accuracy points to 2 decimals, correlations to 3 (``+.012``, ``-1.25``)."""
    if value is None:
        return "—"
    if statistic == "avg":
        return f"{value:+.2f}"
    text = f"{value:+.3f}"
    return text.replace("+0.", "+.").replace("-0.", "-.")


def _corr(value: float, decimals: int = 3) -> str:
    """``.472`` / ``-.031`` / ``1.000``: a correlation without its leading zero."""
    text = f"{value:.{decimals}f}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


def _fmt(value: float, statistic: str, decimals: int | None = None) -> str:
    if statistic == "avg":
        return f"{value:.{1 if decimals is None else decimals}f}"
    return _corr(value, 3 if decimals is None else decimals)


def _printed_decimals(number: float) -> int:
    text = repr(float(number))
    return 0 if "e" in text or "." not in text else len(text.split(".")[1])


def format_cell(cell: Cell, column: Column, numbers: Mapping[str, int] | None = None, markdown: bool = False) -> str:
    """``.472 [.455, .489]`` / ``80.2 [78.9, 81.4]``, then ``†n,m`` (the footnote numbers of its contamination
    reasons, ``numbers``: reason -> footnote number), ``?n`` (training data not declared) or ``?`` (the payload does
    not say); bold in markdown when the cell is its column's best clean value."""
    if cell.value is None:
        text = "n/a"
    else:
        text = _fmt(cell.value, column.statistic)
        if cell.ci is not None:
            level = "" if cell.confidence in (None, 0.95) else f"{100 * cell.confidence:g}% "
            text += f" {level}[{_fmt(cell.ci[0], column.statistic)}, {_fmt(cell.ci[1], column.statistic)}]"
    if markdown and cell.best:
        text = f"**{text}**"
    if cell.contamination is None:
        return f"{text} {UNKNOWN}"
    numbers = numbers or {}
    for mark, reasons in ((CONTAMINATED, [r for r in cell.contamination if not _is_unknown(r)]),
                          (UNKNOWN, [r for r in cell.contamination if _is_unknown(r)])):
        if reasons:
            text += f" {mark}{','.join(str(numbers[r]) for r in reasons if r in numbers)}"
    return text


def format_anchor(cell: AnchorCell, column: Column, number: int | None = None) -> str:
    """The published number with the precision it is printed with (``51.2`` → ``.512``), ``‡n`` if its protocol
    differs from the column's."""
    decimals = _printed_decimals(cell.printed)
    if column.statistic != "avg" and cell.scale == 100:
        decimals += 2
    text = _fmt(cell.value, column.statistic, decimals)
    return f"{text} {PROTOCOL_MISMATCH}{'' if number is None else number}" if cell.mismatch else text


def legend(board: Leaderboard) -> str:
    stats = {c.statistic for c in board.columns}
    units = []
    if stats & set(CORRELATION_STATISTICS):
        units.append("Kendall τ-c / τ-b and Pearson r (Pearson against THumB's total score) are correlations with "
                     "the human judgments, in [-1, 1] (printed without the leading zero)")
    if "avg" in stats:
        units.append("avg % is the PASCAL-50S / ABSTRACT-50S pairwise accuracy (how often the metric prefers the "
                     "caption people preferred), averaged over the pair categories, in percent")
    levels = {c.confidence for cells in board.rows.values() for c in cells.values() if c.ci is not None}
    level = "95 %" if levels <= {None, 0.95} else "the level printed before it (95 % otherwise)"
    parts = [
        "Each column is one benchmark under one protocol (references / subset), scored with the benchmark's own "
        "statistic (in the header): " + "; ".join(units) + ".",
        f"Brackets: the {level} bootstrap interval from `capeval bench` (none when the run had no bootstrap or the "
        "file predates intervals).",
        f"{CONTAMINATED}n: the metric's training data overlaps the benchmark (footnote n gives the reason); "
        f"{UNKNOWN}n: the metric's training data is not declared (footnote n); {UNKNOWN}: the file does not say "
        f"whether it overlaps; {NOT_MEASURED}: not measured; bold: the best value of "
        "the column among metrics known to be clean.",
        "The rows under the rule are published numbers, not measured by capeval, labelled with the citation key of "
        "the table they are printed in; they follow the column's protocol unless marked "
        f"{PROTOCOL_MISMATCH}n (footnote n says how it differs). Only numbers published with the column's statistic "
        "are shown.",
    ]
    return " ".join(parts)




def render(board: Leaderboard, fmt: str = "text") -> str:
    """The leaderboard as plain text (``fmt="text"``) or markdown: legend, table, footnotes, anchor sources,
    references and notes."""
    if fmt not in ("text", "markdown"):
        raise ValueError(f"fmt must be 'text' or 'markdown', got {fmt!r}")
    md = fmt == "markdown"
    numbers = {n.text: n.id for n in board.footnotes if n.kind != "protocol"}
    mismatches = {n.text: n.id for n in board.footnotes if n.kind == "protocol"}
    headers = ["metric", *(c.label for c in board.columns)]
    body = [[f"`{m}`" if md else m,
             *(format_cell(cells[c.key], c, numbers, md) if c.key in cells else NOT_MEASURED
               for c in board.columns)] for m, cells in board.rows.items()]
    separator = ["*published (not measured by capeval)*" if md else "published (not measured by capeval):",
                 *("" for _ in board.columns)]
    anchors = [[a.label, *(format_anchor(a.cells[c.key], c, mismatches.get(a.cells[c.key].mismatch or ""))
                           if c.key in a.cells else NOT_MEASURED for c in board.columns)] for a in board.anchors]
    if md:
        table = markdown_table(headers, [*body, separator, *anchors])
    else:
        lines = text_table(headers, [*body, separator, *anchors]).split("\n")
        # a rule above the published rows (a wrapped row takes several lines: found by its first cell)
        rule = next(i for i, line in enumerate(lines) if line and not line.strip("- "))
        at = next(i for i in range(rule + 1, len(lines)) if lines[i].startswith(separator[0].split()[0]))
        table = "\n".join(line.rstrip() for line in [*lines[:at], lines[rule], *lines[at:]])
    width = terminal_width()
    wrap = (lambda s: s) if md or not width else (lambda s: "\n".join(wrap_words(s, width, indent="    ")))
    out = ["## Leaderboard" if md else "Leaderboard", "", wrap(legend(board)), "", table, ""]
    labels = {c.key: c.label for c in board.columns}
    if board.footnotes:
        out.append("Footnotes:")
        for note in board.footnotes:
            where = "; ".join(f"{r} × {labels[c]}" for r, c in note.cells)
            out.append(wrap(f"{'- ' if md else ''}{note.mark}{note.id} {note.text} — {where}"))
        out.append("")
    if board.comparisons:
        out.append("Paired comparisons (`capeval bench --compare`: the difference A − B of the column's statistic on "
                   "the same items, 95 % paired bootstrap interval; \"beats\" = the interval excludes 0):")
        out.append("")
        rows = []
        for comp in board.comparisons:
            ci = comp.get("ci") or [None, None]
            diff = _signed(comp["difference"], comp.get("statistic"))
            interval = f"[{_signed(ci[0], comp.get('statistic'))}, {_signed(ci[1], comp.get('statistic'))}]"
            verdict = (f"{comp['a_row']} beats {comp['b_row']}" if comp.get("a_beats_b") else
                       f"{comp['b_row']} beats {comp['a_row']}" if comp.get("b_beats_a") else "no significant difference")
            p = comp.get("p_value")
            rows.append([comp["where"], comp["a_row"], comp["b_row"], f"{diff} {interval}",
                         "—" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}"), verdict])
        head = ["column", "A", "B", "A − B [95 % CI]", "p", "verdict"]
        out += [markdown_table(head, rows) if md else text_table(head, rows), ""]
    out.append("Published rows (source of each number):")
    for anchor in board.anchors:
        cells = [f"{labels[k]}: {c.source} {c.where}" + (f" (read from {c.via})" if c.via else "")
                 for k, c in anchor.cells.items()]
        text = "; ".join(cells) if cells else "no published number for these columns"
        if anchor.not_shown:
            text += ". Not shown: " + "; ".join(anchor.not_shown)
        kind = f"{anchor.spec.kind}; {'reads the image' if anchor.spec.reads_images else 'reads no image'}"
        out.append(wrap(f"{'- ' if md else ''}{anchor.spec.name} ({kind}): {text}."))
    cites = board.used_citations()
    if cites:
        out += ["", "References:"]
        out += [wrap(f"{'- ' if md else ''}{key}: {text}") for key, text in cites.items()]
    if board.notes:
        out += ["", "Notes:"]
        out += [wrap(f"{'- ' if md else ''}{n}") for n in board.notes]
    out += ["", "Files: " + ", ".join(board.files)]
    return "\n".join(out)


# -- plotting ----------------------------------------------------------------------------------------------------

#: How a capeval cell is drawn, by what is known of its training data (:func:`cell_kind`).
PLOT_STYLES = {
    "clean": {"color": "tab:blue", "marker": "o", "label": "capeval, training data does not overlap"},
    "contaminated": {"color": "tab:red", "marker": "X", "label": f"capeval, {CONTAMINATED} training data overlaps"},
    "unknown": {"color": "tab:gray", "marker": "s", "label": f"capeval, {UNKNOWN} training data not declared"},
    "published": {"color": "black", "marker": "D", "label": "published (not measured by capeval)"},
}


def cell_kind(cell: Cell) -> str:
    """``"clean"``, ``"contaminated"`` (an overlap reason) or ``"unknown"`` (the payload does not say, or the
    training data is not declared): how :func:`plot_leaderboard` draws the cell."""
    if cell.contamination is None:
        return "unknown"
    if any(not _is_unknown(r) for r in cell.contamination):
        return "contaminated"
    return "unknown" if cell.contamination else "clean"


def plot_leaderboard(board: Leaderboard, path: str | Path, *, anchors: bool = True) -> Path:
    """A PNG of the leaderboard: one panel per column (benchmark / protocol / statistic), a row per metric, each
    capeval cell a marker at its value with its 95 % bootstrap interval as an error bar, coloured by contamination
    (clean, overlapping †, unknown ?); the published anchors (``anchors``) as black diamonds without intervals. Rows
    are sorted by their mean position within the panels, best at the top; panels share the rows."""
    from capeval.benchmarks.report import pyplot, save_figure

    columns = [c for c in board.columns if any(c.key in cells and _number(cells[c.key].value) is not None
                                               for cells in board.rows.values())]
    if not columns:
        raise ValueError("nothing to plot: no measured cell in the leaderboard")
    rows: list[tuple[str, Mapping[str, Any]]] = list(board.rows.items())
    if anchors:
        rows += [(f"{a.spec.name} (published)", a.cells) for a in board.anchors if a.cells]

    def value_of(cells: Mapping[str, Any], col: Column) -> float | None:
        return _number(getattr(cells.get(col.key), "value", None))

    ranked = {col.key: sorted(v for v in (value_of(c, col) for _, c in rows) if v is not None) for col in columns}

    def mean_position(item: tuple[str, Mapping[str, Any]]) -> float:
        spots = [ranked[col.key].index(v) / max(len(ranked[col.key]) - 1, 1)
                 for col in columns if (v := value_of(item[1], col)) is not None]
        return sum(spots) / len(spots) if spots else -1.0

    rows.sort(key=mean_position)
    plt = pyplot()
    height = 1.6 + 0.22 * len(rows)
    fig, axes = plt.subplots(1, len(columns), figsize=(2.4 + 2.1 * len(columns), height), sharey=True,
                             squeeze=False)
    used = set()
    for ax, col in zip(axes[0], columns):
        for y, (_, cells) in enumerate(rows):
            value = value_of(cells, col)
            if value is None:
                continue
            cell = cells[col.key]
            if isinstance(cell, AnchorCell):
                kind, err = "published", None
            else:
                kind = cell_kind(cell)
                err = None if not cell.ci else [[max(value - cell.ci[0], 0.0)], [max(cell.ci[1] - value, 0.0)]]
            style = PLOT_STYLES[kind]
            used.add(kind)
            ax.errorbar([value], [y], xerr=err, fmt=style["marker"], color=style["color"], markersize=4,
                        elinewidth=1, capsize=2)
        ax.set_title(col.label, fontsize=7)
        ax.set_xlabel("accuracy (%)" if col.statistic == "avg" else "correlation", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.7, len(rows) - 0.3)
    axes[0][0].set_yticks(range(len(rows)), [m for m, _ in rows])
    handles = [plt.Line2D([], [], linestyle="", marker=PLOT_STYLES[k]["marker"], color=PLOT_STYLES[k]["color"],
                          label=PLOT_STYLES[k]["label"]) for k in PLOT_STYLES if k in used]
    fig.suptitle("capeval leaderboard: each metric's statistic with its 95 % bootstrap interval", fontsize=9)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    return save_figure(fig, path, tight=False)
