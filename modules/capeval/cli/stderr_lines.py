"""The command line's warnings and errors on stderr, fit to the terminal as its tables are.

:func:`fit` wraps one message to :func:`capeval.render.terminal_width` columns with a hanging indent (the lines after
the first start with :data:`INDENT`), breaking only at spaces, so that a flag, a path or a number is never cut; joined
again (:func:`unwrap`) the text is the message, whole. The width applies when stderr is a terminal or ``$COLUMNS``
says it; written to a file or a pipe without ``$COLUMNS`` (a log, CI), and under ``--wide``, each message stays one
line, for ``grep``.
"""
from __future__ import annotations

import os
import sys
import textwrap

#: The start of every line of a message after its first.
INDENT = "    "


def stderr_width() -> int:
    """Columns a message on stderr may use (>= 40), or 0: one line, however long (see the module docstring)."""
    from capeval.render import terminal_width

    width = terminal_width()
    if width == 0:  # --wide
        return 0
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return width
    try:
        return width if sys.stderr is not None and sys.stderr.isatty() else 0
    except (ValueError, AttributeError):
        return 0


def fit(message: str, width: int | None = None) -> str:
    """``message`` as lines of at most ``width`` characters (default :func:`stderr_width`; 0: unchanged), each of its
    lines wrapped with the second and later indented by :data:`INDENT`. A word longer than a line (a long path) keeps
    a line of its own rather than being cut."""
    width = stderr_width() if width is None else width
    if width <= 0:
        return message
    return "\n".join(_fit_line(line, width) for line in message.split("\n"))


def _fit_line(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return "\n".join(textwrap.wrap(line, width, subsequent_indent=INDENT, break_long_words=False,
                                   break_on_hyphens=False)) or line


def unwrap(text: str) -> str:
    """What :func:`fit` wrapped, as one line again (for comparing a printed message with its text)."""
    return " ".join(line.strip() for line in text.splitlines())


def say(message: str) -> None:
    """Print ``message`` on stderr, fit (:func:`fit`), on lines of its own (above an open progress bar)."""
    from capeval.progress import write

    write(fit(message), file=sys.stderr)
