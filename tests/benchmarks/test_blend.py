"""``blend:`` specs: standardised weighted sums of other metrics' per-item scores (the untrained
floor a learned combiner must clear)."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.meta_evaluation.blend import ConstantComponentWarning, combine, parse_blend, standardise
from capeval.meta_evaluation.contamination import contamination, metric_models
from capeval.meta_evaluation.harness import plan_comparisons
from capeval.meta_evaluation.scorers import needs_images, score_items

PREDS = ["a dog runs on the grass", "a cat sleeps on a bed", "two men play football", "a red car on a street"]
REFS = [["a dog running on grass", "a brown dog"], ["a cat is sleeping", "a cat on a bed"],
        ["men playing soccer", "a football game"], ["a red car parked", "a car in the street"]]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_parse_weights_and_fractions():
    assert parse_blend("blend:sentence_cosine+1/3*cider_d+0.5*spice") == [
        (1.0, "sentence_cosine"), (1 / 3, "cider_d"), (0.5, "spice")]
    for bad in ("blend:", "blend:cider_d+", "blend:x*cider_d", "blend:1/0*cider_d", "blend:cider_d+cider_d",
                "cider_d"):
        with pytest.raises(ValueError):
            parse_blend(bad)


def test_standardise_and_its_refusals():
    z = standardise(np.array([1.0, 2.0, 3.0]), "m")
    assert z.mean() == pytest.approx(0) and z.std() == pytest.approx(1)
    with pytest.warns(ConstantComponentWarning, match="m is constant"):
        assert list(standardise(np.array([2.0, 2.0]), "m")) == [0.0, 0.0]
    with pytest.raises(ValueError, match="m has a non-finite value at item 1"):
        standardise(np.array([1.0, np.nan]), "m")


def test_blend_is_the_weighted_sum_of_component_z_scores():
    spec = "blend:bleu_4+1/3*cider_d+2*rouge_l"
    parts = {k: score_items(k, PREDS, REFS)[k].values for k in ("bleu_4", "cider_d", "rouge_l")}
    got = score_items(spec, PREDS, REFS)[spec]
    z = {k: (v - v.mean()) / v.std() for k, v in parts.items()}
    assert np.allclose(got.values, z["bleu_4"] + z["cider_d"] / 3 + 2 * z["rouge_l"])
    assert np.allclose(got.values, combine(spec, parts))
    assert got.signature.startswith("blend(z:1*bleu_4,0.333333*cider_d,2*rouge_l)|") and "cider_d:df=refs" in \
        got.signature
    with pytest.raises(ValueError, match="metric family"):
        score_items("blend:bleu+cider_d", PREDS, REFS)
    # a family named by its main key ("spice" is also the key of SPICE's F-score) is that key
    pytest.importorskip("spacy")
    spice = score_items("spice", PREDS, REFS)["spice"].values
    both = score_items("blend:spice+bleu_4", PREDS, REFS)["blend:spice+bleu_4"].values
    assert np.allclose(both, (spice - spice.mean()) / spice.std() + z["bleu_4"])


def test_images_contamination_and_comparisons_follow_the_components():
    assert needs_images("blend:critic+cider_d") and not needs_images("blend:critic_ref+cider_d")
    assert metric_models("blend:sentence_cosine+cider_d") == ["all-minilm-l6-v2"]
    assert contamination("blend:sentence_cosine+1/3*cider_d", "flickr8k-expert")
    assert contamination("blend:sentence_cosine+1/3*cider_d", "thumb") == []
    assert contamination("blend:cider_d+spice", "flickr8k-expert") == []
    pairs, metrics = plan_comparisons(["blend:cider_d+spice,cider_d"], ["cider_d"])
    assert pairs == [("blend:cider_d+spice", "cider_d")] and metrics == ["cider_d", "blend:cider_d+spice"]
