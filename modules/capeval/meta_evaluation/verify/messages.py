"""Errors as the one-line text ``capeval verify`` puts in a row's reason and its summary."""
from __future__ import annotations


def first_clause(err: BaseException) -> str:
    """The first clause of an error's one-line message (``<path> not found``), for the summary's short lines."""
    return one_line(err).split("; ", 1)[0].split(". ", 1)[0]


def one_line(err: BaseException) -> str:
    """The error as one line: ``<file>: <strerror>`` for an OS error naming a file, else its message with the
    whitespace collapsed (its type name when it has none)."""
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__

