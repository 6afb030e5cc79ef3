"""Hostile input to the THumB route: only images leave the machine, credentials stay with their
server, sheets do not run formulas, odd sheets and exports are one-line errors or warnings.

The servers here are http.server instances on 127.0.0.1 in threads: a stand-in of Label Studio's API
(tests/support/fake_label_studio.py), a server that redirects, one that records the headers it receives,
and one that echoes the request's Authorization header in its error bodies.
"""
from __future__ import annotations

import csv
import json
import os
import warnings
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from capeval.cli import main
from capeval.thumb.label_studio_api import (
    LabelStudio,
    LabelStudioError,
    progress_of,
    push,
    redact,
    without_userinfo,
)
from capeval.thumb.rubric import RUBRIC_ITEMS
from capeval.thumb.sheets import FORMULA_TRIGGERS, read_cell, sheet_cell
from capeval.thumb.workflow import collect, collect_label_studio, make_sheets
from support import FIXTURES
from support.fake_label_studio import LEGACY_TOKEN, PERSONAL_TOKEN, FakeLabelStudio, jwt
from support.local_server import Server, answer, redirect

SYSTEMS_JSON = FIXTURES / "thumb" / "systems.json"


def png(path: Path, k: int = 0) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4 + k, 3), (10 * k, 20, 30)).save(path, format="PNG")
    return path


@pytest.fixture(autouse=True)
def csv_default_field_limit():
    """Each test starts from the csv module's default field limit (131,072), which reading raises process-wide."""
    before = csv.field_size_limit(131_072)
    yield
    csv.field_size_limit(before)


@pytest.fixture()
def fake():
    with FakeLabelStudio() as server:
        yield server


# ------------------------------------------------------------------------- 1. only images leave


def _sheet_with_image(tmp_path: Path, value: str) -> Path:
    """A Label Studio sheet folder whose first task's image is ``value`` (the others: real PNGs inside)."""
    folder = tmp_path / "sheet"
    for k in range(1, 5):
        png(folder / "imgs" / f"img-10{k}.png", k)
    make_sheets([SYSTEMS_JSON], folder, label_studio=True, image_url="imgs/{image}.png")
    tasks_path = folder / "label-studio" / "tasks.json"
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    tasks[0]["data"]["image"] = value
    tasks_path.write_text(json.dumps(tasks), encoding="utf-8")
    return folder


def _hostile_images(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """``{case: (image value, words of the refusal)}``: each a file that must not be sent."""
    secret = tmp_path / "secret.png"
    png(secret)  # a real image, but outside the sheet folder
    link_dir = tmp_path / "sheet" / "imgs"
    link_dir.mkdir(parents=True, exist_ok=True)
    (link_dir / "link.png").symlink_to(secret)
    os.mkfifo(link_dir / "fifo.png")
    (link_dir / "passwd.png").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    return {
        "dotdot": ("../secret.png", "outside the image root"),
        "percent-encoded dotdot": ("%2e%2e/secret.png", "outside the image root"),
        "absolute": ("/etc/passwd", "outside the image root"),
        "file url": ("file:///etc/passwd", "outside the image root"),
        "symlink out": ("imgs/link.png", "outside the image root"),
        "fifo": ("imgs/fifo.png", "is not a regular file"),
        "not an image": ("imgs/passwd.png", "is not an image Pillow reads"),
    }


@pytest.mark.parametrize("case", ["dotdot", "percent-encoded dotdot", "absolute", "file url", "symlink out", "fifo",
                                  "not an image"])
def test_push_sends_nothing_for_a_file_that_is_not_an_image_under_the_root(fake, tmp_path, case):
    value, words = _hostile_images(tmp_path)[case]
    folder = _sheet_with_image(tmp_path, value)
    first = json.loads((folder / "label-studio" / "tasks.json").read_text(encoding="utf-8"))[0]["data"]["item"]
    with pytest.raises(LabelStudioError) as err:
        push(folder, fake.url, PERSONAL_TOKEN)
    message = str(err.value)
    assert "\n" not in message and f"image of item {first} refused, nothing sent" in message and words in message
    assert fake.state.requests == [] and not fake.state.uploads and not fake.state.projects


def test_tasks_whose_data_is_not_an_object_are_refused(fake, tmp_path):
    folder = _sheet_with_image(tmp_path, "imgs/img-101.png")
    (folder / "label-studio" / "tasks.json").write_text('[{"data": ["../../etc/passwd"]}]', encoding="utf-8")
    with pytest.raises(LabelStudioError, match=r"tasks.json: expected a list of tasks"):
        push(folder, fake.url, PERSONAL_TOKEN)
    assert fake.state.requests == []


def test_dev_zero_is_refused_even_under_an_explicit_root(fake, tmp_path):
    folder = _sheet_with_image(tmp_path, "/dev/zero")
    with pytest.raises(LabelStudioError, match=r"refused, nothing sent: /dev/zero is not a regular file"):
        push(folder, fake.url, PERSONAL_TOKEN, image_root="/dev")
    assert fake.state.requests == []


def test_size_and_pixel_limits(fake, tmp_path, monkeypatch):
    import capeval.thumb.label_studio_api as api

    folder = _sheet_with_image(tmp_path, "imgs/img-101.png")
    monkeypatch.setattr(api, "MAX_IMAGE_BYTES", 10)
    with pytest.raises(LabelStudioError, match=r"bytes, more than an image may \(10\)"):
        push(folder, fake.url, PERSONAL_TOKEN)
    monkeypatch.setattr(api, "MAX_IMAGE_BYTES", 1 << 20)
    monkeypatch.setattr(api, "MAX_IMAGE_PIXELS", 12)  # the images are 5x3 to 8x3
    with pytest.raises(LabelStudioError, match=r"pixels, more than an image may \(12\)"):
        push(folder, fake.url, PERSONAL_TOKEN)
    assert fake.state.requests == []


def test_images_under_the_root_are_uploaded_links_inside_included(fake, tmp_path):
    folder = _sheet_with_image(tmp_path, "imgs/alias.png")
    (folder / "imgs" / "alias.png").symlink_to(folder / "imgs" / "img-103.png")  # a link that stays inside
    pushed = push(folder, fake.url, PERSONAL_TOKEN)
    assert pushed.uploaded_images == 5  # one per task image value: the link and the four files

    elsewhere = png(tmp_path / "pictures" / "far.png", 7)
    folder2 = _sheet_with_image(tmp_path / "two", str(elsewhere))
    with pytest.raises(LabelStudioError, match="outside the image root"):
        push(folder2, fake.url, PERSONAL_TOKEN)
    # --image-root: images elsewhere, and then only there (the sheet's own imgs/ is outside it)
    with pytest.raises(LabelStudioError, match="outside the image root"):
        push(folder2, fake.url, PERSONAL_TOKEN, image_root=tmp_path / "pictures")
    tasks_path = folder2 / "label-studio" / "tasks.json"
    tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    for task in tasks:
        task["data"]["image"] = str(elsewhere)
    tasks_path.write_text(json.dumps(tasks), encoding="utf-8")
    pushed = push(folder2, fake.url, PERSONAL_TOKEN, image_root=tmp_path / "pictures")
    assert pushed.uploaded_images == 1
    assert elsewhere.read_bytes() in [u["bytes"] for u in fake.state.uploads.values()]


def test_a_file_swapped_after_the_check_is_not_sent(fake, tmp_path, monkeypatch):
    import capeval.thumb.label_studio_api as api

    folder = _sheet_with_image(tmp_path, "imgs/img-101.png")
    secret = png(tmp_path / "secret.png", 9)
    checked = api._resolve_images

    def check_then_swap(*args):
        files = checked(*args)
        target = folder / "imgs" / "img-102.png"
        target.unlink()
        target.symlink_to(secret)  # after the check, before the upload
        return files

    monkeypatch.setattr(api, "_resolve_images", check_then_swap)
    words = r"image imgs/img-102.png refused: .*outside the image root.*\(the half-made project 1 was deleted\)"
    with pytest.raises(LabelStudioError, match=words):
        push(folder, fake.url, PERSONAL_TOKEN)
    assert secret.read_bytes() not in [u["bytes"] for u in fake.state.uploads.values()]
    assert not fake.state.projects


def test_cli_push_refuses_in_one_line_and_takes_image_root(fake, tmp_path, capsys):
    secret = png(tmp_path / "outside" / "x.png")
    folder = _sheet_with_image(tmp_path, str(secret))
    argv = ["thumb", "push", str(folder), "--label-studio", fake.url, "--token", PERSONAL_TOKEN]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refused, nothing sent" in err and str(secret) in err
    assert fake.state.requests == []
    tasks_path = folder / "label-studio" / "tasks.json"
    tasks = [{**t, "data": {**t["data"], "image": str(secret)}}
             for t in json.loads(tasks_path.read_text(encoding="utf-8"))]
    tasks_path.write_text(json.dumps(tasks), encoding="utf-8")
    assert main([*argv, "--image-root", str(tmp_path / "outside")]) == 0
    assert "1 image(s) uploaded" in capsys.readouterr().out


# ------------------------------------------------------------------ 2. credentials stay with their server


def _users(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    answer(handler, 200, [{"id": 7, "email": "ann1@example.org"}])


@pytest.mark.parametrize("token", [LEGACY_TOKEN, PERSONAL_TOKEN])
def test_a_redirect_to_another_port_gets_no_credentials(token):
    with Server(_users) as other:
        with Server(lambda h, b: redirect(h, 307, other.url + h.path)) as first:
            client = LabelStudio(first.url, token)
            with pytest.raises(LabelStudioError) as err:
                client.users()
    message = str(err.value)
    assert "\n" not in message and "redirects to another origin" in message
    assert f"({first.url} → {other.url})" in message and token not in message
    assert other.received == []  # refused before anything went there
    assert all("Authorization" not in headers for _, _, headers in other.received)


def test_a_redirect_to_another_scheme_or_host_is_refused():
    port_holder: list[str] = []
    with Server(lambda h, b: redirect(h, 302, port_holder[0] + h.path)) as first:
        for target in (first.url.replace("http://", "https://"), first.url.replace("127.0.0.1", "localhost")):
            port_holder[:] = [target]
            with pytest.raises(LabelStudioError, match="redirects to another origin"):
                LabelStudio(first.url, LEGACY_TOKEN).users()
        assert len(first.received) == 2


def test_a_same_origin_redirect_is_followed_with_the_token():
    def handle(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path.startswith("/api/users/"):
            redirect(handler, 307, "/moved" + handler.path)  # relative: the same origin
        elif handler.path.startswith("/moved/"):
            redirect(handler, 302, f"http://127.0.0.1:{handler.server.server_address[1]}/final/")  # absolute
        else:
            _users(handler, body)

    with Server(handle) as server:
        assert LabelStudio(server.url, LEGACY_TOKEN).users() == {7: "ann1@example.org"}
    assert [p for _, p, _ in server.received] == ["/api/users/", "/moved/api/users/", "/final/"]
    assert all(h.get("Authorization") == f"Token {LEGACY_TOKEN}" for _, _, h in server.received)


ACCESS = jwt({"token_type": "access", "jti": "echoed-access-token-0123456789"})


def _echo(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    """Exchanges a personal token; answers anything else 400 with the request's Authorization in it."""
    if handler.path == "/api/token/refresh/":
        answer(handler, 200, {"access": ACCESS})
        return
    auth = handler.headers.get("Authorization", "")
    if handler.path.startswith("/api/users/"):
        # the echo sits just past the one-line cut (300 characters): redaction must come before the cut
        answer(handler, 400, {"detail": "x" * 280 + f" you sent {auth}"})
    elif handler.path.startswith("/api/projects/1/"):
        answer(handler, 400, f"plain text: Authorization: {auth}; body {body[:80]!r}".encode())
    else:
        answer(handler, 400, {"detail": f"bad header {auth}"}, reason=f"Bad {auth.split()[-1]}")


@pytest.mark.parametrize("token", [LEGACY_TOKEN, PERSONAL_TOKEN])
@pytest.mark.parametrize("argv", [["status", "--project", "1"], ["status", "--project", "2"]])
def test_a_server_that_echoes_the_token_does_not_get_it_printed(token, argv, capsys):
    with Server(_echo) as server:
        code = main(["thumb", argv[0], "--label-studio", server.url, "--token", token, *argv[1:]])
        assert code == 1
        out, err = capsys.readouterr()
        for secret in (token, ACCESS):
            for text in (out, err):
                assert secret not in text and secret[:24] not in text and secret[-24:] not in text
        assert "***" in err and len(err.strip().splitlines()) == 1
        with pytest.raises(LabelStudioError) as caught:
            LabelStudio(server.url, token).users()
        assert token not in str(caught.value) and ACCESS[:24] not in str(caught.value)
        assert "you sent" in str(caught.value) or "…" in str(caught.value)


def test_userinfo_in_the_address_never_appears(capsys, tmp_path):
    assert without_userinfo("http://ann:s3cret@127.0.0.1:8080/x") == "http://***@127.0.0.1:8080/x"
    assert redact("see https://u:s3cret@example.org/a and TOKEN1 here", ["TOKEN1"]) == \
        "see https://***@example.org/a and *** here"
    with pytest.raises(LabelStudioError) as err:
        LabelStudio("http://ann:s3cret@127.0.0.1:9", LEGACY_TOKEN)
    assert "s3cret" not in str(err.value) and "http://***@127.0.0.1:9" in str(err.value)
    with pytest.raises(LabelStudioError) as err:
        LabelStudio("ftp://ann:s3cret@127.0.0.1:9", LEGACY_TOKEN)
    assert "s3cret" not in str(err.value)
    assert LEGACY_TOKEN not in repr(LabelStudio("http://127.0.0.1:9", LEGACY_TOKEN))
    assert main(["thumb", "status", "--label-studio", "http://ann:s3cret@127.0.0.1:9", "--token", LEGACY_TOKEN,
                 "--project", "1"]) == 1
    out, err = capsys.readouterr()
    assert "s3cret" not in out + err and "ann:" not in out + err


# ------------------------------------------------------------------------------- 3. formulas in sheets

HOSTILE_CAPTIONS = ['=HYPERLINK("http://x","y")', "-1 dogs", "+1 cats", "@SUM(A1:A2)", "'=quoted already",
                    "''two quotes", "'plain quote", "a dog = a cat"]


def test_sheet_cell_round_trips_every_text():
    texts = ["", "'", "''", "'a", "a'", "=", "\t", "\r", "'\t", *HOSTILE_CAPTIONS, *(c + "x" for c in FORMULA_TRIGGERS)]
    for text in texts:
        written = sheet_cell(text)
        assert not written.startswith(FORMULA_TRIGGERS)
        assert read_cell(written) == text
    assert sheet_cell("plain") == "plain" and sheet_cell("=1+1") == "'=1+1"


def _hostile_systems(tmp_path: Path) -> Path:
    systems = {"sysA": [{"image": f"=img{k}", "caption": c} for k, c in enumerate(HOSTILE_CAPTIONS)],
               "sysB": [{"image": f"=img{k}", "caption": f"a plain caption {k}"} for k in range(len(HOSTILE_CAPTIONS))]}
    path = tmp_path / "systems.json"
    path.write_text(json.dumps(systems), encoding="utf-8")
    return path


def _fill(sheet: Path, out: Path, salt: int, comment: str = "") -> Path:
    """What a spreadsheet keeping text as text writes back: the same cells, the ratings filled in."""
    with sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    for k, row in enumerate(rows[1:]):
        row[3:8] = [str(1 + (k + salt) % 5), str(1 + k % 5), "", "-0.5" if k % 2 else "", ""]
        row[8] = comment
    with out.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return out


def test_formula_captions_are_neutralised_in_sheets_and_come_back_unchanged(tmp_path):
    files = make_sheets([_hostile_systems(tmp_path)], tmp_path / "s", cleanup="none")
    with files.csv.open(newline="", encoding="utf-8") as fh:
        cells = [c for row in csv.reader(fh) for c in row]
    assert not [c for c in cells if c.startswith(FORMULA_TRIGGERS)]
    assert sheet_cell(HOSTILE_CAPTIONS[0]) in cells
    first = _fill(files.csv, tmp_path / "a.csv", 0)
    second = _fill(files.csv, tmp_path / "b.csv", 1)
    report = collect(files.key, [first, second], out_dir=tmp_path / "out", bootstrap_samples=0)
    assert report["agreement"]["disagreements"] > 0
    records = [json.loads(line) for line in (tmp_path / "out" / "thumb_scores.jsonl").read_text("utf-8").splitlines()]
    assert {r["hyp"] for r in records if r["SYS"] == "sysA"} == set(HOSTILE_CAPTIONS)
    assert {r["image"] for r in records} == {f"=img{k}" for k in range(len(HOSTILE_CAPTIONS))}
    with (tmp_path / "out" / "thumb_disagreements.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert not [c for row in rows for c in row if c.startswith(FORMULA_TRIGGERS)]
    assert {read_cell(r[2]) for r in rows[1:]} <= set(HOSTILE_CAPTIONS) | {f"a plain caption {k}" for k in range(8)}


# ------------------------------------------------------------------------------ 4. odd sheet files


def test_a_comment_longer_than_the_csv_field_limit_is_read(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s")
    filled = _fill(files.csv, tmp_path / "a.csv", 0, comment="long " * 60_000)  # 300,000 characters
    report = collect(files.key, [filled], bootstrap_samples=0)
    assert report["result"]["systems"]


def test_a_score_file_with_a_long_field_and_one_not_utf8(tmp_path):
    from capeval.thumb.records import load_scores

    path = tmp_path / "scores.csv"
    rows = [["SYS", "image", "hyp", "P", "R", "Fl", "Inc", "Con", "note"],
            ["a", "1", "a dog", "5", "4", "0", "0", "0", "n" * 200_000],
            ["b", "1", "a cat", "3", "4", "-0.1", "0", "0", ""]]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    assert len(load_scores(path).systems) == 2
    path.write_bytes(path.read_bytes().replace(b"a dog", b"a d\xf6g"))
    with pytest.raises(ValueError, match=r"scores.csv: not UTF-8 text \(byte \d+\)"):
        load_scores(path)


def test_a_sheet_that_is_not_utf8_is_one_line_naming_the_file(tmp_path, capsys):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s")
    filled = _fill(files.csv, tmp_path / "latin1.csv", 0)
    data = filled.read_bytes()
    cut = data.index(b"\n") + 8  # inside the first row: a Latin-1 byte, as a spreadsheet saving "CSV" may write
    filled.write_bytes(data[:cut] + b"\xf6" + data[cut:])
    with pytest.raises(ValueError, match=r"latin1.csv: not UTF-8 text \(byte \d+\); save the sheet as CSV UTF-8"):
        collect(files.key, [filled], bootstrap_samples=0)
    assert main(["thumb", "collect", "--key", str(files.key), str(filled), "--bootstrap-samples", "0"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(filled) in err and "not UTF-8" in err


# ---------------------------------------------------------------------------- 5. odd export values


def _export(files, tmp_path: Path, odd: dict) -> Path:
    tasks = json.loads(files.label_studio.tasks.read_text(encoding="utf-8"))
    answer = [{"from_name": n, "to_name": "caption", "type": "choices", "value": {"choices": ["3" if n in
              ("precision", "recall") else "0"]}} for n in RUBRIC_ITEMS]
    export = [{"id": 100 + k, "data": t["data"],
               "annotations": [{"id": k, "completed_by": {"id": 7, "email": "ann1@example.org"}, "result": answer}]}
              for k, t in enumerate(tasks)]
    export[0]["annotations"][0].update(odd)
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    return path


@pytest.mark.parametrize("odd", [{"completed_by": {"id": [1, 2]}}, {"completed_by": [1, 2]},
                                 {"completed_by": {"email": {"a": 1}}}, {"completed_by": {"id": True}}])
def test_an_odd_annotator_is_left_out_with_one_warning_line(tmp_path, odd):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", label_studio=True)
    with pytest.warns(UserWarning) as caught:
        report = collect_label_studio(files.key, [_export(files, tmp_path, odd)], bootstrap_samples=0)
    lines = [str(w.message) for w in caught]
    assert any(line.startswith("export.json task 100 (item ") and "is not a user id or e-mail; not collected" in line
               and "\n" not in line for line in lines)
    assert report["not_collected"]["annotations"] == 1


def test_an_odd_task_id_and_a_task_that_is_not_an_object(tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", label_studio=True)
    path = _export(files, tmp_path, {})
    export = json.loads(path.read_text(encoding="utf-8"))
    export[0]["id"] = [1, 2]
    path.write_text(json.dumps(export), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = collect_label_studio(files.key, [path], bootstrap_samples=0)  # a task id is only a name
    assert report["result"]["systems"]


def test_status_and_collect_from_a_server_with_odd_values(fake, tmp_path):
    files = make_sheets([SYSTEMS_JSON], tmp_path / "s", label_studio=True)
    pushed = push(files.csv.parent, fake.url, PERSONAL_TOKEN)
    for k in range(pushed.tasks):
        fake.annotate(pushed.id, k, 7, json.loads(_export(files, tmp_path, {}).read_text("utf-8"))[k]
                      ["annotations"][0]["result"])
    task = fake.state.tasks[pushed.id][0]
    task["annotations"][0]["completed_by"] = {"id": [1, 2]}
    task["id"] = {"odd": 1}
    state = progress_of(LabelStudio(fake.url, PERSONAL_TOKEN), pushed.id)
    assert state.tasks == pushed.tasks
    from capeval.thumb.workflow import collect_label_studio_project

    with pytest.warns(UserWarning, match="is not a user id or e-mail; not collected"), \
            pytest.warns(UserWarning, match=r"item\(s\) of the key have no collected annotation"):
        report = collect_label_studio_project(files.key, fake.url, pushed.id, token=PERSONAL_TOKEN,
                                              bootstrap_samples=0)
    assert report["not_collected"]["annotations"] == 1
