"""Shared fixtures: the benchmark data directory (skips cleanly when absent) and Java.

Plain helpers (``require_data``, ``ROOT``, ``FIXTURES``, ...) are in ``tests/support``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import SKIP_NO_DATA

from capeval.paths import data_dir


@pytest.fixture(autouse=True)
def _no_hidden_terminal_width():
    """The commands a test starts see the environment ``os.environ`` shows: GNU readline, once imported (by pdb or
    a plugin), sets ``COLUMNS`` in the process's C environment only, which a child started without ``env=`` inherits,
    so its messages would wrap at 80 columns in some environments and not in others."""
    import os

    for name in ("COLUMNS", "LINES"):
        if name not in os.environ:
            os.unsetenv(name)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``$CAPEVAL_DATA_DIR`` or ``../shared/data``; skip the test when it is absent."""
    path = data_dir()
    if path is None:
        pytest.skip(SKIP_NO_DATA)
    return path


@pytest.fixture
def whole_lines():
    """Tables and lines printed whole, however wide (``--wide``): for tests that read cells out of the text."""
    from capeval.render import full_width

    with full_width():
        yield


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


@pytest.fixture
def fake_encoder(monkeypatch):
    """critic_plus loads :class:`support.tiny_critic.FakeEncoder` instead of the MiniLM sentence encoder."""
    import capeval.models.sentence_encoder as sentence_encoder
    from support.tiny_critic import FakeEncoder

    monkeypatch.setattr(sentence_encoder, "load_sentence_encoder", lambda name=None, device=None, **_: FakeEncoder())
    return FakeEncoder()


@pytest.fixture
def tiny_plus(tiny_critics, tmp_path, fake_encoder) -> str:
    """The folder of a critic_plus combiner (fixed weights) over the tiny image + reference critic, scoring with
    the fake sentence encoder."""
    from capeval.critic.stack import CriticStack

    folder = tmp_path / "plus"
    CriticStack.plus(0.9, 2.0, -0.5, critic=tiny_critics["critic_model"], sentence_encoder=fake_encoder.name).save(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_lceval(tmp_path_factory) -> str:
    """The folder of a small random LCEval network (16 -> 3 ReLU -> 2, seeded; the scores mean nothing), for
    ``lceval_model=``: the lceval module and Space tests need no trained network. Skips without LCEval's extra."""
    from support import needs

    needs("lceval")
    import numpy as np

    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    rng = np.random.default_rng(0)
    params = {"W1": rng.normal(size=(16, 3)), "b1": rng.normal(size=3), "W2": rng.normal(size=(3, 2)), "b2": np.zeros(2)}
    folder = tmp_path_factory.mktemp("tiny-lceval") / "lceval-tiny"
    LCEvalModel(LCEvalConfig(hidden=3), params).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_llava(tmp_path_factory) -> dict:
    """A tiny LLaVA-1.5 (:mod:`capeval.judges.random_llava`) in both layouts: ``{"original", "hf", "vision"}``
    folders, built once per session (seconds to a minute on a CPU). Skips without torch, transformers and
    sentencepiece."""
    for module in ("torch", "transformers", "sentencepiece"):
        pytest.importorskip(module)
    from capeval.judges.random_llava import write_tiny_llava

    return write_tiny_llava(tmp_path_factory.mktemp("tiny-llava"))
