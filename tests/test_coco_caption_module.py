"""metrics/coco_caption: evaluate.load offline, same numbers as capeval.score, doctests, the Space app."""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

evaluate = pytest.importorskip("evaluate")

import capeval  # noqa: E402
import capeval.text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODULE_DIR = ROOT / "metrics" / "coco_caption"
HAVE_PY_PTB = importlib.util.find_spec("capeval.text.ptb") is not None

PREDICTIONS = ["A dog runs across the grass.", "Two men ride horses on a beach.", "a red bus ..."]
REFERENCES = [
    ["A brown dog running on a lawn.", "A dog runs through a grassy field."],
    ["Two people riding horses along the shore.", "Men on horseback at the beach.", "Horses on sand."],
    ["A red double-decker bus on a street."],
]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    monkeypatch.chdir(ROOT)  # the examples load the local folder "metrics/coco_caption"
    if not HAVE_PY_PTB:
        # The pure-Python PTB tokenizer (the default) is written on another branch; it reproduces the
        # Java tokenizer's tokens, so until it is merged the examples run with the Java one.
        monkeypatch.setitem(capeval.text._TOKENIZERS, "ptb", ("capeval.text.ptb_java", "JavaPTBTokenizer"))


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(MODULE_DIR))


def test_features_accept_a_list_or_one_reference(module):
    assert isinstance(module.features, list) and len(module.features) == 2
    assert [sorted(f) for f in module.features] == [["predictions", "references"]] * 2
    kinds = {type(f["references"]).__name__ for f in module.features}
    assert kinds == {"Sequence", "Value"} or kinds == {"List", "Value"}


@pytest.mark.java
@pytest.mark.parametrize("metrics", [["bleu", "rouge_l", "cider_d"], None])
def test_compute_equals_capeval_score(module, metrics):
    ours = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=metrics, tokenizer="ptb-java")
    direct = capeval.score(PREDICTIONS, REFERENCES, metrics=metrics, tokenizer="ptb-java")
    assert ours == direct
    if metrics is None:
        assert {"bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"} <= set(ours)


def test_one_reference_string_per_prediction(module):
    ours = module.compute(predictions=PREDICTIONS[:2], references=["A dog runs.", "Men ride horses."], metrics="bleu,rouge_l", tokenizer="ptb-java")
    direct = capeval.score(PREDICTIONS[:2], [["A dog runs."], ["Men ride horses."]], metrics="bleu,rouge_l", tokenizer="ptb-java")
    assert ours == direct and ours["signature"].startswith("nrefs:1|")


def test_add_batch_then_compute(module):
    module.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    module.add_batch(predictions=PREDICTIONS[2:], references=REFERENCES[2:])
    ours = module.compute(metrics=["cider_d"], tokenizer="ptb-java", cleanup="none")
    assert ours == capeval.score(PREDICTIONS, REFERENCES, metrics=["cider_d"], tokenizer="ptb-java", cleanup="none")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(predictions=["a dog", ""], references=["a", "b"]), r"predictions\[1\] is empty"),
        (dict(predictions=["a dog", "a cat"], references=[["a"], []]), r"references\[1\] is an empty list"),
        (dict(predictions=["a dog"], references=["a"], metrics="cider_d", cider_df="imagenet"), r"cider_df='imagenet'"),
        (dict(predictions=["a dog"], references=["a"], metrics="blue"), r"Unknown metric 'blue'"),
    ],
)
def test_module_errors_name_the_problem(module, kwargs, match):
    with pytest.raises(ValueError, match=match):
        module.compute(tokenizer="ptb-java", **kwargs)


@pytest.mark.java
def test_module_script_doctests(module):
    script = importlib.import_module(type(module).__module__)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(script._KWARGS_DESCRIPTION, {}, "coco_caption._KWARGS_DESCRIPTION", str(MODULE_DIR), 0)
    assert len(test.examples) >= 8
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0


def test_readme_card_examples_run():
    text = (MODULE_DIR / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n") and "app_file: app.py" in text
    for section in ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                    "#### Values from Popular Papers", "## Limitations and Bias", "## Citation"):
        assert section in text, section
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if ">>>" in b]
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
    for line in (MODULE_DIR / "coco_caption.py").read_text(encoding="utf-8").splitlines():
        if line.startswith("import "):
            assert "," not in line, line


def test_space_app_builds_the_widget(monkeypatch):
    import evaluate.utils

    launched = []
    monkeypatch.setattr(evaluate.utils, "launch_gradio_widget", launched.append)
    runpy.run_path(str(MODULE_DIR / "app.py"), run_name="__main__")
    assert len(launched) == 1
    assert isinstance(launched[0].features, list)


def test_evaluate_load_with_hub_offline_from_process_start(tmp_path):
    """HF_HUB_OFFLINE is read when huggingface_hub is imported: check it in a fresh interpreter."""
    code = (
        "import evaluate, sys; m = evaluate.load(sys.argv[1]); "
        "r = m.compute(predictions=['A dog runs.', 'A cat.'], references=[['A dog runs.'], ['A cat sleeps.']], "
        "metrics='bleu_1,rouge_l', tokenizer='ptb-java'); print(round(r['bleu_1'], 6), round(r['rouge_l'], 6))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")]),
           "HF_MODULES_CACHE": str(tmp_path / "modules")}
    out = subprocess.run([sys.executable, "-c", code, str(MODULE_DIR)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    direct = capeval.score(["A dog runs.", "A cat."], [["A dog runs."], ["A cat sleeps."]], metrics="bleu_1,rouge_l",
                           tokenizer="ptb-java")
    assert out.stdout.strip().splitlines()[-1] == f"{round(direct['bleu_1'], 6)} {round(direct['rouge_l'], 6)}"
