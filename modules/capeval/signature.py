"""sacrebleu-style signatures: a short string of every setting that changes a score.

Example: ``nrefs:5|clean:none|tok:ptb-py.1|bleu:closest|cider_d:df=refs,sigma=6|version:0.2.0``.
Fields are ``key:value`` joined by ``|``; the order is fixed (common fields first, then one field
per metric in the order the metrics were computed, then the version).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from capeval._version import __version__


def nrefs_field(references: Sequence[Sequence[str]]) -> str:
    counts = {len(r) for r in references}
    return str(counts.pop()) if len(counts) == 1 else "var"


def build_signature(common: Mapping[str, str], metric_fields: Iterable[tuple[str, str]]) -> str:
    parts = [f"{k}:{v}" for k, v in common.items()]
    parts += [f"{k}:{v}" for k, v in metric_fields]
    parts.append(f"version:{__version__}")
    return "|".join(parts)


#: The fields every signature has that belong to no one metric (they open :func:`signature_lines`' first line).
COMMON_FIELDS = ("nrefs", "clean", "tok", "version")


def signature_lines(signature: str, width: int | None = None, label: str = "signature") -> list[str]:
    """The signature for a terminal, sacrebleu-style: ``signature: nrefs:4|clean:thumb|tok:ptb-py.1|version:0.2.0``,
    then one indented line per metric (``  cider_d:df=refs,sigma=6``); a metric's settings longer than ``width``
    terminal columns (default :func:`capeval.render.terminal_width`; 0: no limit) continue on further lines, broken
    after a comma, so that no setting is lost. The string itself (``result["signature"]``, ``--json``,
    ``--signature full``) is one line."""
    from capeval.render import terminal_width

    width = terminal_width() if width is None else width
    fields = [part.partition(":") for part in signature.split("|") if part]
    common = "|".join(f"{k}:{v}" for k, _, v in fields if k in COMMON_FIELDS)
    lines = _settings_lines(f"{label}: {common}", width)
    for k, _, v in fields:
        if k not in COMMON_FIELDS:
            lines += _settings_lines(f"  {k}:{v}", width)
    return lines


def _settings_lines(text: str, width: int) -> list[str]:
    """``text`` within ``width`` columns, broken after commas or ``|`` (then anywhere), continued under a deeper indent;
    nothing is added or removed: the lines joined give ``text`` back."""
    import re

    from capeval.render import cut_exact, display_width

    if not width or display_width(text) <= width:
        return [text]
    lead = text[:len(text) - len(text.lstrip(" "))]
    indent = lead + "    "
    lines, line = [], ""
    for piece in re.split(r"(?<=[,|])", text):
        if line and display_width(line + piece) > width:
            lines.append(line)
            line = indent
        line += piece
        while display_width(line) > width:  # one setting longer than a line
            head = cut_exact(line, width)
            lines.append(head)
            line = indent + line[len(head):]
    lines.append(line)
    return lines


def merged_signature_lines(signatures: Iterable[str], width: int | None = None) -> list[str]:
    """Several signatures (one per metric of a benchmark run) for a terminal: those with the same common fields
    (:data:`COMMON_FIELDS`) under one ``signature: ...`` line, each metric field once, indented, broken after commas
    within ``width`` as in :func:`signature_lines` (0: no limit)."""
    from capeval.render import terminal_width

    width = terminal_width() if width is None else width
    groups: dict[str, list[str]] = {}
    for signature in signatures:
        if not signature:
            continue
        fields = [part.partition(":") for part in signature.split("|") if part]
        common = "|".join(f"{k}:{v}" for k, _, v in fields if k in COMMON_FIELDS)
        own = groups.setdefault(common, [])
        own += [f"{k}:{v}" for k, _, v in fields if k not in COMMON_FIELDS and f"{k}:{v}" not in own]
    lines: list[str] = []
    for common, own in groups.items():
        lines += _settings_lines(f"signature: {common}", width)
        for field in own:
            lines += _settings_lines(f"  {field}", width)
    return lines


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of :func:`build_signature` (for caches and tests)."""
    out: dict[str, str] = {}
    for part in signature.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out
