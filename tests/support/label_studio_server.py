"""A real Label Studio server for the tests: its own virtual environment, SQLite in a temporary folder.

* :func:`label_studio_python` builds (once, cached between runs) a virtual environment with
  ``label-studio==LABEL_STUDIO_VERSION`` from PyPI, at ``$CAPEVAL_LABEL_STUDIO_VENV`` or else
  ``~/.cache/capeval/label-studio-<version>-py<major.minor>``. The build goes into a temporary sibling folder
  that is renamed into place only when ``pip install`` has finished, under a file lock, so that an
  interrupted build is never reused and two test processes do not build at once (~60 s, ~1 GB).
* :func:`running_label_studio` starts ``label-studio start`` on 127.0.0.1 (a free port) with
  ``LABEL_STUDIO_BASE_DATA_DIR`` in the test's temporary folder, waits for ``/health``, creates two
  annotator accounts and the admin's personal access token, and stops the server (its whole process group)
  on exit. Where the server cannot be built or started the test FAILS with the reason and the end of the
  log: it is never skipped.

Label Studio 1.23 facts this relies on: legacy tokens (``Authorization: Token …``) are disabled per
organization by default (``jwt_auth.JWTSettings.legacy_api_tokens_enabled``, endpoint ``/api/jwt/settings``);
a personal access token is a JWT refresh token, exchanged at ``/api/token/refresh/`` for a 5-minute access
token sent as ``Authorization: Bearer …``.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LABEL_STUDIO_VERSION = "1.23.2"
VENV_ENV = "CAPEVAL_LABEL_STUDIO_VENV"
#: The interpreter the environment is built with (``python3 -m venv``); default: the one running the tests.
BASE_PYTHON_ENV = "CAPEVAL_LABEL_STUDIO_BASE_PYTHON"
ADMIN_EMAIL = "admin@example.com"
ANNOTATOR_EMAILS = ("ann1@example.org", "ann2@example.org")
#: Seconds the server may take to answer ``/health`` (first start: ~45 s of migrations on one core).
START_TIMEOUT = 180.0
PIP_TIMEOUT = 1200.0
LOG_TAIL = 20
_MARKER = "CAPEVAL-LS-SETUP "


@dataclass
class Server:
    url: str
    admin_email: str
    admin_password: str
    admin_token: str  # personal access token (JWT refresh token)
    legacy_token: str  # the admin's legacy token (``--user-token``); usable once legacy tokens are enabled
    annotators: list[tuple[str, str]]
    log: Path
    data_dir: Path
    python: Path
    process: subprocess.Popen = field(repr=False, default=None)  # type: ignore[assignment]

    def access_token(self) -> str:
        """A fresh short-lived access token for the admin (``Authorization: Bearer …``)."""
        return http_json("POST", self.url + "/api/token/refresh/", {"refresh": self.admin_token})["access"]

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """The admin's JSON request to ``path`` (e.g. ``/api/projects/``); a new access token every call."""
        return http_json(method, self.url + path, body, token=self.access_token())


# --------------------------------------------------------------------------------------------- HTTP


def http_json(method: str, url: str, body: Any = None, token: str | None = None, scheme: str = "Bearer",
              timeout: float = 60.0) -> Any:
    """One JSON request; an :class:`AssertionError` naming method, address, status and body on failure."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        headers["Authorization"] = f"{scheme} {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {url}: HTTP {exc.code}: {exc.read()[:500]!r}") from None
    return json.loads(raw) if raw.strip() else None


def http_bytes(url: str, token: str, timeout: float = 120.0) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return resp.read()


# ------------------------------------------------------------------------------------- environment


def _base_python() -> str:
    return os.environ.get(BASE_PYTHON_ENV) or sys.executable


def _python_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def default_venv_dir() -> Path:
    env = os.environ.get(VENV_ENV)
    if env:
        return Path(env).expanduser()
    version = _python_version(_base_python())
    return Path.home() / ".cache" / "capeval" / f"label-studio-{LABEL_STUDIO_VERSION}-py{version}"


def _installed(venv: Path) -> bool:
    """``venv`` holds a finished installation of the pinned label-studio."""
    python = venv / "bin" / "python"
    return python.exists() and any(venv.glob(f"lib/python*/site-packages/label_studio-{LABEL_STUDIO_VERSION}"
                                             ".dist-info/RECORD"))


#: Variables of the caller's environment that would change what Label Studio does (it reads HOST, PORT,
#: USERNAME, PASSWORD … with or without a LABEL_STUDIO_ prefix) or which Python it runs.
_DROPPED_ENV = frozenset({"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "HOST", "PORT", "USERNAME",
                          "PASSWORD", "USER_TOKEN", "SECRET_KEY", "DEBUG", "LOG_LEVEL"})
_DROPPED_PREFIXES = ("LABEL_STUDIO_", "HEARTEX_", "DJANGO_", "POSTGRE", "DATABASE_")
#: The server's own environment: SQLite in the data folder, no analytics, no version check on pypi.org.
_SERVER_ENV = {"COLLECT_ANALYTICS": "false", "LATEST_VERSION_CHECK": "false", "DJANGO_DB": "sqlite"}


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment for Label Studio's processes: nothing of the test's virtual environment leaks in."""
    env = {k: v for k, v in os.environ.items()
           if k not in _DROPPED_ENV and not k.startswith(_DROPPED_PREFIXES)}
    env.update(PYTHONNOUSERSITE="1", PYTHONUNBUFFERED="1", **extra)
    return env


def label_studio_python(venv: Path | None = None) -> Path:
    """The python of a virtual environment with ``label-studio==LABEL_STUDIO_VERSION``, built when absent."""
    venv = Path(venv) if venv is not None else default_venv_dir()
    if _installed(venv):
        return venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same environment
        if _installed(venv):
            return venv / "bin" / "python"
        if venv.exists():  # an unfinished or foreign folder: never reused
            pytest.fail(f"{venv} exists but holds no label-studio {LABEL_STUDIO_VERSION}; remove it "
                        f"(or point ${VENV_ENV} elsewhere) and run again", pytrace=False)
        building = venv.with_name(f"{venv.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        log = venv.parent / f"{venv.name}.build.log"
        started = time.monotonic()
        try:
            with log.open("w") as fh:
                for cmd in ([_base_python(), "-m", "venv", str(building)],
                            [str(building / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check",
                             "--no-input", f"label-studio=={LABEL_STUDIO_VERSION}"]):
                    fh.write(f"$ {' '.join(cmd)}\n")
                    fh.flush()
                    try:
                        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=_clean_env(),
                                            timeout=PIP_TIMEOUT).returncode
                    except subprocess.TimeoutExpired:
                        rc = "timeout"
                    if rc != 0:
                        fh.close()
                        pytest.fail(f"building Label Studio's environment failed ({' '.join(cmd[-3:])}: exit {rc}); "
                                    f"{log}:\n{_tail(log)}", pytrace=False)
            os.rename(building, venv)  # atomic: the environment appears only when complete
        finally:
            shutil.rmtree(building, ignore_errors=True)
        print(f"built {venv} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return venv / "bin" / "python"


# ------------------------------------------------------------------------------------------- server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = LOG_TAIL) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def _health(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


SETUP_SCRIPT = r"""
import json, os, sys
import label_studio
sys.path.insert(0, os.path.dirname(label_studio.__file__))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings.label_studio")
import django
django.setup()
from users.models import User
from jwt_auth.models import LSAPIToken
args = json.loads(sys.argv[1])
admin = User.objects.get(email=args["admin"])
org = admin.active_organization
ids = {}
for email, password in args["annotators"]:
    user = User.objects.filter(email=email).first()
    if user is None:
        user = User.objects.create_user(email=email, password=password, username=email)
        org.add_user(user)
    user.active_organization = org
    user.save()
    ids[email] = user.id
jwt = org.jwt
jwt.legacy_api_tokens_enabled = bool(args["legacy"])
jwt.save()
print(%r + json.dumps({"pat": LSAPIToken.for_user(admin).get_full_jwt(), "ids": ids, "org": org.id}), flush=True)
""" % _MARKER


def _setup_accounts(python: Path, env: dict[str, str], data_dir: Path, log: Path,
                    annotators: list[tuple[str, str]], legacy: bool) -> dict[str, Any]:
    args = json.dumps({"admin": ADMIN_EMAIL, "annotators": annotators, "legacy": legacy})
    proc = subprocess.run([str(python), "-c", SETUP_SCRIPT, args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=data_dir)
    with log.open("a", encoding="utf-8") as fh:
        fh.write("\n--- account setup ---\n" + proc.stdout + proc.stderr)
    for line in proc.stdout.splitlines():
        if line.startswith(_MARKER):
            return json.loads(line[len(_MARKER):])
    pytest.fail(f"creating Label Studio accounts failed (exit {proc.returncode}):\n"
                + "\n".join((proc.stdout + proc.stderr).splitlines()[-LOG_TAIL:]), pytrace=False)


def set_legacy_tokens(server: Server, enabled: bool) -> None:
    """Allow or refuse legacy tokens (``Authorization: Token …``) in the admin's organization."""
    got = server.api("POST", "/api/jwt/settings", {"api_tokens_enabled": True,
                                                   "legacy_api_tokens_enabled": enabled})
    assert got["legacy_api_tokens_enabled"] is enabled, got


def _wait_for_health(proc: subprocess.Popen, url: str, log: Path, started: float, timeout: float,
                     port: int) -> bool:
    """True once ``url/health`` answers 200; False when Label Studio moved off ``port`` (it was taken)."""
    while True:
        status = _health(url)
        if status == 200:
            return True
        if f"Port {port} is in use" in log.read_text(encoding="utf-8", errors="replace"):
            return False
        if proc.poll() is not None:
            pytest.fail(f"Label Studio exited with status {proc.returncode} before answering {url}/health; "
                        f"{log}:\n{_tail(log)}", pytrace=False)
        if time.monotonic() - started > timeout:
            pytest.fail(f"Label Studio did not answer {url}/health with 200 within {timeout:.0f} s "
                        f"(last: {status}); {log}:\n{_tail(log)}", pytrace=False)
        time.sleep(1)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


@contextlib.contextmanager
def running_label_studio(tmp_path: Path, legacy_tokens: bool = True,
                         start_timeout: float = START_TIMEOUT) -> Iterator[Server]:
    """A Label Studio server on 127.0.0.1 with SQLite under ``tmp_path``; see the module docstring.

    ``legacy_tokens``: whether the organization accepts the admin's legacy token as well as the personal
    access token (Label Studio 1.23's default is no; :func:`set_legacy_tokens` changes it later).
    """
    python = label_studio_python()
    tmp_path = Path(tmp_path)
    data_dir = tmp_path / "ls-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "label-studio.log"
    password = "admin-" + secrets.token_hex(6)
    legacy = secrets.token_hex(20)
    annotators = [(email, "ann-" + secrets.token_hex(6)) for email in ANNOTATOR_EMAILS]
    # SECRET_KEY signs the personal access token: given to the server and the account script alike. Left
    # unset, each Label Studio process that finds no key in DATA/.env generates one and appends it there,
    # and two processes starting together wrote two different keys (seen: tokens then "invalid").
    env = _clean_env(LABEL_STUDIO_BASE_DATA_DIR=str(data_dir), SECRET_KEY=secrets.token_urlsafe(50), **_SERVER_ENV)
    started = time.monotonic()
    proc = None
    try:
        for attempt in range(3):
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            # --internal-host: where it listens (default 0.0.0.0); --host: the address it writes into links
            cmd = [str(python), "-m", "label_studio.server", "start", "--no-browser", "--internal-host", "127.0.0.1",
                   "--host", url, "--port", str(port), "--username", ADMIN_EMAIL, "--password", password,
                   "--user-token", legacy]
            with log.open("a" if attempt else "w", encoding="utf-8") as fh:
                fh.write(f"--- label-studio start on port {port} ---\n")
                fh.flush()
                proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=data_dir,
                                        start_new_session=True)
            if _wait_for_health(proc, url, log, started, start_timeout, port):
                break
            _stop(proc)  # the free port was taken before the server bound it: Label Studio moved to the next
        else:
            pytest.fail(f"Label Studio found its port taken three times; {log}:\n{_tail(log)}", pytrace=False)
        startup = time.monotonic() - started
        setup = _setup_accounts(python, env, data_dir, log, annotators, legacy_tokens)
        print(f"Label Studio {LABEL_STUDIO_VERSION} at {url}: /health after {startup:.0f} s, accounts after "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr)
        yield Server(url=url, admin_email=ADMIN_EMAIL, admin_password=password, admin_token=setup["pat"],
                     legacy_token=legacy, annotators=annotators, log=log, data_dir=data_dir, python=python,
                     process=proc)
    finally:
        if proc is not None:
            _stop(proc)


# ---------------------------------------------------------------------------- projects without capeval


def project_tasks(server: Server, project_id: int) -> list[dict[str, Any]]:
    """Every task of the project (admin API), with ``id`` and ``data``."""
    got = server.api("GET", f"/api/tasks?project={project_id}&page_size=1000")
    tasks = got["tasks"] if isinstance(got, dict) else got
    return sorted(tasks, key=lambda t: t["id"])
