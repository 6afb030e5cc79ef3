"""The evaluate module metrics/spice: loads offline, its doctests pass, it matches capeval.score."""
from __future__ import annotations


import pytest
from support import ROOT

pytest.importorskip("spacy")
evaluate = pytest.importorskip("evaluate")



@pytest.fixture(autouse=True)
def _in_root(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))



def test_module_matches_capeval(java):
    import capeval

    preds = ["a dog runs on the grass", "two cats on a red sofa"]
    refs = [["a brown dog running on a lawn", "a dog sprints through a field"], "two cats sleeping on a red couch"]
    module = evaluate.load(str(ROOT / "metrics" / "spice"))
    got = module.compute(predictions=preds, references=[r if isinstance(r, list) else [r] for r in refs], tokenizer="ptb-java")
    want = capeval.score(preds, refs, metrics=["spice"], tokenizer="ptb-java")
    assert got["spice"] == want["spice"]
    assert got["per_caption"] == want["per_caption"]
