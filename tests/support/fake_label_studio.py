"""A small stand-in for Label Studio's HTTP API, for fast tests of capeval's client (no Django, no browser).

It answers the endpoints :mod:`capeval.thumb.label_studio_api` uses, with the shapes Label Studio 1.23
answers them (checked against the real server in tests/thumb/test_label_studio_server.py): personal
access tokens exchanged at ``/api/token/refresh/`` for access tokens that expire after ``access_uses``
requests, legacy ``Token`` headers refused as 1.23 refuses them unless ``legacy_enabled``, projects (created,
changed, deleted), imports (tasks, or files with ``commit_to_project=false``, refused under a configuration
with more than one data key as 1.23 refuses them), file uploads, the JSON export and users.
Every request is recorded (method, path, Authorization header).
"""
from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def jwt(payload: dict[str, Any]) -> str:
    """An unsigned JWT-shaped token with ``payload`` (the client reads the payload, never the signature)."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.c2lnbmF0dXJl"


PERSONAL_TOKEN = jwt({"token_type": "refresh", "user_id": "1", "jti": "p1"})
LEGACY_TOKEN = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class State:
    legacy_enabled: bool = False
    access_uses: int = 1000
    users: dict[int, str] = field(default_factory=lambda: {1: "admin@example.org", 7: "ann1@example.org",
                                                           9: "ann2@example.org"})
    projects: dict[int, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    uploads: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    access: dict[str, int] = field(default_factory=dict)  # access token -> uses left
    refuse_import: bool = False
    issued: int = 0


class _Handler(BaseHTTPRequestHandler):
    state: State

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self, status: int, payload: Any) -> None:
        body = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        kind, _, token = auth.partition(" ")
        if kind == "Token" and token == LEGACY_TOKEN:
            if self.state.legacy_enabled:
                return True
            self._answer(401, {"detail": "Authentication token no longer valid: legacy token authentication has "
                                         "been disabled for this organization"})
            return False
        if kind == "Bearer" and self.state.access.get(token, 0) > 0:
            self.state.access[token] -= 1
            return True
        self._answer(401, {"detail": "Given token not valid for any token type"} if kind == "Bearer"
                     else {"detail": "Invalid token."})
        return False

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self._route("POST")

    def do_GET(self) -> None:  # noqa: N802
        self._route("GET")

    def do_PATCH(self) -> None:  # noqa: N802
        self._route("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._route("DELETE")

    def _route(self, method: str) -> None:
        s = self.state
        parsed = urllib.parse.urlsplit(self.path)
        path, query = parsed.path, urllib.parse.parse_qs(parsed.query)
        s.requests.append((method, self.path, self.headers.get("Authorization", "")))
        body = self._body() if method in ("POST", "PATCH") else b""
        if path == "/api/token/refresh/":
            refresh = json.loads(body or b"{}").get("refresh")
            if refresh != PERSONAL_TOKEN:
                return self._answer(401, {"detail": "Token is invalid", "code": "token_not_valid"})
            s.issued += 1
            access = jwt({"token_type": "access", "user_id": "1", "jti": f"a{s.issued}"})
            s.access[access] = s.access_uses
            return self._answer(200, {"access": access})
        if not self._authorized():
            return None
        parts = [p for p in path.split("/") if p]
        if parts == ["api", "users"]:
            return self._answer(200, [{"id": i, "email": e} for i, e in s.users.items()])
        if parts == ["api", "projects"] and method == "POST":
            data = json.loads(body)
            if not data.get("title"):
                return self._answer(400, {"validation_errors": {"title": ["This field may not be blank."]}})
            pid = len(s.projects) + 1
            s.projects[pid] = {"id": pid, **data}
            s.tasks[pid] = []
            return self._answer(201, s.projects[pid])
        if len(parts) >= 3 and parts[:2] == ["api", "projects"] and parts[2].isdigit():
            pid = int(parts[2])
            if pid not in s.projects:
                return self._answer(404, {"detail": "No Project matches the given query."})
            rest = parts[3:]
            if not rest and method == "DELETE":
                del s.projects[pid]
                return self._answer(204, None)
            if not rest and method == "PATCH":
                if s.tasks[pid] and "label_config" in json.loads(body):
                    return self._answer(400, {"validation_errors": {"label_config": ["tasks exist"]}})
                s.projects[pid].update(json.loads(body))
            if not rest:
                return self._answer(200, {**s.projects[pid], "task_number": len(s.tasks[pid])})
            if rest == ["import"] and s.refuse_import:
                return self._answer(400, {"validation_errors": {"non_field_errors": ["refused by the test"]}})
            if rest == ["import"]:
                if self.headers.get("Content-Type", "").startswith("multipart/form-data"):
                    if s.projects[pid]["label_config"].count("$") > 1:  # as Label Studio 1.23 answers
                        return self._answer(400, {"non_field_errors": [
                            "Failed to parse input file: Your label config has more than one data key and direct "
                            "file upload supports only one data key."]})
                    name = body.split(b'filename="', 1)[1].split(b'"', 1)[0].decode()
                    content = body.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n--", 1)[0]
                    uid = len(s.uploads) + 1
                    s.uploads[uid] = {"id": uid, "file": f"upload/{pid}/abcd{uid}-{name}", "bytes": content}
                    assert query.get("commit_to_project") == ["false"]
                    return self._answer(201, {"task_count": 1, "file_upload_ids": [uid]})
                tasks = json.loads(body)
                for task in tasks:
                    s.tasks[pid].append({"id": 100 * pid + len(s.tasks[pid]), "data": task["data"],
                                         "annotations": []})
                return self._answer(201, {"task_count": len(tasks), "file_upload_ids": []})
            if rest == ["file-uploads"]:
                ids = json.loads(query.get("ids", ["[]"])[0])
                return self._answer(200, [{"id": u["id"], "file": u["file"]} for u in s.uploads.values()
                                          if u["id"] in ids])
            if rest == ["export"]:
                assert query.get("exportType") == ["JSON"]
                return self._answer(200, s.tasks[pid])
        return self._answer(404, {"detail": "Not found."})


class FakeLabelStudio:
    """``with FakeLabelStudio() as fake:`` a server on 127.0.0.1 (``fake.url``); its :class:`State` is
    ``fake.state``."""

    def __init__(self, **state: Any) -> None:
        self.state = State(**state)
        handler = type("Handler", (_Handler,), {"state": self.state})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeLabelStudio:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def annotate(self, project: int, task_index: int, user: int, result: list[dict[str, Any]],
                 cancelled: bool = False) -> None:
        """Add an annotation as Label Studio's export shows it (``completed_by`` is the user's id)."""
        task = self.state.tasks[project][task_index]
        task["annotations"].append({"id": len(task["annotations"]) + 1000 * task["id"], "completed_by": user,
                                    "was_cancelled": cancelled, "result": result, "task": task["id"]})
