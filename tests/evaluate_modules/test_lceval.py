"""metrics/lceval through `evaluate`: the numbers of `capeval.score` for the released layer, for a tiny random network
passed by option and, once it is installed, for the shipped `lceval-flickr8k-coco`; the default metric, the features,
mixed reference forms, `evaluate.combine`, and the errors.

One module-wide cache: the first call computes the features (about 30 s cold: METEOR's JVM, the COCO document
frequencies, the parser and the vectors), every later call with the same captions reads them back."""
from __future__ import annotations

import warnings

import pytest
from support import ROOT, needs

import capeval
from capeval.catalog import DEFAULTS

evaluate = pytest.importorskip("evaluate")
needs("lceval")

PREDICTIONS = ["a dog runs across the grass", "A man rides a red bike down the street.", "!!!"]
REFERENCES = [["a brown dog running on a lawn", "a dog plays in the grass"],
              ["a man riding a bicycle on a road", "a person on a red bike"], ["two cats on a sofa"]]
FEATURE_NAMES = ["p1", "p2", "p3", "p4", "rouge1_recall", "rouge_l", "meteor", "wmd", "spice", "cider_d", "mowe",
                 "hwcm_lemma2", "hwcm_lemma3", "hwcm_lemma4", "hwcm_dep2", "hwcm_dep3"]


@pytest.fixture(autouse=True, scope="module")
def _module_cache(tmp_path_factory):
    """One fresh cache for the module: the features are computed once, cold, and read back afterwards."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("lceval-cache")))
        yield


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(ROOT / "metrics" / "lceval"))


@pytest.fixture(scope="module")
def released(module, java):
    """The one cold call: the released layer with its features."""
    return module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="lceval_released",
                          lceval_released_features=True)


def _shipped_network() -> bool:
    from capeval.model_store import model_dir as pretrained_dir

    try:
        return (pretrained_dir(DEFAULTS["lceval"]) / "model.safetensors").is_file()
    except FileNotFoundError:
        return False


def test_released_equals_capeval_score(released):
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="lceval_released", lceval_released_features=True)
    assert released == want
    assert list(released) == ["lceval_released", "per_caption", "coverage", "coverage_per_caption",
                              "reference_coverage", "lceval_released_features", "signature"]
    assert released["coverage"] == {"lceval_released": pytest.approx(released["coverage"]["lceval_released"])}
    assert 0.9 < released["coverage"]["lceval_released"] <= 1
    scores = released["per_caption"]["lceval_released"]
    assert all(0 < p < 1 for p in scores[:2]) and scores[2] == 0.0  # no word token: 0
    assert released["lceval_released"] == pytest.approx(sum(scores) / 3)
    assert "lceval_released:model=lceval-released-9990,feat=1,vec=glove-6b-50d,parser=" in released["signature"]
    features = released["lceval_released_features"]
    assert len(features) == 3 and all(list(row) == FEATURE_NAMES for row in features)
    assert all(0.0 <= v <= 1.0 + 1e-9 for row in features for v in row.values())


def test_the_score_is_the_released_layer_on_the_features(released):
    import numpy as np

    from capeval.lceval.model import LCEvalModel

    x = np.array([[row[n] for n in FEATURE_NAMES] for row in released["lceval_released_features"][:2]])
    np.testing.assert_allclose(LCEvalModel.from_pretrained("lceval-released-9990").predict(x),
                               released["per_caption"]["lceval_released"][:2], rtol=1e-9)


def test_both_networks_with_a_trained_folder(module, released, tiny_lceval):
    """metrics= names both; lceval_model= takes a folder (signature: its name and a hash); no features unasked."""
    kwargs = dict(metrics=["lceval", "lceval_released"], lceval_model=tiny_lceval)
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES, **kwargs)
    want = capeval.score(PREDICTIONS, REFERENCES, **kwargs)
    assert got == want
    assert sorted(got) == ["coverage", "coverage_per_caption", "lceval", "lceval_released", "per_caption",
                           "reference_coverage", "signature"]
    assert sorted(got["coverage"]) == ["lceval", "lceval_released"]
    assert got["per_caption"]["lceval_released"] == released["per_caption"]["lceval_released"]
    assert got["per_caption"]["lceval"][2] == 0.0 and all(0 < p < 1 for p in got["per_caption"]["lceval"][:2])
    assert "lceval:model=lceval-tiny@" in got["signature"]
    with_features = module.compute(predictions=PREDICTIONS, references=REFERENCES, lceval_features=True, **kwargs)
    assert with_features["lceval_features"] == released["lceval_released_features"]  # the same vectors and parser
    assert "lceval_released_features" not in with_features


def test_default_is_the_shipped_lceval_network(module, released):
    """The module's default is the catalog's (the caption-level network since 2026-11-26), as capeval.score's."""
    assert DEFAULTS["lceval"] == "lceval-caption-flickr8k-coco"
    if not _shipped_network():
        with pytest.raises(FileNotFoundError, match=DEFAULTS["lceval"]):
            module.compute(predictions=PREDICTIONS, references=REFERENCES)
        pytest.skip(f"the shipped {DEFAULTS['lceval']} network is not installed: checked the error only")
    got = module.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert sorted(got) == ["coverage", "coverage_per_caption", "lceval", "per_caption", "reference_coverage",
                           "signature"]
    assert got == capeval.score(PREDICTIONS, REFERENCES, metrics="lceval")
    assert f"lceval:model={DEFAULTS['lceval']},feat=1," in got["signature"]
    paper = module.compute(predictions=PREDICTIONS, references=REFERENCES, lceval_model="lceval-flickr8k-coco")
    assert "lceval:model=lceval-flickr8k-coco,feat=1," in paper["signature"]
    assert paper["per_caption"]["lceval"] != got["per_caption"]["lceval"]


def test_lceval_plus_options_reach_the_metric(module, released):
    """lceval_plus_model (documented) is accepted, not dropped: a folder that does not exist is refused by name."""
    with pytest.raises(FileNotFoundError, match="no-such-lceval-plus"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="lceval_plus",
                       lceval_plus_model="no-such-lceval-plus")


def test_one_reference_string_or_a_list(module, released):
    refs = [REFERENCES[0], REFERENCES[1], REFERENCES[2][0]]  # the last one as a string: the same item
    got = module.compute(predictions=PREDICTIONS, references=refs, metrics="lceval_released")
    assert got["per_caption"] == {"lceval_released": released["per_caption"]["lceval_released"]}
    assert got == capeval.score(PREDICTIONS, refs, metrics="lceval_released")


def test_combine_with_the_coco_module(released):
    combined = evaluate.combine([str(ROOT / "metrics" / "coco_caption"), str(ROOT / "metrics" / "lceval")])
    got = combined.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="bleu_1,lceval_released",
                           cider_df="references")
    want = capeval.score(PREDICTIONS, REFERENCES, metrics="bleu_1,lceval_released")
    assert got["bleu_1"] == want["bleu_1"] and got["lceval_released"] == want["lceval_released"]
    assert got["lceval_per_caption"] == {"lceval_released": want["per_caption"]["lceval_released"]}


def test_other_modules_metrics_give_nothing_here(module):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="bleu_1",
                              cider_df="references") == {}
    assert any("selects none of this module's metrics" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="Unknown option"):
        module.compute(predictions=PREDICTIONS, references=REFERENCES, lceval_modle="x")


def test_bad_input_and_options_are_named(module, tmp_path):
    with pytest.raises(ValueError, match=r"predictions\[1\]"):
        module.compute(predictions=["a dog", " "], references=[["a dog"], ["a cat"]], metrics="lceval_released")
    with pytest.raises(ValueError, match=r"predictions\[0\] has 6,000 characters"):
        module.compute(predictions=["a" * 6000], references=[["a dog"]], metrics="lceval_released")
    with pytest.raises(ValueError, match="lceval_released_features must be True or False"):
        module.compute(predictions=["a dog"], references=[["a dog"]], metrics="lceval_released",
                       lceval_released_features="yes")
    with pytest.raises(FileNotFoundError, match="neither a folder nor a model of capeval's catalog"):
        module.compute(predictions=["a dog"], references=[["a dog"]], metrics="lceval",
                       lceval_model=str(tmp_path / "nope"))
