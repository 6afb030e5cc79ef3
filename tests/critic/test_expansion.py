"""capeval.critic.expansion: the GloVe → trained-embedding map (Kiros et al. 2015's vocabulary expansion), the ids it
gives words outside a critic's vocabulary, and critic_oov through capeval.score."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")

import capeval  # noqa: E402
from capeval.critic.expansion import VocabularyExpansion, check_oov, fit_map  # noqa: E402
from capeval.critic.vocab import EOS, UNK, CriticVocab  # noqa: E402
from capeval.models.word_vectors import WordVectors  # noqa: E402


def test_the_map_recovers_an_affine_transform():
    rng = np.random.default_rng(0)
    glove = rng.normal(size=(500, 6))
    true = rng.normal(size=(7, 4))
    trained = np.hstack([glove, np.ones((500, 1))]) @ true
    assert np.allclose(fit_map(glove, trained, ridge=0.0), true, atol=1e-9)
    shrunk = fit_map(glove, trained, ridge=1.0)
    assert np.abs(shrunk).sum() < np.abs(true).sum()  # the penalty shrinks


def test_words_with_a_glove_vector_get_mapped_ids_and_the_others_stay_unknown():
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(40)] + ["zebra", "okapi"]
    vectors = WordVectors(words, rng.normal(size=(len(words), 3)).astype(np.float32), "toy")
    vocab = CriticVocab(["<pad>", "<unk>", "<sos>", "<eos>", *words[:40]], max_length=6)
    true = rng.normal(size=(4, 5))
    embeddings = np.zeros((len(vocab), 5))
    embeddings[4:] = np.hstack([vectors.vectors[:40], np.ones((40, 1))]) @ true
    expansion = VocabularyExpansion(vocab, embeddings, vectors)
    assert expansion.fitted_words == 40 and expansion.r2 > 0.999
    ids, lengths = expansion.encode(["w1 zebra qqq okapi zebra"])
    base = len(vocab)
    assert ids[0, :6].tolist() == [vocab.index["w1"], base, UNK, base + 1, base, EOS] and lengths[0] == 6
    assert np.allclose(expansion.extra[0], np.append(vectors["zebra"], 1.0) @ true, atol=0.02)  # ridge: close
    assert np.allclose(expansion.extra[0], np.append(vectors["zebra"], 1.0) @ expansion.map, atol=1e-5)
    assert expansion.known("okapi") and expansion.known("w3") and not expansion.known("qqq")
    again, _ = expansion.encode(["okapi"])  # an id is kept across calls
    assert again[0, 0] == base + 1
    with pytest.raises(ValueError, match="critic_oov must be one of"):
        check_oov("glove")


def test_critic_oov_through_capeval_score():
    preds = ["a dog runs through the sandbox", "a dog runs on the grass"]
    refs = [["a dog plays in a sandbox"], ["a brown dog running on grass"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapped = capeval.score(preds, refs, metrics="critic_ref")
        alone = capeval.score(preds[:1], refs[:1], metrics="critic_ref")
        unk = capeval.score(preds, refs, metrics="critic_ref", critic_oov="unk")
    assert "oov=glove-map" in mapped["signature"] and "oov=unk" in unk["signature"]
    # "sandbox" is outside the shipped critic's vocabulary: its caption's score moves; the other's does not
    assert mapped["per_caption"]["critic_ref"][0] != pytest.approx(unk["per_caption"]["critic_ref"][0], abs=1e-4)
    assert mapped["per_caption"]["critic_ref"][1] == pytest.approx(unk["per_caption"]["critic_ref"][1], abs=1e-6)
    # a word's embedding does not depend on what else is scored
    assert alone["per_caption"]["critic_ref"][0] == pytest.approx(mapped["per_caption"]["critic_ref"][0], abs=1e-6)
    with pytest.raises(ValueError, match="critic_oov must be one of"):
        capeval.score(preds, refs, metrics="critic_ref", critic_oov="nope")
