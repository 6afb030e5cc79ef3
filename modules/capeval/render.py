"""Plain-text and markdown tables for the CLI."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

#: Cells that stand for a missing number and keep a column of numbers right-aligned.
PLACEHOLDERS = ("", "—", "-", "n/a", "?")


def fmt(value, digits: int = 4) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and fullwidth characters take two, combining marks and
    zero-width characters none."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


_NUMBER = re.compile(r"\s*[-+−<>≤≥~]?\s*(\d[\d,]*(\.\d*)?|\.\d+)")


def _is_number(value) -> bool:
    """A number, or a string that starts with one and has no letters after it (``".472 [.455, .489]"``,
    ``"81.2 %"``, ``"<0.001"``, ``"0.31†"``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return True
    if not isinstance(value, str):
        return False
    found = _NUMBER.match(value)
    return found is not None and not any(c.isalpha() for c in value[found.end():])


def _numeric_columns(rows: Sequence[Sequence], n: int) -> list[bool]:
    """Per column: every cell a number (or a string that reads as one) or a placeholder (:data:`PLACEHOLDERS`), and
    at least one cell not empty."""
    out = []
    for i in range(n):
        values = [row[i] for row in rows if i < len(row)]
        filled = [v for v in values if v is not None and not (isinstance(v, str) and v.strip() in PLACEHOLDERS)]
        shown = [v for v in values if v is not None and str(v).strip()]
        out.append(bool(shown) and all(_is_number(v) for v in filled))
    return out


def _pad(text: str, width: int, right: bool) -> str:
    space = " " * (width - display_width(text))
    return space + text if right else text + space


#: While set (``capeval ... --wide``), :func:`terminal_width` is 0: nothing is wrapped or cut.
_WIDE: ContextVar[bool] = ContextVar("capeval_wide_output", default=False)


@contextmanager
def full_width(wide: bool = True):
    """Within this block (``wide=True``), :func:`terminal_width` is 0: tables and lines print whole (``--wide``)."""
    token = _WIDE.set(bool(wide))
    try:
        yield
    finally:
        _WIDE.reset(token)


def terminal_width() -> int:
    """Columns the CLI's output may use: ``$COLUMNS`` when it is a positive integer, else the size of the terminal
    on stdout or stderr, else 100 (a file or a pipe); never below 40. 0 (no limit) inside :func:`full_width`
    (``--wide``)."""
    import os
    import sys

    if _WIDE.get():
        return 0
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(40, int(env))
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return max(40, os.get_terminal_size(stream.fileno()).columns)
        except (OSError, ValueError, AttributeError):
            continue
    return DEFAULT_WIDTH


#: The width of output that goes to no terminal (a file, a pipe, CI's log) when ``$COLUMNS`` is not set.
DEFAULT_WIDTH = 100
#: The narrowest a text column is wrapped to when a table does not fit.
MIN_TEXT_COLUMN = 12


def fit_text(text: str, width: int | None = None) -> str:
    """``text`` with every line longer than ``width`` terminal columns (default :func:`terminal_width`; 0: none)
    wrapped between words, the continuation lines indented two spaces more than the line they continue."""
    width = terminal_width() if width is None else width
    if not width:
        return text
    out: list[str] = []
    for line in text.split("\n"):
        if display_width(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip(" "))]
        out += wrap(line[len(lead):], width, first=lead, indent=lead + "  ")
    return "\n".join(out)


def cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns, with an ellipsis when it was cut."""
    if not width or display_width(text) <= width:
        return text
    out = text[:max(width, 1)]
    while out and display_width(out) > width - 1:
        out = out[:-1]
    return out + "…"


def wrap(text: str, width: int, *, indent: str = "", first: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` terminal columns: broken between words (never at a hyphen or an
    underscore of a name unless a word alone is too long), later lines indented by ``indent``; ``first`` prefixes
    the first line (``"signature: "``). ``width`` 0: one line, unwrapped."""
    if not width:
        return [first + text]
    return _wrap_words(text.split(" "), width, first=first, indent=indent) or [first.rstrip()]


def _wrap_words(words: Sequence[str], width: int, *, first: str = "", indent: str = "") -> list[str]:
    lines: list[str] = []
    line = first
    start = first
    for word in words:
        if not word:
            continue
        sep = "" if line == start else " "
        if display_width(line) + len(sep) + display_width(word) <= width:
            line += sep + word
            continue
        if line != start:
            lines.append(line)
            line = start = indent
        while display_width(line) + display_width(word) > width:  # a word longer than a line: broken
            room = max(width - display_width(line), 1)
            piece = word[:room]
            while display_width(piece) > room and len(piece) > 1:
                piece = piece[:-1]
            lines.append(line + piece)
            word = word[len(piece):]
            line = start = indent
        line += word
    if line != start or not lines:
        lines.append(line)
    return lines


_BREAKS = re.compile(r"(?<=[ _\-/,=|])")


def _longest_piece(text: str) -> int:
    """The widest unbreakable piece of ``text`` as :func:`_wrap_cell` breaks it."""
    return max((display_width(p.rstrip()) for p in _BREAKS.split(text)), default=1)


def _wrap_cell(text: str, width: int) -> list[str]:
    """A cell's lines within ``width``: between words first, then at ``_``, ``-``, ``/``, ``,``, ``=`` inside a
    name (``spice_precision`` -> ``spice_`` / ``precision``), then anywhere."""
    pieces = [p for p in _BREAKS.split(text) if p]
    lines: list[str] = []
    line = ""
    for piece in pieces:
        if display_width(line + piece.rstrip()) <= width:
            line += piece
            continue
        if line:
            lines.append(line.rstrip())
        line = piece.lstrip() if lines else piece
        while display_width(line.rstrip()) > width:
            lines.append(cut_exact(line, width))
            line = line[len(lines[-1]):]
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def cut_exact(text: str, width: int) -> str:
    """The longest start of ``text`` within ``width`` terminal columns (at least one character)."""
    out = text[:width]
    while len(out) > 1 and display_width(out) > width:
        out = out[:-1]
    return out


def _layout(cells: list[list[str]], headers: list[str], numeric: list[bool], width: int) -> list[int] | None:
    """Column widths that fit ``width`` (two spaces between columns): text columns wrapped down to
    :data:`MIN_TEXT_COLUMN`, headers wrapped down to their column's widest value; ``None`` when even that is
    too wide."""
    natural = [max([display_width(h), *(display_width(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    values = [max([1, *(display_width(r[i]) for r in cells)]) for i in range(len(headers))]
    gaps = 2 * (len(headers) - 1)
    if sum(natural) + gaps <= width:
        return natural
    # the narrowest each column can be: a number's values whole, a header wrapped at its words or underscores
    floor = [max(v, _longest_piece(h)) if num else min(n, max(MIN_TEXT_COLUMN, _longest_piece(h)))
             for h, v, n, num in zip(headers, values, natural, numeric)]
    if sum(floor) + gaps > width:
        return None
    widths = list(floor)
    room = width - gaps - sum(widths)
    # the room back, first to the cells (a wrapped cell makes its row taller; a wrapped header one line once), then
    # to the headers; each time to the columns that need least of it first: as many columns whole as can be
    for goal in ([max(f, v) for f, v in zip(floor, values)], natural):
        for _, i in sorted((goal[i] - widths[i], i) for i in range(len(widths)) if widths[i] < goal[i]):
            step = min(room, goal[i] - widths[i])
            widths[i] += step
            room -= step
    return widths


def _render(headers: list[str], cells: list[list[str]], numeric: list[bool], widths: list[int],
            overflow: str = "wrap") -> list[str]:
    out = _render_rows([headers], numeric, widths, "wrap")
    out.append("  ".join("-" * w for w in widths))
    return out + _render_rows(cells, numeric, widths, overflow)


def _render_rows(cells: list[list[str]], numeric: list[bool], widths: list[int], overflow: str) -> list[str]:
    out: list[str] = []
    for row in cells:
        wrapped = [[c] if display_width(c) <= w else [cut(c, w)] if overflow == "cut" else _wrap_cell(c, w)
                   for c, w in zip(row, widths)]
        height = max(len(w) for w in wrapped)
        out += ["  ".join(_pad(w[k] if k < len(w) else "", width, right)
                          for w, width, right in zip(wrapped, widths, numeric)).rstrip()
                for k in range(height)]
    return out


def text_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4, width: int | None = None,
               overflow: str = "wrap") -> str:
    """A plain-text table: the first column (the row labels) and text columns left-aligned, columns of numbers
    right-aligned (their headers too), widths in terminal columns (:func:`display_width`), so that wide characters
    keep the columns straight.

    ``width``: the most columns a line may take; ``None`` (default) is :func:`terminal_width`, ``0`` no limit.
    A table wider than that wraps its text cells (between words, then inside names) and its headers; when the numbers
    alone are too wide, the columns are shown in several blocks, each repeating the first column. ``overflow="cut"``
    cuts a long cell with an ellipsis instead of wrapping it (one line per row: per-caption listings)."""
    headers = [str(h) for h in headers]
    cells = [[fmt(c, digits) for c in row] for row in rows]
    numeric = [False, *_numeric_columns(rows, len(headers))[1:]]
    limit = terminal_width() if width is None else width
    out: list[str] = []
    for cols, widths in _blocks(cells, headers, numeric, limit):
        if out:
            out.append("")
        out += _render([headers[i] for i in cols], [[r[i] for i in cols] for r in cells], [numeric[i] for i in cols],
                       widths, overflow)
    return "\n".join(out)


def _blocks(cells: list[list[str]], headers: list[str], numeric: list[bool],
            limit: int) -> list[tuple[list[int], list[int]]]:
    """``[(columns, their widths)]``: the blocks :func:`text_table` shows (one unless the numbers alone are too wide).
    Only each column's widest cell counts."""
    if not limit:
        return [(list(range(len(headers))),
                 [max([display_width(h), *(display_width(r[i]) for r in cells)]) for i, h in enumerate(headers)])]
    widths = _layout(cells, headers, numeric, limit)
    if widths is not None:
        return [(list(range(len(headers))), widths)]
    out = []
    for block in _column_blocks(cells, headers, numeric, limit):
        cols = [0, *block]
        sub_headers = [headers[i] for i in cols]
        sub_cells = [[r[i] for i in cols] for r in cells]
        sub_numeric = [numeric[i] for i in cols]
        out.append((cols, _layout(sub_cells, sub_headers, sub_numeric, limit) or [
            min(limit, max([display_width(h), *(display_width(r[i]) for r in sub_cells)]))
            for i, h in enumerate(sub_headers)]))
    return out


def text_table_lines(headers: Sequence[str], rows, digits: int = 4, width: int | None = None,
                     overflow: str = "wrap") -> Iterator[str]:
    """The lines of :func:`text_table` for rows too many to hold: ``rows()`` returns an iterable of them (called once
    for the widths, then once per block of columns), so that only one row is held at a time."""
    headers = [str(h) for h in headers]
    widest = [""] * len(headers)
    filled = [False] * len(headers)
    numbers = [True] * len(headers)
    any_rows = False
    for row in rows():
        any_rows = True
        for i, value in enumerate(row[: len(headers)]):
            text = fmt(value, digits)
            if display_width(text) > display_width(widest[i]):
                widest[i] = text
            placeholder = value is None or (isinstance(value, str) and value.strip() in PLACEHOLDERS)
            filled[i] = filled[i] or (value is not None and bool(str(value).strip()))
            numbers[i] = numbers[i] and (placeholder or _is_number(value))
    numeric = [False, *(f and n for f, n in zip(filled[1:], numbers[1:]))]
    limit = terminal_width() if width is None else width
    for k, (cols, widths) in enumerate(_blocks([widest] if any_rows else [], headers, numeric, limit)):
        if k:
            yield ""
        sub_numeric = [numeric[i] for i in cols]
        yield from _render([headers[i] for i in cols], [], sub_numeric, widths, overflow)
        for row in rows():
            cells = [fmt(row[i], digits) for i in cols]
            yield from _render_rows([cells], sub_numeric, widths, overflow)


def _column_blocks(cells: list[list[str]], headers: list[str], numeric: list[bool], width: int) -> list[list[int]]:
    """The columns after the first, in runs that each fit ``width`` beside the first column."""
    blocks: list[list[int]] = []
    current: list[int] = []
    for i in range(1, len(headers)):
        trial = [0, *current, i]
        if current and _layout([[r[j] for j in trial] for r in cells], [headers[j] for j in trial],
                               [numeric[j] for j in trial], width) is None:
            blocks.append(current)
            current = []
        current.append(i)
    if current:
        blocks.append(current)
    return blocks


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    out = ["| " + " | ".join(map(str, headers)) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(fmt(c, digits) for c in row) + " |" for row in rows]
    return "\n".join(out)
