"""metrics/thumb: evaluate.load offline, doctests of the module script and card, the Space app."""
from __future__ import annotations

import json

import pytest

evaluate = pytest.importorskip("evaluate")

from capeval import thumb  # noqa: E402
from support import ROOT, require_data  # noqa: E402

MODULE_DIR = ROOT / "metrics" / "thumb"


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


