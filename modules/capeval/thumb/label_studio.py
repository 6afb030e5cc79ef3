"""Label Studio for THumB annotation: labeling configuration, tasks, and reading the JSON export back.

The offline part of the Label Studio route (configuration, tasks, reading an export); nothing here talks to a server
and ``label-studio`` need not be installed.

1. ``capeval thumb sheet OUTPUTS… --out DIR --label-studio`` also writes ``DIR/label-studio/config.xml``,
   ``DIR/label-studio/tasks.json`` and ``DIR/label-studio/instructions.html``
   (:func:`write_label_studio`).

   * ``config.xml``: a Label Studio labeling configuration implementing THumB 1.0's rubric exactly as the
     CSV sheet and the HTML page do (same fields, ranges, the fluency penalty table and the instructions,
     taken from :mod:`capeval.thumb.rubric` / :mod:`capeval.thumb.html_sheet`): ``<Image name="image"
     value="$image"/>`` only when ``--image-url`` is given, ``<Text name="caption" value="$caption"/>``
     and controls named as the sheet's columns: ``precision``, ``recall`` (Choices 1..5; a choice's
     ``value`` is the number itself, e.g. ``"5"``), ``fluency`` (penalties as in the paper's Table 6 /
     the sheet's units: choices whose value is the number), ``conciseness``, ``inclusive`` and
     ``comment`` (TextArea). Every control's ``toName`` is the caption. Captions are never in the
     configuration (they are in ``tasks.json``'s data), and every text written into it is XML-escaped.
   * ``tasks.json``: a JSON list, one task per blinded item:
     ``{"data": {"item": <sheet item id>, "caption": <text>, "image": <url, only with --image-url>}}``.
     No system name appears anywhere in the file; the key stays in ``DIR``.
   * ``instructions.html``: the rubric and the fluency table, for the project's expert instructions.

2. ``capeval thumb collect --key KEY EXPORT.json --out DIR`` reads Label Studio's JSON export (detected
   by its content: a JSON list of tasks with ``"annotations"``; several annotators in one file, each
   annotation's ``completed_by`` (an int id or a dict with ``"email"`` / ``"id"``) is one annotator; or
   one file per annotator), maps each annotation's ``result`` entries (``from_name`` = the control name,
   ``value.choices`` = ``["5"]``, ``value.rating``, ``value.text`` = ``["..."]``) back to the sheet's
   ratings (:func:`read_exports`), then runs the SAME validation, un-blinding, aggregation, κ and
   disagreement files as the CSV route (:func:`capeval.thumb.workflow.collect_label_studio`). The same
   answers entered through CSV sheets and through a Label Studio export give byte-identical report files.

5. Nothing lost, nobody let in: a partial export (items not yet annotated), an annotation of a task whose
   item is not in the key, two annotations of one item by the same annotator, an annotation with a field
   missing or out of range, a skipped or cancelled annotation (``was_cancelled: true``), an export of
   another project (no task matches the key): each gives a clear one-line message naming the task id /
   item and what is wrong; everything else is collected, and the count of what was not collected is
   reported. A list or an object where the export has a scalar is such a problem too: an annotator
   (``completed_by: {"id": [1, 2]}``) leaves its annotation out, one line naming the task; a task that is not
   an object leaves its annotations out; a task id that is not a scalar is named by its place (``#3``).
   Values are checked by the CSV sheet's own rules (P and R integers 1–5; a penalty a multiple
   of 0.1 up to 5, missing = 0, as an empty penalty cell). Collecting twice gives the same report.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from capeval.thumb.html_sheet import (
    CSS,
    FLUENCY_PENALTIES,
    FLUENCY_TABLE_TITLE,
    RUBRIC_HTML,
    image_src,
    rubric_parts,
)
from capeval.thumb.rubric import MAIN_SCORES, PENALTIES, RUBRIC_ITEMS
from capeval.thumb.sheets import ALLOWED_MAIN, MAX_REPORTED_ERRORS, SheetItem, _parse_main, _parse_penalty

LABEL_STUDIO_DIR = "label-studio"
CONFIG_XML = "config.xml"
TASKS_JSON = "tasks.json"
INSTRUCTIONS_HTML = "instructions.html"

#: Choice values of precision and recall: the sheet's allowed integers.
MAIN_CHOICES: tuple[str, ...] = tuple(str(v) for v in ALLOWED_MAIN)
#: Conciseness penalty (rubric: "0.5 for an overly long, repetitive caption"); 0 = no problem.
CONCISENESS_CHOICES = ("0", "0.5")
#: Inclusive-language penalty (rubric: "0.5 for a subjective comment …, 2 for more severe problems").
INCLUSIVE_CHOICES = ("0", "0.5", "2")
#: Fluency penalties beyond Table 6's "0.5+" (broken sentence) row, up to the sheet's largest (5).
FLUENCY_SEVERE = ("1", "2", "3", "4", "5")


# ------------------------------------------------------------------------------------- rubric text


class _Blocks(HTMLParser):
    """Plain-text blocks (headings, paragraphs, list items) of the rubric HTML; bold runs kept apart."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[tuple[str, str, str]] = []  # (tag, bold text, whole text)
        self._tag: str | None = None
        self._text: list[str] = []
        self._bold: list[str] = []
        self._in_bold = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("h2", "h3", "p", "li"):
            self._tag, self._text, self._bold = tag, [], []
        elif tag == "b":
            self._in_bold = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "b":
            self._in_bold = False
        elif tag == self._tag:
            clean = " ".join("".join(self._text).split())
            self.blocks.append((tag, " ".join("".join(self._bold).split()), clean))
            self._tag = None

    def handle_data(self, data: str) -> None:
        if self._tag is not None:
            self._text.append(data)
            if self._in_bold:
                self._bold.append(data)


def rubric_blocks() -> list[tuple[str, str, str]]:
    """``(tag, bold, text)`` for every heading, paragraph and list item of the sheet's rubric text."""
    parser = _Blocks()
    parser.feed(RUBRIC_HTML)
    parser.close()
    return parser.blocks


def control_titles() -> dict[str, str]:
    """Each rubric item's title as the rubric's list names it, e.g. ``precision`` → ``Precision (P, 1–5)``."""
    items = [bold for tag, bold, _ in rubric_blocks() if tag == "li"]
    if len(items) != len(RUBRIC_ITEMS):  # the rubric text lists the five items in RUBRIC_ITEMS order
        raise RuntimeError(f"the rubric text lists {len(items)} items, expected {len(RUBRIC_ITEMS)}")
    return dict(zip(RUBRIC_ITEMS, items))


def _penalty_range(text: str) -> tuple[float, float]:
    """Table 6's penalty cell as a closed range: ``0.1`` → (0.1, 0.1), ``0.1–0.5``, ``0.5+`` → (0.5, ∞)."""
    text = text.strip()
    if text.endswith("+"):
        return float(text[:-1]), float("inf")
    low, _, high = re.split(r"([–-])", text, maxsplit=1) if re.search(r"[–-]", text) else (text, "", text)
    return float(low), float(high)


def fluency_choices() -> tuple[str, ...]:
    """``0`` (no problem), every tenth Table 6 names up to 0.5, then :data:`FLUENCY_SEVERE`."""
    values = {0.0}
    for _, penalty, _ in FLUENCY_PENALTIES:
        low, high = _penalty_range(penalty)
        step = low
        while step <= min(high, 0.5) + 1e-9:
            values.add(round(step, 1))
            step += 0.1
    ordered = sorted(values)
    return tuple(f"{v:g}" for v in ordered) + FLUENCY_SEVERE


def fluency_hint(value: str) -> str:
    """The Table 6 rows a fluency choice stands for (shown on hover)."""
    if float(value) == 0:
        return "no fluency problem"
    rows = [f"{kind} ({penalty}; e.g. {example})" for kind, penalty, example in FLUENCY_PENALTIES
            if _penalty_range(penalty)[0] - 1e-9 <= float(value) <= _penalty_range(penalty)[1] + 1e-9]
    return "; ".join(rows)


def choices_of(name: str) -> tuple[str, ...]:
    """The choice values (numbers as text) of one rubric control."""
    if name in MAIN_SCORES:
        return MAIN_CHOICES
    return {"fluency": fluency_choices(), "conciseness": CONCISENESS_CHOICES, "inclusive": INCLUSIVE_CHOICES}[name]


# ----------------------------------------------------------------------------------- configuration


def render_config(title: str = "THumB annotation sheet", image: bool = False) -> str:
    """The labeling configuration (``config.xml``) as a string; see the module docstring."""
    view = ET.Element("View")
    ET.SubElement(view, "Header", value=title)
    rubric = ET.SubElement(view, "View", style="max-height: 24em; overflow-y: auto; margin-bottom: 1em")
    for tag, _, text in rubric_blocks():
        if tag in ("h2", "h3"):
            ET.SubElement(rubric, "Header", value=text, size="4")
        else:
            ET.SubElement(rubric, "Text", name=f"rubric_{sum(e.tag == 'Text' for e in rubric) + 1}", value=text)
    ET.SubElement(rubric, "Header", value=FLUENCY_TABLE_TITLE, size="5")
    for k, (kind, penalty, example) in enumerate(FLUENCY_PENALTIES, 1):
        ET.SubElement(rubric, "Text", name=f"fluency_table_{k}", value=f"{kind}: {penalty} (e.g. {example})")
    if image:
        ET.SubElement(view, "Image", name="image", value="$image")
    ET.SubElement(view, "Text", name="caption", value="$caption")
    titles = control_titles()
    for name in RUBRIC_ITEMS:
        ET.SubElement(view, "Header", value=titles[name], size="5")
        attrs = {"name": name, "toName": "caption", "choice": "single-radio", "showInline": "true"}
        if name in MAIN_SCORES:
            attrs.update(required="true", requiredMessage=f"{titles[name]}: choose 1 to 5")
        group = ET.SubElement(view, "Choices", attrs)
        for value in choices_of(name):
            choice = {"value": value}
            if name == "fluency":
                choice["hint"] = fluency_hint(value)
            ET.SubElement(group, "Choice", choice)
    ET.SubElement(view, "Header", value="Notes", size="5")
    ET.SubElement(view, "TextArea", name="comment", toName="caption", rows="2", editable="true",
                  maxSubmissions="1")
    ET.indent(view, space="  ")
    return ET.tostring(view, encoding="unicode") + "\n"


def render_instructions(title: str = "THumB annotation sheet") -> str:
    """``instructions.html``: the printable page's rubric and fluency table (Label Studio's expert instructions)."""
    from html import escape

    return "\n".join(["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
                      f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
                      f"<h1>{escape(title)}</h1>", *rubric_parts(), "</body></html>"]) + "\n"


def tasks(items: Sequence[SheetItem], image_url: str | None = None) -> list[dict[str, Any]]:
    """One Label Studio task per blinded item: ``{"data": {"item", "caption"[, "image"]}}`` (no system names)."""
    out = []
    for it in items:
        data: dict[str, Any] = {"item": it.item, "caption": it.caption}
        if image_url:
            data["image"] = image_src(image_url, it.image)
        out.append({"data": data})
    return out


@dataclass
class LabelStudioFiles:
    config: Path
    tasks: Path
    instructions: Path


def write_label_studio(out_dir: str | Path, items: Sequence[SheetItem], image_url: str | None = None,
                       title: str = "THumB annotation sheet") -> LabelStudioFiles:
    """Write ``config.xml``, ``tasks.json`` and ``instructions.html`` into ``out_dir/label-studio``."""
    folder = Path(out_dir) / LABEL_STUDIO_DIR
    folder.mkdir(parents=True, exist_ok=True)
    files = LabelStudioFiles(folder / CONFIG_XML, folder / TASKS_JSON, folder / INSTRUCTIONS_HTML)
    files.config.write_text(render_config(title=title, image=bool(image_url)), encoding="utf-8")
    files.tasks.write_text(json.dumps(tasks(items, image_url), indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    files.instructions.write_text(render_instructions(title), encoding="utf-8")
    return files


# ------------------------------------------------------------------------------------------ export


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def looks_like_export(path: str | Path) -> bool:
    """Whether ``path`` holds JSON (a Label Studio export, good or bad) rather than a CSV sheet.

    The CSV route is kept for everything else; a JSON file that is not a list of tasks with
    ``"annotations"`` is then rejected by :func:`read_exports` with a message saying what it expects.
    """
    path = Path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head[:1] in (b"[", b"{")


def _check_export(path: Path) -> list[Any]:
    data = _load_json(path)
    if not isinstance(data, list) or not all(isinstance(t, dict) and "annotations" in t for t in data):
        raise ValueError(f"{path}: not a Label Studio JSON export (expected a JSON list of tasks with "
                         "\"annotations\"; export the project as JSON, not JSON-MIN or CSV).")
    return data


def _is_scalar(value: Any) -> bool:
    """Whether ``value`` is one JSON string or number (not a list, an object, a boolean or null)."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _annotator(annotation: dict[str, Any], fallback: str) -> tuple[Any, str] | None:
    """(identity, label) of ``completed_by``: an int id or a dict with ``email`` / ``id``; else the file.

    None when ``completed_by`` names nobody usable: an ``id`` or ``email`` that is a list, an object or a
    boolean (the annotation is then left out, with a warning, as any other invalid one).
    """
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        email, ident = who.get("email"), who.get("id")
        if (ident is not None and not _is_scalar(ident)) or (email is not None and not _is_scalar(email)):
            return None
        if ident is not None:
            return ("id", ident), str(email) if email else f"user {ident}"
        if email:
            return ("email", email), str(email)
    elif _is_scalar(who) and str(who).strip():
        return ("id", who), f"user {who}"
    elif who is not None and not isinstance(who, dict) and not _is_scalar(who):
        return None
    return ("file", fallback), fallback


def _one_line_json(value: Any, limit: int = 80) -> str:
    """``value`` as short one-line JSON, for a message."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _raw_value(entries: list[dict[str, Any]], name: str) -> tuple[str | None, str | None]:
    """The one value a control gave (``choices`` / ``rating`` / ``text``) as text, or a problem."""
    if len(entries) > 1:
        return None, f"field {name!r} is given {len(entries)} times"
    value = entries[0].get("value")
    if not isinstance(value, dict):
        return None, f"field {name!r} has no value"
    for kind in ("choices", "text"):
        if kind in value:
            got = value[kind]
            if isinstance(got, str):
                got = [got]
            if not isinstance(got, list) or len(got) != 1:
                return None, f"field {name!r} has {got!r}; choose exactly one"
            return str(got[0]), None
    if "rating" in value:
        rating = value["rating"]
        return (f"{rating:g}" if isinstance(rating, (int, float)) and not isinstance(rating, bool)
                else str(rating)), None
    return None, f"field {name!r} has no choice"


def _ratings_of(result: Any) -> tuple[dict[str, float] | None, list[str]]:
    """An annotation's ``result`` → ``{rubric item: value}`` by the sheet's rules, or its problems."""
    if not isinstance(result, list):
        return None, ["its result is not a list"]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for entry in result:
        if isinstance(entry, dict) and entry.get("from_name") in RUBRIC_ITEMS:
            by_name.setdefault(entry["from_name"], []).append(entry)
    values: dict[str, float] = {}
    problems: list[str] = []
    for name in RUBRIC_ITEMS:
        entries = by_name.get(name)
        if not entries:
            if name in MAIN_SCORES:
                problems.append(f"field {name!r} is missing; allowed values: 1, 2, 3, 4, 5")
            else:
                values[name] = 0.0  # as an empty penalty cell of the sheet
            continue
        raw, problem = _raw_value(entries, name)
        if problem is None:
            parse = _parse_penalty if name in PENALTIES else _parse_main
            value, problem = parse(raw or "", name)
            if problem is None:
                values[name] = value
                continue
            problem = f"field {problem}"
        problems.append(problem)
    return (None, problems) if problems else (values, [])


@dataclass
class ExportReading:
    """What :func:`read_exports` found.

    Attributes:
        annotators: annotator labels (email, ``user <id>``, or the file for annotations without
            ``completed_by``), in order of their first collected annotation.
        ratings: per annotator, ``{item: {rubric item: value}}`` (only the items they annotated).
        problems: one line per thing not collected (or not yet annotated), naming task / item.
        annotations_not_collected: annotations left out (cancelled, invalid, unknown item, duplicates).
        items_not_annotated: key items no collected annotation covers.
    """

    annotators: list[str] = field(default_factory=list)
    ratings: list[dict[str, dict[str, float]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    annotations_not_collected: int = 0
    items_not_annotated: int = 0


def read_exports(paths: Sequence[str | Path], items: Sequence[SheetItem]) -> ExportReading:
    """Read Label Studio JSON exports against the key's items (see module docstring, items 2 and 5).

    Raises:
        ValueError: for a file that is not a Label Studio JSON export, or when nothing can be collected
            (e.g. an export of another project: no task matches the key), listing the problems as the
            CSV route does (up to 20).
    """
    sources = [(Path(p).name, _check_export(Path(p)), str(p)) for p in paths]
    return read_export_data(sources, items)


def read_export_data(sources: Sequence[tuple[str, list[dict[str, Any]], str]],
                     items: Sequence[SheetItem]) -> ExportReading:
    """:func:`read_exports` on exports already read: ``(name in messages, tasks, annotator label of
    annotations without completed_by)`` per source, e.g. a project pulled through the API.

    Raises:
        ValueError: when nothing can be collected (see :func:`read_exports`).
    """
    by_id = {it.item: it for it in items}
    reading = ExportReading()
    collected: _Collected = {}
    labels: dict[Any, str] = {}
    for name, data, fallback in sources:
        _collect_source(name, data, fallback, by_id, reading, collected, labels)
    _add_annotators_sheets(collected, labels, items, reading)
    _note_items_not_annotated(items, reading)
    if not reading.ratings:
        _raise_nothing_collected(sources, reading)
    return reading


#: Per annotator id, per item id: the ratings collected and the task id they came from.
_Collected = dict[Any, dict[str, list[tuple[dict[str, float], str]]]]


def _collect_source(name: str, data: list[Any], fallback: str, by_id: dict[str, SheetItem], reading: ExportReading,
                    collected: _Collected, labels: dict[Any, str]) -> None:
    """Collect the annotations of one export's tasks into ``collected``, noting each task or annotation left out
    (and an export with no task of the key) in ``reading``."""
    matched = 0
    for k, task in enumerate(data):
        if not isinstance(task, dict):
            reading.problems.append(f"{name} task #{k + 1}: not a JSON object ({_one_line_json(task)}); "
                                    "nothing of it collected")
            continue
        matched += _collect_task(name, k, task, fallback, by_id, reading, collected, labels)
    if data and not matched:
        reading.problems.append(f"{name}: no task matches the key ({len(data)} task(s), none with an item "
                                "of the key: an export of another project?)")


def _collect_task(name: str, k: int, task: dict[str, Any], fallback: str, by_id: dict[str, SheetItem],
                  reading: ExportReading, collected: _Collected, labels: dict[Any, str]) -> bool:
    """Collect the annotations of task number ``k`` (from 0) of export ``name``; whether its item is in the key.
    A task whose item is not in the key, or whose caption differs from the key's, has none of its annotations
    collected."""
    task_id = task.get("id", f"#{k + 1}")
    task_id = task_id if _is_scalar(task_id) else f"#{k + 1}"  # an id that is a list or object: its place
    where = f"{name} task {task_id}"
    annotations = task.get("annotations") or []
    if not isinstance(annotations, list):
        annotations = []
    task_data = task.get("data") if isinstance(task.get("data"), dict) else {}
    item_id = task_data.get("item")
    if item_id is None or str(item_id) not in by_id:
        if annotations:
            what = ("has no 'item' in its data (not a task of `capeval thumb sheet --label-studio`)"
                    if item_id is None else f"(item {item_id!r}): the item is not in the key file")
            reading.problems.append(f"{where} {what}; {len(annotations)} annotation(s) not collected")
            reading.annotations_not_collected += len(annotations)
        return False
    item_id = str(item_id)
    where = f"{where} (item {item_id})"
    expected = by_id[item_id]
    caption = task_data.get("caption")
    if caption is None or str(caption).strip() != expected.caption.strip():
        if annotations:
            reading.problems.append(f"{where}: the caption differs from the key's ({expected.caption!r}); "
                                    f"{len(annotations)} annotation(s) not collected")
            reading.annotations_not_collected += len(annotations)
        return True
    for annotation in annotations:
        _collect_annotation(annotation, where, item_id, str(task_id), fallback, reading, collected, labels)
    return True


def _collect_annotation(annotation: Any, where: str, item_id: str, task_id: str, fallback: str,
                        reading: ExportReading, collected: _Collected, labels: dict[Any, str]) -> None:
    """Collect one annotation of item ``item_id``, or note in ``reading`` why it is left out (not an object, no
    usable annotator, cancelled, ratings missing or out of range)."""
    if not isinstance(annotation, dict):
        reading.problems.append(f"{where}: an annotation is not a JSON object; not collected")
        reading.annotations_not_collected += 1
        return
    annotator = _annotator(annotation, fallback)
    if annotator is None:
        shown = _one_line_json(annotation.get("completed_by"))
        reading.problems.append(f"{where}: the annotator (completed_by: {shown}) is not a user id or "
                                "e-mail; not collected")
        reading.annotations_not_collected += 1
        return
    ident, label = annotator
    who = f"{where}, annotator {label}"
    if annotation.get("was_cancelled"):
        reading.problems.append(f"{who}: skipped / cancelled (was_cancelled: true); not collected")
        reading.annotations_not_collected += 1
        return
    values, problems = _ratings_of(annotation.get("result"))
    if values is None:
        reading.problems.append(f"{who}: {'; '.join(problems)}; not collected")
        reading.annotations_not_collected += 1
        return
    labels.setdefault(ident, label)
    collected.setdefault(ident, {}).setdefault(item_id, []).append((values, task_id))


def _add_annotators_sheets(collected: _Collected, labels: dict[Any, str], items: Sequence[SheetItem],
                           reading: ExportReading) -> None:
    """One sheet of ratings (in the key's item order) per annotator with at least one item collected; an item an
    annotator annotated more than once is left out of their sheet."""
    for ident, per_item in collected.items():
        sheet: dict[str, dict[str, float]] = {}
        for item_id, entries in per_item.items():
            if len(entries) > 1:
                task_ids = ", ".join(t for _, t in entries)
                reading.problems.append(f"item {item_id}, annotator {labels[ident]}: annotated {len(entries)} times "
                                        f"(tasks {task_ids}); none collected (delete the extra annotation and "
                                        "export again)")
                reading.annotations_not_collected += len(entries)
            else:
                sheet[item_id] = entries[0][0]
        if sheet:
            reading.annotators.append(labels[ident])
            reading.ratings.append({it.item: sheet[it.item] for it in items if it.item in sheet})


def _note_items_not_annotated(items: Sequence[SheetItem], reading: ExportReading) -> None:
    """Count the key's items that no annotator's sheet has and, when some sheet was collected, name them
    (up to the first 20)."""
    annotated = {i for sheet in reading.ratings for i in sheet}
    missing = [it.item for it in items if it.item not in annotated]
    reading.items_not_annotated = len(missing)
    if missing and reading.ratings:
        shown = missing[:MAX_REPORTED_ERRORS]
        reading.problems.append(f"{len(missing)} item(s) of the key have no collected annotation (not annotated yet, "
                                "or every annotation of theirs left out above): "
                                f"{', '.join(shown)}" + (f" and {len(missing) - len(shown)} more" if len(missing) >
                                                         len(shown) else ""))


def _raise_nothing_collected(sources: Sequence[tuple[str, list[dict[str, Any]], str]],
                             reading: ExportReading) -> None:
    """Raise the ValueError of an export reading with no sheet collected, listing its problems (up to 20)."""
    names = ", ".join(fallback for _, _, fallback in sources)
    problems = reading.problems or [f"{names}: no annotation yet (annotate tasks in Label Studio, "
                                    "then collect again)"]
    shown = problems[:MAX_REPORTED_ERRORS]
    more = f"\n... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    raise ValueError(f"nothing to collect from {names}: {len(problems)} problem(s):\n" + "\n".join(shown) + more)
