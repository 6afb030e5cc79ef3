"""Building the leaderboard from payloads (:func:`build_leaderboard`): a column per (benchmark, variant, subset,
statistic) found, a row per metric (a result key, and the model of a learned metric): capeval's own metrics and the
plug-ins registered through the ``capeval.metrics`` entry point alike, since a row is whatever result a payload holds;
the best clean value of each column marked; the published anchors of the columns found."""
from __future__ import annotations

from dataclasses import replace

from collections.abc import Iterable, Mapping
from typing import Any

from capeval.meta_evaluation.leaderboard.anchors import ANCHORS, anchor_row
from capeval.meta_evaluation.leaderboard.model import (CORRELATION_STATISTICS, HEADLINE_FALLBACK, PAIRWISE, Cell, Column,
                                                  Leaderboard)
from capeval.meta_evaluation.leaderboard.numbers import finite
from capeval.meta_evaluation.leaderboard.reading import payload_problem
from capeval.catalog import MODEL_OPTIONS

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
    if benchmark == "detailcaps":
        return str(settings.get("references") or "paper"), "all"
    if benchmark == "caparena":
        return "release", "all"
    if benchmark == "longcap-arena":
        return str(settings.get("split") or "test"), str(settings.get("aspect") or "desc")
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
    controlled = entry.get("length_controlled")
    length_value = finite(controlled.get("value")) if isinstance(controlled, dict) else None
    stat, cell = _headline_cell(entry, headline, contamination, benchmark, variant, statistic, file, where)
    return stat, replace(cell, length_controlled=length_value)


def _headline_cell(entry, headline, contamination, benchmark: str, variant: str, statistic: str | None, file: str,
                   where: str) -> tuple[str, Cell]:
    if isinstance(headline, dict):
        stat = str(headline.get("statistic") or statistic or _fallback_statistic(benchmark, variant, entry))
        ci = headline.get("ci")
        low, high = (finite(ci[0]), finite(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)
        return stat, Cell(finite(headline.get("value")), None if low is None or high is None else (low, high),
                          finite(headline.get("confidence")),
                          headline.get("n_resamples") if isinstance(headline.get("n_resamples"), int) else None,
                          contamination, file)
    stat = statistic or _fallback_statistic(benchmark, variant, entry)
    raw = _fallback_value(benchmark, entry, stat)
    if raw is None:
        raise ValueError(f"{file}: {where} has neither a 'headline' nor the {stat!r} value of {benchmark}")
    return stat, Cell(finite(raw), contamination=contamination, file=file)


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
        subsets = entry.get("subsets") if benchmark in ("composite", "longcap-arena") else None
        for name, sub in (subsets or {}).items():
            if isinstance(sub, dict) and str(name) != subset:  # LongCap-Arena's main entry is its first aspect
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
    return Leaderboard(ordered, rows, [anchor_row(spec, ordered) for spec in ANCHORS], files, notes, comparisons)


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
