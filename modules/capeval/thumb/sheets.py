"""Blinded THumB annotation sheets: build them from system outputs, read them back, un-blind.

Protocol (Kasai et al. 2022, §2.1): for every image the captions of all systems are shuffled so that
annotators cannot tell which caption comes from which system. Here:

1. :func:`load_system_outputs` reads the captions (one file per system, or one JSON mapping
   ``{system: [{"image": ..., "caption": ...}, ...]}``).
2. :func:`build_items` applies THumB's clean-up (the paper evaluates cleaned text), merges identical
   captions of one image into one item (the paper's Table 1 shows such shared captions once; one rating
   then serves every system that produced it), and shuffles each image's items with a generator seeded by
   ``(seed, image)``. Item ids are ``<image number>-<letter>`` (``3-B``) and reveal nothing.
3. :func:`write_sheet_csv` / :mod:`capeval.thumb.html_sheet` write the sheet; :func:`write_key` writes
   the key file (item → systems), to be kept away from annotators.
4. :func:`read_sheet` validates a filled sheet against the key and returns the ratings per item;
   :func:`unblind` maps them back to (system, image, caption) records.
5. Optionally, :func:`capeval.thumb.checks.add_checks` mixes attention-check items (a caption of another
   image) in blindly; only the key marks them (``"check"``), and collecting leaves them out of the scores.

Sheet columns: ``item, image, caption, precision, recall, fluency, conciseness, inclusive, comment``.
Annotators fill ``precision`` and ``recall`` with an integer 1–5 and a penalty column only when there
is a problem (empty = 0; ``0.1`` and ``-0.1`` both mean a 0.1-point penalty; multiples of 0.1 up to 5).

Hostile text: a cell a spreadsheet would run as a formula (one starting with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return) is written with one ``'`` before it (OWASP's CSV-injection
advice), and so is a cell that itself starts with ``'``; reading a sheet removes exactly one leading ``'``
when the character after it is ``'`` or one of those (:func:`sheet_cell` / :func:`read_cell`), so every
text, ``=HYPERLINK(...)`` or ``'-1`` included, comes back exactly as written. A sheet's fields may be of
any length (the csv module's field limit is raised to the file's size, see :func:`read_sheet`), and a
sheet that is not UTF-8 is one error naming the file.
"""
from __future__ import annotations

import csv
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.text.cleanup import get_cleanup
from capeval.thumb.rubric import MAX_PENALTY, PENALTIES, RUBRIC_ITEMS

KEY_FORMAT = "capeval-thumb-key"
KEY_VERSION = 1
SHEET_COLUMNS = ("item", "image", "caption", *RUBRIC_ITEMS, "comment")
ALLOWED_MAIN = (1, 2, 3, 4, 5)
IMAGE_FIELDS = ("image", "image_id", "img", "id", "seg_id")
CAPTION_FIELDS = ("caption", "hyp", "prediction", "text")


@dataclass
class SheetItem:
    """One row of a sheet: a distinct caption of one image, and the systems that produced it.

    ``check`` is set only for an attention-check item (:mod:`capeval.thumb.checks`): ``{"kind": "other-image",
    "caption_of": <source image>}``; such an item has no systems.
    """

    item: str
    image: str
    caption: str
    systems: list[str]
    originals: dict[str, str] = field(default_factory=dict)
    check: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------- input


def _pick(obj: dict, names: Sequence[str], where: str) -> Any:
    for name in names:
        if name in obj:
            return obj[name]
    raise ValueError(f"{where} has none of the fields {list(names)} (keys: {sorted(obj)[:8]}).")


def _entries(system: str, value: Any, where: str) -> list[tuple[str, str]]:
    if isinstance(value, dict):  # {image: caption}
        return [(str(k), v) for k, v in value.items()]
    if not isinstance(value, list):
        raise ValueError(f"{where}: system {system!r} must map to a list of {{image, caption}} objects or an "
                         f"{{image: caption}} mapping, got {type(value).__name__}.")
    out = []
    for i, obj in enumerate(value):
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: system {system!r} entry {i} is a {type(obj).__name__}, expected an object "
                             "with 'image' and 'caption'.")
        out.append((str(_pick(obj, IMAGE_FIELDS, f"{where}: system {system!r} entry {i}")),
                    _pick(obj, CAPTION_FIELDS, f"{where}: system {system!r} entry {i}")))
    return out


def load_system_outputs(sources: Sequence[str | Path]) -> dict[str, list[tuple[str, str]]]:
    """Read system outputs as ``{system: [(image, caption), ...]}``.

    ``sources`` is either one JSON file mapping system → list of ``{"image", "caption"}`` objects (or
    ``{image: caption}``), or one file per system given as ``NAME=PATH`` or ``PATH`` (name = file
    stem) in any format ``capeval score`` reads for predictions that carries image ids (COCO results
    JSON, JSONL, CSV with an ``image_id`` column).

    Raises:
        ValueError: for unreadable files, entries without image ids, or duplicate system names.
    """
    from capeval.io import load_predictions

    if not sources:
        raise ValueError("No system outputs given: pass one JSON mapping system -> captions, or one file per system.")
    if len(sources) == 1 and "=" not in str(sources[0]):
        path = Path(sources[0])
        if path.suffix.lower() == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "annotations" not in data:
                if not data:
                    raise ValueError(f"{path}: the system mapping is empty.")
                return {str(s): _entries(str(s), v, str(path)) for s, v in data.items()}
    outputs: dict[str, list[tuple[str, str]]] = {}
    for source in sources:
        text = str(source)
        name, sep, file_part = text.partition("=")
        path = Path(file_part if sep else text)
        system = name if sep else path.stem
        if system in outputs:
            raise ValueError(f"System name {system!r} is given twice ({text}); use NAME=PATH to name systems.")
        ids, captions = load_predictions(path, allow_duplicate_ids=True)  # build_items names duplicates per system
        if ids is None:
            raise ValueError(f"{path}: captions carry no image ids; annotation sheets group captions by image "
                             "(use COCO results [{'image_id', 'caption'}] or an id column).")
        outputs[system] = [(str(i), c) for i, c in zip(ids, captions)]
    return outputs


def _letters(k: int) -> str:
    out = ""
    k += 1
    while k:
        k, rem = divmod(k - 1, 26)
        out = chr(ord("A") + rem) + out
    return out


def build_items(
    outputs: dict[str, list[tuple[str, str]]],
    seed: int = 0,
    cleanup: str | None = "thumb",
    dedupe: bool = True,
) -> list[SheetItem]:
    """Group captions by image, clean, merge identical ones and shuffle per image (see module doc).

    Images keep the order of first appearance (systems in the given order). Returns the sheet rows.

    Raises:
        ValueError: for an empty caption or a system with two captions for one image.
    """
    from capeval.validation import check_caption

    clean = get_cleanup(cleanup)
    per_image: dict[str, dict[str, str]] = {}
    originals: dict[tuple[str, str], str] = {}
    for system, entries in outputs.items():
        for k, (image, caption) in enumerate(entries):
            check_caption(caption, f"system {system!r} caption {k} (image {image!r})")
            slot = per_image.setdefault(image, {})
            if system in slot:
                raise ValueError(f"system {system!r} has two captions for image {image!r} (entry {k}); give one "
                                 "caption per system and image.")
            slot[system] = clean(caption)
            originals[(system, image)] = caption
    items: list[SheetItem] = []
    for number, (image, by_system) in enumerate(per_image.items(), 1):
        groups: dict[str, list[str]] = {}
        for system, caption in by_system.items():
            key = caption if dedupe else f"{system}\x00{caption}"
            groups.setdefault(key, []).append(system)
        distinct = list(groups.items())
        random.Random(f"{seed}|{image}").shuffle(distinct)
        for k, (key, systems) in enumerate(distinct):
            caption = by_system[systems[0]]
            items.append(SheetItem(
                item=f"{number}-{_letters(k)}", image=image, caption=caption, systems=list(systems),
                originals={s: originals[(s, image)] for s in systems},
            ))
    if not items:
        raise ValueError("The system outputs contain no captions.")
    return items


# --------------------------------------------------------------------------------------------- output

#: First characters that make a spreadsheet run a cell as a formula (OWASP: CSV injection).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def sheet_cell(text: str) -> str:
    """``text`` as written into a CSV sheet: one ``'`` before it when it starts with ``'`` or a formula trigger."""
    return "'" + text if text.startswith(("'", *FORMULA_TRIGGERS)) else text


def read_cell(text: str) -> str:
    """The inverse of :func:`sheet_cell`: one leading ``'`` removed when ``'`` or a formula trigger follows it."""
    return text[1:] if text.startswith("'") and text[1:2] and text[1] in ("'", *FORMULA_TRIGGERS) else text


def write_sheet_csv(path: str | Path, items: Sequence[SheetItem]) -> None:
    """The blank annotation sheet (no system names)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(SHEET_COLUMNS)
        for it in items:
            writer.writerow([sheet_cell(it.item), sheet_cell(it.image), sheet_cell(it.caption),
                             *([""] * len(RUBRIC_ITEMS)), ""])


def write_key(path: str | Path, items: Sequence[SheetItem], seed: int, cleanup: str | None, dedupe: bool,
              systems: Sequence[str] | None = None) -> None:
    """The key file: item → systems (and each system's original caption).

    ``systems`` fixes the system order of reports (default: order of first appearance on the sheet). An
    attention-check item also records ``"check"`` (absent for every other item).
    """
    order: list[str] = list(systems or [])
    for it in items:
        order.extend(s for s in it.systems if s not in order)
    systems = order
    key = {
        "format": KEY_FORMAT, "version": KEY_VERSION, "seed": seed, "cleanup": cleanup or "none",
        "dedupe": dedupe, "systems": systems,
        "items": [_key_entry(it) for it in items],
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(key, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _key_entry(it: SheetItem) -> dict[str, Any]:
    entry = {"item": it.item, "image": it.image, "caption": it.caption, "systems": it.systems,
             "originals": it.originals}
    if it.check is not None:
        entry["check"] = it.check
    return entry


@dataclass
class SheetKey:
    """A key file: the sheet's items (in sheet order) and the systems in report order."""

    items: list[SheetItem]
    systems: list[str]


def read_key(path: str | Path) -> SheetKey:
    """Read a key file written by :func:`write_key`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a capeval THumB key file (not UTF-8 text: byte {err.start}).") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not a capeval THumB key file (not JSON: {err.msg}); pass the thumb_key.json "
                         "written by `capeval thumb sheet`.") from None
    if not isinstance(data, dict) or data.get("format") != KEY_FORMAT:
        raise ValueError(f"{path}: not a capeval THumB key file (expected \"format\": \"{KEY_FORMAT}\"); "
                         "pass the key written by `capeval thumb sheet`.")
    if data.get("version") != KEY_VERSION:
        raise ValueError(f"{path}: key file version {data.get('version')!r}; this capeval reads version {KEY_VERSION}.")
    try:
        items = [SheetItem(d["item"], d["image"], d["caption"], list(d["systems"]), dict(d.get("originals", {})),
                           d.get("check")) for d in data["items"]]
        order = [str(s) for s in data["systems"]]
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: damaged key file (missing {err}).") from None
    unknown = sorted({s for it in items for s in it.systems} - set(order))
    if unknown:
        raise ValueError(f"{path}: damaged key file (systems {unknown} are not in its system list).")
    bad = [it.item for it in items if it.check is not None and not (isinstance(it.check, dict) and "kind" in it.check)]
    if bad:
        raise ValueError(f"{path}: damaged key file (the attention check of item(s) {bad[:5]} has no 'kind').")
    return SheetKey(items, order)


# ---------------------------------------------------------------------------------------------- input


def _parse_main(raw: str, column: str) -> tuple[float | None, str | None]:
    text = raw.strip()
    if not text:
        return None, f"{column!r} is empty; allowed values: 1, 2, 3, 4, 5"
    try:
        value = float(text)
    except ValueError:
        return None, f"{column!r} is {raw!r}, not a number; allowed values: 1, 2, 3, 4, 5"
    if not math.isfinite(value) or value != int(value) or int(value) not in ALLOWED_MAIN:
        return None, f"{column!r} is {raw!r}; allowed values: 1, 2, 3, 4, 5 (integers)"
    return float(int(value)), None


def _parse_penalty(raw: str, column: str) -> tuple[float | None, str | None]:
    text = raw.strip()
    allowed = f"empty or 0 (no problem), or a multiple of 0.1 up to {MAX_PENALTY:g} (e.g. 0.1, 0.5, 2; -0.1 = 0.1)"
    if not text:
        return 0.0, None
    try:
        value = abs(float(text))
    except ValueError:
        return None, f"{column!r} is {raw!r}, not a number; allowed: {allowed}"
    if not math.isfinite(value) or value > MAX_PENALTY + 1e-9 or abs(value * 10 - round(value * 10)) > 1e-6:
        return None, f"{column!r} is {raw!r}; allowed: {allowed}"
    return round(value, 1), None


MAX_REPORTED_ERRORS = 20


def allow_long_fields(path: Path) -> None:
    """Raise the csv module's field limit (131,072 characters by default) to ``path``'s size, so that no
    field of it is too long; bounded by the C long the limit is kept in (the limit is process-wide and
    only ever raised)."""
    size = path.stat().st_size + 1
    if size > csv.field_size_limit():
        csv.field_size_limit(min(size, 2 ** 31 - 1))


def _read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """``(header, rows)`` of a CSV sheet, every cell through :func:`read_cell`; one-line errors naming the file."""
    allow_long_fields(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = [read_cell(h).strip() for h in next(reader, [])]
            rows = [{name: read_cell(cell) for name, cell in zip(header, line)} for line in reader]
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}); save the sheet as CSV UTF-8.") from None
    except csv.Error as err:
        raise ValueError(f"{path}: not a readable CSV sheet ({err}).") from None
    return header, rows


def read_sheet(path: str | Path, items: Sequence[SheetItem]) -> dict[str, dict[str, float]]:
    """Validate a filled sheet against the key and return ``{item: {rubric item: value}}``.

    Every problem is collected and reported at once (up to 20), each as
    ``<file> row <n> (item <id>), column '<name>': <what is wrong>; allowed values: ...``. Row numbers
    count the header as row 1, as spreadsheets do.

    Raises:
        ValueError: for missing columns, unknown / duplicate / missing items, edited captions or images,
            and missing or disallowed values.
    """
    path = Path(path)
    by_id = {it.item: it for it in items}
    header, rows = _read_rows(path)
    if not header:
        raise ValueError(f"{path}: empty sheet (no header row).")
    missing = [c for c in ("item", *RUBRIC_ITEMS) if c not in header]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; a THumB sheet has the columns "
                         f"{list(SHEET_COLUMNS)} (as written by `capeval thumb sheet`).")
    errors: list[str] = []
    ratings: dict[str, dict[str, float]] = {}
    for n, row in enumerate(rows, 2):
        item_id = (row.get("item") or "").strip()
        where = f"{path.name} row {n} (item {item_id or '?'})"
        if not item_id and not any((v or "").strip() for v in row.values()):
            continue  # blank line
        if item_id not in by_id:
            errors.append(f"{where}, column 'item': {item_id!r} is not in the key file (was the sheet made with "
                          "another key, or the id edited?)")
            continue
        if item_id in ratings:
            errors.append(f"{where}, column 'item': {item_id!r} appears twice; keep one row per item")
            continue
        expected = by_id[item_id]
        if "caption" in row and row["caption"] is not None and row["caption"].strip() != expected.caption.strip():
            errors.append(f"{where}, column 'caption': the caption was changed (key: {expected.caption!r}); "
                          "rows must keep their caption text")
        if "image" in row and row["image"] is not None and row["image"].strip() != expected.image:
            errors.append(f"{where}, column 'image': {row['image']!r} differs from the key ({expected.image!r})")
        values: dict[str, float] = {}
        for column in RUBRIC_ITEMS:
            raw = row.get(column) or ""
            parse = _parse_penalty if column in PENALTIES else _parse_main
            value, problem = parse(raw, column)
            if problem:
                errors.append(f"{where}, column {problem}")
            else:
                values[column] = value
        ratings[item_id] = values
    absent = [it.item for it in items if it.item not in ratings]
    if absent:
        errors.append(f"{path.name}: {len(absent)} item(s) of the key are missing from the sheet, e.g. "
                      f"{absent[:5]}; every item must keep its row")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = f"\n... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise ValueError(f"{len(errors)} problem(s) in {path}:\n" + "\n".join(shown) + more)
    return ratings


def combine_annotators(sheets: Sequence[dict[str, dict[str, float]]], how: str) -> dict[str, dict[str, float]]:
    """Merge several annotators' ratings per item: ``mean`` (of every field), ``first`` or ``last``."""
    if how not in ("mean", "first", "last"):
        raise ValueError(f"combine must be 'mean', 'first' or 'last'; got {how!r}.")
    if how == "first" or len(sheets) == 1:
        return sheets[0]
    if how == "last":
        return sheets[-1]
    return {item: {f: sum(s[item][f] for s in sheets) / len(sheets) for f in RUBRIC_ITEMS} for item in sheets[0]}


def unblind(key: SheetKey, ratings: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    """One record per (system, image): ``system, image, caption, item`` and the rubric values.

    Records are ordered by image (sheet order), then by system (key order); the caption is the
    system's original text (before clean-up).
    """
    items = key.items
    rank = {s: k for k, s in enumerate(key.systems)}
    records = []
    image_order: dict[str, int] = {}
    for it in items:
        image_order.setdefault(it.image, len(image_order))
        for system in it.systems:
            rec = {"system": system, "image": it.image, "caption": it.originals.get(system, it.caption),
                   "item": it.item, **ratings[it.item]}
            records.append(rec)
    records.sort(key=lambda r: (image_order[r["image"]], rank[r["system"]]))
    return records


def write_disagreements_csv(path: str | Path, rows: Sequence[dict[str, Any]], items: Sequence[SheetItem],
                            names: tuple[str, str] = ("1", "2")) -> None:
    """Blinded list of items two annotators rated differently (no system names), for adjudication."""
    by_id = {it.item: it for it in items}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        header = ["item", "image", "caption", "differs"]
        for f in RUBRIC_ITEMS:
            header += [f"{f}_{names[0]}", f"{f}_{names[1]}"]
        header += ["resolved_" + f for f in RUBRIC_ITEMS]
        writer.writerow(header)
        for row in rows:
            it = by_id[row["item"]]
            line = [sheet_cell(it.item), sheet_cell(it.image), sheet_cell(it.caption), " ".join(row["differs"])]
            for f in RUBRIC_ITEMS:
                line += [f"{row[f + '_1']:g}", f"{row[f + '_2']:g}"]
            line += [""] * len(RUBRIC_ITEMS)
            writer.writerow(line)
