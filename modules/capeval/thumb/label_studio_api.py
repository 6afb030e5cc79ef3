"""Label Studio's HTTP API for THumB: push a project, pull its annotations, show each annotator's progress.

The online part of the Label Studio route (push, pull, progress); the offline part (configuration,
tasks, reading an export file) is :mod:`capeval.thumb.label_studio`.

* ``capeval thumb push DIR --label-studio URL`` (:func:`push`) creates a project from what
  ``capeval thumb sheet … --label-studio`` wrote into ``DIR/label-studio``: the labeling configuration,
  the expert instructions, ``maximum_annotations`` (how many annotators label each task; default 2) and
  the tasks. Images referenced by an ``http(s)://`` or ``data:`` address stay references; images that are
  files (a relative ``--image-url`` template resolves against ``DIR``, as the printable page does) are
  uploaded to the server and the tasks point at the uploaded copies. It writes
  ``DIR/label-studio/project.json`` (server address, project id and title, no token).

  Only images leave the machine (:func:`read_image`): a file is uploaded only when its real path
  (``os.path.realpath``: symbolic links and ``..`` resolved) lies under the image root (``DIR``, or
  ``--image-root ROOT``), it is a regular file of at most :data:`MAX_IMAGE_BYTES` bytes, and Pillow opens
  and verifies it as an image of at most :data:`MAX_IMAGE_PIXELS` pixels. Every task's image is checked
  before anything is sent: one that fails (``../../etc/passwd``, an absolute path elsewhere, a link out of
  the root, ``/dev/zero``, a FIFO, a text file named ``.png``) refuses the push in one line naming its
  item, and no project is made; each is read and checked again as it is sent (the bytes Pillow verified
  are the bytes uploaded).
* ``capeval thumb collect --key KEY --label-studio URL --project ID`` (:func:`fetch_export`) pulls the
  project's JSON export, the same document Label Studio's own "Export → JSON" gives, with every task
  (annotated or not), and names each annotator by e-mail; the collection itself is the export-file
  route's (:func:`capeval.thumb.label_studio.read_export_data`).
* ``capeval thumb status --label-studio URL --project ID`` (:func:`progress_of`): each annotator's
  submitted and skipped tasks and what is left.

Plain HTTP over the standard library (``urllib``), not ``label-studio-sdk``: the handful of endpoints
used here (``/api/projects/``, ``…/import``, ``…/file-uploads``, ``…/export``, ``/api/users/``,
``/api/token/refresh/``) are stable across Label Studio 1.x, while the SDK's client changed its whole
interface between 1.0 and 2.0 and brings pydantic, httpx and more into the environment. Nothing of the
server is needed in capeval's environment: the server is the user's own installation.

Tokens: ``--token`` or the environment variable ``LABEL_STUDIO_API_KEY``. A personal access token
(current Label Studio; a JWT refresh token) is exchanged at ``/api/token/refresh/`` for a short-lived
access token sent as ``Authorization: Bearer …`` (exchanged again when the server answers 401); any
other string is a legacy token, sent as ``Authorization: Token …``. A token is never printed, logged or
written to a file; every HTTP error is one line naming the method, the address and the status.

Credentials stay with their server: a redirect is followed only to the same origin (scheme, host and
port); one to another origin is refused in one line naming both origins, so the ``Authorization`` header
never reaches another server (:class:`_SameOriginRedirects`). Every message passes through
:meth:`LabelStudio._clean`: the token, the access token it was exchanged for (a server that echoes the
request's headers in an error body included) become ``***``, and so does the ``user:password@`` part of an
address; an address with such a part is refused (the token is what authenticates).
"""
from __future__ import annotations

import base64
import json
import mimetypes
import os
import re
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import OPTION, Setting, with_words, words
from capeval.thumb.label_studio import CONFIG_XML, INSTRUCTIONS_HTML, LABEL_STUDIO_DIR, TASKS_JSON

TOKEN_ENV = "LABEL_STUDIO_API_KEY"
PROJECT_JSON = "project.json"
#: Seconds one HTTP request may take before it is given up (an export of a large project takes a few).
DEFAULT_TIMEOUT = 120.0
#: The configuration images are uploaded under (one data key, as Label Studio's file upload requires).
UPLOAD_CONFIG = '<View><Image name="image" value="$image"/></View>'
#: Longest server text quoted in an error line (characters).
MAX_DETAIL = 300
#: Largest image file :func:`push` uploads (bytes).
MAX_IMAGE_BYTES = 64 * 1024 * 1024
#: Largest image :func:`push` uploads (width × height; Pillow's own decompression-bomb limit is 89 million).
MAX_IMAGE_PIXELS = 89_478_485
#: What stands for a token or a password in messages.
REDACTED = "***"


class LabelStudioError(RuntimeError):
    """A Label Studio request that failed: one line naming the method, the address and the status.

    Its fields, for code to branch on (never the message): ``status`` (the HTTP status, or ``None`` when no answer
    came), ``kind`` (``"legacy_token_disabled"`` when the server refused a legacy token because the organization turned
    them off, else ``None``), ``deleted_project`` (the id of a project this push made and then deleted after the
    failure) and ``half_made_project`` (the id of one it made and could not delete: the user deletes it), else
    ``None``."""

    def __init__(self, message: str, *, status: int | None = None, kind: str | None = None,
                 deleted_project: int | None = None, half_made_project: int | None = None) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind
        self.deleted_project, self.half_made_project = deleted_project, half_made_project


def resolve_token(token: str | None) -> str:
    """``token``, else ``$LABEL_STUDIO_API_KEY``; a one-line error saying where to find one when neither is set."""
    value = (token if token is not None else os.environ.get(TOKEN_ENV, "")).strip()
    if not value:
        raise with_words(LabelStudioError, words(
            "token", "no Label Studio token: pass ", Setting(shown="TOKEN"), f" or set {TOKEN_ENV} (in Label Studio: "
            "Account & Settings → Personal Access Token, or Access Token on older servers)"))
    return value


def _jwt_payload(token: str) -> dict[str, Any] | None:
    """The payload of a JWT (``header.payload.signature``), or None when ``token`` is not one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload, dict) else None


def token_kind(token: str) -> str:
    """``"personal"`` (a JWT refresh token: Label Studio's personal access token), ``"access"`` (a JWT
    access token, used as it is) or ``"legacy"`` (anything else: the older per-user API token)."""
    payload = _jwt_payload(token)
    if payload is None:
        return "legacy"
    return "access" if payload.get("token_type") == "access" else "personal"


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 1] + "…"


def without_userinfo(url: str) -> str:
    """``url`` with its ``user:password@`` part (if any) shown as ``***@``."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{REDACTED}@{parts.netloc.rpartition('@')[2]}"))


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every secret and every address's ``user:password@`` replaced by ``***``."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return re.sub(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@", rf"\1{REDACTED}@", text)


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of an address, the port filled in for http (80) and https (443)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _origin_text(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}:{port}"


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the address's own origin; refuse one elsewhere (one line, both origins).

    urllib's own handler copies every header, ``Authorization`` included, to wherever the server points.
    """

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib's signature)
        newurl = urllib.parse.urljoin(req.full_url, newurl)
        if origin(newurl) != origin(req.full_url):
            fp.close()
            where = without_userinfo(req.full_url).split("?")[0]
            raise LabelStudioError(
                f"Label Studio {req.get_method()} {where}: HTTP {code} redirects "
                f"to another origin ({_origin_text(req.full_url)} → {_origin_text(newurl)}); not followed, so the "
                "token stays with its server (give --label-studio the address the server redirects to)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


def _detail(body: bytes, secrets: Sequence[str] = ()) -> str:
    """What the server said, from a DRF error body (``detail``, ``validation_errors``) or its first text;
    the secrets redacted before it is cut to one short line."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace")
        return _one_line(redact(text, secrets)) if text.strip() and "<html" not in text[:200].lower() else ""
    text = json.dumps(data, ensure_ascii=False)
    if isinstance(data, dict):
        for name in ("validation_errors", "detail", "message", "error"):
            if data.get(name):
                value = data[name]
                text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                break
    return _one_line(redact(text, secrets))


def _multipart(files: Sequence[tuple[str, Path] | tuple[str, Path, bytes]]) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body of ``(field name, file[, its bytes])`` entries, and its content type."""
    boundary = f"capeval-{uuid.uuid4().hex}"
    chunks: list[bytes] = []
    for name, path, *given in files:
        content = given[0] if given else path.read_bytes()
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        filename = path.name.replace('"', "_").replace("\r", "_").replace("\n", "_")
        chunks += [f"--{boundary}\r\n".encode(),
                   f'Content-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'.encode(),
                   f"Content-Type: {kind}\r\n\r\n".encode(), content, b"\r\n"]
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


class LabelStudio:
    """A connection to one Label Studio server (its base address and a token).

    Args:
        url: the server's address, e.g. ``http://localhost:8080`` (``http`` or ``https``).
        token: a personal access token or a legacy token (see :func:`token_kind`); None reads
            ``$LABEL_STUDIO_API_KEY``.
        timeout: seconds per request.
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        parsed = urllib.parse.urlsplit(url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise with_words(LabelStudioError, words("url", OPTION, f" {without_userinfo(url)!r} is not a server "
                                                     "address; give one such as http://localhost:8080"))
        if "@" in parsed.netloc:
            raise with_words(LabelStudioError, words("url", OPTION, f" {without_userinfo(url.strip())} carries a user "
                                                     "name or password; give the address without it (the token is "
                                                     "what authenticates)"))
        self.url = url.strip().rstrip("/")
        self._token = resolve_token(token)
        self._kind = token_kind(self._token)
        self._access: str | None = self._token if self._kind == "access" else None
        self.timeout = timeout

    def __repr__(self) -> str:  # never the token
        return f"LabelStudio({self.url!r}, {self._kind} token)"

    # ------------------------------------------------------------------------------------------- HTTP

    def _clean(self, text: str) -> str:
        """``text`` fit for a message: the tokens and any ``user:password@`` redacted (see the module docstring)."""
        return redact(str(text), (self._token, self._access or ""))

    def _send(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> bytes:
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        where = f"Label Studio {method} {self.url}{path.split('?')[0]}"
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                return response.read()
        except urllib.error.HTTPError as err:
            detail = _detail(err.read() or b"", (self._token, self._access or ""))
            raise _HTTPStatus(err.code, f"{where}: HTTP {err.code} {self._clean(_one_line(err.reason))}"
                                        + (f": {detail}" if detail else ""), kind=_refusal_kind(err.code, detail)) \
                from None
        except urllib.error.URLError as err:
            raise LabelStudioError(f"cannot reach Label Studio at {self.url}: "
                                   f"{_one_line(self._clean(err.reason))}") from None
        except (TimeoutError, OSError) as err:
            raise LabelStudioError(f"{where}: {_one_line(self._clean(err))}") from None

    def _refresh(self) -> None:
        body = json.dumps({"refresh": self._token}).encode()
        try:
            raw = self._send("POST", "/api/token/refresh/", body, {"Content-Type": "application/json"})
        except _HTTPStatus as err:
            hint = (" (the personal access token is not valid on this server: create one in Account & Settings)"
                    if err.status in (400, 401) else "")
            raise LabelStudioError(f"{err}{hint}", status=err.status, kind=err.kind) from None
        try:
            self._access = json.loads(raw)["access"]
        except (ValueError, KeyError, TypeError):
            raise LabelStudioError(f"Label Studio POST {self.url}/api/token/refresh/: no access token in the "
                                   "answer (is this a Label Studio server?)") from None

    def _authorization(self) -> str:
        if self._kind == "legacy":
            return f"Token {self._token}"
        if self._access is None:
            self._refresh()
        return f"Bearer {self._access}"

    def request(self, method: str, path: str, payload: Any = None, *,
                files: Sequence[tuple[str, Path] | tuple[str, Path, bytes]] = (),
                params: dict[str, Any] | None = None) -> Any:
        """One API call; the answer parsed as JSON (or None when empty).

        Raises:
            LabelStudioError: one line with the method, the address, the HTTP status and the server's words.
        """
        if params:
            path = f"{path}?{urllib.parse.urlencode(params)}"
        headers = {"Accept": "application/json"}
        body = None
        if files:
            body, headers["Content-Type"] = _multipart(files)
        elif payload is not None:
            body, headers["Content-Type"] = json.dumps(payload).encode(), "application/json"
        for attempt in (0, 1):
            headers["Authorization"] = self._authorization()
            try:
                raw = self._send(method, path, body, headers)
                break
            except _HTTPStatus as err:
                if err.status == 401 and self._kind == "personal" and attempt == 0:
                    self._access = None  # the access token expired: exchange the personal token again
                    continue
                hint = ""
                if err.kind == "legacy_token_disabled":
                    hint = (" (use a personal access token, from Account & Settings, or enable legacy tokens in "
                            "Organization → API Tokens Settings)")
                elif err.status == 401:
                    hint = " (check the token: Account & Settings → Personal Access Token)"
                raise LabelStudioError(f"{err}{hint}", status=err.status, kind=err.kind) from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise LabelStudioError(f"Label Studio {method} {self.url}{path.split('?')[0]}: the answer is not JSON "
                                   "(is this a Label Studio server?)") from None

    # ------------------------------------------------------------------------------------- endpoints

    def project(self, project_id: int) -> dict[str, Any]:
        """The project's settings and counts (``title``, ``task_number``, ``maximum_annotations``, …)."""
        return self.request("GET", f"/api/projects/{int(project_id)}/")

    def create_project(self, title: str, label_config: str, instructions: str,
                       maximum_annotations: int) -> dict[str, Any]:
        return self.request("POST", "/api/projects/", {
            "title": title, "label_config": label_config, "expert_instruction": instructions,
            "show_instruction": True, "maximum_annotations": int(maximum_annotations),
            "show_skip_button": True, "enable_empty_annotation": False,
        })

    def import_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> int:
        """Add ``tasks`` to the project; returns the project's task count once they are all in."""
        before = int(self.project(project_id).get("task_number") or 0)
        self.request("POST", f"/api/projects/{int(project_id)}/import", tasks)
        deadline = time.monotonic() + 120  # servers that import in a background job: wait for the count
        while True:
            count = int(self.project(project_id).get("task_number") or 0)
            if count >= before + len(tasks) or time.monotonic() > deadline:
                return count
            time.sleep(1.0)

    def upload_file(self, project_id: int, path: Path, content: bytes | None = None) -> str:
        """Upload one file (``content``, else the file's bytes) to the project's storage (no task made);
        returns the address tasks refer to it by."""
        answer = self.request("POST", f"/api/projects/{int(project_id)}/import",
                              files=[("file", path) if content is None else ("file", path, content)],
                              params={"commit_to_project": "false"})
        ids = (answer or {}).get("file_upload_ids") or []
        uploads = self.request("GET", f"/api/projects/{int(project_id)}/file-uploads", params={"ids": json.dumps(ids)})
        names = [u.get("file") for u in uploads or [] if isinstance(u, dict) and u.get("id") in ids]
        if len(names) != 1 or not names[0]:
            raise LabelStudioError(f"Label Studio {self.url}: uploading {path} gave no file address")
        name = names[0]
        if name.startswith(("http://", "https://", "/")):
            return name
        return "/data/" + name  # "upload/<project>/<name>": served at /data/upload/…

    def export(self, project_id: int) -> list[dict[str, Any]]:
        """The project's JSON export with every task, annotated or not (Label Studio's "Export → JSON")."""
        data = self.request("GET", f"/api/projects/{int(project_id)}/export",
                            params={"exportType": "JSON", "download_all_tasks": "true"})
        if not isinstance(data, list):
            raise LabelStudioError(f"Label Studio {self.url}: the export of project {project_id} is not a list of "
                                   "tasks")
        return data

    def users(self) -> dict[int, str]:
        """``{user id: e-mail}`` of the organization's members."""
        data = self.request("GET", "/api/users/")
        rows = data.get("results", []) if isinstance(data, dict) else data or []
        return {int(u["id"]): str(u.get("email") or f"user {u['id']}") for u in rows
                if isinstance(u, dict) and "id" in u}


class _HTTPStatus(LabelStudioError):
    """An HTTP error status, before the client adds its advice."""

    def __init__(self, status: int, message: str, kind: str | None = None) -> None:
        super().__init__(message, status=status, kind=kind)


def _refusal_kind(status: int, detail: str) -> str | None:
    """``"legacy_token_disabled"`` when the server's answer (its ``detail``, read once here where the answer arrives)
    refuses a legacy token, else ``None``."""
    return "legacy_token_disabled" if status == 401 and "legacy token" in detail.lower() else None


# ------------------------------------------------------------------------------------------- push


@dataclass
class PushedProject:
    """What :func:`push` made: the project's id, address and title, its task count, the uploads."""

    id: int
    url: str
    title: str
    tasks: int
    maximum_annotations: int
    uploaded_images: int = 0
    record: Path | None = None


def _is_reference(src: str) -> bool:
    return src.startswith(("http://", "https://", "data:", "/data/"))


def _under(path: str, root: str) -> bool:
    """Whether the real path ``path`` is ``root`` or lies inside it (both already through ``realpath``)."""
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive (Windows)
        return False


class ImageRefused(LabelStudioError):
    """A local file :func:`read_image` will not send: the reason, naming the file."""


def read_image(path: Path, root: Path) -> bytes:
    """The bytes of the image file ``path``, read only when it may leave the machine (see the module docstring).

    It may when its real path lies under the real path of ``root``, it is a regular file of at most
    :data:`MAX_IMAGE_BYTES` bytes, and Pillow opens and verifies those very bytes (the header and, for
    PNG, the chunks, without decoding the pixels) as an image of at most :data:`MAX_IMAGE_PIXELS` pixels.
    The file is opened once, without following a last link and without blocking (a FIFO); where the
    system shows what an open file is (``/proc/self/fd``), that is checked to lie under ``root`` too, so
    a file swapped after the check is not what is sent.

    Raises:
        ImageRefused: one line saying why.
    """
    real, top = os.path.realpath(path), os.path.realpath(root)
    if not _under(real, top):
        raise ImageRefused(f"{path} is {real}, outside the image root {top} (give --image-root ROOT for images "
                           "elsewhere)")
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise ImageRefused(f"{path}: {err.strerror or err}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImageRefused(f"{path} is not a regular file")
        opened = f"/proc/self/fd/{fd}"
        if os.path.islink(opened) and not _under(os.readlink(opened), top):
            raise ImageRefused(f"{path} changed while it was read: now outside the image root {top}")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ImageRefused(f"{path} has {info.st_size} bytes, more than an image may ({MAX_IMAGE_BYTES})")
        content = fh.read(MAX_IMAGE_BYTES + 1)
    if len(content) > MAX_IMAGE_BYTES:
        raise ImageRefused(f"{path} has more bytes than an image may ({MAX_IMAGE_BYTES})")
    _verify_image(content, path)
    return content


def _verify_image(content: bytes, path: Path) -> None:
    """Pillow's verdict on ``content``: an image of at most :data:`MAX_IMAGE_PIXELS` pixels, else ImageRefused."""
    import io

    try:
        from PIL import Image
    except ImportError:
        raise ImageRefused("checking that local files are images needs Pillow: pip install pillow") from None
    try:
        with Image.open(io.BytesIO(content)) as image:
            pixels = image.size[0] * image.size[1]
            image.verify()
    except Exception as err:  # noqa: BLE001 (Pillow raises many kinds for a file that is not an image)
        raise ImageRefused(f"{path} is not an image Pillow reads ({_one_line(type(err).__name__)})") from None
    if pixels > MAX_IMAGE_PIXELS:
        raise ImageRefused(f"{path} has {pixels} pixels, more than an image may ({MAX_IMAGE_PIXELS})")


def check_image(path: Path, root: Path) -> str | None:
    """Why the file ``path`` may not be uploaded (:func:`read_image`), or None when it may."""
    try:
        read_image(path, root)
    except ImageRefused as err:
        return str(err)
    return None


def _image_root(sheet_dir: Path, image_root: str | Path | None) -> Path:
    return Path(image_root) if image_root is not None else sheet_dir


def _resolve_images(tasks: list[dict[str, Any]], sheet_dir: Path, image_root: str | Path | None = None) \
        -> dict[str, Path]:
    """``{image value: real file}`` for the tasks' images that are local files, each checked by
    :func:`check_image` against ``image_root`` (default ``sheet_dir``); one-line errors for missing or
    refused ones, before anything is sent."""
    root = _image_root(sheet_dir, image_root)
    files: dict[str, Path] = {}
    missing: dict[str, Path] = {}
    refused: dict[str, tuple[Any, str]] = {}
    for task in tasks:
        src = task.get("data", {}).get("image")
        if not isinstance(src, str) or not src or _is_reference(src) or src in files or src in missing \
                or src in refused:
            continue
        path = Path(urllib.parse.unquote(src[7:] if src.startswith("file://") else src))
        path = path if path.is_absolute() else sheet_dir / path
        if not os.path.exists(path):  # a dangling link too
            missing[src] = path
            continue
        problem = check_image(path, root)
        if problem is None:
            files[src] = Path(os.path.realpath(path))
        else:
            refused[src] = (task.get("data", {}).get("item"), problem)
    if refused:
        item, problem = next(iter(refused.values()))
        more = f" (and {len(refused) - 1} more image(s))" if len(refused) > 1 else ""
        raise LabelStudioError(f"image of item {item} refused, nothing sent: {problem}{more}")
    if missing:
        raise LabelStudioError(f"{len(missing)} image(s) of the tasks are neither an http(s) address nor a file, "
                               f"e.g. {next(iter(missing.values()))} (make the sheet with --image-url pointing at "
                               "the images)")
    return files


def read_sheet_folder(sheet_dir: str | Path) -> tuple[str, str, list[dict[str, Any]]]:
    """``(config.xml, instructions.html, tasks)`` from ``DIR/label-studio``; one-line errors when absent."""
    folder = Path(sheet_dir) / LABEL_STUDIO_DIR
    needed = [folder / CONFIG_XML, folder / TASKS_JSON, folder / INSTRUCTIONS_HTML]
    absent = [p.name for p in needed if not p.is_file()]
    if absent:
        raise LabelStudioError(f"{folder} lacks {', '.join(absent)}: make the sheet with `capeval thumb sheet … "
                               f"--out {sheet_dir} --label-studio` first")
    try:
        tasks = json.loads(needed[1].read_text(encoding="utf-8"))
    except ValueError as err:
        raise LabelStudioError(f"{needed[1]}: not JSON ({err})") from None
    if not isinstance(tasks, list) or not tasks or not all(isinstance(t, dict) and isinstance(t.get("data"), dict)
                                                           for t in tasks):
        raise LabelStudioError(f"{needed[1]}: expected a list of tasks {{\"data\": …}} as `capeval thumb sheet` "
                               "writes")
    return needed[0].read_text(encoding="utf-8"), needed[2].read_text(encoding="utf-8"), tasks


def push(sheet_dir: str | Path, url: str, token: str | None = None, title: str | None = None,
         annotators: int = 2, progress: bool | None = None, image_root: str | Path | None = None) -> PushedProject:
    """Create a Label Studio project from ``DIR/label-studio`` (see the module docstring).

    Args:
        sheet_dir: the ``--out`` folder of ``capeval thumb sheet … --label-studio``.
        url, token: the server and a token (see :class:`LabelStudio`).
        title: the project's title (default ``THumB: <folder name>``); 1–50 characters, as Label Studio allows.
        annotators: how many annotators label each task (Label Studio's ``maximum_annotations``), 1–10.
        progress: a bar over the image uploads (None: on a terminal, for uploads longer than a second).
        image_root: the folder local images must lie under (default ``sheet_dir``); a file elsewhere, or one
            that is not an image, refuses the push before anything is sent (:func:`check_image`).

    Raises:
        LabelStudioError: missing files or images, a refused image, or a request the server refused (one line).
    """
    from capeval.progress import progress as bar

    sheet_dir = Path(sheet_dir)
    if isinstance(annotators, bool) or not isinstance(annotators, int) or not 1 <= annotators <= 10:
        raise with_words(LabelStudioError, words("annotators", OPTION,
                                                 f" must be an integer from 1 to 10; got {annotators!r}"))
    config, instructions, tasks = read_sheet_folder(sheet_dir)
    title = (title if title is not None else f"THumB: {sheet_dir.resolve().name}").strip()
    if not 1 <= len(title) <= 50:
        raise with_words(LabelStudioError, words("title", OPTION, " must have 1 to 50 characters (Label Studio's "
                                                 f"limit); got {len(title)}"))
    images = _resolve_images(tasks, sheet_dir, image_root)
    client = LabelStudio(url, token)
    # Label Studio takes a file upload only under a configuration with one data key: images are uploaded under
    # UPLOAD_CONFIG, then the rubric's configuration replaces it (allowed while the project has no task).
    created = client.create_project(title, UPLOAD_CONFIG if images else config, instructions, annotators)
    project_id = int(created["id"])
    uploaded: dict[str, str] = {}
    try:
        for src, path in bar(images.items(), total=len(images), desc="uploading images", enabled=progress):
            try:  # read again, and checked again, as it is sent
                content = read_image(path, _image_root(sheet_dir, image_root))
            except ImageRefused as err:
                raise LabelStudioError(f"image {src} refused: {err}") from None
            uploaded[src] = client.upload_file(project_id, path, content)
        if uploaded:
            client.request("PATCH", f"/api/projects/{project_id}/", {"label_config": config})
            tasks = [{**t, "data": {**t["data"], "image": uploaded.get(t["data"].get("image"), t["data"].get("image"))}}
                     for t in tasks]
        count = client.import_tasks(project_id, tasks)
        if count != len(tasks):
            raise LabelStudioError(f"Label Studio {client.url}: project {project_id} holds {count} task(s) after "
                                   f"importing {len(tasks)}")
    except LabelStudioError as err:  # no half-made project left behind
        try:
            client.request("DELETE", f"/api/projects/{project_id}/")
        except LabelStudioError:
            raise LabelStudioError(f"{err} (project {project_id} was left half-made: delete it in Label Studio)",
                                   status=err.status, kind=err.kind, half_made_project=project_id) from None
        raise LabelStudioError(f"{err} (the half-made project {project_id} was deleted)", status=err.status,
                               kind=err.kind, deleted_project=project_id) from None
    pushed = PushedProject(project_id, f"{client.url}/projects/{project_id}", title, count, annotators,
                           len(uploaded), sheet_dir / LABEL_STUDIO_DIR / PROJECT_JSON)
    pushed.record.write_text(json.dumps({"server": client.url, "project": project_id, "title": title, "tasks": count,
                                         "maximum_annotations": annotators, "uploaded_images": len(uploaded)},
                                        indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return pushed


# ---------------------------------------------------------------------------------------- collect


def fetch_export(client: LabelStudio, project_id: int) -> tuple[str, list[dict[str, Any]]]:
    """``(source name, export)``: the project's JSON export with every ``completed_by`` given its e-mail.

    The source name (``project <id>``) is what messages about its tasks start with. A missing project is
    the export's 404 (one line naming ``/api/projects/<id>/export``), not an empty export.
    """
    data = client.export(project_id)
    emails = client.users()
    for task in data:
        annotations = task.get("annotations") if isinstance(task, dict) else None
        for annotation in annotations if isinstance(annotations, list) else []:
            who = annotation.get("completed_by") if isinstance(annotation, dict) else None
            if isinstance(who, int) and not isinstance(who, bool):
                annotation["completed_by"] = {"id": who, "email": emails.get(who, f"user {who}")}
            elif isinstance(who, dict) and isinstance(who.get("id"), int) and who["id"] in emails \
                    and not who.get("email"):  # an id that is a list or an object is left for the collection to name
                who["email"] = emails[who["id"]]
    return f"project {project_id}", data


# ----------------------------------------------------------------------------------------- status


@dataclass
class AnnotatorProgress:
    """One annotator's work in a project: tasks submitted, skipped (cancelled), and left of the project's."""

    annotator: str
    submitted: int
    skipped: int
    left: int


@dataclass
class ProjectProgress:
    """A project's state: its tasks, how many annotations each should get, and every annotator's progress."""

    id: int
    title: str
    tasks: int
    maximum_annotations: int
    complete_tasks: int
    annotators: list[AnnotatorProgress] = field(default_factory=list)


def progress_of(client: LabelStudio, project_id: int) -> ProjectProgress:
    """Each annotator's submitted / skipped tasks, from the project's export (see :func:`fetch_export`)."""
    info = client.project(project_id)
    _, data = fetch_export(client, project_id)
    wanted = int(info.get("maximum_annotations") or 1)
    submitted: dict[str, set[Any]] = {}
    skipped: dict[str, set[Any]] = {}
    complete = 0
    for k, task in enumerate(data):
        done = 0
        annotations = task.get("annotations") if isinstance(task, dict) else None
        task_id = task.get("id") if isinstance(task, dict) else None
        task_id = task_id if isinstance(task_id, (str, int)) else f"#{k + 1}"  # a list or object: its place
        for annotation in annotations if isinstance(annotations, list) else []:
            if not isinstance(annotation, dict):
                continue
            who = annotation.get("completed_by")
            label = (who.get("email") or f"user {who.get('id')}") if isinstance(who, dict) else f"user {who}"
            label = label if isinstance(label, str) else json.dumps(label, default=str)
            target = skipped if annotation.get("was_cancelled") else submitted
            target.setdefault(label, set()).add(task_id)
            done += not annotation.get("was_cancelled")
        complete += done >= wanted
    people = sorted(set(submitted) | set(skipped))
    rows = [AnnotatorProgress(p, len(submitted.get(p, ())), len(skipped.get(p, ())),
                              len(data) - len(submitted.get(p, set()) | skipped.get(p, set()))) for p in people]
    return ProjectProgress(int(project_id), str(info.get("title", "")), len(data), wanted, complete, rows)
