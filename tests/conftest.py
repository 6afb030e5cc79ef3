"""Shared fixtures: the benchmark data directory (skips cleanly when absent) and Java.

Plain helpers (``require_data``, ``ROOT``, ``FIXTURES``, ...) are in ``tests/support``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import SKIP_NO_DATA

from capeval.paths import data_dir


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``$CAPEVAL_DATA_DIR`` or ``../shared/data``; skip the test when it is absent."""
    path = data_dir()
    if path is None:
        pytest.skip(SKIP_NO_DATA)
    return path


@pytest.fixture(scope="session")
def java() -> str:
    exe = shutil.which("java")
    if exe is None:
        pytest.skip("java not installed")
    return exe
