"""The rule that picks each learned metric's default model (BENCHMARKS.md, "How the learned metrics' defaults are chosen"), applied to ``capeval bench --json``
payloads.

* :func:`cells` reads payloads into ``{(metric, model): {cell: Cell}}``: one cell per benchmark statistic
  (Flickr8k-Expert τ-c under the CLIPScore protocol, COMPOSITE τ-b per subset, PASCAL-50S mean accuracy in %, THumB
  Pearson with the total, Human included), each with its value, 95 % interval when bootstrapped, and whether the
  model is clean there (``contamination`` empty).
* :func:`select` applies the rule: a candidate is **eligible** when, on every clean cell it was scored on, its value
  is at least CIDEr-D's (and, for the metrics in :data:`MUST_BEAT_COSINE`, at least ``sentence_cosine``'s); the
  pick is the eligible candidate with the best mean rank over the cells all eligible candidates share, then the
  most cells at or above CIDEr-D, the best mean margin over CIDEr-D, fewer catalog components, the name. Without an
  eligible candidate the same order over all candidates (most cells at or above CIDEr-D first) gives a default that
  is not "recommended".
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from capeval.catalog import DEFAULTS, MODEL_OPTIONS, MODELS, canonical

#: Learned metrics whose default must also reach the plain sentence cosine (the trust issue's goal).
MUST_BEAT_COSINE = frozenset({"critic_plus", "lceval_plus"})
#: The order cells are printed in.
CELL_ORDER = ("flickr8k-expert", "composite/8k", "composite/30k", "composite/coco", "pascal50s", "thumb")
BASELINE = "cider_d"
COSINE = "sentence_cosine"


@dataclass(frozen=True)
class Cell:
    """One benchmark statistic of one (metric, model): ``value`` (τ or Pearson in [-1, 1], accuracy in %),
    ``ci`` (95 % interval or ``None``) and ``clean``."""

    value: float
    ci: tuple[float, float] | None
    clean: bool
    statistic: str


@dataclass
class Verdict:
    """One candidate under the rule: its cells, the clean cells where it falls below a baseline, eligibility."""

    metric: str
    model: str
    cells: dict[str, Cell]
    below: dict[str, list[str]] = field(default_factory=dict)  # cell -> baselines it falls below
    eligible: bool = False
    at_or_above: int = 0
    margin: float = float("nan")
    mean_rank: float = float("nan")


def _statistic(benchmark: str, settings: Mapping[str, Any]) -> str | None:
    if benchmark == "flickr8k-expert":
        return "tau_c" if settings.get("protocol", "clipscore") == "clipscore" else None
    if benchmark == "composite":
        return "tau_b"
    if benchmark == "pascal50s":
        return "avg" if str(settings.get("refs", "expert")) == "expert" else None
    if benchmark == "thumb":
        return "pearson"
    return None


def _value(benchmark: str, statistic: str, entry: Mapping[str, Any]) -> tuple[float, tuple[float, float] | None]:
    headline = entry.get("headline")
    if isinstance(headline, Mapping) and headline.get("value") is not None:
        ci = headline.get("ci")
        return float(headline["value"]), (None if ci is None else (float(ci[0]), float(ci[1])))
    if benchmark == "thumb":
        return float(entry["with_human"]["total"]), None
    return float(entry[statistic]), None


def _model_of(key: str, entry: Mapping[str, Any], settings: Mapping[str, Any]) -> str | None:
    metric = key.split("@")[0]
    models = entry.get("models")
    if models:
        return models[0]
    if metric not in MODEL_OPTIONS:
        return None
    option = settings.get("metric_options", {}).get(MODEL_OPTIONS[metric])
    return DEFAULTS[metric] if option is None else canonical(str(option))


def cells(payloads: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str | None], dict[str, Cell]]:
    """``{(result key, model or None): {cell name: Cell}}`` from bench payloads (``{benchmark, settings, results}``)."""
    out: dict[tuple[str, str | None], dict[str, Cell]] = {}
    for payload in payloads:
        benchmark, settings = payload["benchmark"], payload.get("settings", {})
        statistic = _statistic(benchmark, settings)
        if statistic is None:
            continue
        for key, entry in payload["results"].items():
            row = out.setdefault((key, _model_of(key, entry, settings)), {})
            subset = settings.get("subset") if settings.get("subset") != "all" else None
            if benchmark != "composite":
                scopes = [(benchmark, entry)]
            elif subset is None:  # all three subsets, each scored on its own
                scopes = [(f"composite/{s}", sub) for s, sub in entry.get("subsets", {}).items()]
            else:
                scopes = [(f"composite/{subset}", entry)]
            for name, scope in scopes:
                value, ci = _value(benchmark, statistic, scope)
                clean = scope.get("contamination", entry.get("contamination")) == []
                row[name] = Cell(value, ci, clean, statistic)
    return out


def _mean_ranks(verdicts: list[Verdict], shared: list[str]) -> None:
    for verdict in verdicts:
        verdict.mean_rank = float("nan")
    if not shared:
        return
    totals = {id(v): 0.0 for v in verdicts}
    for cell in shared:
        values = sorted((v.cells[cell].value for v in verdicts), reverse=True)
        for verdict in verdicts:
            value = verdict.cells[cell].value
            first = values.index(value) + 1
            ties = values.count(value)
            totals[id(verdict)] += first + (ties - 1) / 2
    for verdict in verdicts:
        verdict.mean_rank = totals[id(verdict)] / len(shared)


def _order(verdicts: list[Verdict]) -> list[Verdict]:
    def components(v: Verdict) -> int:
        return len(MODELS[v.model].components) if v.model in MODELS else 99
    nan_last = float("inf")
    return sorted(verdicts, key=lambda v: (
        v.mean_rank if v.mean_rank == v.mean_rank else nan_last, -v.at_or_above,
        -(v.margin if v.margin == v.margin else -nan_last), components(v), v.model))


def select(table: Mapping[tuple[str, str | None], Mapping[str, Cell]], metric: str) -> tuple[Verdict | None,
                                                                                                list[Verdict]]:
    """Apply the rule to ``metric``: ``(the pick or None when there is no candidate, every candidate's verdict in
    the rule's order)``. The pick is eligible (recommended) when ``pick.eligible``."""
    baselines = {name: next((c for (k, _), c in table.items() if k == name), {}) for name in (BASELINE, COSINE)}
    need = [BASELINE] + ([COSINE] if metric in MUST_BEAT_COSINE else [])
    verdicts = []
    for (key, model), row in table.items():
        if key != metric or model is None:
            continue
        verdict = Verdict(metric, model, dict(row))
        clean = [c for c, cell in row.items() if cell.clean]
        margins = []
        for cell in clean:
            for base in need:
                if cell not in baselines[base]:
                    verdict.below.setdefault(cell, []).append(f"{base} not measured")
                elif row[cell].value < baselines[base][cell].value:
                    verdict.below.setdefault(cell, []).append(base)
            if cell in baselines[BASELINE]:
                base = baselines[BASELINE][cell].value
                margins.append((row[cell].value - base) / abs(base) if base else row[cell].value - base)
                verdict.at_or_above += row[cell].value >= baselines[BASELINE][cell].value
        verdict.margin = sum(margins) / len(margins) if margins else float("nan")
        verdict.eligible = bool(clean) and not verdict.below
        verdicts.append(verdict)
    if not verdicts:
        return None, []
    pool = [v for v in verdicts if v.eligible] or verdicts
    shared = [c for c in CELL_ORDER if all(c in v.cells and v.cells[c].clean for v in pool)]
    _mean_ranks(pool, shared if any(v.eligible for v in verdicts) else [])
    ordered = _order(pool) + [v for v in verdicts if v not in pool]
    return ordered[0], ordered


def render_selection(table: Mapping[tuple[str, str | None], Mapping[str, Cell]], metrics: Iterable[str]) -> str:
    """Markdown: per metric, every candidate's cells (``†`` not clean, ``—`` not scored), its verdict, the pick."""
    lines = []
    present = [c for c in CELL_ORDER if any(c in row for row in table.values())]
    for metric in metrics:
        pick, verdicts = select(table, metric)
        lines.append(f"### `{metric}`")
        lines.append("")
        if pick is None:
            lines += ["No candidate was measured.", ""]
            continue
        base_rows = [(name, next((c for (k, _), c in table.items() if k == name), {})) for name in (BASELINE, COSINE)]
        lines.append("| model | " + " | ".join(present) + " | verdict |")
        lines.append("|---|" + "---:|" * len(present) + "---|")
        for verdict in verdicts:
            cells_ = [_fmt(verdict.cells.get(c)) for c in present]
            if verdict.eligible:
                what = "eligible"
            else:
                what = "below " + "; ".join(f"{b} on {c}" for c, bs in verdict.below.items() for b in bs) \
                    if verdict.below else "no clean cell"
            name = f"**{verdict.model}**" if verdict is pick else verdict.model
            lines.append(f"| {name} | " + " | ".join(cells_) + f" | {what} |")
        for name, row in base_rows:
            if row:
                lines.append(f"| *{name}* | " + " | ".join(_fmt(row.get(c)) for c in present) + " | baseline |")
        status = "recommended" if pick.eligible else "default, not recommended (no candidate meets the minimum)"
        lines += ["", f"Pick: `{pick.model}` ({status}).", ""]
    return "\n".join(lines)


def _fmt(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    digits = 2 if cell.statistic == "avg" else 3
    text = f"{cell.value:.{digits}f}"
    if cell.ci is not None:
        text += f" [{cell.ci[0]:.{digits}f}, {cell.ci[1]:.{digits}f}]"
    return text + ("" if cell.clean else " †")


__all__ = ["BASELINE", "CELL_ORDER", "COSINE", "Cell", "MUST_BEAT_COSINE", "Verdict", "cells", "render_selection",
           "select"]
