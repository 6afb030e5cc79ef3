"""The published anchors of the leaderboard: metrics whose numbers come from the papers' tables
(``data/published.json``), never measured by capeval, shown below capeval's rows in the columns whose statistic they
were published with; a number published under another protocol than the column's carries a footnote saying how."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capeval.meta_evaluation.leaderboard.model import (PAIRWISE, STATISTIC_LABELS, AnchorCell, AnchorRow, AnchorSpec,
                                                  Column)
from capeval.meta_evaluation.leaderboard.numbers import finite, printed_decimals
from capeval.published import published

#: The published anchors, in row order.
ANCHORS = (
    AnchorSpec("CLIP-S", "clip_s", "hessel2021", None, "vision-language model (CLIP ViT-B/32), no references"),
    AnchorSpec("RefCLIP-S", "refclip_s", "hessel2021", None, "vision-language model (CLIP ViT-B/32) + references"),
    AnchorSpec("PAC-S", "pac_s", "sarto2023", None, "vision-language model (PAC-S CLIP ViT-B/32), no references"),
    AnchorSpec("RefPAC-S", "refpac_s", "sarto2023", None, "vision-language model (PAC-S CLIP ViT-B/32) + references"),
    AnchorSpec("Polos", "polos", "wada2024", None, "vision-language model (CLIP + SimCSE), trained on Polaris"),
    AnchorSpec("BERT-S++", "bert_s_pp", "hessel2021", False, "text only: BERTScore re-weighted over the references"),
    AnchorSpec("TIGEr", "tiger", "hessel2021", True, "image regions (SCAN text-image grounding) + references"),
    AnchorSpec("NUBIA", "nubia", "hessel2021", False, "text only: learned text-similarity metric"),
)

#: published statistic -> column statistic (``tau`` is left out: the papers do not say which Kendall τ).
_PUBLISHED_STATISTIC = {"tau_c": "tau_c", "tau_b": "tau_b", "pearson": "pearson", "spearman": "spearman",
                        "accuracy": "avg"}
#: How the published protocols read, for the protocol-mismatch footnotes.
_PROTOCOL_WORDS = {
    "clipscore": "the CLIPScore protocol",
    "cui": "Cui et al.'s protocol",
    "random-5-refs": "5 references drawn at random (mean of 5 draws)",
    "expert-5-refs": "the EXPERT file's 5 references",
    "all-50-refs": "all references",
    "random-refs": "randomly sampled references",
    "lceval-test-7996": "the LCEval authors' 7,996-caption test split",
    "with_human": "the 2,500 captions with Human",
    "without_human": "the 2,000 captions without Human",
}


def _published_value(entry: Mapping[str, Any], metric: str, statistic: str) -> float | None:
    """The number ``entry`` prints for ``metric`` that fits a column of ``statistic`` (pairwise: its ``avg``;
    THumB: Pearson with ``total``), as printed (× the entry's ``scale``)."""
    value = entry["values"].get(metric)
    if isinstance(value, dict):
        value = value.get("avg" if statistic == "avg" else "total")
    return finite(value)


def _protocol(column: Column, entry: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Whether ``entry``'s protocol is the column's; if not, the footnote saying how they differ."""
    proto = str(entry.get("protocol"))
    words = _PROTOCOL_WORDS.get(proto, f"protocol {proto!r}")
    if column.benchmark.startswith("flickr8k"):
        ok = proto == column.variant
        return ok, None if ok else f"published under {words}; this column uses the {column.variant} protocol"
    if column.benchmark == "composite":
        ok = proto == "clipscore" and column.variant == "minus-matched"
        if ok:
            return True, None
        mine = ("the rated caption's reference removed" if column.variant == "minus-matched"
                else f"refs={column.variant}")
        return False, f"published under {words}; this column: all 11,985 captions, {mine}"
    if column.benchmark in PAIRWISE:
        wanted = {"random-5-refs": "5", "expert-5-refs": "expert", "all-50-refs": "all"}.get(proto)
        ok = wanted == column.variant
        return ok, None if ok else f"published with {words}; this column: refs={column.variant}"
    ok = proto == column.variant
    mine = _PROTOCOL_WORDS.get(column.variant, column.variant)
    return ok, None if ok else f"published on {words}; this column: {mine}"


def anchor_row(spec: AnchorSpec, columns: Sequence[Column]) -> AnchorRow:
    row = AnchorRow(spec)
    for column in columns:
        if column.subset != "all":  # the papers print whole-benchmark numbers only
            continue
        candidates = []
        other: list[str] = []
        for order, entry in enumerate(published(column.benchmark)):
            stat = _PUBLISHED_STATISTIC.get(entry["statistic"])
            if stat is None or spec.metric not in entry["values"]:
                continue
            value = _published_value(entry, spec.metric, stat)
            if value is None:
                continue
            original = (entry.get("original") or {}).get(spec.metric) or {}
            source, where = original.get("source", entry["source"]), original.get("where", entry["where"])
            if stat != column.statistic:
                other.append(f"{STATISTIC_LABELS.get(stat, stat)} {value:g} ({source}, {where})")
                continue
            ok, mismatch = _protocol(column, entry)
            scale = int(entry["scale"])
            digits = printed_decimals(value) + (0 if stat == "avg" else len(str(scale)) - 1)
            shown = round(value * 100 / scale if stat == "avg" else value / scale, digits)
            cell = AnchorCell(shown, value, scale, source, where, str(entry["protocol"]), ok, mismatch,
                              entry["source"] if original else None)
            candidates.append(((not ok, source != spec.home, order), cell))
        if candidates:
            row.cells[column.key] = min(candidates, key=lambda c: c[0])[1]
        elif other:
            row.not_shown.append(f"{column.label}: published only as {'; '.join(other)}, another statistic")
    return row
