"""Plain-text and markdown tables for the CLI."""
from __future__ import annotations

from collections.abc import Sequence


def fmt(value, digits: int = 4) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def text_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    cells = [[fmt(c, digits) for c in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h)) for i, h in enumerate(headers)]
    line = "  ".join(str(h).ljust(w) for h, w in zip(headers, widths))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells]
    return "\n".join([line, rule, *body])


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], digits: int = 4) -> str:
    out = ["| " + " | ".join(map(str, headers)) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(fmt(c, digits) for c in row) + " |" for row in rows]
    return "\n".join(out)
