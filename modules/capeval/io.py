"""Readers for prediction and reference files used by ``capeval score``.

Supported inputs (detected from the content, not only the extension):

* **plain JSON**: predictions ``["a dog", ...]``; references ``[["ref 1", "ref 2"], ...]`` (or one
  string per item), paired by order.
* **COCO results** (predictions): ``[{"image_id": 1, "caption": "..."}, ...]``.
* **COCO annotations** (references): ``{"annotations": [{"image_id": 1, "caption": "..."}, ...]}``;
  also a ``{id: [captions]}`` mapping.
* **JSONL**: one JSON value per line: a string, a list of strings, or an object with an id field
  (``image_id``/``id``) and a text field (``caption``/``prediction``/``references``/``reference``).
* **CSV**: a header row; the text column is ``caption``/``prediction``/``reference``/``references``
  (or the only column); an ``image_id``/``id`` column pairs rows; for references, several rows with
  the same id, or several ``ref*`` columns on one row, give several references.

When both files carry ids they are paired by id (in prediction order); otherwise by position.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

ID_FIELDS = ("image_id", "id", "image", "img_id")
PRED_FIELDS = ("caption", "prediction", "candidate", "hyp", "text")
REF_FIELDS = ("references", "reference", "refs", "caption", "captions", "text")


class InputFormatError(ValueError):
    """A prediction/reference file could not be read; the message says which line and why."""


def parse_json_lines(text: str, path: str | Path, hint: str = "") -> list[Any]:
    """Parse JSON Lines ``text`` (blank lines skipped); a bad line raises :class:`InputFormatError`
    naming ``path:line`` (plus ``hint``, e.g. the expected format)."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise InputFormatError(f"{path}:{n}: not a JSON line ({err.msg}){hint}.") from None
    return rows


def _read_json_or_jsonl(path: Path) -> tuple[str, Any]:
    text = path.read_text(encoding="utf-8")
    stripped = text.strip()
    if not stripped:
        raise InputFormatError(f"{path}: file is empty.")
    try:
        return "json", json.loads(stripped)
    except json.JSONDecodeError:
        pass
    return "jsonl", parse_json_lines(text, path, "; the file is neither JSON nor JSON Lines")


def _pick(obj: dict, fields: tuple[str, ...], path: Path, where: str) -> Any:
    for f in fields:
        if f in obj:
            return obj[f]
    raise InputFormatError(f"{path}: {where} has none of the fields {list(fields)} (keys: {sorted(obj)[:8]}).")


def _id_of(obj: dict) -> Any:
    for f in ID_FIELDS:
        if f in obj:
            return obj[f]
    return None


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise InputFormatError(f"{path}: CSV without a header row.")
        return [dict(r) for r in reader]


def load_predictions(path: str | Path) -> tuple[list[Any] | None, list[str]]:
    """Return ``(ids or None, predictions)``."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
        if not rows:
            raise InputFormatError(f"{path}: no rows.")
        cols = list(rows[0])
        text_col = next((c for c in PRED_FIELDS if c in cols), cols[0] if len(cols) == 1 else None)
        if text_col is None:
            raise InputFormatError(f"{path}: no prediction column; name it one of {list(PRED_FIELDS)}.")
        id_col = next((c for c in ID_FIELDS if c in cols), None)
        return ([r[id_col] for r in rows] if id_col else None), [r[text_col] for r in rows]
    kind, data = _read_json_or_jsonl(path)
    items = data if isinstance(data, list) else None
    if items is None:
        raise InputFormatError(f"{path}: predictions must be a list (of strings or of objects).")
    if all(isinstance(x, str) for x in items):
        return None, list(items)
    ids, preds = [], []
    for i, obj in enumerate(items):
        if not isinstance(obj, dict):
            raise InputFormatError(f"{path}: item {i} is a {type(obj).__name__}; expected a string or an object.")
        ids.append(_id_of(obj))
        preds.append(_pick(obj, PRED_FIELDS, path, f"item {i}"))
    return (ids if all(x is not None for x in ids) else None), preds


def _as_ref_list(value: Any, path: Path, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return list(value)
    raise InputFormatError(f"{path}: {where} must be a string or a list of strings.")


def load_references(path: str | Path) -> tuple[list[Any] | None, list[list[str]]]:
    """Return ``(ids or None, references)`` with one list of reference strings per item."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
        if not rows:
            raise InputFormatError(f"{path}: no rows.")
        cols = list(rows[0])
        id_col = next((c for c in ID_FIELDS if c in cols), None)
        ref_cols = [c for c in cols if c.lower().startswith("ref")] or [
            c for c in REF_FIELDS if c in cols
        ][:1] or ([c for c in cols if c != id_col] if len(cols) <= 2 else [])
        if not ref_cols:
            raise InputFormatError(f"{path}: no reference column; name it 'reference' or 'ref1', 'ref2', ...")
        grouped: dict[Any, list[str]] = {}
        order: list[Any] = []
        for n, r in enumerate(rows):
            key = r[id_col] if id_col else n
            if key not in grouped:
                grouped[key] = []
                order.append(key)
            grouped[key].extend(r[c] for c in ref_cols if r.get(c))
        return (order if id_col else None), [grouped[k] for k in order]
    kind, data = _read_json_or_jsonl(path)
    if isinstance(data, dict) and "annotations" in data:  # COCO annotations file
        grouped = {}
        for i, ann in enumerate(data["annotations"]):
            grouped.setdefault(_pick(ann, ID_FIELDS, path, f"annotation {i}"), []).append(
                _pick(ann, ("caption",), path, f"annotation {i}")
            )
        return list(grouped), list(grouped.values())
    if isinstance(data, dict):  # {id: [refs]}
        return list(data), [_as_ref_list(v, path, f"entry {k!r}") for k, v in data.items()]
    if not isinstance(data, list):
        raise InputFormatError(f"{path}: references must be a list, a {{id: [refs]}} mapping or COCO annotations.")
    if all(isinstance(x, (str, list)) for x in data):
        return None, [_as_ref_list(x, path, f"item {i}") for i, x in enumerate(data)]
    ids, refs = [], []
    grouped, order = {}, []
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise InputFormatError(f"{path}: item {i} is a {type(obj).__name__}; expected a list or an object.")
        key = _id_of(obj)
        value = _as_ref_list(_pick(obj, REF_FIELDS, path, f"item {i}"), path, f"item {i}")
        if key is None:
            ids.append(None)
            refs.append(value)
            continue
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        grouped[key].extend(value)
    if grouped:
        if refs:
            raise InputFormatError(f"{path}: some items have an id field and some do not.")
        return order, [grouped[k] for k in order]
    return None, refs


def pair(
    pred_ids: list[Any] | None,
    predictions: list[str],
    ref_ids: list[Any] | None,
    references: list[list[str]],
) -> tuple[list[Any] | None, list[str], list[list[str]]]:
    """Align predictions with references by id when both have ids, else by position."""
    if pred_ids is None or ref_ids is None:
        return pred_ids, predictions, references
    table = {str(k): v for k, v in zip(ref_ids, references)}
    missing = [k for k in pred_ids if str(k) not in table]
    if missing:
        raise InputFormatError(
            f"{len(missing)} prediction id(s) have no references, e.g. {missing[:3]!r}; check that both files "
            "use the same image ids."
        )
    return pred_ids, predictions, [table[str(k)] for k in pred_ids]
