"""Plain-text and markdown tables for the CLI."""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

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


def text_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    """A plain-text table: the first column (the row labels) and text columns left-aligned, columns of numbers
    right-aligned (their headers too), widths in terminal columns (:func:`display_width`), so that wide characters
    keep the columns straight."""
    cells = [[fmt(c, digits) for c in row] for row in rows]
    numeric = [False, *_numeric_columns(rows, len(headers))[1:]]
    widths = [max(display_width(str(h)), *(display_width(r[i]) for r in cells)) if cells else display_width(str(h))
              for i, h in enumerate(headers)]
    line = "  ".join(_pad(str(h), w, right) for h, w, right in zip(headers, widths, numeric))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(_pad(c, w, right) for c, w, right in zip(r, widths, numeric)) for r in cells]
    return "\n".join([line, rule, *body])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    out = ["| " + " | ".join(map(str, headers)) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(fmt(c, digits) for c in row) + " |" for row in rows]
    return "\n".join(out)
