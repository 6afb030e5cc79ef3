"""Shared fixtures: the benchmark data directory (skips cleanly when absent) and Java."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from capeval.paths import data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``$CAPEVAL_DATA_DIR`` or ``../shared/data``; skip the test when it is absent."""
    path = data_dir()
    if path is None:
        pytest.skip("benchmark data not found: set CAPEVAL_DATA_DIR (default ../shared/data)")
    return path


def require_data(*parts: str) -> Path:
    """Path under the data dir, or skip naming what is missing."""
    root = data_dir()
    if root is None:
        pytest.skip("benchmark data not found: set CAPEVAL_DATA_DIR (default ../shared/data)")
    path = root.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


@pytest.fixture(scope="session")
def java() -> str:
    exe = shutil.which("java")
    if exe is None:
        pytest.skip("java not installed")
    return exe
