"""Label Studio route of the THumB workflow: config.xml / tasks.json, reading the JSON export back.

Exports are synthetic, in Label Studio's documented JSON export format (a list of tasks, each with
``data`` and ``annotations``; an annotation has ``completed_by``, ``was_cancelled`` and ``result``
entries ``{"from_name", "to_name", "type", "value": {"choices": [...]}}``).
"""
from __future__ import annotations

import copy
import csv
import json
import zlib
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from capeval.cli import main
from capeval.thumb.html_sheet import FLUENCY_PENALTIES, RUBRIC_HTML
from capeval.thumb.label_studio import (
    CONCISENESS_CHOICES,
    INCLUSIVE_CHOICES,
    control_titles,
    fluency_choices,
    read_exports,
)
from capeval.thumb.rubric import RUBRIC_ITEMS
from capeval.thumb.sheets import read_key
from capeval.thumb.workflow import collect, collect_label_studio, make_sheets
from support import FIXTURES

SYSTEMS_JSON = FIXTURES / "thumb" / "systems.json"
SYSTEM_NAMES = ("ModelAlpha", "ModelBeta", "HumanRef")
ANNOTATORS = ({"id": 7, "email": "ann1@example.org"}, {"id": 9, "email": "ann2@example.org"})


def rating_for(caption: str, salt: int = 0) -> dict[str, str]:
    """A deterministic, caption-dependent answer, as an annotator would give it (CSV cell text)."""
    h = zlib.crc32(f"{salt}|{caption}".encode())
    return {
        "precision": str(1 + h % 5),
        "recall": str(1 + (h // 5) % 5),
        "fluency": ["", "0.1", "", "0.2", "0"][(h // 25) % 5],
        "conciseness": ["", "", "0.5"][(h // 125) % 3],
        "inclusive": ["", "", "", "2"][(h // 375) % 4],
    }


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_csv(sheet: Path, out: Path, salt: int) -> Path:
    rows = read_rows(sheet)
    for row in rows:
        row.update(rating_for(row["caption"], salt))
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def result_for(answer: dict[str, str], comment: str | None = None) -> list[dict]:
    """Label Studio ``result`` entries for one answer (an empty penalty is simply not chosen)."""
    out = []
    for name in RUBRIC_ITEMS:
        if answer[name]:
            out.append({"id": f"r-{name}", "from_name": name, "to_name": "caption", "type": "choices",
                        "origin": "manual", "value": {"choices": [answer[name]]}})
    if comment:
        out.append({"id": "r-c", "from_name": "comment", "to_name": "caption", "type": "textarea",
                    "value": {"text": [comment]}})
    return out


def make_export(tasks_path: Path, salts=(0,), annotators=ANNOTATORS) -> list[dict]:
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    export = []
    for k, task in enumerate(tasks):
        annotations = []
        for n, salt in enumerate(salts):
            annotations.append({
                "id": 1000 * (n + 1) + k, "completed_by": annotators[n], "was_cancelled": False,
                "ground_truth": False, "lead_time": 3.5, "task": 100 + k,
                "result": result_for(rating_for(task["data"]["caption"], salt), comment="ok" if k % 3 else None),
            })
        export.append({"id": 100 + k, "project": 4, "data": task["data"], "annotations": annotations,
                       "predictions": [], "drafts": []})
    return export


def dump(path: Path, export: list[dict]) -> Path:
    path.write_text(json.dumps(export, indent=1), encoding="utf-8")
    return path


@pytest.fixture()
def sheets(tmp_path):
    return make_sheets([SYSTEMS_JSON], tmp_path / "sheets", seed=0, label_studio=True)


# ----------------------------------------------------------------------------------- config and tasks


def test_config_is_well_formed_with_the_sheets_controls(sheets):
    root = ET.fromstring(sheets.label_studio.config.read_text(encoding="utf-8"))
    assert root.tag == "View"
    assert root.find(".//Image") is None  # no --image-url: no image
    texts = {e.get("name"): e.get("value") for e in root.iter("Text")}
    assert texts["caption"] == "$caption"
    controls = {e.get("name"): e for e in root if e.tag in ("Choices", "TextArea", "Rating")}
    assert list(controls) == [*RUBRIC_ITEMS, "comment"]
    assert all(e.get("toName") == "caption" for e in controls.values())
    values = {name: [c.get("value") for c in e.iter("Choice")] for name, e in controls.items()}
    assert values["precision"] == values["recall"] == ["1", "2", "3", "4", "5"]
    assert controls["precision"].get("required") == "true" and controls["fluency"].get("required") is None
    assert values["conciseness"] == list(CONCISENESS_CHOICES) and values["inclusive"] == list(INCLUSIVE_CHOICES)
    assert values["fluency"] == list(fluency_choices())
    # every penalty Table 6 names is a choice, and every choice is a number the CSV sheet accepts
    for _, penalty, _ in FLUENCY_PENALTIES:
        assert penalty.rstrip("+").split("–")[0] in values["fluency"]
    for name in ("fluency", "conciseness", "inclusive"):
        assert values[name][0] == "0"
        assert all(0 <= float(v) <= 5 and abs(float(v) * 10 - round(float(v) * 10)) < 1e-9 for v in values[name])
    assert controls["comment"].tag == "TextArea"
    # the rubric's own words: control titles and the penalty values come from the sheet's rubric text
    headers = [e.get("value") for e in root.iter("Header")]
    for title in control_titles().values():
        assert title in headers and title in RUBRIC_HTML
    assert any(v.startswith("Conciseness penalty (Con.): 0.5 for") for v in texts.values())
    assert any("0.5 for a subjective comment" in v and "2 for more severe" in v for v in texts.values())
    table = [v for k, v in texts.items() if k.startswith("fluency_table_")]
    assert len(table) == len(FLUENCY_PENALTIES) and table[0].startswith(FLUENCY_PENALTIES[0][0])
    # no template variable besides the task data's
    dollars = [v for e in root.iter() for v in e.attrib.values() if "$" in v]
    assert dollars == ["$caption"]
    instructions = sheets.label_studio.instructions.read_text(encoding="utf-8")
    assert RUBRIC_HTML in instructions and "Fluency penalties (Kasai et al. 2022, Table 6)" in instructions


def test_tasks_one_per_item_without_system_names(sheets):
    text = sheets.label_studio.tasks.read_text(encoding="utf-8")
    tasks = json.loads(text)
    key = read_key(sheets.key)
    assert [t["data"] for t in tasks] == [{"item": it.item, "caption": it.caption} for it in key.items]
    for name in SYSTEM_NAMES:
        assert name not in text
    for path in sheets.label_studio.config.parent.iterdir():  # the key stays in DIR
        assert not any(name in path.read_text(encoding="utf-8") for name in SYSTEM_NAMES), path
    assert not (sheets.label_studio.config.parent / "thumb_key.json").exists()


def test_image_url_and_escaping(tmp_path):
    nasty = 'a <b>dog</b> & "cat" \'s $caption ${image} </View>'
    systems = tmp_path / "systems.json"
    systems.write_text(json.dumps({"SysOne": [{"image": "i&1", "caption": nasty}],
                                   "SysTwo": [{"image": "i&1", "caption": "a plain caption"}]}), encoding="utf-8")
    files = make_sheets([systems], tmp_path / "out", cleanup=None, image_url="https://x.org/img?id={image}&s=1",
                        title='Round <1> & "quotes"', label_studio=True)
    config = files.label_studio.config.read_text(encoding="utf-8")
    root = ET.fromstring(config)
    assert nasty not in config and "dog" not in config  # captions are task data, never config
    assert root.find("Header").get("value") == 'Round <1> & "quotes"'  # escaped, read back unchanged
    image = root.find("Image")
    assert image is not None and image.get("name") == "image" and image.get("value") == "$image"
    tasks = json.loads(files.label_studio.tasks.read_text(encoding="utf-8"))
    data = {t["data"]["caption"]: t["data"] for t in tasks}
    assert data[nasty]["image"] == "https://x.org/img?id=i&1&s=1"
    assert set(data[nasty]) == {"item", "caption", "image"}


def test_cli_sheet_label_studio_flag(tmp_path, capsys):
    assert main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(tmp_path / "a")]) == 0
    assert not (tmp_path / "a" / "label-studio").exists()
    assert main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(tmp_path / "b"), "--label-studio"]) == 0
    assert "config.xml" in capsys.readouterr().out
    for name in ("config.xml", "tasks.json", "instructions.html"):
        assert (tmp_path / "b" / "label-studio" / name).is_file()
    # the CSV sheet is the same with or without the flag
    assert (tmp_path / "a" / "thumb_sheet.csv").read_bytes() == (tmp_path / "b" / "thumb_sheet.csv").read_bytes()


# ------------------------------------------------------------------------------------------ round trip


@pytest.mark.parametrize("annotators", [1, 2])
@pytest.mark.parametrize("one_file", [True, False])
def test_csv_and_export_give_byte_identical_reports(sheets, tmp_path, monkeypatch, annotators, one_file):
    salts = (0, 1)[:annotators]
    csv_dir, ls_dir = tmp_path / "via_csv", tmp_path / "via_ls"
    csv_dir.mkdir()
    ls_dir.mkdir()
    # CSV sheets named as Label Studio names the annotators, so that the reports' annotator lists agree
    monkeypatch.chdir(csv_dir)
    csv_paths = [write_csv(sheets.csv, Path(ANNOTATORS[n]["email"]), salt) for n, salt in enumerate(salts)]
    collect(sheets.key, csv_paths, out_dir="out", bootstrap_samples=50)
    monkeypatch.chdir(ls_dir)
    export = make_export(sheets.label_studio.tasks, salts)
    if one_file:
        exports = [dump(Path("export.json"), export)]
    else:  # one file per annotator
        exports = []
        for n in range(annotators):
            part = copy.deepcopy(export)
            for task in part:
                task["annotations"] = [task["annotations"][n]]
            exports.append(dump(Path(f"export-{n}.json"), part))
    report = collect_label_studio(sheets.key, exports, out_dir="out", bootstrap_samples=50)
    assert "not_collected" not in report
    names = sorted(p.name for p in (csv_dir / "out").iterdir())
    assert names == sorted(p.name for p in (ls_dir / "out").iterdir())
    assert len(names) == (3 if annotators == 2 else 2)
    for name in names:
        assert (csv_dir / "out" / name).read_bytes() == (ls_dir / "out" / name).read_bytes(), name
    if annotators == 2:
        assert report["agreement"]["annotators"] == ["ann1@example.org", "ann2@example.org"]
        assert report["agreement"]["items"] == 11
    # collecting twice gives the same report
    collect_label_studio(sheets.key, exports, out_dir="again", bootstrap_samples=50)
    for name in names:
        assert (ls_dir / "again" / name).read_bytes().replace(b"again/", b"out/") == \
            (ls_dir / "out" / name).read_bytes()


def test_rating_and_int_completed_by_are_read(sheets, tmp_path):
    export = make_export(sheets.label_studio.tasks, annotators=(3,))
    for task in export:
        for entry in task["annotations"][0]["result"]:
            if entry["from_name"] == "precision":
                entry["type"], entry["value"] = "rating", {"rating": int(entry["value"]["choices"][0])}
    reading = read_exports([dump(tmp_path / "e.json", export)], read_key(sheets.key).items)
    assert reading.annotators == ["user 3"] and not reading.problems
    first = export[0]
    expected = rating_for(first["data"]["caption"])
    assert reading.ratings[0][first["data"]["item"]]["precision"] == float(expected["precision"])


# -------------------------------------------------------------------------------------- bad exports


def _bad_export(sheets):
    export = make_export(sheets.label_studio.tasks, (0, 1))
    key_items = [t["data"]["item"] for t in export]
    # task 100: partial - not annotated yet
    export[0]["annotations"] = []
    # task 101: annotator 1 cancelled (skipped)
    export[1]["annotations"][0]["was_cancelled"] = True
    export[1]["annotations"][0]["result"] = []
    # task 102: annotator 2 forgot recall
    export[2]["annotations"][1]["result"] = [r for r in export[2]["annotations"][1]["result"]
                                            if r["from_name"] != "recall"]
    # task 103: annotator 1's precision out of range, annotator 2's fluency not a multiple of 0.1
    export[3]["annotations"][0]["result"][0]["value"]["choices"] = ["7"]
    fl = {"from_name": "fluency", "to_name": "caption", "type": "choices", "value": {"choices": ["0.25"]}}
    export[3]["annotations"][1]["result"] = [r for r in export[3]["annotations"][1]["result"]
                                            if r["from_name"] != "fluency"] + [fl]
    # task 104 imported twice: annotator 1 annotated both copies
    dup = copy.deepcopy(export[4])
    dup["id"] = 200
    dup["annotations"] = dup["annotations"][:1]
    export.append(dup)
    # a task whose item is not in the key
    stranger = copy.deepcopy(export[5])
    stranger["id"] = 201
    stranger["data"]["item"] = "99-Z"
    export.append(stranger)
    return export, key_items


def test_every_bad_annotation_is_one_line_and_the_rest_is_collected(sheets, tmp_path):
    export, key_items = _bad_export(sheets)
    path = dump(tmp_path / "export.json", export)
    with pytest.warns(UserWarning) as caught:
        report = collect_label_studio(sheets.key, [path], out_dir=tmp_path / "out", bootstrap_samples=0)
    lines = [str(w.message) for w in caught]
    assert all("\n" not in line for line in lines)
    problems = report["not_collected"]["problems"]
    assert problems == lines

    def line_with(*words):
        found = [p for p in problems if all(w in p for w in words)]
        assert len(found) == 1, (words, problems)
        return found[0]

    line_with("task 101", f"item {key_items[1]}", "ann1@example.org", "was_cancelled")
    line_with("task 102", f"item {key_items[2]}", "ann2@example.org", "'recall' is missing")
    line_with("task 103", "ann1@example.org", "'precision' is '7'; allowed values: 1, 2, 3, 4, 5")
    line_with("task 103", "ann2@example.org", "'fluency' is '0.25'; allowed")
    line_with(f"item {key_items[4]}", "ann1@example.org", "annotated 2 times", "tasks 104, 200")
    line_with("task 201", "'99-Z'", "not in the key file", "2 annotation(s)")
    line_with("2 item(s) of the key have no collected annotation", f"{key_items[0]}, {key_items[3]}")
    assert len(problems) == 7
    # 1 cancelled + 1 missing + 2 invalid + 2 duplicates + 2 unknown item
    assert report["not_collected"]["annotations"] == 8 and report["not_collected"]["items"] == 2
    saved = json.loads((tmp_path / "out" / "thumb_report.json").read_text(encoding="utf-8"))
    assert saved["not_collected"] == report["not_collected"]
    # everything else is collected: κ over the items both annotators gave a valid annotation
    both = set(key_items) - {key_items[k] for k in (0, 1, 2, 3, 4)}
    assert report["agreement"]["items"] == len(both)
    scored = {json.loads(line)["item"] for line in (tmp_path / "out" / "thumb_scores.jsonl").read_text().splitlines()}
    assert scored == set(key_items) - {key_items[0], key_items[3]}


def test_cli_collect_export_prints_what_was_not_collected(sheets, tmp_path, capsys):
    export, _ = _bad_export(sheets)
    path = dump(tmp_path / "export.json", export)
    args = ["thumb", "collect", "--key", str(sheets.key), str(path), "--bootstrap-samples", "0"]
    assert main([*args, "--out", str(tmp_path / "r1")]) == 0
    captured = capsys.readouterr()
    warned = [line for line in captured.err.splitlines() if "warning:" in line]
    assert len(warned) == 7 and all(line.startswith("capeval thumb") for line in warned)
    assert "not collected: 8 annotation(s); 2 item(s) of the key without an annotation" in captured.out
    assert "Cohen's kappa P" in captured.out
    assert main([*args, "--out", str(tmp_path / "r2")]) == 0
    for name in ("thumb_scores.jsonl", "thumb_disagreements.csv"):
        assert (tmp_path / "r1" / name).read_bytes() == (tmp_path / "r2" / name).read_bytes()
    # mixing CSV sheets and exports is refused
    capsys.readouterr()
    assert main(["thumb", "collect", "--key", str(sheets.key), str(sheets.csv), str(path)]) == 1
    assert "either filled CSV sheets or Label Studio JSON exports" in capsys.readouterr().err


def test_export_of_another_project_is_refused_in_one_line(sheets, tmp_path, capsys):
    export = make_export(sheets.label_studio.tasks)
    for k, task in enumerate(export):
        task["data"] = {"text": f"another project's text {k}"}
    path = dump(tmp_path / "other.json", export)
    with pytest.raises(ValueError, match=r"other\.json: no task matches the key \(11 task\(s\)"):
        collect_label_studio(sheets.key, [path])
    assert main(["thumb", "collect", "--key", str(sheets.key), str(path)]) == 1
    err = capsys.readouterr().err
    assert "capeval thumb collect: error: nothing to collect" in err and "another project" in err


@pytest.mark.parametrize("content, match", [
    ({"tasks": []}, "not a Label Studio JSON export"),
    ([{"data": {"item": "1-A"}}], "not a Label Studio JSON export"),
    ([], "no annotation yet"),
])
def test_not_an_export(sheets, tmp_path, content, match):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        collect_label_studio(sheets.key, [path])


def test_more_than_two_annotators_is_refused(sheets, tmp_path):
    export = make_export(sheets.label_studio.tasks, (0, 1, 2), annotators=(*ANNOTATORS, {"id": 11}))
    with pytest.raises(ValueError, match=r"3 annotators \(ann1@example.org, ann2@example.org, user 11\)"):
        collect_label_studio(sheets.key, [dump(tmp_path / "e.json", export)])
