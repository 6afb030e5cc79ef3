"""sacrebleu-style signatures: a short string of every setting that changes a score.

Example: ``nrefs:5|clean:none|tok:ptb-py.1|bleu:closest|cider_d:df=refs,sigma=6|version:0.2.0``.
Fields are ``key:value`` joined by ``|``; the order is fixed (common fields first, then one field
per metric in the order the metrics were computed, then the version).

A :class:`Signature` keeps its fields as data until it is formatted, as sacrebleu's does: it *is* that string (a
``str``: JSON, comparisons and printing see the string), and capeval's own code reads its :attr:`~Signature.fields`
instead of splitting the string again. Only a signature read back from a file (a plain string) is parsed
(:meth:`Signature.of`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from capeval._version import __version__


def nrefs_field(references: Sequence[Sequence[str]]) -> str:
    counts = {len(r) for r in references}
    return str(counts.pop()) if len(counts) == 1 else "var"


class Signature(str):
    """A signature: the string ``key:value|...|version:V``, with its ``(key, value)`` :attr:`fields` as data."""

    fields: tuple[tuple[str, str], ...]

    def __new__(cls, fields: Iterable[tuple[str, str]]) -> Signature:
        fields = tuple((str(k), str(v)) for k, v in fields)
        self = super().__new__(cls, "|".join(f"{k}:{v}" for k, v in fields))
        self.fields = fields
        return self

    def __reduce__(self):  # pickled (a worker's result) as its fields, not as the string
        return (Signature, (self.fields,))

    @classmethod
    def build(cls, common: Mapping[str, str], metric_fields: Iterable[tuple[str, str]],
              version: str = __version__) -> Signature:
        """The common fields, one field per metric (in order), then the version."""
        return cls((*common.items(), *metric_fields, ("version", version)))

    @classmethod
    def of(cls, signature: str) -> Signature:
        """``signature`` as a :class:`Signature`: itself when it is one, else parsed (a string read from a file)."""
        if isinstance(signature, Signature):
            return signature
        return cls(part.partition(":")[::2] for part in str(signature).split("|") if part)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of field ``key`` (the first, when a key repeats), or ``default``."""
        return next((v for k, v in self.fields if k == key), default)

    def with_field(self, key: str, value: str) -> Signature:
        """This signature with field ``key``'s value replaced (``nrefs`` over all chunks of a dataset)."""
        return Signature((k, value if k == key else v) for k, v in self.fields)

    def common(self) -> list[tuple[str, str]]:
        """The fields that belong to no one metric (:data:`COMMON_FIELDS`), in order."""
        return [(k, v) for k, v in self.fields if k in COMMON_FIELDS]

    def metric_fields(self) -> list[tuple[str, str]]:
        """One ``(metric, settings)`` per metric, in order."""
        return [(k, v) for k, v in self.fields if k not in COMMON_FIELDS]


def build_signature(common: Mapping[str, str], metric_fields: Iterable[tuple[str, str]]) -> Signature:
    """:meth:`Signature.build`."""
    return Signature.build(common, metric_fields)


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
    signature = Signature.of(signature)
    common = "|".join(f"{k}:{v}" for k, v in signature.common())
    lines = _settings_lines(f"{label}: {common}", width)
    for k, v in signature.metric_fields():
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
        signature = Signature.of(signature)
        common = "|".join(f"{k}:{v}" for k, v in signature.common())
        own = groups.setdefault(common, [])
        own += [f"{k}:{v}" for k, v in signature.metric_fields() if f"{k}:{v}" not in own]
    lines: list[str] = []
    for common, own in groups.items():
        lines += _settings_lines(f"signature: {common}", width)
        for field in own:
            lines += _settings_lines(f"  {field}", width)
    return lines


def parse_signature(signature: str) -> dict[str, str]:
    """``{key: value}`` of a signature's fields (:attr:`Signature.fields`; a string read from a file is parsed)."""
    return dict(Signature.of(signature).fields)
