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


@pytest.fixture(scope="session")
def tiny_critics(tmp_path_factory) -> dict[str, str]:
    """Three tiny random critics (``{"critic_model": folder, "critic_ref_model": ..., "critic_img_model": ...}``,
    :mod:`support.tiny_critic`); skip without the torch stack."""
    from support import needs
    from support.tiny_critic import make_tiny_critics

    needs("learned_critic")
    return make_tiny_critics(tmp_path_factory.mktemp("tiny-critics"))
