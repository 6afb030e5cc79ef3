"""THumB annotation workflow: blinded sheets -> filled programmatically -> collect, kappa, errors."""
from __future__ import annotations

import csv
import json
import zlib
from pathlib import Path

import pytest

from capeval import thumb
from capeval.cli import main
from capeval.thumb.agreement import cohen_kappa
from capeval.thumb.records import load_scores
from capeval.thumb.sheets import build_items, load_system_outputs, read_key
from capeval.thumb.workflow import collect, make_sheets
from support import FIXTURES

FIXTURES = FIXTURES / "thumb"
SYSTEMS_JSON = FIXTURES / "systems.json"
SYSTEM_NAMES = ("ModelAlpha", "ModelBeta", "HumanRef")


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: list[dict[str, str]], fieldnames=None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fieldnames or list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def rating_for(caption: str, salt: int = 0) -> dict[str, str]:
    """A deterministic, caption-dependent 'annotation' (what an annotator would type)."""
    h = zlib.crc32(f"{salt}|{caption}".encode())
    return {
        "precision": str(1 + h % 5),
        "recall": str(1 + (h // 5) % 5),
        "fluency": ["", "0.1", "", "-0.2", "0"][(h // 25) % 5],
        "conciseness": ["", "", "0.5"][(h // 125) % 3],
        "inclusive": ["", "", "", "2"][(h // 375) % 4],
    }


def fill(sheet: Path, out: Path, salt: int = 0, edit=None) -> Path:
    rows = read_rows(sheet)
    for row in rows:
        row.update(rating_for(row["caption"], salt))
        if edit:
            edit(row)
    return write_rows(out, rows)


@pytest.fixture()
def sheets(tmp_path):
    return make_sheets([SYSTEMS_JSON], tmp_path / "sheets", seed=0)


# -------------------------------------------------------------------------------------------- sheets


def test_sheet_is_blinded_shuffled_and_merges_identical_captions(sheets):
    rows = read_rows(sheets.csv)
    assert list(rows[0]) == ["item", "image", "caption", "precision", "recall", "fluency", "conciseness",
                             "inclusive", "comment"]
    assert (sheets.n_images, sheets.n_captions, sheets.n_items) == (4, 12, 11)
    # ModelAlpha and ModelBeta wrote the same caption for img-102 up to clean-up: one item, both systems.
    key = read_key(sheets.key)
    merged = [it for it in key.items if len(it.systems) > 1]
    assert len(merged) == 1 and merged[0].image == "img-102"
    assert set(merged[0].systems) == {"ModelAlpha", "ModelBeta"}
    assert merged[0].caption == "A plate of pasta and broccoli on a table."
    assert key.systems == list(SYSTEM_NAMES)
    # Blinding: no system name anywhere on the sheet or the page; item ids are image number + letter.
    for path in (sheets.csv, sheets.html):
        text = path.read_text(encoding="utf-8")
        assert not any(name in text for name in SYSTEM_NAMES), path
    assert [r["item"] for r in rows[:3]] == ["1-A", "1-B", "1-C"]
    assert all(r[c] == "" for r in rows for c in ("precision", "recall", "fluency"))


def test_shuffle_is_seeded_per_image(tmp_path):
    outputs = load_system_outputs([SYSTEMS_JSON])
    order = lambda seed: [(it.image, it.caption) for it in build_items(outputs, seed=seed)]  # noqa: E731
    assert order(0) == order(0)
    assert order(0) != order(1)
    assert sorted(order(0)) == sorted(order(1))
    # Without shuffling every image would list its captions in system order; seed 0 departs from it.
    unshuffled = [c for img in ("img-101", "img-103", "img-104") for c in
                  [cap for s, entries in outputs.items() for (i, cap) in entries if i == img]]
    assert [c for (i, c) in order(0) if i != "img-102"] != [c.strip() for c in unshuffled]


def test_no_dedupe_keeps_one_item_per_system(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path, dedupe=False)
    assert files.n_items == 12


def test_html_page_has_rubric_fluency_table_and_escapes(sheets, tmp_path):
    html = sheets.html.read_text(encoding="utf-8")
    for text in ("Precision (P, 1–5)", "Recall (R, 1–5)", "Conciseness penalty", "Inclusive-language penalty",
                 "Broken sentence", "0.5+", "Non-trivial punctuation", "Table 6"):
        assert text in html
    assert "A surfer rides a large wave &amp; smiles &lt;wow&gt;." in html
    assert "<wow>" not in html
    assert html.count('<td class="score"></td>') == 11 * 5
    with_images = make_sheets([SYSTEMS_JSON], tmp_path / "img", image_url="http://example.org/{image}.jpg")
    assert '<img src="http://example.org/img-101.jpg"' in with_images.html.read_text(encoding="utf-8")


def test_one_file_per_system(tmp_path):
    files = make_sheets([f"Gamma={FIXTURES / 'model_gamma_results.json'}", FIXTURES / "model_delta_results.json"],
                        tmp_path)
    key = read_key(files.key)
    assert key.systems == ["Gamma", "model_delta_results"]
    assert (files.n_images, files.n_items) == (3, 5)  # identical captions for image 101 merged
    assert [it.systems for it in key.items if it.image == "101"] == [["Gamma", "model_delta_results"]]


@pytest.mark.parametrize(
    "content, match",
    [
        ({"A": [{"image": "1", "caption": "x"}, {"image": "1", "caption": "y"}]}, r"system 'A' has two captions for image '1'"),
        ({"A": [{"image": "1", "caption": "  "}]}, r"system 'A' caption 0 \(image '1'\) is empty"),
        ({"A": [{"img_url": "1", "caption": "x"}]}, r"system 'A' entry 0 has none of the fields"),
        ({"A": "a caption"}, r"system 'A' must map to a list"),
        ({}, r"the system mapping is empty"),
    ],
)
def test_bad_system_outputs(tmp_path, content, match):
    path = tmp_path / "systems.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ValueError, match=match):
        make_sheets([path], tmp_path / "out")


# ------------------------------------------------------------------------------------------ round trip


def expected_records(sheet_rows, key, salt=0):
    """Ground truth: the rating typed for each item, attached to every system of the item."""
    by_item = {it.item: it for it in key.items}
    out = {}
    for row in sheet_rows:
        r = rating_for(row["caption"], salt)
        for system in by_item[row["item"]].systems:
            out[(system, row["image"])] = {
                "precision": float(r["precision"]), "recall": float(r["recall"]),
                "fluency": abs(float(r["fluency"] or 0)), "conciseness": float(r["conciseness"] or 0),
                "inclusive": float(r["inclusive"] or 0),
            }
    return out


def test_round_trip_one_annotator(sheets, tmp_path):
    filled = fill(sheets.csv, tmp_path / "filled.csv")
    report = collect(sheets.key, [filled], out_dir=tmp_path / "out", bootstrap_samples=200)
    key = read_key(sheets.key)
    truth = expected_records(read_rows(sheets.csv), key)

    table = load_scores(tmp_path / "out" / "thumb_scores.jsonl")
    assert len(table) == 12
    got = {(s, i): (p, r, -fl, -con, -inc) for s, i, p, r, fl, con, inc in zip(
        table.systems, table.images, table.precision, table.recall, table.fluency, table.conciseness, table.inclusive)}
    assert got == {k: (v["precision"], v["recall"], v["fluency"], v["conciseness"], v["inclusive"])
                   for k, v in truth.items()}
    # Original (un-cleaned) captions come back with the system names.
    originals = dict(zip(zip(table.systems, table.images), table.captions))
    assert originals[("ModelAlpha", "img-101")] == "a dog runs on the grass"

    keys = list(truth)
    direct = thumb.score([truth[k]["precision"] for k in keys], [truth[k]["recall"] for k in keys],
                         [truth[k]["fluency"] for k in keys], [truth[k]["conciseness"] for k in keys],
                         [truth[k]["inclusive"] for k in keys], systems=[k[0] for k in keys],
                         images=[k[1] for k in keys], bootstrap_samples=0)
    result = report["result"]
    assert list(result["systems"]) == list(SYSTEM_NAMES)
    for name in SYSTEM_NAMES:
        for field in ("precision", "recall", "fluency", "conciseness", "inclusive", "total", "strictly_best",
                      "strictly_worst"):
            assert result["systems"][name][field] == pytest.approx(direct["systems"][name][field]), (name, field)
        assert result["systems"][name]["total_ci"] is not None
    assert report["agreement"] is None
    saved = json.loads((tmp_path / "out" / "thumb_report.json").read_text(encoding="utf-8"))
    assert saved["result"]["signature"] == result["signature"]
    # The un-blinded file is a THumB-format score file: `report` reads it and gets the same numbers.
    given = [float(v) for v in table.given_total]
    assert given == pytest.approx(result["per_caption"]["total"])


def test_round_trip_two_annotators_kappa_and_disagreements(sheets, tmp_path):
    changed = {"2-B", "3-A", "4-C"}

    def disagree(row):
        if row["item"] in changed:
            row["recall"] = str(6 - int(row["recall"])) if row["recall"] != "3" else "4"

    first = fill(sheets.csv, tmp_path / "first.csv")
    second = fill(sheets.csv, tmp_path / "second.csv", edit=disagree)
    report = collect(sheets.key, [first, second], out_dir=tmp_path / "out", combine="mean", bootstrap_samples=0)
    agreement = report["agreement"]
    assert agreement["items"] == 11 and agreement["disagreements"] == 3
    a, b = read_rows(first), read_rows(second)
    assert agreement["kappa_precision"] == pytest.approx(1.0)
    expected = cohen_kappa([float(r["recall"]) for r in a], [float(r["recall"]) for r in b],
                           labels=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert agreement["kappa_recall"] == pytest.approx(expected) and expected < 1.0
    rows = read_rows(tmp_path / "out" / "thumb_disagreements.csv")
    assert {r["item"] for r in rows} == changed
    assert all(r["differs"] == "recall" and r["recall_1"] != r["recall_2"] for r in rows)
    text = (tmp_path / "out" / "thumb_disagreements.csv").read_text(encoding="utf-8")
    assert not any(name in text for name in SYSTEM_NAMES)  # the review list stays blinded
    # combine=mean: the report uses the average of the two annotators.
    first_only = collect(sheets.key, [first], bootstrap_samples=0)["result"]
    second_only = collect(sheets.key, [second], bootstrap_samples=0)["result"]
    for name in SYSTEM_NAMES:
        mean = (first_only["systems"][name]["recall"] + second_only["systems"][name]["recall"]) / 2
        assert report["result"]["systems"][name]["recall"] == pytest.approx(mean)
    last = collect(sheets.key, [first, second], combine="last", bootstrap_samples=0)["result"]
    assert last["systems"] == second_only["systems"]


def test_kappa_undefined_is_reported_not_raised(sheets, tmp_path):
    def constant(row):
        row["precision"] = "5"

    first = fill(sheets.csv, tmp_path / "a.csv", edit=constant)
    second = fill(sheets.csv, tmp_path / "b.csv", edit=constant)
    agreement = collect(sheets.key, [first, second], bootstrap_samples=0)["agreement"]
    assert agreement["kappa_precision"].startswith("undefined: Cohen's kappa is undefined")
    assert isinstance(agreement["kappa_recall"], float)


# -------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda r: r.update(precision="6") if r["item"] == "2-A" else None,
         r"row 5 \(item 2-A\), column 'precision' is '6'; allowed values: 1, 2, 3, 4, 5"),
        (lambda r: r.update(recall="") if r["item"] == "1-B" else None,
         r"row 3 \(item 1-B\), column 'recall' is empty; allowed values: 1, 2, 3, 4, 5"),
        (lambda r: r.update(recall="4.5") if r["item"] == "1-B" else None,
         r"row 3 \(item 1-B\), column 'recall' is '4.5'; allowed values: 1, 2, 3, 4, 5 \(integers\)"),
        (lambda r: r.update(precision="good") if r["item"] == "1-A" else None,
         r"row 2 \(item 1-A\), column 'precision' is 'good', not a number"),
        (lambda r: r.update(fluency="0.15") if r["item"] == "3-C" else None,
         r"row 9 \(item 3-C\), column 'fluency' is '0.15'; allowed: empty or 0 \(no problem\), or a multiple of 0.1"),
        (lambda r: r.update(inclusive="7") if r["item"] == "3-C" else None,
         r"row 9 \(item 3-C\), column 'inclusive' is '7'; allowed"),
        (lambda r: r.update(caption="A cat.") if r["item"] == "4-A" else None,
         r"row 10 \(item 4-A\), column 'caption': the caption was changed"),
        (lambda r: r.update(item="9-Z") if r["item"] == "4-A" else None,
         r"row 10 \(item 9-Z\), column 'item': '9-Z' is not in the key file"),
    ],
)
def test_sheet_errors_name_row_column_and_allowed_values(sheets, tmp_path, edit, match):
    filled = fill(sheets.csv, tmp_path / "bad.csv", edit=edit)
    with pytest.raises(ValueError, match=match):
        collect(sheets.key, [filled])


def test_all_problems_are_reported_at_once(sheets, tmp_path):
    rows = read_rows(fill(sheets.csv, tmp_path / "f.csv"))
    rows[0]["precision"] = "0"
    rows[3]["recall"] = "x"
    rows.append(dict(rows[1]))  # duplicate row
    del rows[5]  # missing item
    bad = write_rows(tmp_path / "bad.csv", rows)
    with pytest.raises(ValueError) as err:
        collect(sheets.key, [bad])
    message = str(err.value)
    assert message.startswith("4 problem(s) in")
    assert "row 2 (item 1-A), column 'precision' is '0'" in message
    assert "row 5 (item 2-A), column 'recall' is 'x'" in message
    assert "'1-B' appears twice" in message
    assert "1 item(s) of the key are missing from the sheet, e.g. ['3-A']" in message


def test_structural_errors(sheets, tmp_path):
    rows = read_rows(fill(sheets.csv, tmp_path / "f.csv"))
    no_recall = write_rows(tmp_path / "norecall.csv", [{k: v for k, v in r.items() if k != "recall"} for r in rows])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['recall'\]"):
        collect(sheets.key, [no_recall])
    with pytest.raises(ValueError, match="not a capeval THumB key file"):
        collect(sheets.csv, [tmp_path / "f.csv"])
    with pytest.raises(ValueError, match="Give one sheet, or two sheets"):
        collect(sheets.key, [tmp_path / "f.csv"] * 3)


def test_blank_penalties_mean_zero_and_spreadsheet_bom(sheets, tmp_path):
    rows = read_rows(sheets.csv)
    for r in rows:
        r.update(precision="4", recall="4.0")
    path = tmp_path / "bom.csv"
    with path.open("w", newline="", encoding="utf-8-sig") as fh:  # as Excel saves CSV
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = collect(sheets.key, [path], bootstrap_samples=0)["result"]
    assert result["per_caption"]["total"] == [4.0] * 12
    assert all(e["strictly_best"] == 4 and e["strictly_worst"] == 4 for e in result["systems"].values())


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_sheet_and_collect(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(out), "--seed", "3"]) == 0
    assert "3 systems, 4 images, 12 captions -> 11 sheet items" in capsys.readouterr().out
    first = fill(out / "thumb_sheet.csv", tmp_path / "a.csv")
    second = fill(out / "thumb_sheet.csv", tmp_path / "b.csv", salt=1)
    code = main(["thumb", "collect", "--key", str(out / "thumb_key.json"), str(first), str(second),
                 "--out", str(tmp_path / "res"), "--bootstrap-samples", "100"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "Cohen's kappa P" in printed and "item(s) differ" in printed
    for name in SYSTEM_NAMES:
        assert any(line.startswith(name) for line in printed.splitlines())
    assert (tmp_path / "res" / "thumb_disagreements.csv").exists()
    # report reads collect's un-blinded output
    assert main(["thumb", "report", str(tmp_path / "res" / "thumb_scores.jsonl"), "--bootstrap-samples", "0"]) == 0
    assert "per-caption totals equal to the file's given totals: 12/12" in capsys.readouterr().out


def test_cli_collect_error_exit_code(tmp_path, capsys):
    out = tmp_path / "s"
    main(["thumb", "sheet", str(SYSTEMS_JSON), "--out", str(out)])
    capsys.readouterr()
    code = main(["thumb", "collect", "--key", str(out / "thumb_key.json"), str(out / "thumb_sheet.csv")])
    assert code == 1
    err = capsys.readouterr().err
    assert "capeval thumb collect: error: 22 problem(s)" in err
    assert "column 'precision' is empty; allowed values: 1, 2, 3, 4, 5" in err
