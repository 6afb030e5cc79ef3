"""The evaluate module metrics/spice_u: offline load, doctests, same numbers as capeval.score."""
from __future__ import annotations

import pytest

from support import ROOT

pytest.importorskip("spacy")
evaluate = pytest.importorskip("evaluate")


@pytest.fixture(autouse=True)
def _in_root(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")



def test_module_matches_capeval(java):
    import capeval

    preds = ["a giraffe eating leaves from a tall tree", "a man on a bench"]
    refs = [["a giraffe reaching up to eat from a tree", "a tall giraffe next to trees"], "a man sitting on a park bench"]
    got = evaluate.load(str(ROOT / "metrics" / "spice_u")).compute(
        predictions=preds, references=[r if isinstance(r, list) else [r] for r in refs], tokenizer="ptb-java")
    want = capeval.score(preds, refs, metrics=["spice_u"], tokenizer="ptb-java")
    assert got["per_caption"] == want["per_caption"] and got["spice_u"] == want["spice_u"]
    assert "table=coco-train2014:82783img" in got["signature"]
