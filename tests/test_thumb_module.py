"""metrics/thumb: evaluate.load offline, doctests of the module script and card, the Space app."""
from __future__ import annotations

import doctest
import importlib
import json
import re
import runpy
from pathlib import Path

import pytest

evaluate = pytest.importorskip("evaluate")

from capeval import thumb  # noqa: E402

from conftest import require_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = ROOT / "metrics" / "thumb"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    monkeypatch.chdir(ROOT)  # the examples load the local folder "metrics/thumb"


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(MODULE_DIR))


def test_features_are_the_numeric_rubric_items(module):
    assert list(module.features) == ["precision", "recall", "fluency", "conciseness", "inclusive"]
    assert all(str(f.dtype) == "float64" for f in module.features.values())


def test_compute_equals_functional_api(module):
    kwargs = dict(precision=[5, 3, 4, 4, 2], recall=[5, 3, 3, 4, 2], fluency=[-0.1, 0, 0, 0.2, 0],
                  conciseness=[0, 0, -0.5, 0, 0], inclusive=[0, 0, 0, 0, 0.5])
    labels = dict(systems=["h", "m", "h", "m", "x"], images=["1", "1", "2", "2", "2"], bootstrap_samples=100, seed=3)
    assert module.compute(**kwargs, **labels) == thumb.score(**kwargs, **labels)


def test_add_batch_then_compute(module):
    module.add_batch(precision=[5, 4], recall=[3, 3], inclusive=[-0.5, 0])
    module.add_batch(precision=[4], recall=[2])
    out = module.compute(systems=["a", "b", "a"], images=["1", "1", "2"], bootstrap_samples=0)
    assert out["per_caption"]["total"] == pytest.approx([3.5, 3.5, 3.0])
    assert out["systems"]["a"]["inclusive"] == pytest.approx(0.25)
    assert out["systems"]["a"]["strictly_best"] == 1 and out["systems"]["b"]["strictly_worst"] == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(precision=[5, None], recall=[3, 3]), r"caption 1: precision is missing"),
        (dict(precision=[5, 7], recall=[3, 3], systems=["a", "b"]), r"caption 1 \(system 'b'\): precision is 7"),
        (dict(precision=[5, 4]), r"recall is missing"),
        (dict(predictions=["a"], references=["b"]), r"takes rubric scores, not predictions/references"),
    ],
)
def test_module_errors_name_the_caption(module, kwargs, match):
    with pytest.raises(ValueError, match=match):
        module.compute(**kwargs)


def test_module_script_doctests(module):
    script = importlib.import_module(type(module).__module__)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(script._KWARGS_DESCRIPTION, {}, "thumb._KWARGS_DESCRIPTION", str(MODULE_DIR), 0)
    assert len(test.examples) >= 5
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0


def test_readme_card_examples_run():
    text = (MODULE_DIR / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n") and "app_file: app.py" in text
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    parser = doctest.DocTestParser()
    globs: dict = {}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    n_examples = 0
    for k, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"README block {k}", str(MODULE_DIR / "README.md"), 0)
        n_examples += len(test.examples)
        runner.run(test, clear_globs=False)
        globs.update(test.globs)  # DocTest copies its globals: carry names to the next block
    assert n_examples >= 8
    assert runner.failures == 0


def test_module_script_has_one_import_per_line():
    for line in (MODULE_DIR / "thumb.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("import "):
            assert "," not in line, line


def test_space_app_builds_the_widget(monkeypatch):
    import evaluate.utils

    launched = []
    monkeypatch.setattr(evaluate.utils, "launch_gradio_widget", launched.append)
    runpy.run_path(str(MODULE_DIR / "app.py"), run_name="__main__")
    assert len(launched) == 1
    assert list(launched[0].features) == ["precision", "recall", "fluency", "conciseness", "inclusive"]


@pytest.mark.data
def test_module_on_the_thumb_release(module):
    path = require_data("thumb", "mscoco_THumB-1.0.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = module.compute(
        precision=[r["P"] for r in rows], recall=[r["R"] for r in rows], fluency=[r["Fl"] for r in rows],
        conciseness=[r["Con"] for r in rows], inclusive=[r["Inc"] for r in rows],
        systems=[r["SYS"] for r in rows], images=[r["seg_id"] for r in rows], bootstrap_samples=200,
    )
    assert out["per_caption"]["total"] == pytest.approx([r["human_score"] for r in rows], abs=1e-9)
    assert round(out["systems"]["Human"]["total"], 2) == 4.56
    assert out["systems"]["Up-Down"]["strictly_best"] == 74


def test_evaluate_load_with_hub_offline_from_process_start(tmp_path):
    """HF_HUB_OFFLINE is read when huggingface_hub is imported: check it in a fresh interpreter."""
    import os
    import subprocess
    import sys

    code = (
        "import evaluate, sys; m = evaluate.load(sys.argv[1]); "
        "r = m.compute(precision=[5, 3], recall=[4, 3], fluency=[-0.1, 0], bootstrap_samples=0); "
        "print(r['per_caption']['total'])"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")]),
           "HF_MODULES_CACHE": str(tmp_path / "modules")}
    out = subprocess.run([sys.executable, "-c", code, str(MODULE_DIR)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[4.4, 3.0]"
