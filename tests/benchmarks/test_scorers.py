"""Benchmark scoring adapters and the score cache."""
from __future__ import annotations


import numpy as np
import pytest

from capeval.meta_evaluation.score_cache import ScoreCache, data_fingerprint
from capeval.meta_evaluation.scorers import score_items
from support import FIXTURES

MODULE = FIXTURES / "evaluate_modules" / "token_overlap"
PREDS = ["a dog runs", "a cat sleeps on a mat", "nothing matches here"]
REFS = [["a dog is running"], ["the cat is on the mat", "a cat sleeps"], ["a bird"]]
EXPECTED = [2 / 3, 1.0, 0.0]


def test_data_fingerprint_sensitive_to_every_field():
    base = data_fingerprint(PREDS, REFS)
    assert base != data_fingerprint(PREDS[:2] + ["x"], REFS)
    assert base != data_fingerprint(PREDS, REFS[:2] + [["a bird", "x"]])
    assert base == data_fingerprint(list(PREDS), [list(r) for r in REFS])


@pytest.mark.parametrize("per_item", [True, False])
def test_evaluate_module_per_item_scores(tmp_path, monkeypatch, per_item):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = ScoreCache(tmp_path / "c.sqlite")
    out = score_items(f"evaluate:{MODULE}", PREDS, REFS, cache=cache, options={"per_item": per_item})
    ((name, scores),) = out.items()
    np.testing.assert_allclose(scores.values, EXPECTED)


def test_cache_hit_skips_recompute(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cache = ScoreCache(tmp_path / "c.sqlite")
    score_items(f"evaluate:{MODULE}", PREDS, REFS, cache=cache)
    import evaluate

    monkeypatch.setattr(evaluate, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("recomputed")))
    again = score_items(f"evaluate:{MODULE}", PREDS, REFS, cache=cache)
    np.testing.assert_allclose(next(iter(again.values())).values, EXPECTED)
