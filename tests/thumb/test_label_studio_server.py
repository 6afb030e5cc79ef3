"""The Label Studio route end to end, against a real server.

A Label Studio server (:mod:`support.label_studio_server`: its own virtual environment from PyPI, cached
between runs; SQLite in a temporary folder; an admin and two annotators) gets a project from
``capeval thumb push``; both annotators label the 20 tasks in Chromium (:mod:`support.label_studio_browser`:
the login form, "Label All Tasks", a click on each of the rubric's choices, Submit); ``capeval thumb collect``
pulls the annotations from the server, and its files must be byte-identical to collecting CSV sheets with
the same answers; Label Studio's own JSON export, collected from the file, gives the same scores.

Slow (a server start, ~1 min of browser work; the first run also builds Label Studio's environment, ~1 min,
~1 GB) but run in CI: where the server, the browser or the environment cannot be had, the tests FAIL with
the reason; they are never skipped.
"""
from __future__ import annotations

import csv
import json
import re
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from support.label_studio_browser import annotate_project, chromium_executable, launch_chromium
from support.label_studio_server import http_bytes, http_json, project_tasks, running_label_studio

from capeval.cli import main
from capeval.thumb.rubric import RUBRIC_ITEMS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

N_IMAGES = 10  # x 2 systems = 20 sheet items
REPORT_FILES = ("thumb_report.json", "thumb_scores.jsonl", "thumb_disagreements.csv")
TRICKY_CAPTION = 'a <b>&"$caption dog</b> & a \'cat\''
#: Choices of each penalty an answer uses (None: nothing clicked, an empty CSV cell; 0: the "0" choice).
FLUENCY = (None, 0, 0.1, 0.2, 0.5, None, 2)
CONCISENESS = (None, 0, 0.5, None)
INCLUSIVE = (None, None, 0, 0.5, None, 2)
COMMENTS = ("", "", 'hard <one> & "odd"', "", "ok")


def _timing(what: str, seconds: float) -> None:
    print(f"[timing] {what}: {seconds:.1f} s", file=sys.stderr)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = time.monotonic()
    with running_label_studio(tmp_path_factory.mktemp("label-studio")) as running:
        _timing("Label Studio environment + start + accounts", time.monotonic() - started)
        yield running


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    if chromium_executable() is None:
        pytest.fail("no chromium executable ($CHROMIUM, or `chromium` on PATH: apt-get install chromium)",
                    pytrace=False)
    with sync_playwright() as p:
        b = launch_chromium(p)
        yield b
        b.close()


def _outputs(path: Path, n_images: int) -> Path:
    systems: dict[str, list[dict[str, str]]] = {"sysA": [], "sysB": []}
    for i in range(n_images):
        systems["sysA"].append({"image": f"img{i:02d}", "caption": f"a dog number {i} runs on the grass"})
        systems["sysB"].append({"image": f"img{i:02d}",
                                "caption": TRICKY_CAPTION if i == 3 else f"two cats ({i}) sleep on a sofa"})
    path.write_text(json.dumps(systems), encoding="utf-8")
    return path


def _sheet(folder: Path, n_images: int) -> Path:
    folder.mkdir(parents=True)
    out = folder / "sheet"
    assert main(["thumb", "sheet", str(_outputs(folder / "outputs.json", n_images)), "--out", str(out),
                 "--label-studio"]) == 0
    return out


@pytest.fixture(scope="module")
def sheet(tmp_path_factory) -> Path:
    return _sheet(tmp_path_factory.mktemp("thumb") / "main", N_IMAGES)


def _push(server, sheet_dir: Path, capsys, title: str, *extra: str) -> int:
    capsys.readouterr()
    assert main(["thumb", "push", str(sheet_dir), "--label-studio", server.url, "--token", server.admin_token,
                 "--project-title", title, *extra]) == 0
    printed = capsys.readouterr().out
    assert server.admin_token not in printed
    found = re.search(r"project (\d+)", printed)
    assert found, printed
    return int(found.group(1))


def answer_for(item: str, annotator: int) -> dict[str, Any]:
    """A deterministic answer per item and annotator; the two annotators agree on some items, not all."""
    h = zlib.crc32(f"{item}".encode())
    g = zlib.crc32(f"{annotator}|{item}".encode())
    precision = 1 + h % 5
    recall = 1 + (h // 5) % 5
    if annotator == 1 and h % 3 == 0:  # disagree on about a third of the items
        precision = 1 + (precision + g % 4) % 5
    if annotator == 1 and h % 4 == 1:
        recall = 1 + (recall + 1) % 5
    return {"precision": precision, "recall": recall, "fluency": FLUENCY[g % len(FLUENCY)],
            "conciseness": CONCISENESS[(g // 7) % len(CONCISENESS)],
            "inclusive": INCLUSIVE[(g // 31) % len(INCLUSIVE)], "comment": COMMENTS[(g // 101) % len(COMMENTS)]}


def _cell(value: Any) -> str:
    return "" if value is None else f"{float(value):g}"


def write_sheet(blank: Path, out: Path, answers: dict[str, dict[str, Any]]) -> Path:
    """The blank CSV sheet filled with ``answers`` (by item), as an annotator fills it."""
    with blank.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        answer = answers[row["item"]]
        row.update({name: _cell(answer[name]) for name in RUBRIC_ITEMS}, comment=answer["comment"])
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out


def _collect(folder: Path, monkeypatch, *args: str) -> dict[str, Any]:
    """``capeval thumb collect ARGS --out out`` run in ``folder`` (relative names: the reports can be compared)."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    assert main(["thumb", "collect", *args, "--out", "out", "--bootstrap-samples", "200"]) == 0
    return json.loads((folder / "out" / "thumb_report.json").read_text(encoding="utf-8"))


def test_push_annotate_in_browser_and_collect(server, browser, sheet, tmp_path, monkeypatch, capsys):
    key = sheet / "thumb_key.json"
    project = _push(server, sheet, capsys, "THumB test")

    # the project as pushed: 20 tasks, the sheet's items and captions (escaping survives the round trip)
    pushed = json.loads((sheet / "label-studio" / "tasks.json").read_text(encoding="utf-8"))
    tasks = project_tasks(server, project)
    assert len(tasks) == 2 * N_IMAGES
    assert sorted((t["data"]["item"], t["data"]["caption"]) for t in tasks) == \
        sorted((t["data"]["item"], t["data"]["caption"]) for t in pushed)
    assert any("<b>&\"$caption" in t["data"]["caption"] for t in tasks)
    config = server.api("GET", f"/api/projects/{project}")
    assert config["maximum_annotations"] == 2
    written = (sheet / "label-studio" / "config.xml").read_text(encoding="utf-8")
    assert config["label_config"].strip() == written.strip()

    # both annotators label every task in the browser
    item_of = {t["id"]: t["data"]["item"] for t in tasks}
    answers = [{item: answer_for(item, n) for item in item_of.values()} for n in range(2)]
    assert any(answers[0][i]["precision"] != answers[1][i]["precision"] for i in item_of.values())
    for n, (email, password) in enumerate(server.annotators):
        started = time.monotonic()
        done = annotate_project(browser, server.url, email, password, project,
                                {tid: answers[n][item] for tid, item in item_of.items()}, artifacts=tmp_path)
        _timing(f"{email} annotates {done} tasks in the browser", time.monotonic() - started)
        assert done == len(tasks)
    assert [t["total_annotations"] for t in project_tasks(server, project)] == [2] * len(tasks)
    capsys.readouterr()
    assert main(["thumb", "status", "--label-studio", server.url, "--token", server.admin_token,
                 "--project", str(project)]) == 0
    status = capsys.readouterr().out
    assert f"{len(tasks)} tasks, {len(tasks)} with 2 submitted annotation(s)" in status, status
    for email, _ in server.annotators:
        assert re.search(rf"{re.escape(email)}\s+{len(tasks)}\s+0\s+0\s+100%", status), status

    # 1. collected from the server == 2. the same answers in CSV sheets, byte for byte
    via_server = _collect(tmp_path / "via_server", monkeypatch, "--key", str(key), "--label-studio", server.url,
                          "--token", server.admin_token, "--project", str(project))
    emails = [email for email, _ in server.annotators]
    csv_dir = tmp_path / "via_csv"
    csv_dir.mkdir()
    for n, email in enumerate(emails):  # sheets named as Label Studio names the annotators
        write_sheet(sheet / "thumb_sheet.csv", csv_dir / email, answers[n])
    via_csv = _collect(csv_dir, monkeypatch, "--key", str(key), *emails)
    assert "not_collected" not in via_server
    assert via_server["agreement"]["annotators"] == emails
    assert via_server["agreement"]["items"] == len(tasks)
    assert via_server["agreement"]["disagreements"] > 0
    # the scores against the answers given: each item's P, R and penalties the mean of the two annotators'
    records = [json.loads(line) for line in
               (tmp_path / "via_server" / "out" / "thumb_scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(tasks)
    for rec in records:
        given = [answers[n][rec["item"]] for n in range(2)]
        assert rec["P"] == pytest.approx(sum(a["precision"] for a in given) / 2), rec
        assert rec["R"] == pytest.approx(sum(a["recall"] for a in given) / 2), rec
        for field, name in (("Fl", "fluency"), ("Con", "conciseness"), ("Inc", "inclusive")):
            assert rec[field] == pytest.approx(-sum(a[name] or 0 for a in given) / 2), (rec, name)
    assert {(r["SYS"], r["image"], r["hyp"]) for r in records} >= {("sysB", "img03", TRICKY_CAPTION)}
    for name in REPORT_FILES:
        assert (tmp_path / "via_server" / "out" / name).read_bytes() == (csv_dir / "out" / name).read_bytes(), name

    # 3. Label Studio's own JSON export, collected from the file: the same scores
    export_dir = tmp_path / "via_export"
    export_dir.mkdir()
    raw = http_bytes(f"{server.url}/api/projects/{project}/export?exportType=JSON", server.access_token())
    (export_dir / "export.json").write_bytes(raw)
    exported = json.loads(raw)
    assert len(exported) == len(tasks) and all(len(t["annotations"]) == 2 for t in exported)
    via_export = _collect(export_dir, monkeypatch, "--key", str(key), "export.json")
    assert "not_collected" not in via_export
    assert via_export["result"] == via_csv["result"]
    scores = "thumb_scores.jsonl"
    assert (export_dir / "out" / scores).read_bytes() == (csv_dir / "out" / scores).read_bytes()
    # the export names annotators by user id (completed_by is an int): "user <id>", in the same order
    assert all(re.fullmatch(r"user \d+", name) for name in via_export["agreement"]["annotators"])
    assert via_export["agreement"] == {**via_csv["agreement"], "annotators": via_export["agreement"]["annotators"]}


def test_skipped_task_and_legacy_token(server, browser, tmp_path, monkeypatch, capsys):
    """Skip in the browser: collected as not collected, named; the legacy token reads the project too."""
    sheet = _sheet(tmp_path / "small", 1)  # one image, two systems: two items
    project = _push(server, sheet, capsys, "THumB skip", "--annotators", "1")
    tasks = project_tasks(server, project)
    assert len(tasks) == 2
    skipped, labelled = tasks
    email, password = server.annotators[0]
    answers = {skipped["id"]: {"skip": True}, labelled["id"]: answer_for(labelled["data"]["item"], 0)}
    assert annotate_project(browser, server.url, email, password, project, answers, artifacts=tmp_path) == 2
    # the legacy token (enabled for the organization by the fixture) reads the export as the admin's PAT does
    export = http_json("GET", f"{server.url}/api/projects/{project}/export?exportType=JSON",
                       token=server.legacy_token, scheme="Token")
    cancelled = {t["id"]: [a["was_cancelled"] for a in t["annotations"]] for t in export}
    assert cancelled == {skipped["id"]: [True], labelled["id"]: [False]}
    report = _collect(tmp_path / "collected", monkeypatch, "--key", str(sheet / "thumb_key.json"),
                      "--label-studio", server.url, "--token", server.legacy_token, "--project", str(project))
    missing = report["not_collected"]
    assert missing["annotations"] == 1 and missing["items"] == 1, missing
    assert any(str(skipped["id"]) in line or skipped["data"]["item"] in line for line in missing["problems"]), missing


def test_attention_checks_travel_blind_through_the_server(server, browser, tmp_path, monkeypatch, capsys):
    """``--checks``: the check tasks look like the others in Label Studio; the pass rate comes back."""
    folder = tmp_path / "checks"
    folder.mkdir()
    out = folder / "sheet"
    assert main(["thumb", "sheet", str(_outputs(folder / "outputs.json", 3)), "--out", str(out), "--label-studio",
                 "--checks", "2"]) == 0
    key = json.loads((out / "thumb_key.json").read_text(encoding="utf-8"))
    checks = {it["item"] for it in key["items"] if it.get("check")}
    assert len(checks) == 2
    project = _push(server, out, capsys, "THumB checks", "--annotators", "1")
    tasks = project_tasks(server, project)
    assert len(tasks) == 8 and all(set(t["data"]) == {"item", "caption"} for t in tasks)  # nothing marks a check
    failed = sorted(checks)[0]  # the annotator misses one check: precision 5 for a caption of another image
    answers = {t["id"]: {**answer_for(t["data"]["item"], 0),
                         "precision": 1 if t["data"]["item"] in checks and t["data"]["item"] != failed else 5}
               for t in tasks}
    email, password = server.annotators[1]
    assert annotate_project(browser, server.url, email, password, project, answers, artifacts=tmp_path) == 8
    report = _collect(tmp_path / "collected", monkeypatch, "--key", str(out / "thumb_key.json"),
                      "--label-studio", server.url, "--token", server.admin_token, "--project", str(project))
    assert report["attention_checks"]["annotators"] == [
        {"annotator": email, "checked": 2, "passed": 1, "pass_rate": 0.5, "failed": [failed]}]
    assert len(report["result"]["per_caption"]["total"]) == 6  # the checks are not scored
    assert f"attention checks: {email} passed 1/2" in capsys.readouterr().out


def test_token_errors_from_the_real_server(server, sheet, capsys):
    """Legacy tokens switched off (Label Studio 1.23's default) and a wrong token: one line each, no token shown."""
    from support.label_studio_server import set_legacy_tokens

    set_legacy_tokens(server, False)
    try:
        assert main(["thumb", "push", str(sheet), "--label-studio", server.url, "--token", server.legacy_token]) == 1
    finally:
        set_legacy_tokens(server, True)
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"capeval thumb push: error: Label Studio POST {server.url}/api/projects/: HTTP 401")
    assert "legacy token authentication has been disabled" in err and "personal access token" in err
    assert "\n" not in err and server.legacy_token not in err
    wrong = server.admin_token[:-4] + "AAAA"  # a personal access token with a broken signature
    assert main(["thumb", "status", "--label-studio", server.url, "--token", wrong, "--project", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"capeval thumb status: error: Label Studio POST {server.url}/api/token/refresh/: HTTP 401")
    assert "\n" not in err and wrong not in err


def test_local_images_are_uploaded_and_served(server, tmp_path, capsys):
    """``--image-url`` pointing at files: push uploads each image once; the tasks' addresses serve the same bytes."""
    from PIL import Image

    folder = tmp_path / "images"
    out = folder / "sheet"
    (out / "imgs").mkdir(parents=True)
    for i in range(2):
        Image.new("RGB", (24, 16), (40 + 100 * i, 90, 200)).save(out / "imgs" / f"img{i:02d}.png")
    assert main(["thumb", "sheet", str(_outputs(folder / "outputs.json", 2)), "--out", str(out), "--label-studio",
                 "--image-url", "imgs/{image}.png"]) == 0
    project = _push(server, out, capsys, "THumB images")
    tasks = project_tasks(server, project)
    assert len(tasks) == 4
    config = server.api("GET", f"/api/projects/{project}")["label_config"]
    assert '<Image name="image" value="$image"' in config  # the rubric's configuration replaced the upload one
    token = server.access_token()
    for task in tasks:
        src = task["data"]["image"]
        assert src.startswith(f"/data/upload/{project}/"), src
        original = out / "imgs" / f"{src.rsplit('-', 1)[-1]}"
        assert http_bytes(server.url + src, token) == original.read_bytes()
    assert len({t["data"]["image"] for t in tasks}) == 2  # one upload per image, shared by its two items
