"""The leaderboard as text for the terminal or as markdown (:func:`render`): the legend, the table (capeval's rows,
a rule, the published anchors), the footnotes, the paired comparisons, the anchors' sources, the references and the
notes. Correlations print without their leading zero (``.472``), accuracies in percent to one decimal (``80.2``)."""
from __future__ import annotations

from collections.abc import Mapping

from capeval.meta_evaluation.leaderboard.model import (CONTAMINATED, CORRELATION_STATISTICS, NOT_MEASURED,
                                                  PROTOCOL_MISMATCH, UNKNOWN, AnchorCell, Cell, Column, Leaderboard,
                                                  is_unknown)
from capeval.meta_evaluation.leaderboard.numbers import printed_decimals
from capeval.render import markdown_table, terminal_width, text_table
from capeval.render import wrap as wrap_words


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
    for mark, reasons in ((CONTAMINATED, [r for r in cell.contamination if not is_unknown(r)]),
                          (UNKNOWN, [r for r in cell.contamination if is_unknown(r)])):
        if reasons:
            text += f" {mark}{','.join(str(numbers[r]) for r in reasons if r in numbers)}"
    return text


def format_anchor(cell: AnchorCell, column: Column, number: int | None = None) -> str:
    """The published number with the precision it is printed with (``51.2`` → ``.512``), ``‡n`` if its protocol
    differs from the column's."""
    decimals = printed_decimals(cell.printed)
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


def _length_table(board: Leaderboard, md: bool, wrap) -> list[str]:
    """The metrics' agreement with caption length held fixed, per column (``[]`` when no payload has it)."""
    rows = [[f"`{m}`" if md else m, *(_fmt(cells[c.key].length_controlled, c.statistic)
                                      if c.key in cells and cells[c.key].length_controlled is not None
                                      else NOT_MEASURED for c in board.columns)]
            for m, cells in board.rows.items() if any(cell.length_controlled is not None for cell in cells.values())]
    if not rows:
        return []
    title = ("Length held fixed (each metric's agreement with caption length held fixed, from `capeval bench`: "
             "Kendall's partial τ-b on correlation benchmarks, accuracy / agreement on the length-matched pairs, "
             "partial Pearson on THumB; the caption_length row above is length alone):")
    headers = ["metric", *(c.label for c in board.columns)]
    return [wrap(title), "", markdown_table(headers, rows) if md else text_table(headers, rows), ""]


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
    out += _length_table(board, md, wrap)
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
