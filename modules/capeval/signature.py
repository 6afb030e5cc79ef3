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


def parse_signature(signature: str) -> dict[str, str]:
    """Inverse of :func:`build_signature` (for caches and tests)."""
    out: dict[str, str] = {}
    for part in signature.split("|"):
        key, _, value = part.partition(":")
        out[key] = value
    return out
