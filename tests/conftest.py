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


ROOT = Path(__file__).resolve().parents[1]


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
