"""LCEval's own feature functions: n-gram precisions, ROUGE-1 recall, head-word chains."""
from __future__ import annotations

import numpy as np
import pytest

from capeval.lceval.hwcm import chains, hwcm, hwcm_max
from capeval.lceval.lexical import lexical_features, ngram_precisions, rouge1_recall


def test_ngram_precisions_clip_by_the_max_reference_count():
    cand = "the the the cat".split()
    refs = ["the cat".split(), "the the dog".split()]
    p = ngram_precisions(cand, refs)
    # unigrams: 'the' x3 clipped to 2 (second reference), 'cat' 1 -> 3 of 4
    assert p[0] == pytest.approx((3 + 1e-15) / (4 + 1e-9))
    # bigrams: (the,the) x2 clipped to 1, (the,cat) 1 -> 2 of 3
    assert p[1] == pytest.approx(2 / 3)
    assert p[2] == pytest.approx(0.0, abs=1e-5) and p[3] == pytest.approx(0.0, abs=1e-5)


def test_ngram_precisions_of_a_short_or_empty_candidate_are_finite():
    p = ngram_precisions(["dog"], [["a", "dog"]])
    assert p[0] == pytest.approx(1.0) and np.all(p[1:] < 1e-5) and np.all(np.isfinite(p))
    assert np.all(ngram_precisions([], [["a"]]) < 1e-5)


def test_rouge1_recall_is_the_best_reference_recall():
    assert rouge1_recall("a dog runs".split(), ["a dog".split(), "a big dog runs fast".split()]) == pytest.approx(1.0)
    assert rouge1_recall("a a a".split(), ["a b c d".split()]) == pytest.approx(0.25)  # clipped
    assert rouge1_recall(["x"], [[], ["y"]]) == 0.0
    assert rouge1_recall(["x"], []) == 0.0


def test_lexical_features_shape():
    x = lexical_features([["a", "b"], []], [[["a", "b"]], [["c"]]])
    assert x.shape == (2, 5) and x[0, 0] == pytest.approx(1.0) and x[0, 4] == pytest.approx(1.0)


# "a bird sits on a branch": sits is the root; bird <- a; sits -> on -> branch -> a
BIRD = [("a", "det", "1"), ("bird", "nsubj", "2"), ("sit", "ROOT", "2"), ("on", "prep", "2"),
        ("a", "det", "5"), ("branch", "pobj", "3")]


def test_chains_walk_down_the_tree():
    assert sum(chains(BIRD, "lemma", 1).values()) == 6
    two = chains(BIRD, "lemma", 2)
    assert two == {("bird", "a"): 1, ("sit", "bird"): 1, ("sit", "on"): 1, ("on", "branch"): 1, ("branch", "a"): 1}
    assert chains(BIRD, "lemma", 3) == {("sit", "bird", "a"): 1, ("sit", "on", "branch"): 1, ("on", "branch", "a"): 1}
    assert chains(BIRD, "lemma", 4) == {("sit", "on", "branch", "a"): 1}
    assert chains(BIRD, "dep", 2)[("ROOT", "nsubj")] == 1
    with pytest.raises(ValueError, match="field"):
        chains(BIRD, "pos", 2)


def test_hwcm_is_the_mean_overlap_normalised_by_the_reference():
    assert hwcm(BIRD, BIRD, "lemma", 4) == pytest.approx(1.0)
    other = [("a", "det", "1"), ("bird", "ROOT", "1")]  # "a bird": 2 tokens, one 2-chain (bird, a)
    # u=1: candidate tokens a,bird,sit,on,a,branch vs reference {a, bird}: 2 matches / 2; u=2: (bird,a) 1 / 1
    assert hwcm(BIRD, other, "lemma", 2) == pytest.approx(1.0)
    # the other way round: u=1 2/6, u=2 1/5
    assert hwcm(other, BIRD, "lemma", 2) == pytest.approx((2 / 6 + 1 / 5) / 2)
    assert hwcm([], BIRD, "lemma", 2) == 0.0 and hwcm(BIRD, [], "lemma", 3) == 0.0


def test_hwcm_max_over_references():
    other = [("a", "det", "1"), ("cat", "ROOT", "1")]
    out = hwcm_max(BIRD, [other, BIRD], [("lemma", 2), ("dep", 3)])
    assert out.tolist() == pytest.approx([1.0, 1.0])
    assert hwcm_max(BIRD, [], [("lemma", 2)]).tolist() == [0.0]


def test_chain_table_counts_what_chains_counts_on_random_forests():
    """chain_table walks each tree once for all fields; its counts are chains()' for every (field, length)."""
    import random

    from capeval.lceval.hwcm import chain_table, chains

    rng = random.Random(7)
    specs = (("lemma", 2), ("lemma", 4), ("dep", 3))
    for _ in range(300):
        n = rng.randint(0, 12)
        rows = []
        for i in range(n):  # heads point left (a forest), roots to themselves, some out of range (ignored)
            head = i if i == 0 or rng.random() < 0.2 else rng.choice([rng.randrange(i), n + 3])
            rows.append((rng.choice("abc"), rng.choice(["nsubj", "det", "ROOT"]), str(head)))
        table = chain_table(rows, specs)
        assert set(table) == {("lemma", u) for u in range(1, 5)} | {("dep", u) for u in range(1, 4)}
        for (field, u), (counts, total) in table.items():
            expected = chains(rows, field, u)
            assert counts == expected and total == sum(expected.values())
    with pytest.raises(ValueError, match="field"):
        chain_table([("a", "det", "0")], [("pos", 2)])
