"""Every test here runs offline from the repository root (card and docstring examples load "metrics/<name>")."""
from __future__ import annotations

import pytest
from support import ROOT


@pytest.fixture(autouse=True)
def _offline_in_repository_root(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.chdir(ROOT)


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty ``CAPEVAL_CACHE_DIR`` (parse caches, document frequencies) for one test."""
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
