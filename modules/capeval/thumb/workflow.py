"""The two steps of a THumB human evaluation: make blinded sheets, then collect the filled ones.

``capeval thumb sheet`` and ``capeval thumb collect`` call :func:`make_sheets` and :func:`collect`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.thumb.agreement import cohen_kappa, disagreements
from capeval.thumb.api import score
from capeval.thumb.checks import add_checks, attention_checks, split_checks
from capeval.thumb.html_sheet import write_sheet_html
from capeval.thumb.label_studio import (
    ExportReading,
    LabelStudioFiles,
    read_export_data,
    read_exports,
    write_label_studio,
)
from capeval.thumb.records import write_records
from capeval.thumb.rubric import RUBRIC_ITEMS
from capeval.thumb.sheets import (
    ALLOWED_MAIN,
    SheetKey,
    build_items,
    combine_annotators,
    load_system_outputs,
    read_key,
    read_sheet,
    unblind,
    write_disagreements_csv,
    write_key,
    write_sheet_csv,
)

SHEET_CSV = "thumb_sheet.csv"
SHEET_HTML = "thumb_sheet.html"
KEY_JSON = "thumb_key.json"
SCORES_JSONL = "thumb_scores.jsonl"
REPORT_JSON = "thumb_report.json"
DISAGREEMENTS_CSV = "thumb_disagreements.csv"


@dataclass
class SheetFiles:
    csv: Path
    html: Path
    key: Path
    n_images: int
    n_items: int
    n_captions: int
    systems: list[str]
    incomplete_images: list[str] = field(default_factory=list)
    label_studio: LabelStudioFiles | None = None
    n_checks: int = 0


def make_sheets(
    sources: Sequence[str | Path],
    out_dir: str | Path,
    seed: int = 0,
    cleanup: str | None = "thumb",
    dedupe: bool = True,
    image_url: str | None = None,
    title: str = "THumB annotation sheet",
    label_studio: bool = False,
    checks: int = 0,
) -> SheetFiles:
    """Write ``thumb_sheet.csv``, ``thumb_sheet.html`` and ``thumb_key.json`` into ``out_dir``.

    With ``label_studio`` also ``out_dir/label-studio/config.xml``, ``tasks.json`` and
    ``instructions.html`` (:func:`capeval.thumb.label_studio.write_label_studio`; no system names).

    ``incomplete_images`` lists images that not every system captioned (they are still on the sheet).

    ``checks`` (0 to the number of images, at least 2 images when > 0) mixes that many attention-check items
    in blindly (:func:`capeval.thumb.checks.add_checks`, seeded by ``seed``); ``n_items`` counts them,
    ``n_checks`` says how many. 0 (default): none, and the files are exactly those without the option.
    """
    outputs = load_system_outputs(sources)
    items = add_checks(build_items(outputs, seed=seed, cleanup=cleanup, dedupe=dedupe), checks, seed=seed)
    out = Path(out_dir)
    files = SheetFiles(out / SHEET_CSV, out / SHEET_HTML, out / KEY_JSON, 0, len(items), 0, list(outputs))
    write_sheet_csv(files.csv, items)
    write_sheet_html(files.html, items, title=title, image_url=image_url)
    write_key(files.key, items, seed=seed, cleanup=cleanup, dedupe=dedupe, systems=list(outputs))
    if label_studio:
        files.label_studio = write_label_studio(out, items, image_url=image_url, title=title)
    per_image: dict[str, set[str]] = {}
    for it in items:
        per_image.setdefault(it.image, set()).update(it.systems)
    files.n_images = len(per_image)
    files.n_captions = sum(len(it.systems) for it in items)
    files.incomplete_images = [img for img, systems in per_image.items() if len(systems) < len(outputs)]
    files.n_checks = sum(it.check is not None for it in items)
    return files


def _kappa(first: list[float], second: list[float]) -> float | str:
    try:
        return cohen_kappa(first, second, labels=[float(v) for v in ALLOWED_MAIN])
    except ValueError as err:
        return f"undefined: {err}"


def collect(
    key_path: str | Path,
    sheet_paths: Sequence[str | Path],
    out_dir: str | Path | None = None,
    combine: str = "mean",
    **score_options: Any,
) -> dict[str, Any]:
    """Validate filled sheets, un-blind them with the key and aggregate (see :func:`capeval.thumb.score`).

    With two sheets (two annotators of the same items) also computes Cohen's κ for P and R and the
    blinded list of items they rated differently; ``combine`` (``mean``, ``first`` or ``last``) says
    which ratings enter the report.

    Writes into ``out_dir`` (when given): ``thumb_scores.jsonl`` (un-blinded, THumB layout: readable
    by ``capeval thumb report``), ``thumb_report.json`` (this function's return value) and, with two
    sheets, ``thumb_disagreements.csv``.

    Attention-check items of the key (``sheet --checks``) are left out of the ratings, the un-blinding, the
    aggregation, κ and the disagreements; the report then gains ``"attention_checks"``: each annotator's
    pass rate (:func:`capeval.thumb.checks.attention_checks`).

    Returns:
        ``{"result": score() output, "agreement": {...} | None, ["attention_checks": {...},] "files": {...}}``.
    """
    if not sheet_paths:
        raise ValueError("No filled sheets given.")
    if len(sheet_paths) > 2:
        raise ValueError(f"Give one sheet, or two sheets of two annotators; got {len(sheet_paths)}.")
    key = read_key(key_path)
    sheets = [read_sheet(p, key.items) for p in sheet_paths]
    return _collect(key, sheets, [str(p) for p in sheet_paths], out_dir, combine, None, score_options)


def collect_label_studio(
    key_path: str | Path,
    export_paths: Sequence[str | Path],
    out_dir: str | Path | None = None,
    combine: str = "mean",
    **score_options: Any,
) -> dict[str, Any]:
    """:func:`collect` for Label Studio JSON exports (:func:`capeval.thumb.label_studio.read_exports`).

    One export with every annotator in it, or one export per annotator; each annotation's
    ``completed_by`` is one annotator (one or two annotators, as with sheets). The SAME validation,
    un-blinding, aggregation, κ and disagreement files as the CSV route: the same answers give
    byte-identical files. What cannot be collected (a partial export, an item not in the key, two
    annotations of one item by one annotator, a field missing or out of range, a skipped / cancelled
    annotation, an export of another project) is warned about, one line each, and left out; everything
    else is collected, and the report gains ``"not_collected"`` (the lines and the counts). κ is computed
    over the items both annotators annotated; an item one annotator has not annotated yet enters the
    report with the other's ratings.
    """
    if not export_paths:
        raise ValueError("No Label Studio export given.")
    key = read_key(key_path)
    return _collect_reading(key, read_exports(export_paths, key.items), out_dir, combine, score_options)


def collect_label_studio_project(
    key_path: str | Path,
    url: str,
    project_id: int,
    token: str | None = None,
    out_dir: str | Path | None = None,
    combine: str = "mean",
    **score_options: Any,
) -> dict[str, Any]:
    """:func:`collect_label_studio` on a project of a running Label Studio server, pulled through its API.

    The project's JSON export (every task) is fetched with :func:`capeval.thumb.label_studio_api.fetch_export`
    (annotators named by e-mail) and collected exactly as an export file is. ``token``: a personal access
    token or a legacy token; None reads ``$LABEL_STUDIO_API_KEY``.
    """
    from capeval.thumb.label_studio_api import LabelStudio, fetch_export

    key = read_key(key_path)
    client = LabelStudio(url, token)
    name, data = fetch_export(client, project_id)
    reading = read_export_data([(name, data, name)], key.items)
    return _collect_reading(key, reading, out_dir, combine, score_options)


def _collect_reading(key: SheetKey, reading: ExportReading, out_dir: str | Path | None, combine: str,
                     score_options: dict[str, Any]) -> dict[str, Any]:
    """The Label Studio routes' common end: warn about what was left out, then :func:`_collect`."""
    import warnings

    if len(reading.annotators) > 2:
        raise ValueError(f"the export holds {len(reading.annotators)} annotators ({', '.join(reading.annotators)}); "
                         "give one or two (filter the export by annotator in Label Studio).")
    not_collected = None
    if reading.problems:
        for line in reading.problems:
            warnings.warn(line, stacklevel=2)
        not_collected = {"annotations": reading.annotations_not_collected, "items": reading.items_not_annotated,
                         "problems": reading.problems}
    return _collect(key, reading.ratings, reading.annotators, out_dir, combine, not_collected, score_options)


def _combine_partial(sheets: Sequence[dict[str, dict[str, float]]], items: Sequence[str],
                     how: str) -> dict[str, dict[str, float]]:
    """:func:`combine_annotators` over the annotators who rated each item (the same when all rated all)."""
    if all(len(s) == len(items) for s in sheets):
        return combine_annotators(sheets, how)
    combine_annotators(sheets[:1], how)  # checks ``how``
    out = {}
    for item in items:
        rated = [s for s in sheets if item in s]
        if rated:
            out[item] = combine_annotators([{item: s[item]} for s in rated], how)[item]
    return out


def _collect(key: SheetKey, sheets: list[dict[str, dict[str, float]]], annotators: list[str],
             out_dir: str | Path | None, combine: str, not_collected: dict[str, Any] | None,
             score_options: dict[str, Any]) -> dict[str, Any]:
    key, real, checks = split_checks(key, sheets)  # attention checks stay out of everything but their report
    checked = attention_checks(checks, sheets, annotators)
    sheets = real
    all_ids = [it.item for it in key.items]
    ratings = _combine_partial(sheets, all_ids, combine)
    items = [it for it in key.items if it.item in ratings]
    agreement = None
    disagreement_rows: list[dict[str, Any]] = []
    if len(sheets) == 2:
        ids = [i for i in all_ids if i in sheets[0] and i in sheets[1]]
        disagreement_rows = disagreements(ids, sheets[0], sheets[1], RUBRIC_ITEMS)
        def column(sheet: dict[str, dict[str, float]], name: str) -> list[float]:
            return [sheet[i][name] for i in ids]

        agreement = {
            "items": len(ids),
            "kappa_precision": _kappa(column(sheets[0], "precision"), column(sheets[1], "precision")),
            "kappa_recall": _kappa(column(sheets[0], "recall"), column(sheets[1], "recall")),
            "disagreements": len(disagreement_rows),
            "annotators": annotators,
            "combine": combine,
        }
    key = SheetKey(items, key.systems)
    records = unblind(key, ratings)
    result = score(
        [r["precision"] for r in records], [r["recall"] for r in records],
        [r["fluency"] for r in records], [r["conciseness"] for r in records], [r["inclusive"] for r in records],
        systems=[r["system"] for r in records], images=[r["image"] for r in records], **score_options,
    )
    for rec, total in zip(records, result["per_caption"]["total"]):
        rec["total"] = total
    files: dict[str, str] = {}
    if out_dir is not None:
        out = Path(out_dir)
        write_records(out / SCORES_JSONL, records)
        files["scores"] = str(out / SCORES_JSONL)
        if agreement is not None:
            write_disagreements_csv(out / DISAGREEMENTS_CSV, disagreement_rows, items)
            files["disagreements"] = str(out / DISAGREEMENTS_CSV)
        files["report"] = str(out / REPORT_JSON)
    report = {"result": result, "agreement": agreement}
    if checked is not None:
        report["attention_checks"] = checked
    report["files"] = files
    if not_collected is not None:
        report["not_collected"] = not_collected
    if out_dir is not None:
        import json

        Path(files["report"]).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
