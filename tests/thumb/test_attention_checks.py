"""Attention checks: `thumb sheet --checks N` mixes in captions of other images blindly;
`thumb collect` leaves them out of the scores and reports each annotator's pass rate."""
from __future__ import annotations

import csv
import json
import warnings
import zlib
from pathlib import Path

import pytest

from capeval.cli import main
from capeval.thumb.checks import CHECK_KIND, MAX_CHECK_PRECISION, PASS_RULE, add_checks
from capeval.thumb.rubric import RUBRIC_ITEMS
from capeval.thumb.sheets import KEY_VERSION, build_items, load_system_outputs, read_key
from capeval.thumb.workflow import collect, collect_label_studio, make_sheets
from support import FIXTURES

SYSTEMS_JSON = FIXTURES / "thumb" / "systems.json"
SYSTEM_NAMES = ("ModelAlpha", "ModelBeta", "HumanRef")
ANNOTATORS = ({"id": 7, "email": "ann1@example.org"}, {"id": 9, "email": "ann2@example.org"})
NOUNS = ("dog", "cat", "horse", "bus", "pizza", "kite", "train", "boat", "clock", "bench", "zebra", "giraffe",
         "surfer", "skier", "laptop", "vase", "bear", "sheep", "truck", "umbrella")


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def rating_for(caption: str, salt: int = 0) -> dict[str, str]:
    """A deterministic, caption-dependent answer (CSV cell text); the same caption gets the same answer."""
    h = zlib.crc32(f"{salt}|{caption}".encode())
    return {"precision": str(1 + h % 5), "recall": str(1 + (h // 5) % 5), "fluency": ["", "0.1", ""][(h // 25) % 3],
            "conciseness": ["", "", "0.5"][(h // 75) % 3], "inclusive": ""}


def fill(sheet: Path, out: Path, key_path: Path, salt: int = 0, check_precision: dict[str, str] | None = None) -> Path:
    """Real items get :func:`rating_for`; check items P from ``check_precision`` (item → P; default 1)."""
    checks = {it.item for it in read_key(key_path).items if it.check}
    rows = read_rows(sheet)
    for row in rows:
        row.update(rating_for(row["caption"], salt))
        if row["item"] in checks:
            row["precision"] = (check_precision or {}).get(row["item"], "1")
    return write_rows(out, rows)


def many_systems(tmp_path: Path, images: int = 20) -> Path:
    """Three systems, ``images`` images, every caption distinct (no merging)."""
    data = {f"Sys{s}": [{"image": f"im{i:02d}", "caption": f"A {NOUNS[i % len(NOUNS)]} seen by system {s} "
                                                         f"in photo {i}."} for i in range(images)]
            for s in range(3)}
    path = tmp_path / "many.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def check_ids(key_path: Path) -> list[str]:
    return [it.item for it in read_key(key_path).items if it.check]


# ------------------------------------------------------------------------------------------- sheets


def test_checks_are_blind_ids_consecutive_and_positions_spread(tmp_path):
    files = make_sheets([many_systems(tmp_path)], tmp_path / "s", seed=0, checks=10, label_studio=True)
    assert (files.n_images, files.n_checks, files.n_items, files.n_captions) == (20, 10, 70, 60)
    key = read_key(files.key)
    rows = read_rows(files.csv)
    assert [r["item"] for r in rows] == [it.item for it in key.items]
    groups: dict[str, list] = {}
    for it in key.items:
        groups.setdefault(it.image, []).append(it)
    positions = []
    for number, (image, group) in enumerate(groups.items(), 1):
        # ids consecutive per image in sheet order, whether or not the image got a check
        assert [it.item for it in group] == [f"{number}-{chr(ord('A') + k)}" for k in range(len(group))]
        checks = [k for k, it in enumerate(group) if it.check]
        assert len(checks) <= 1
        if checks:
            it = group[checks[0]]
            positions.append(checks[0])
            source = it.check["caption_of"]
            assert it.check["kind"] == CHECK_KIND and source != image and it.systems == []
            assert it.caption in {o.caption for o in groups[source] if not o.check}
            assert it.caption not in {o.caption for o in group if not o.check}
    assert len(positions) == 10 and len(set(positions)) >= 3  # first, middle and last places all used
    assert len({it.caption for it in key.items if it.check}) == 10  # no caption used twice as a check
    # nothing on what annotators see tells a check apart: same columns, blank cells, same task fields
    assert all(set(r) == set(rows[0]) and all(r[c] == "" for c in RUBRIC_ITEMS) for r in rows)
    tasks = json.loads(files.label_studio.tasks.read_text(encoding="utf-8"))
    assert [t["data"]["item"] for t in tasks] == [it.item for it in key.items]
    assert {tuple(sorted(t["data"])) for t in tasks} == {("caption", "item")}
    for path in (files.csv, files.html, files.label_studio.tasks):
        text = path.read_text(encoding="utf-8")
        assert "check" not in text.lower() and "other-image" not in text and "Sys0" not in text, path


def test_checks_are_deterministic_and_zero_changes_nothing(tmp_path):
    src = many_systems(tmp_path)
    names = ("thumb_sheet.csv", "thumb_sheet.html", "thumb_key.json", "label-studio/tasks.json")

    def files_of(folder: str, **options) -> list[bytes]:
        make_sheets([src], tmp_path / folder, seed=options.pop("seed", 0), label_studio=True, **options)
        return [(tmp_path / folder / name).read_bytes() for name in names]

    assert files_of("a", checks=5) == files_of("b", checks=5)
    assert files_of("c", checks=5, seed=1) != files_of("a", checks=5)
    assert files_of("none") == files_of("zero", checks=0)
    # the real items of a sheet with checks are those of the sheet without: same captions per image
    outputs = load_system_outputs([src])
    plain = build_items(outputs, seed=0)
    mixed = add_checks(plain, 5, seed=0)
    assert [(it.image, it.caption, it.systems) for it in mixed if not it.check] == \
        [(it.image, it.caption, it.systems) for it in plain]
    assert [it.item for it in plain] == [it.item for it in build_items(outputs, seed=0)]  # input not changed


def test_key_records_checks(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=2)
    data = json.loads(files.key.read_text(encoding="utf-8"))
    assert data["version"] == KEY_VERSION == 1
    entries = [e for e in data["items"] if "check" in e]
    assert len(entries) == 2
    for e in entries:
        assert e["systems"] == [] and e["originals"] == {}
        assert e["check"]["kind"] == "other-image" and e["check"]["caption_of"] != e["image"]
    assert len(data["items"]) == 13
    key = read_key(files.key)
    assert [it.check for it in key.items if it.check] == [e["check"] for e in entries]
    assert key.systems == list(SYSTEM_NAMES)
    data["items"][0]["check"] = "yes"
    files.key.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"damaged key file \(the attention check of item\(s\) \['1-A'\] has no"):
        read_key(files.key)


@pytest.mark.parametrize("checks, match", [
    (-1, r"the number of attention checks \(checks\) must be a whole number, 0 or more; got -1\."),
    (5, r"5 attention checks asked for, but the sheet has 4 images; at most one check per image \(give checks=4"),
])
def test_bad_number_of_checks(tmp_path, checks, match):
    with pytest.raises(ValueError, match=match):
        make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=checks)
    assert not (tmp_path / "s").exists()


def test_checks_need_two_images_with_different_captions(tmp_path):
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"A": [{"image": "1", "caption": "a dog"}], "B": [{"image": "1", "caption": "a cat"}]}))
    with pytest.raises(ValueError, match=r"attention checks need at least 2 images .*; the sheet has 1\.$"):
        make_sheets([one], tmp_path / "s", checks=1)
    make_sheets([one], tmp_path / "s", checks=0)  # no checks: fine
    same = tmp_path / "same.json"
    same.write_text(json.dumps({"A": [{"image": "1", "caption": "a dog"}, {"image": "2", "caption": "A dog"}]}))
    with pytest.raises(ValueError, match=r"only 0 image\(s\) have a caption of another image that differs"):
        make_sheets([same], tmp_path / "t", checks=1)


# ------------------------------------------------------------------------------------ collect (CSV)


def test_csv_route_pass_rates_and_checks_left_out(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=2)
    first_check, second_check = check_ids(files.key)
    a = fill(files.csv, tmp_path / "a.csv", files.key)
    b = fill(files.csv, tmp_path / "b.csv", files.key, check_precision={first_check: "5", second_check: "2"})
    report = collect(files.key, [a, b], out_dir=tmp_path / "out", bootstrap_samples=0)
    checks = report["attention_checks"]
    assert checks["rule"] == PASS_RULE and str(MAX_CHECK_PRECISION) in PASS_RULE
    assert checks["items"] == 2
    assert checks["annotators"] == [
        {"annotator": str(a), "checked": 2, "passed": 2, "pass_rate": 1.0, "failed": []},
        {"annotator": str(b), "checked": 2, "passed": 1, "pass_rate": 0.5, "failed": [first_check]},
    ]
    assert [row["annotator"] for row in checks["annotators"]] == report["agreement"]["annotators"]
    # the checks differ between a and b, yet enter neither κ nor the disagreements nor the scores
    assert report["agreement"]["items"] == 11 and report["agreement"]["disagreements"] == 0
    assert read_rows(tmp_path / "out" / "thumb_disagreements.csv") == []
    scores = [json.loads(line) for line in (tmp_path / "out" / "thumb_scores.jsonl").read_text().splitlines()]
    assert len(scores) == 12 and not {r["item"] for r in scores} & {first_check, second_check}
    saved = json.loads((tmp_path / "out" / "thumb_report.json").read_text(encoding="utf-8"))
    assert saved["attention_checks"] == checks
    assert list(saved) == ["result", "agreement", "attention_checks", "files"]


def test_missing_check_row_is_a_missing_item(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=1)
    (check,) = check_ids(files.key)
    rows = [r for r in read_rows(fill(files.csv, tmp_path / "a.csv", files.key)) if r["item"] != check]
    with pytest.raises(ValueError, match=rf"1 item\(s\) of the key are missing from the sheet, e.g. \['{check}'\]"):
        collect(files.key, [write_rows(tmp_path / "cut.csv", rows)])


def test_same_answers_with_and_without_checks_give_the_same_scores(tmp_path):
    plain = make_sheets([SYSTEMS_JSON], tmp_path / "plain", seed=4)
    mixed = make_sheets([SYSTEMS_JSON], tmp_path / "mixed", seed=4, checks=3)
    results = {}
    for name, files in (("plain", plain), ("mixed", mixed)):
        filled = [fill(files.csv, tmp_path / f"{name}{k}.csv", files.key, salt=k, check_precision={})
                  for k in (0, 1)]
        report = collect(files.key, filled, out_dir=tmp_path / f"{name}-out", bootstrap_samples=200)
        lines = (tmp_path / f"{name}-out" / "thumb_scores.jsonl").read_text(encoding="utf-8").splitlines()
        results[name] = report, [json.loads(line) for line in lines]
    (plain_report, plain_rows), (mixed_report, mixed_rows) = results["plain"], results["mixed"]
    assert mixed_report["result"] == plain_report["result"]
    assert {k: v for k, v in mixed_report["agreement"].items() if k != "annotators"} == \
        {k: v for k, v in plain_report["agreement"].items() if k != "annotators"}
    assert "attention_checks" not in plain_report and "attention_checks" in mixed_report
    # rows identical up to the blinded item ids (re-lettered around the checks)
    assert [{k: v for k, v in r.items() if k != "item"} for r in mixed_rows] == \
        [{k: v for k, v in r.items() if k != "item"} for r in plain_rows]
    assert any(a["item"] != b["item"] for a, b in zip(mixed_rows, plain_rows))


# ------------------------------------------------------------------------------ collect (Label Studio)


def choices(answer: dict[str, str]) -> list[dict]:
    return [{"from_name": name, "to_name": "caption", "type": "choices", "value": {"choices": [answer[name]]}}
            for name in RUBRIC_ITEMS if answer[name]]


def make_export(tasks_path: Path, answers) -> list[dict]:
    """Label Studio JSON export; ``answers(n, item, caption)`` gives annotator n's answer, or None (not done)."""
    export = []
    for k, task in enumerate(json.loads(tasks_path.read_text(encoding="utf-8"))):
        annotations = []
        for n, who in enumerate(ANNOTATORS):
            answer = answers(n, task["data"]["item"], task["data"]["caption"])
            if answer is not None:
                annotations.append({"id": 1000 * (n + 1) + k, "completed_by": who, "was_cancelled": False,
                                    "task": 100 + k, "result": choices(answer)})
        export.append({"id": 100 + k, "project": 4, "data": task["data"], "annotations": annotations})
    return export


def test_label_studio_route_pass_rates(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=3, label_studio=True)
    checks = check_ids(files.key)

    def answers(n, item, caption):
        answer = rating_for(caption, n)
        if item in checks:
            if n == 1 and item == checks[2]:
                return None  # ann2 has not reached this check yet
            answer["precision"] = "4" if (n, item) == (1, checks[0]) else str(MAX_CHECK_PRECISION)
        return answer

    export = tmp_path / "export.json"
    export.write_text(json.dumps(make_export(files.label_studio.tasks, answers)), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every item has an annotation: nothing to warn about
        report = collect_label_studio(files.key, [export], out_dir=tmp_path / "out", bootstrap_samples=0)
    assert report["attention_checks"]["annotators"] == [
        {"annotator": "ann1@example.org", "checked": 3, "passed": 3, "pass_rate": 1.0, "failed": []},
        {"annotator": "ann2@example.org", "checked": 2, "passed": 1, "pass_rate": 0.5, "failed": [checks[0]]},
    ]
    assert report["agreement"]["items"] == 11 and "not_collected" not in report
    # the CSV route with the same answers gives the same scores
    sheets = []
    for n in (0, 1):
        rows = read_rows(files.csv)
        for row in rows:
            row.update(answers(n, row["item"], row["caption"]) or {**rating_for(row["caption"]), "precision": "1"})
        sheets.append(write_rows(tmp_path / f"csv{n}.csv", rows))
    assert collect(files.key, sheets, bootstrap_samples=0)["result"] == report["result"]


def test_label_studio_only_checks_rated_is_refused(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", checks=2, label_studio=True)
    checks = check_ids(files.key)
    export = tmp_path / "export.json"
    export.write_text(json.dumps(make_export(
        files.label_studio.tasks, lambda n, item, caption: rating_for(caption) if item in checks and n == 0 else None)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"only the 2 attention-check item\(s\) are rated so far"):
            collect_label_studio(files.key, [export])


# ---------------------------------------------------------------------------------------------- CLI


def test_cli_sheet_and_collect_print_checks(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(out), "--checks", "2", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "3 systems, 4 images, 12 captions -> 13 sheet items" in printed
    assert "attention checks: 2 of the 13 items are a caption of another image, mixed in blindly (the key says " \
           "which)" in printed
    key = out / "thumb_key.json"
    first, second = check_ids(key)
    a = fill(out / "thumb_sheet.csv", tmp_path / "a.csv", key)
    b = fill(out / "thumb_sheet.csv", tmp_path / "b.csv", key, salt=1, check_precision={second: "3"})
    assert main(["thumb", "collect", "--key", str(key), str(a), str(b), "--bootstrap-samples", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    agreement = next(k for k, line in enumerate(lines) if line.startswith("agreement over 11 items"))
    assert lines[agreement + 1:agreement + 3] == [f"attention checks: {a} passed 2/2 (100%)",
                                                  f"attention checks: {b} passed 1/2 (50%): failed {second}"]
    assert main(["thumb", "collect", "--key", str(key), str(b), "--bootstrap-samples", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"attention checks: {b} passed 1/2 (50%): failed {second}" in lines
    # without checks nothing is said about them
    assert main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(tmp_path / "p")]) == 0
    assert "attention" not in capsys.readouterr().out


def test_cli_bad_checks_is_one_line_error(tmp_path, capsys):
    code = main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(tmp_path / "s"), "--checks", "9"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.strip() == ("capeval thumb sheet: error: 9 attention checks asked for, but the sheet has 4 images; "
                           "at most one check per image (give --checks 4 or fewer).")
