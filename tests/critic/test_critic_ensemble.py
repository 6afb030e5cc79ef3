"""Critic ensembles (capeval.critic.stack without the cosine): the file round trip and its refusals, the score against its
formula on tiny random critics, the ensemble as a ``critic_model`` folder of the registered metrics (signature, score
cache), the fit on tiny dev pairs and ``capeval critic fit-ensemble``. Seconds each."""
from __future__ import annotations

import json

import numpy as np
import pytest

from capeval.critic.stack import ENSEMBLE_FILE, CriticStack, is_stack

# -- the file (numpy only) --------------------------------------------------------------------------------------


def test_ensemble_round_trips_and_refuses_bad_files(tmp_path):
    ens = CriticStack(["critic-flickr8k-caption", "critic-coco-ref"], [0.6, 0.5], -0.4, fit={"examples": 10})
    path = ens.save(tmp_path)
    assert path.name == ENSEMBLE_FILE and is_stack(tmp_path) and CriticStack.load(tmp_path) == ens
    data = json.loads(path.read_text())
    assert data["weights"] == [0.6, 0.5] and data["intercept"] == -0.4 and data["format"] == "capeval-critic-ensemble"
    x = np.array([[0.0, 1.0], [2.0, -3.0]])
    assert np.allclose(ens.probability(x), 1 / (1 + np.exp(-(x @ [0.6, 0.5] - 0.4))))
    with pytest.raises(ValueError, match=r"shape \[pairs, 2\]"):
        ens.log_odds(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="one weight per critic"):
        CriticStack(["a", "b"], [1.0], 0.0)
    with pytest.raises(ValueError, match="finite"):
        CriticStack(["a"], [float("nan")], 0.0)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ENSEMBLE_FILE).write_text(json.dumps({"format": "capeval-critic-plus"}))
    with pytest.raises(ValueError, match="not a critic stack"):
        CriticStack.load(tmp_path / "other")
    (tmp_path / "other" / ENSEMBLE_FILE).write_text(json.dumps({"format": "capeval-critic-ensemble", "critics": ["a"]}))
    with pytest.raises(ValueError, match="malformed"):
        CriticStack.load(tmp_path / "other")
    with pytest.raises(FileNotFoundError, match="fit-ensemble"):
        CriticStack.load(tmp_path / "nothing")


# -- scoring (torch) --------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from capeval.critic.stack import load_scorer  # noqa: E402
from capeval.critic.stack import stack_features as member_log_odds  # noqa: E402
from capeval.critic.stack import stack_scores  # noqa: E402
from capeval.critic.loading import load_critic  # noqa: E402
from capeval.critic.scoring import critic_pairs, critic_scores  # noqa: E402
from support.tiny_critic import DEV_WORDS, random_features, tiny_dev_data  # noqa: E402

def load_ensemble(folder, device=None):
    scorer = load_scorer(folder, device=device)
    return scorer.stack, scorer.members


def ensemble_scores(*args, ensemble=None, **kwargs):
    return stack_scores(*args, stack=ensemble, **kwargs)


def fit_ensemble(*args, **kwargs):
    from capeval.critic.stack import fit_stack

    return fit_stack(*args, **kwargs)


PREDS = ["a cat looking at the camera", "an astronaut in a suit", "a dog runs"]
REFS = [["a cat with stripes", "a striped cat"], ["an astronaut woman"], ["a dog on the grass", "a dog", "grass"]]


def _ensemble_folder(tiny_critics, tmp_path, options=("critic_model", "critic_ref_model"), weights=(0.7, 1.3),
                     intercept=-0.2):
    folder = tmp_path / "ens"
    CriticStack([tiny_critics[o] for o in options], list(weights), intercept).save(folder)
    return folder


def test_score_is_the_formula_on_tiny_critics(tiny_critics, tmp_path):
    folder = _ensemble_folder(tiny_critics, tmp_path, options=("critic_model", "critic_ref_model", "critic_img_model"),
                              weights=(0.7, 1.3, -0.5))
    ens, members = load_ensemble(folder, device="cpu")
    feats = random_features(3)
    got = ensemble_scores(PREDS, REFS, image_features=feats, ensemble=ens, members=members)
    # by hand: per pair the weighted sum of each critic's logit(P) on (candidate, that reference), mean per candidate
    want = []
    for i, refs in enumerate(REFS):
        z = ens.intercept
        for w, (model, vocab) in zip(ens.weights, members):
            p = critic_scores([PREDS[i]] * len(refs), [[r] for r in refs] if model.config.uses_reference else None,
                              image_features=feats[i:i + 1].expand(len(refs), -1) if model.config.uses_image else None,
                              model=model, vocab=vocab)
            z = z + w * np.log(p / (1 - p))
        want.append(float(np.mean(1 / (1 + np.exp(-z)))))
    assert np.allclose(got, want, atol=1e-6)
    assert np.array_equal(got, ensemble_scores(PREDS, REFS, image_features=feats, ensemble=ens, members=members))
    # the batch size only changes float32 rounding
    assert np.allclose(got, ensemble_scores(PREDS, REFS, image_features=feats, path=folder, batch_size=2), atol=1e-6)
    # one member with weight 1 and no intercept is that critic
    CriticStack([tiny_critics["critic_model"]], [1.0], 0.0).save(tmp_path / "one")
    assert np.allclose(ensemble_scores(PREDS, REFS, image_features=feats, path=tmp_path / "one"),
                       critic_scores(PREDS, REFS, image_features=feats, path=tiny_critics["critic_model"]), atol=1e-9)
    odds = member_log_odds(PREDS, REFS, members=members, image_features=feats)
    assert odds.item.tolist() == [0, 0, 1, 2, 2, 2] and odds.log_odds.shape == (6, 3)
    assert odds.log_odds[0, 2] == odds.log_odds[1, 2]  # the image-only member repeats its log-odds per reference
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        member_log_odds(PREDS, [REFS[0], [], REFS[2]], members=members, image_features=feats)
    with pytest.raises(ValueError, match="needs one image per candidate"):
        ensemble_scores(PREDS, REFS, ensemble=ens, members=members)
    with pytest.raises(ValueError, match="3 weights but 2 critics"):
        ensemble_scores(PREDS, REFS, image_features=feats, ensemble=ens, members=members[:2])


def test_members_reading_the_same_features_encode_the_images_once(tiny_critics, tmp_path, monkeypatch):
    import capeval.critic.stack as module
    from capeval.io import example_images

    folder = _ensemble_folder(tiny_critics, tmp_path, options=("critic_model", "critic_img_model"), weights=(0.8, 0.6))
    ens, members = load_ensemble(folder, device="cpu")
    images = [str(p) for p in example_images()[:3]]
    calls, real = [], module.encode_images
    monkeypatch.setattr(module, "encode_images", lambda *a, **k: calls.append(1) or real(*a, **k))
    got = ensemble_scores(PREDS, REFS, images=images, ensemble=ens, members=members)
    assert len(calls) == 1
    feats = real(members[0][0], images)
    assert np.allclose(got, ensemble_scores(PREDS, REFS, image_features=feats, ensemble=ens, members=members), atol=1e-9)
    with pytest.raises(ValueError, match="give one per candidate"):
        ensemble_scores(PREDS, REFS, images=images[:2], ensemble=ens, members=members)


def test_an_ensemble_of_an_ensemble_is_refused(tiny_critics, tmp_path):
    inner = _ensemble_folder(tiny_critics, tmp_path)
    CriticStack([str(inner)], [1.0], 0.0).save(tmp_path / "outer")
    with pytest.raises(ValueError, match="itself a critic stack"):
        load_ensemble(tmp_path / "outer")


def test_registered_metrics_read_an_ensemble_folder(tiny_critics, tmp_path):
    import capeval
    from capeval.io import example_images

    folder = _ensemble_folder(tiny_critics, tmp_path)
    images = [str(p) for p in example_images()[:3]]
    out = capeval.score(PREDS, REFS, metrics=["critic"], images=images, critic_model=str(folder), critic_oov="unk")
    per = out["per_caption"]["critic"]
    assert out["critic"] == pytest.approx(np.mean(per)) and all(0 < s < 1 for s in per)
    assert np.allclose(per, ensemble_scores(PREDS, REFS, images=images, path=folder), atol=1e-9)
    assert "critic:model=ens@" in out["signature"] and "ctx=image+reference" in out["signature"]
    # the context is the members' union: image + reference here, so critic_ref refuses it
    with pytest.raises(ValueError, match="expects a critic with context 'reference'"):
        capeval.score(PREDS, REFS, metrics=["critic_ref"], critic_ref_model=str(folder))
    with pytest.raises(ValueError, match="needs one image per prediction"):
        capeval.score(PREDS, REFS, metrics=["critic"], critic_model=str(folder))
    with pytest.raises(FileNotFoundError, match=r"images\[1\] \(.*missing.jpg\): no such image file"):
        capeval.score(PREDS, REFS, metrics=["critic"], images=[images[0], str(tmp_path / "missing.jpg"), images[2]],
                      critic_model=str(folder))
    # an ensemble of reference-only critics is a critic_ref (no image read)
    refs_only = _ensemble_folder(tiny_critics, tmp_path / "r", options=("critic_ref_model", "critic_ref_model"),
                                 weights=(0.5, 0.5), intercept=0.0)
    ref_out = capeval.score(PREDS, REFS, metrics=["critic_ref"], critic_ref_model=str(refs_only))
    alone = capeval.score(PREDS, REFS, metrics=["critic_ref"], critic_ref_model=tiny_critics["critic_ref_model"])
    assert np.allclose(ref_out["per_caption"]["critic_ref"], alone["per_caption"]["critic_ref"], atol=1e-9)
    # a caption without word tokens scores 0, as the critic's
    odd = capeval.score(["?!", PREDS[0]], REFS[:2], metrics=["critic"], images=images[:2], critic_model=str(folder))
    assert odd["per_caption"]["critic"][0] == 0 and odd["per_caption"]["critic"][1] > 0


def test_score_cache_key_follows_the_ensemble_and_its_members(tiny_critics, tmp_path):
    import shutil

    from capeval.critic.metric import Critic

    member = tmp_path / "member"
    shutil.copytree(tiny_critics["critic_model"], member)
    folder = tmp_path / "ens"
    CriticStack([str(member)], [1.0], 0.0).save(folder)
    first = Critic.cache_token({"critic_model": str(folder)})
    assert first == Critic.cache_token({"critic_model": str(folder)})
    CriticStack([str(member)], [1.5], 0.0).save(folder)
    second = Critic.cache_token({"critic_model": str(folder)})
    assert second != first
    (member / "vocab.json").write_text((member / "vocab.json").read_text().replace("cat", "cow"))
    assert Critic.cache_token({"critic_model": str(folder)}) != second


def test_fit_ensemble_on_tiny_dev_pairs(tiny_critics, tmp_path):
    from capeval.critic.stack import fit_logistic

    table, dev, _ = tiny_dev_data()
    words = DEV_WORDS
    critics = [tiny_critics["critic_model"], tiny_critics["critic_ref_model"]]
    ens = fit_ensemble(table, dev, critics, vocabulary=words, seed=3)
    fit = ens.fit
    assert fit["examples"] == 2 * 5 * len(dev) and fit["seed"] == 3 and fit["context"] == "image+reference"
    assert set(fit["negative_sources"]) <= {"RC", "WP", "RW"} and len(fit["negative_sources"]) >= 2
    assert ens.critics == critics and len(ens.weights) == 2
    # the fit is the logistic regression of the labels on the members' log-odds, and never worse than either alone
    assert all(fit["dev"]["log_loss"] <= alone["log_loss"] + 1e-9 for alone in fit["dev_members_alone"].values())
    assert fit_ensemble(table, dev, critics, vocabulary=words, seed=3) == ens  # deterministic
    ens.save(tmp_path)
    assert CriticStack.load(tmp_path) == ens
    with pytest.raises(ValueError, match="give vocabulary="):
        fit_ensemble(table, dev, critics)
    with pytest.raises(ValueError, match="at least one critic"):
        fit_ensemble(table, dev, [], vocabulary=words)
    other = table.__class__(sorted(table.index, key=table.index.get), table.features.float(),
                            settings="image_encoder:resnet152,res:224", kind="pooled")
    with pytest.raises(ValueError, match="the critic reads other ones"):
        fit_ensemble(other, dev, critics, vocabulary=words)
    # the same pairs, refitted by hand from the members' log-odds, give the same weights
    from capeval.critic.data import fixed_pairs

    pairs = [e for p in fixed_pairs(dev, table, mix={"RC": 3, "WP": 1, "RW": 1}, seed=3, vocabulary=words) for e in p]
    members = [load_critic(c, device="cpu") for c in critics]
    odds = member_log_odds([e.candidate for e in pairs], [[e.reference] for e in pairs], members=members,
                           image_features=table.rows([e.image for e in pairs]))
    w = fit_logistic(odds.log_odds, np.array([e.label for e in pairs], dtype=float))
    assert np.allclose([*ens.weights, ens.intercept], w)


def test_cli_fit_ensemble(tiny_critics, tmp_path, monkeypatch, capsys):
    import capeval.corpora.captions as data
    from capeval.cli import main

    table, dev, test = tiny_dev_data()
    words = DEV_WORDS
    train = {"train.jpg": [" ".join(words)]}
    table.save(tmp_path / "feats.safetensors")
    monkeypatch.setattr(data, "flickr8k_captions", lambda split: {"dev": dev, "test": test, "train": train}[split])
    critics = [tiny_critics["critic_model"], tiny_critics["critic_img_model"]]
    rc = main(["critic", "fit-ensemble", "--features", str(tmp_path / "feats.safetensors"), "--critics",
               ",".join(critics), "--out", str(tmp_path / "ens"), "--mix", "RC=1,WP=1"])
    assert rc == 0 and "intercept=" in capsys.readouterr().err
    saved = CriticStack.load(tmp_path / "ens")
    assert saved.critics == critics and saved.fit["images"] == len(dev)
    # RW only where WP cannot change a caption (all its words equal: NegativeSampler falls back to RW)
    assert {"RC", "WP"} <= set(saved.fit["negative_sources"]) <= {"RC", "WP", "RW"}
    assert saved == fit_ensemble(table, dev, critics, mix={"RC": 1, "WP": 1}, vocabulary=sorted(set(words)),
                                 device="cpu")
    assert main(["critic", "fit-ensemble", "--features", str(tmp_path / "feats.safetensors"), "--critics", " , ",
                 "--out", str(tmp_path / "x")]) == 1
    assert "--critics: name at least one critic" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_critic_pairs_point_to_the_ensemble_api(tiny_critics, tmp_path):
    folder = _ensemble_folder(tiny_critics, tmp_path)
    with pytest.raises(FileNotFoundError, match="critic stack"):
        critic_pairs(PREDS, REFS, path=folder)


# -- an ensemble of the bundled critics -------------------------------------------------------------------------


def test_ensemble_of_bundled_critics_prefers_the_matching_caption(tmp_path):
    """No ensemble ships (critic-flickr8k-ensemble is retired); one made of two bundled critics scores through
    ``critic_model=FOLDER`` and names itself in the signature."""
    import capeval
    from capeval.io import example_images

    folder = tmp_path / "my-ensemble"
    CriticStack(["critic-flickr8k-caption", "critic-coco-ref"], [0.6, 0.5], -0.4).save(folder)
    cat = str(example_images()[0])
    refs = [["a striped cat looks at the camera", "a tabby cat"]] * 3
    out = capeval.score(["a cat looking at the camera", "a man riding a bike down the street",
                         "camera the at looking cat a"], refs, metrics=["critic"], images=[cat] * 3,
                        critic_model=str(folder))
    good, other, permuted = out["per_caption"]["critic"]
    assert good > 0.5 > max(other, permuted)
    assert "critic:model=my-ensemble@" in out["signature"] and "ctx=image+reference,refs=mean" in out["signature"]


def test_no_default_stack():
    with pytest.raises(ValueError, match="give the folder of a critic stack"):
        stack_scores(PREDS, REFS)
