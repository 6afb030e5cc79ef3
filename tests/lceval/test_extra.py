"""LCEval+'s three extra features and the critic behind its ``critic_ref`` column (``LCEvalConfig.extra_critic``):
tiny random critics and a bag-of-letters sentence encoder, so every test takes about a second."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from support import needs

from capeval.lceval.features import ALL_FEATURE_NAMES

needs("lceval")
needs("learned_critic")

PREDS = ["a dog runs on the grass", "a man rides a bike", "two cats sleep on a red sofa"]
REFS = [["a brown dog is running through the grass", "a dog in a field"], ["a man riding a bicycle"],
        ["two cats sleeping on a couch", "cats on a sofa", "a red sofa"]]


@pytest.fixture
def letters(monkeypatch, fake_encoder):
    """LCEval+ reads the bag-of-letters encoder instead of all-MiniLM-L6-v2."""
    import capeval.models.sentence_encoder as sentence_encoder

    monkeypatch.setattr(sentence_encoder, "load_sentence_encoder", lambda *a, **k: fake_encoder)
    return fake_encoder


@pytest.fixture(scope="module")
def other_ref_critic(tmp_path_factory) -> str:
    """A second tiny reference-only critic (other seed, so other weights)."""
    from support.tiny_critic import make_tiny_critics

    return make_tiny_critics(tmp_path_factory.mktemp("other-critics"), seed=7)["critic_ref_model"]


def test_the_critic_column_is_the_named_critic_averaged_over_references(tiny_critics, other_ref_critic, letters):
    from capeval.critic.loading import load_critic
    from capeval.critic.scoring import critic_scores
    from capeval.lceval.extra import extra_features

    x = extra_features(PREDS, REFS, critic=tiny_critics["critic_ref_model"])
    assert x.shape == (3, 3) and np.all(np.isfinite(x)) and np.all((x >= 0) & (x <= 1))
    model, vocab = load_critic(tiny_critics["critic_ref_model"], "reference")
    per_pair = [critic_scores([p], [[r]], model=model, vocab=vocab)[0] for p, refs in zip(PREDS, REFS) for r in refs]
    means = [np.mean(per_pair[a:b]) for a, b in ((0, 2), (2, 3), (3, 6))]
    np.testing.assert_allclose(x[:, 2], means, rtol=1e-5)
    # the sentence columns: max and mean over the references of (cos + 1) / 2
    cos = (letters.similarity([PREDS[2]] * 3, REFS[2]) + 1) / 2
    np.testing.assert_allclose(x[2, :2], [cos.max(), cos.mean()], rtol=1e-6)
    y = extra_features(PREDS, REFS, critic=other_ref_critic)
    np.testing.assert_array_equal(x[:, :2], y[:, :2])
    assert not np.allclose(x[:, 2], y[:, 2])


def test_an_image_reading_critic_and_empty_references_are_refused(tiny_critics, letters):
    from capeval.lceval.extra import extra_features

    with pytest.raises(ValueError, match="reference-only critic"):
        extra_features(PREDS, REFS, critic=tiny_critics["critic_model"])
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        extra_features(PREDS, [REFS[0], [], REFS[2]], critic=tiny_critics["critic_ref_model"])


def test_the_cache_settings_name_the_critic_and_its_weights(tiny_critics, other_ref_critic, tmp_path):
    from capeval.lceval.extra import CRITIC, extra_settings

    a = extra_settings(tiny_critics["critic_ref_model"])
    assert a == extra_settings(tiny_critics["critic_ref_model"])
    assert a != extra_settings(other_ref_critic)
    assert extra_settings() == extra_settings(CRITIC) != a
    # retrained weights in the same folder: other settings, so no stale cached rows are read
    copy = tmp_path / "critic_ref"
    shutil.copytree(tiny_critics["critic_ref_model"], copy)
    assert extra_settings(str(copy)) == a
    shutil.copy(f"{other_ref_critic}/model.safetensors", copy / "model.safetensors")
    assert extra_settings(str(copy)) != a


def _plus_model(folder, critic: str) -> str:
    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    rng = np.random.default_rng(1)
    params = {"W1": rng.normal(size=(19, 3)), "b1": np.zeros(3), "W2": rng.normal(size=(3, 2)), "b2": np.zeros(2)}
    LCEvalModel(LCEvalConfig(features=list(ALL_FEATURE_NAMES), hidden=3, extra_critic=critic),
                params).save_pretrained(folder)
    return str(folder)


def test_config_records_the_critic_and_old_configs_read_the_first_one(tmp_path):
    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    _plus_model(tmp_path / "m", "critic-coco-ref")
    assert LCEvalModel.from_pretrained(tmp_path / "m").config.extra_critic == "critic-coco-ref"
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    del config["extra_critic"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(config))
    assert LCEvalModel.from_pretrained(tmp_path / "m").config.extra_critic == "critic-flickr8k-ref"
    with pytest.raises(ValueError, match="extra_critic"):
        LCEvalConfig(extra_critic="  ")


def test_the_metric_signature_and_cache_token_name_the_critic(tiny_critics, other_ref_critic, tmp_path):
    from capeval.lceval.metric import LCEvalPlus

    a = _plus_model(tmp_path / "a", tiny_critics["critic_ref_model"])
    b = _plus_model(tmp_path / "b", other_ref_critic)
    metric = LCEvalPlus(lceval_plus_model=a)
    try:
        assert ",critic=critic_ref@" in metric.signature_value()
        assert metric.extractor.extra_critic == tiny_critics["critic_ref_model"]
    finally:
        metric.close()
    assert LCEvalPlus.cache_token({"lceval_plus_model": a}) != LCEvalPlus.cache_token({"lceval_plus_model": b})


# the tiny test critic knows a couple dozen words: its out-of-vocabulary warning says so on every caption
@pytest.mark.filterwarnings("ignore::capeval.OutOfVocabularyWarning")
def test_lceval_plus_scores_with_its_critic(tiny_critics, letters, java, tmp_path, monkeypatch):
    import capeval
    from capeval.lceval import lceval_features
    from capeval.lceval.extra import extra_features
    from capeval.lceval.model import LCEvalModel

    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = _plus_model(tmp_path / "plus", tiny_critics["critic_ref_model"])
    out = capeval.score(PREDS, REFS, metrics=["lceval_plus"], lceval_plus_model=folder)
    x = np.concatenate([lceval_features(PREDS, REFS), extra_features(PREDS, REFS, critic=tiny_critics["critic_ref_model"])],
                       axis=1)
    np.testing.assert_allclose(out["per_caption"]["lceval_plus"], LCEvalModel.from_pretrained(folder).predict(x),
                               rtol=1e-6)


def test_cli_train_plus_records_the_extra_critic(tmp_path, monkeypatch):
    """`capeval lceval train --plus --extra-critic NAME` writes the critic into the model config (training data
    replaced by random features: what is tested is the command's wiring, not the pairs)."""
    from types import SimpleNamespace

    import capeval.cli.cmd_lceval as cmd
    from capeval.cli import main
    from capeval.lceval.features import FeatureExtractor
    from capeval.lceval.model import LCEvalModel

    rng = np.random.default_rng(0)

    def fake_training_data(args):
        assert args.plus and args.extra_critic == "critic-coco-ref"
        x, y = rng.random((40, 19)), np.arange(40) % 2
        extractor = FeatureExtractor(extra=True, extra_critic=args.extra_critic)
        return SimpleNamespace(report={"train_pairs": 40}), (x, y), (x[:10], y[:10]), extractor

    monkeypatch.setattr(cmd, "_training_data", fake_training_data)
    assert main(["lceval", "train", "--machine-captions", "unused.jsonl", "--plus", "--extra-critic", "critic-coco-ref",
                 "--epochs", "2", "--out", str(tmp_path / "m")]) == 0
    config = LCEvalModel.from_pretrained(tmp_path / "m").config
    assert config.extra_critic == "critic-coco-ref" and config.features == list(ALL_FEATURE_NAMES)
    assert main(["lceval", "train", "--machine-captions", "unused.jsonl", "--extra-critic", "critic-coco-ref",
                 "--out", str(tmp_path / "n")]) != 0


def test_cli_train_mismatched_negatives_wiring(tmp_path, monkeypatch):
    """`--negatives mismatched` reaches the training set, names the objective in the model description, and is
    refused together with machine captions (which that objective would silently ignore)."""
    from types import SimpleNamespace

    import capeval.cli.cmd_lceval as cmd
    from capeval.cli import main
    from capeval.lceval.features import FeatureExtractor
    from capeval.lceval.model import LCEvalModel

    rng = np.random.default_rng(0)
    seen = {}

    def fake_training_data(args):
        seen["negatives"], seen["machine"] = args.negatives, args.machine_captions
        x, y = rng.random((40, 16)), np.arange(40) % 2
        return SimpleNamespace(report={"train_pairs": 40}), (x, y), (x[:10], y[:10]), FeatureExtractor()

    monkeypatch.setattr(cmd, "_training_data", fake_training_data)
    assert main(["lceval", "train", "--negatives", "mismatched", "--rc-per-image", "3", "--epochs", "2",
                 "--out", str(tmp_path / "m")]) == 0
    assert seen == {"negatives": "mismatched", "machine": []}
    assert "mismatched human captions per image only" in LCEvalModel.from_pretrained(tmp_path / "m").config.description
    assert main(["lceval", "train", "--negatives", "mismatched", "--rc-per-image", "3", "--machine-captions", "m.jsonl",
                 "--out", str(tmp_path / "n")]) != 0
    assert not (tmp_path / "n").exists()
