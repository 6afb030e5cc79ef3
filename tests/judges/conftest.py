"""Fixtures for the judges' tests (the tiny LLaVA-1.5, ``tiny_llava``, is in tests/conftest.py): the original LLaVA code (``llava-torch`` 1.2.2's wheel from PyPI, imported by path; ``$CAPEVAL_LLAVA_WHEEL``
may name the wheel file for offline runs)."""
from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

LLAVA_WHEEL = ("llava-torch==1.2.2", "llava_torch-1.2.2-py3-none-any.whl",
               "bb9146ac9f271d46d15507bb5df76902da5a15987101f56095b4ca8eca9f88f9")


def _wheel(tmp: Path) -> Path:
    requirement, name, sha256 = LLAVA_WHEEL
    given = os.environ.get("CAPEVAL_LLAVA_WHEEL")
    if given:
        wheel = Path(given)
    else:
        command = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--only-binary=:all:",
                   "--disable-pip-version-check", "--timeout", "30", "-d", str(tmp)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as err:
            pytest.skip(f"pip download {requirement} failed ({err}); set CAPEVAL_LLAVA_WHEEL to {name}")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            pytest.skip(f"pip download {requirement} failed ({last}); set CAPEVAL_LLAVA_WHEEL to {name}")
        wheel = tmp / name
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == sha256, f"{wheel} is not PyPI's {name}"
    return wheel


@pytest.fixture(scope="session")
def llava_code(tmp_path_factory):
    """The ``llava`` package of the wheel, importable for the session (removed from ``sys.modules`` after)."""
    tmp = tmp_path_factory.mktemp("llava-torch")
    with zipfile.ZipFile(_wheel(tmp)) as archive:
        archive.extractall(tmp / "unpacked")
    root = str(tmp / "unpacked")
    sys.path.insert(0, root)
    try:
        yield importlib.import_module("llava")
    finally:
        sys.path.remove(root)
        for name in [n for n in sys.modules if n == "llava" or n.startswith("llava.")]:
            del sys.modules[name]
