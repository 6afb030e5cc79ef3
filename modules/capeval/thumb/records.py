"""Reading and writing THumB-format score files (one row per (system, image) caption).

Accepted layouts, detected from the content:

* **JSON Lines** (the THumB 1.0 release, ``mscoco_THumB-1.0.jsonl``): one object per line;
* **JSON**: a list of such objects;
* **CSV** with a header row.

Field names (first match wins, case-sensitive as listed):

=============  ==============================================
item           accepted names
=============  ==============================================
system         ``SYS``, ``system``, ``sys``, ``model``
image          ``image``, ``image_id``, ``seg_id``, ``set_id``
caption        ``hyp``, ``caption``, ``text`` (optional)
precision      ``P``, ``precision``
recall         ``R``, ``recall``
fluency        ``Fl``, ``Flu``, ``fluency`` (optional, 0)
conciseness    ``Con``, ``conciseness`` (optional, 0)
inclusive      ``Inc``, ``inclusive`` (optional, 0)
given total    ``human_score``, ``total`` (optional; checked by ``capeval thumb report``)
=============  ==============================================

Penalties may be signed (≤ 0, THumB) or magnitudes; :func:`write_records` writes THumB's layout
(signed penalties and ``human_score``), so its output can be read back here.
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.io import parse_json_lines

FIELDS: dict[str, tuple[str, ...]] = {
    "system": ("SYS", "system", "sys", "model"),
    "image": ("image", "image_id", "seg_id", "set_id"),
    "caption": ("hyp", "caption", "text"),
    "precision": ("P", "precision"),
    "recall": ("R", "recall"),
    "fluency": ("Fl", "Flu", "fluency"),
    "conciseness": ("Con", "conciseness"),
    "inclusive": ("Inc", "inclusive"),
    "given_total": ("human_score", "total"),
}
REQUIRED = ("precision", "recall")


@dataclass
class ScoreTable:
    """Columns of a score file; one entry per row. Missing optional columns are ``None``."""

    precision: list[Any]
    recall: list[Any]
    fluency: list[Any] | None
    conciseness: list[Any] | None
    inclusive: list[Any] | None
    systems: list[str] | None
    images: list[str] | None
    captions: list[str] | None
    given_total: list[Any] | None

    def __len__(self) -> int:
        return len(self.precision)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a score file; not UTF-8 text or a broken CSV is one line naming the file."""
    from capeval.thumb.sheets import allow_long_fields  # the sheets' rule for long CSV fields

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}).") from None
    if not text.strip():
        raise ValueError(f"{path}: file is empty.")
    if path.suffix.lower() == ".csv":
        allow_long_fields(path)  # a field of any length (csv's own limit is 131,072 characters)
        try:
            rows = list(csv.DictReader(text.splitlines()))
        except csv.Error as err:
            raise ValueError(f"{path}: not a readable CSV file ({err}).") from None
        if not rows:
            raise ValueError(f"{path}: CSV has a header but no rows.")
        return rows
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, list):
        rows = data
    elif isinstance(data, dict):
        raise ValueError(f"{path}: expected a list of score objects or JSON Lines, got one JSON object.")
    else:
        rows = parse_json_lines(text, path)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: row {i + 1} is a {type(row).__name__}, expected an object with P and R fields.")
    return rows


def _column_name(rows: list[dict[str, Any]], item: str) -> str | None:
    keys = rows[0].keys()
    return next((name for name in FIELDS[item] if name in keys), None)


def load_scores(path: str | Path) -> ScoreTable:
    """Read a THumB-format score file (see module docstring).

    Raises:
        ValueError: for an unreadable file, a missing required column (naming the accepted names) or a
            row that lacks a column the first row has (naming the row).
    """
    path = Path(path)
    rows = _read_rows(path)
    columns: dict[str, list[Any] | None] = {}
    for item in FIELDS:
        name = _column_name(rows, item)
        if name is None:
            if item in REQUIRED:
                raise ValueError(
                    f"{path}: no {item} column; name it one of {list(FIELDS[item])} (columns found: {sorted(rows[0])})."
                )
            columns[item] = None
            continue
        values = []
        for i, row in enumerate(rows):
            if name not in row:
                raise ValueError(f"{path}: row {i + 1} has no {name!r} field (the first row has one).")
            values.append(row[name])
        columns[item] = values
    for item in ("system", "image", "caption"):
        if columns[item] is not None:
            columns[item] = [str(v) for v in columns[item]]
    return ScoreTable(
        precision=columns["precision"],
        recall=columns["recall"],
        fluency=columns["fluency"],
        conciseness=columns["conciseness"],
        inclusive=columns["inclusive"],
        systems=columns["system"],
        images=columns["image"],
        captions=columns["caption"],
        given_total=columns["given_total"],
    )


def _signed(value: float) -> float:
    """THumB stores penalties as values ≤ 0 (``-0.0`` for none)."""
    return -abs(float(value))


def write_records(path: str | Path, records: Iterable[dict[str, Any]]) -> int:
    """Write THumB-layout JSON Lines rows.

    Each record needs ``system``, ``image``, ``caption``, ``precision``, ``recall``, ``fluency``,
    ``conciseness``, ``inclusive`` (magnitudes or signed) and ``total``; extra keys are kept after
    THumB's. Returns the number of rows written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for rec in records:
            row = {
                "SYS": rec["system"],
                "image": rec["image"],
                "hyp": rec["caption"],
                "P": float(rec["precision"]),
                "R": float(rec["recall"]),
                "Fl": _signed(rec["fluency"]),
                "Inc": _signed(rec["inclusive"]),
                "Con": _signed(rec["conciseness"]),
                "human_score": float(rec["total"]),
            }
            for key, value in rec.items():
                if key not in FIELDS and key not in ("total",) and key not in row:
                    row[key] = value
            if not all(math.isfinite(row[k]) for k in ("P", "R", "Fl", "Inc", "Con", "human_score")):
                raise ValueError(f"record {n} for {rec['system']!r} / {rec['image']!r} has a non-finite score.")
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
