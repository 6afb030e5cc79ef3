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


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory) -> dict:
    """What the clip_score and pac_score modules need offline: two tiny random CLIPs built with OpenAI's own code
    (:mod:`support.clip_reference`, ``TINY``), one saved as an OpenAI-format checkpoint (``clip_model``), the other as
    the PAC-S checkpoints are distributed (``pac_model``, ``{"state_dict": ...}``), the models themselves
    (``clip``, ``pac``: for :func:`support.clip_reference.reference_scores`) and three noise PNGs (``images``).
    Skips without the torch stack, open_clip or OpenAI's ``clip`` package."""
    from support.clip_reference import tiny_checkpoints

    return tiny_checkpoints(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture(scope="session")
def tiny_polos(tmp_path_factory) -> dict:
    """What the polos module needs offline: a tiny Polos checkpoint in the released layout (a random RoBERTa and a random
    OpenAI-code CLIP, :func:`support.polos_reference.tiny_polos`: ``polos_model``) and three noise PNGs (``images``)."""
    from support.polos_reference import tiny_polos

    return tiny_polos(tmp_path_factory.mktemp("tiny-polos"))


@pytest.fixture(scope="session")
def tiny_capture(tmp_path_factory) -> dict:
    """What the capture module needs offline (:func:`support.capture_module.tiny_capture`): the tiny FACTUAL-style
    parser and MPNet phrase encoder (``capture_parser``, ``capture_text_encoder``) and NLTK's data (``nltk_data``: on
    NLTK's search path only where a test puts it there, or ``NLTK_DATA`` for a fresh process)."""
    from support.capture_module import tiny_capture

    return tiny_capture(tmp_path_factory.mktemp("tiny-capture"))
