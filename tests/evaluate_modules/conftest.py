"""Every test here runs offline from the repository root (card and docstring examples load "metrics/<name>")."""
from __future__ import annotations

import pytest
from support import ROOT


@pytest.fixture(autouse=True)
def _offline_in_repository_root(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.chdir(ROOT)
