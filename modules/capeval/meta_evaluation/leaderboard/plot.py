"""The leaderboard as a figure (:func:`plot_leaderboard`): a panel per column, a row per metric, each capeval cell a
marker at its value (with its bootstrap interval as an error bar where the payload has one), coloured by what is
known of the metric's training data; the published anchors as black diamonds."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capeval.meta_evaluation.leaderboard.model import (CONTAMINATED, UNKNOWN, AnchorCell, Cell, Column, Leaderboard,
                                                  is_unknown)
from capeval.meta_evaluation.leaderboard.numbers import finite


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
    if any(not is_unknown(r) for r in cell.contamination):
        return "contaminated"
    return "unknown" if cell.contamination else "clean"


def plot_title(board: Leaderboard, columns: Sequence[Column] | None = None) -> str:
    """The figure's title: it promises bootstrap intervals only where the plotted capeval cells have them (``capeval
    bench --bootstrap N``; none by default), with their level (95 % unless a payload says otherwise)."""
    columns = board.columns if columns is None else columns
    plotted = [cells[c.key] for cells in board.rows.values() for c in columns
               if c.key in cells and finite(cells[c.key].value) is not None]
    with_ci = [cell for cell in plotted if cell.ci is not None]
    if not with_ci:
        return ("capeval leaderboard: each metric's statistic (no bootstrap intervals in these files: "
                "capeval bench --bootstrap N computes them)")
    levels = sorted({0.95 if cell.confidence is None else cell.confidence for cell in with_ci})
    level = " / ".join(f"{100 * x:g} %" for x in levels)
    where = "" if len(with_ci) == len(plotted) else " where the file has one"
    return f"capeval leaderboard: each metric's statistic with its {level} bootstrap interval{where}"


def plot_leaderboard(board: Leaderboard, path: str | Path, *, anchors: bool = True) -> Path:
    """A PNG of the leaderboard: one panel per column (benchmark / protocol / statistic), a row per metric, each
    capeval cell a marker at its value with its bootstrap interval as an error bar where the payload has one (the
    title says which; :func:`plot_title`), coloured by contamination (clean, overlapping †, unknown ?); the
    published anchors (``anchors``) as black diamonds without intervals. Rows are sorted by their mean position
    within the panels, best at the top; panels share the rows."""
    from capeval.meta_evaluation.report import pyplot, save_figure

    columns = [c for c in board.columns if any(c.key in cells and finite(cells[c.key].value) is not None
                                               for cells in board.rows.values())]
    if not columns:
        raise ValueError("nothing to plot: no measured cell in the leaderboard")
    rows: list[tuple[str, Mapping[str, Any]]] = list(board.rows.items())
    if anchors:
        rows += [(f"{a.spec.name} (published)", a.cells) for a in board.anchors if a.cells]

    def value_of(cells: Mapping[str, Any], col: Column) -> float | None:
        return finite(getattr(cells.get(col.key), "value", None))

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
    fig.suptitle(plot_title(board, columns), fontsize=9)
    fig.tight_layout(rect=(0, 0.35 / height, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    return save_figure(fig, path, tight=False)
