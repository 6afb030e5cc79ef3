"""capeval's Label Studio client (push, collect from a server, status) against a stand-in of the HTTP API.

The stand-in (tests/support/fake_label_studio.py) answers as Label Studio 1.23 does; the real server,
driven through its web interface, is tests/thumb/test_label_studio_server.py. These tests check what
the real one cannot show quickly: token handling, one-line HTTP errors, uploads and their addresses.
"""
from __future__ import annotations

import json
import warnings

import pytest

from capeval.cli import main
from capeval.thumb.label_studio_api import (
    TOKEN_ENV,
    LabelStudio,
    LabelStudioError,
    fetch_export,
    progress_of,
    push,
    token_kind,
)
from capeval.thumb.rubric import RUBRIC_ITEMS
from capeval.thumb.workflow import collect_label_studio, collect_label_studio_project, make_sheets
from support import FIXTURES
from support.fake_label_studio import LEGACY_TOKEN, PERSONAL_TOKEN, FakeLabelStudio, jwt

SYSTEMS_JSON = FIXTURES / "thumb" / "systems.json"


def png(path, k: int = 0) -> None:
    """A small real PNG (push uploads only files Pillow reads as images), different per ``k``."""
    from PIL import Image

    Image.new("RGB", (4 + k, 3), (10 * k, 20, 30)).save(path, format="PNG")


def answer(k: int) -> list[dict]:
    """A complete rubric answer, different per task, as Label Studio's ``result`` entries."""
    values = {"precision": str(1 + k % 5), "recall": str(1 + (k * 2) % 5), "fluency": ["0", "0.1"][k % 2],
              "conciseness": "0", "inclusive": "0"}
    return [{"from_name": n, "to_name": "caption", "type": "choices", "value": {"choices": [values[n]]}}
            for n in RUBRIC_ITEMS]


@pytest.fixture()
def fake():
    with FakeLabelStudio() as server:
        yield server


@pytest.fixture()
def sheets(tmp_path):
    return make_sheets([SYSTEMS_JSON], tmp_path / "sheets", seed=0, label_studio=True)


def test_token_kinds():
    assert token_kind(PERSONAL_TOKEN) == "personal"
    assert token_kind(jwt({"token_type": "access"})) == "access"
    assert token_kind(LEGACY_TOKEN) == "legacy"
    assert token_kind("a.b.c") == "legacy"  # three parts, but no JSON payload


def test_personal_token_is_exchanged_and_exchanged_again_when_the_access_token_expires(fake):
    fake.state.access_uses = 2
    client = LabelStudio(fake.url, PERSONAL_TOKEN)
    for _ in range(5):
        assert client.users()[7] == "ann1@example.org"
    refreshes = [r for r in fake.state.requests if r[1] == "/api/token/refresh/"]
    assert len(refreshes) == 3  # 2 uses per access token: 5 calls need 3 (one 401 each time it ran out)
    api = [r for r in fake.state.requests if r[1] == "/api/users/"]
    assert all(auth.startswith("Bearer ") and PERSONAL_TOKEN not in auth for _, _, auth in api)
    assert PERSONAL_TOKEN not in repr(client)


def test_legacy_token_header_and_the_disabled_legacy_message(fake):
    with pytest.raises(LabelStudioError) as err:
        LabelStudio(fake.url, LEGACY_TOKEN).users()
    message = str(err.value)
    assert "\n" not in message and LEGACY_TOKEN not in message
    assert f"GET {fake.url}/api/users/: HTTP 401" in message and "personal access token" in message
    assert (err.value.status, err.value.kind) == (401, "legacy_token_disabled")  # fields, for code to branch on
    fake.state.legacy_enabled = True
    assert LabelStudio(fake.url, LEGACY_TOKEN).users()[9] == "ann2@example.org"
    assert fake.state.requests[-1][2] == f"Token {LEGACY_TOKEN}"


def test_token_from_the_environment_and_none_at_all(fake, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(LabelStudioError, match=f"pass token=TOKEN or set {TOKEN_ENV}"):
        LabelStudio(fake.url)
    monkeypatch.setenv(TOKEN_ENV, PERSONAL_TOKEN)
    assert LabelStudio(fake.url).users()[1] == "admin@example.org"


@pytest.mark.parametrize("token, words", [
    (jwt({"token_type": "refresh", "jti": "other"}), "POST {url}/api/token/refresh/: HTTP 401"),
    ("not-a-token", "GET {url}/api/users/: HTTP 401 Unauthorized: Invalid token. (check the token"),
])
def test_bad_tokens_are_one_line_naming_the_address_and_status(fake, token, words):
    with pytest.raises(LabelStudioError) as err:
        LabelStudio(fake.url, token).users()
    assert words.format(url=fake.url) in str(err.value)
    assert "\n" not in str(err.value) and token not in str(err.value)


def test_unreachable_server_and_not_an_address():
    with pytest.raises(LabelStudioError, match=r"cannot reach Label Studio at http://127.0.0.1:9"):
        LabelStudio("http://127.0.0.1:9", LEGACY_TOKEN, timeout=5).users()
    with pytest.raises(LabelStudioError, match="not a server address"):
        LabelStudio("localhost:8080", LEGACY_TOKEN)


def test_push_creates_the_project_with_the_sheet_folder(fake, sheets):
    pushed = push(sheets.csv.parent, fake.url, PERSONAL_TOKEN, title="THumB pilot", annotators=3)
    project = fake.state.projects[pushed.id]
    folder = sheets.label_studio
    assert project["label_config"] == folder.config.read_text(encoding="utf-8")
    assert project["expert_instruction"] == folder.instructions.read_text(encoding="utf-8")
    assert project["maximum_annotations"] == 3 and project["title"] == "THumB pilot"
    sent = [t["data"] for t in fake.state.tasks[pushed.id]]
    assert sent == [t["data"] for t in json.loads(folder.tasks.read_text(encoding="utf-8"))]
    assert pushed.tasks == len(sent) and pushed.url == f"{fake.url}/projects/{pushed.id}"
    record = json.loads(pushed.record.read_text(encoding="utf-8"))
    assert record["project"] == pushed.id and record["server"] == fake.url
    assert PERSONAL_TOKEN not in pushed.record.read_text(encoding="utf-8")


def test_push_uploads_local_images_and_references_addresses(fake, tmp_path):
    images = tmp_path / "sheets" / "imgs"
    images.mkdir(parents=True)
    for k, name in enumerate(("img-101", "img-102", "img-103", "img-104")):
        png(images / f"{name}.png", k)
    sheets = make_sheets([SYSTEMS_JSON], tmp_path / "sheets", label_studio=True, image_url="imgs/{image}.png")
    pushed = push(sheets.csv.parent, fake.url, PERSONAL_TOKEN)
    assert pushed.uploaded_images == 4 and len(fake.state.uploads) == 4  # one upload per image, not per task
    # uploaded under a one-key configuration (Label Studio refuses uploads otherwise), then the rubric's
    assert fake.state.projects[pushed.id]["label_config"] == sheets.label_studio.config.read_text(encoding="utf-8")
    by_file = {u["file"]: u["bytes"] for u in fake.state.uploads.values()}
    for task in fake.state.tasks[pushed.id]:
        src = task["data"]["image"]
        assert src.startswith(f"/data/upload/{pushed.id}/")
        k = int(task["data"]["image"].rsplit("-", 1)[-1][:-4]) - 101  # the uploaded copy of its own file
        assert by_file[src[len("/data/"):]] == (images / f"img-{101 + k}.png").read_bytes()

    remote = make_sheets([SYSTEMS_JSON], tmp_path / "remote", label_studio=True,
                         image_url="https://images.example.org/{image}.jpg")
    pushed = push(remote.csv.parent, fake.url, PERSONAL_TOKEN)
    assert pushed.uploaded_images == 0 and len(fake.state.uploads) == 4
    assert {t["data"]["image"] for t in fake.state.tasks[pushed.id]} == {
        f"https://images.example.org/img-10{k}.jpg" for k in range(1, 5)}


def test_push_refuses_what_it_cannot_send(fake, tmp_path, sheets):
    missing = make_sheets([SYSTEMS_JSON], tmp_path / "missing", label_studio=True, image_url="nowhere/{image}.png")
    with pytest.raises(LabelStudioError,
                       match=r"4 image\(s\) of the tasks are neither an http\(s\) address nor a file"):
        push(missing.csv.parent, fake.url, PERSONAL_TOKEN)
    plain = make_sheets([SYSTEMS_JSON], tmp_path / "plain")
    with pytest.raises(LabelStudioError, match=r"lacks config.xml, tasks.json, instructions.html: make the sheet"):
        push(plain.csv.parent, fake.url, PERSONAL_TOKEN)
    with pytest.raises(LabelStudioError, match="^annotators must be an integer from 1 to 10"):
        push(sheets.csv.parent, fake.url, PERSONAL_TOKEN, annotators=0)
    with pytest.raises(LabelStudioError, match="1 to 50 characters"):
        push(sheets.csv.parent, fake.url, PERSONAL_TOKEN, title="x" * 51)
    assert not fake.state.projects  # nothing was created by a refused push


def test_a_push_that_fails_half_way_deletes_its_project(fake, sheets):
    fake.state.refuse_import = True
    with pytest.raises(LabelStudioError) as err:
        push(sheets.csv.parent, fake.url, PERSONAL_TOKEN)
    assert str(err.value) == (f"Label Studio POST {fake.url}/api/projects/1/import: HTTP 400 Bad Request: "
                              '{"non_field_errors": ["refused by the test"]} (the half-made project 1 was deleted)')
    assert (err.value.status, err.value.deleted_project, err.value.half_made_project) == (400, 1, None)
    assert not fake.state.projects and not (sheets.label_studio.config.parent / "project.json").exists()


def _annotated_project(fake, sheets) -> int:
    pushed = push(sheets.csv.parent, fake.url, PERSONAL_TOKEN)
    for k in range(pushed.tasks):
        fake.annotate(pushed.id, k, 7, answer(k))
        if k != 2:
            fake.annotate(pushed.id, k, 9, answer(k + (k % 3 == 0)), cancelled=(k == 4))
    return pushed.id


def test_collect_from_the_server_equals_collect_from_its_export_file(fake, sheets, tmp_path):
    project = _annotated_project(fake, sheets)
    with pytest.warns(UserWarning) as caught:
        from_server = collect_label_studio_project(sheets.key, fake.url, project, token=PERSONAL_TOKEN,
                                                   out_dir=tmp_path / "server", bootstrap_samples=0)
    lines = [str(w.message) for w in caught]
    assert any(f"project {project} task" in line and "ann2@example.org: skipped / cancelled" in line for line in lines)
    assert from_server["agreement"]["annotators"] == ["ann1@example.org", "ann2@example.org"]
    assert from_server["not_collected"]["annotations"] == 1

    name, data = fetch_export(LabelStudio(fake.url, PERSONAL_TOKEN), project)
    export = tmp_path / "export.json"
    export.write_text(json.dumps(data), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_file = collect_label_studio(sheets.key, [export], out_dir=tmp_path / "file", bootstrap_samples=0)
    assert from_file["result"] == from_server["result"]
    for name in ("thumb_scores.jsonl", "thumb_disagreements.csv"):
        assert (tmp_path / "server" / name).read_bytes() == (tmp_path / "file" / name).read_bytes()


def test_status_counts_each_annotators_work(fake, sheets):
    project = _annotated_project(fake, sheets)
    state = progress_of(LabelStudio(fake.url, PERSONAL_TOKEN), project)
    tasks = len(fake.state.tasks[project])
    assert state.tasks == tasks and state.maximum_annotations == 2
    rows = {a.annotator: (a.submitted, a.skipped, a.left) for a in state.annotators}
    assert rows == {"ann1@example.org": (tasks, 0, 0), "ann2@example.org": (tasks - 2, 1, 1)}
    assert state.complete_tasks == tasks - 2


def test_cli_push_status_collect(fake, sheets, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, PERSONAL_TOKEN)
    folder = str(sheets.csv.parent)
    assert main(["thumb", "push", folder, "--label-studio", fake.url, "--project-title", "pilot"]) == 0
    out = capsys.readouterr().out
    assert f"Label Studio project 1 created: {fake.url}/projects/1" in out
    assert PERSONAL_TOKEN not in out
    for k in range(len(fake.state.tasks[1])):
        fake.annotate(1, k, 7, answer(k))
    assert main(["thumb", "status", "--label-studio", fake.url, "--project", "1"]) == 0
    out = capsys.readouterr().out
    assert "project 1 (pilot)" in out and "ann1@example.org" in out and "100%" in out
    assert main(["thumb", "collect", "--key", str(sheets.key), "--label-studio", fake.url, "--project", "1",
                 "--out", str(tmp_path / "out"), "--bootstrap-samples", "0"]) == 0
    assert (tmp_path / "out" / "thumb_report.json").is_file()


@pytest.mark.parametrize("argv, words", [
    (["--label-studio", "URL"], "needs both --label-studio URL and --project ID"),
    (["some.csv", "--label-studio", "URL", "--project", "1"], "give either files (1 given) or --label-studio"),
    ([], "nothing to collect: give filled sheet CSV(s)"),
])
def test_cli_collect_argument_errors(sheets, capsys, argv, words):
    assert main(["thumb", "collect", "--key", str(sheets.key), *argv]) == 1
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_cli_http_error_is_one_line(fake, sheets, capsys):
    assert main(["thumb", "status", "--label-studio", fake.url, "--token", PERSONAL_TOKEN, "--project", "42"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"capeval thumb status: error: Label Studio GET {fake.url}/api/projects/42/: HTTP 404 Not Found: "
                   "No Project matches the given query.")
