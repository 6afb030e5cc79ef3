"""capeval.judgments.stats against hand-computed values and scipy."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from capeval.judgments import stats


def brute_force_tau(x, y, variant):
    """Kendall tau-b / tau-c straight from the definitions (pair counting)."""
    p = q = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        if dx == 0 and dy == 0:
            continue
        if dx == 0:
            tx += 1
        elif dy == 0:
            ty += 1
        elif dx == dy:
            p += 1
        else:
            q += 1
    if variant == "b":
        return (p - q) / math.sqrt((p + q + tx) * (p + q + ty))
    n, m = len(x), min(len(set(x)), len(set(y)))
    return 2 * (p - q) / (n**2 * (m - 1) / m)


def test_kendall_hand_computed_without_ties():
    # 7 concordant, 3 discordant pairs of 10: tau = 0.4 for both variants (n = m = 5).
    assert stats.kendall_tau([1, 2, 3, 4, 5], [3, 1, 2, 5, 4], "b") == pytest.approx(0.4)
    assert stats.kendall_tau([1, 2, 3, 4, 5], [3, 1, 2, 5, 4], "c") == pytest.approx(0.4)


def test_kendall_hand_computed_with_ties():
    # P=4, Q=0, one pair tied only in x, one tied in both: tau-b = 4/sqrt(5*4); tau-c = 2*4/(16*(2-1)/2) = 1.
    human, metric = [1, 1, 2, 2], [0.1, 0.2, 0.3, 0.3]
    assert stats.kendall_tau(human, metric, "b") == pytest.approx(4 / math.sqrt(20))
    assert stats.kendall_tau(human, metric, "c") == pytest.approx(1.0)


def test_kendall_matches_definitions_and_scipy_on_tied_data():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 5, size=60).astype(float)  # 1-4 like the Flickr8k experts
    metric = np.round(human + rng.normal(0, 1.5, size=60), 1)
    for variant in ("b", "c"):
        ours = stats.kendall_tau(human, metric, variant)
        assert ours == pytest.approx(brute_force_tau(human, metric, variant), abs=1e-12)
        assert ours == pytest.approx(scipy.stats.kendalltau(metric, human, variant=variant).statistic, abs=1e-12)
    assert stats.kendall_tau(human, metric, "b") != pytest.approx(stats.kendall_tau(human, metric, "c"), abs=1e-3)


def test_pearson_spearman_hand_and_scipy():
    assert stats.pearson([1, 2, 3], [1, 2, 4]) == pytest.approx(9 / math.sqrt(84))
    assert stats.spearman([1, 2, 3, 4], [10, 30, 20, 40]) == pytest.approx(1 - 6 * 2 / (4 * 15))  # rho = 0.8
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=50), rng.normal(size=50)
    assert stats.pearson(x, y) == pytest.approx(scipy.stats.pearsonr(x, y).statistic)
    assert stats.spearman(x, y) == pytest.approx(scipy.stats.spearmanr(x, y).statistic)


@pytest.mark.parametrize(
    "x, y, match",
    [
        ([1, 1, 1], [1, 2, 3], "constant"),
        ([1, 2, float("nan")], [1, 2, 3], r"x\[2\] is nan"),
        ([1, 2], [1, 2, 3], "length mismatch"),
        ([1], [1], "at least 2"),
    ],
)
def test_correlations_refuse_undefined_input(x, y, match):
    for name in ("kendall_b", "kendall_c", "pearson", "spearman"):
        with pytest.raises(ValueError, match=match):
            stats.correlation(x, y, name)


def test_correlation_dispatch_rejects_unknown():
    with pytest.raises(ValueError, match="unknown correlation"):
        stats.correlation([1, 2], [1, 2], "kendall_a")


# pairs: metric prefers b (human b) -> right; a (human a) -> right; metric tie; human tie (metric b)
A, B, PREF = [1.0, 2.0, 3.0, 3.0], [2.0, 1.0, 3.0, 4.0], [1, 0, 0, None]


@pytest.mark.parametrize(
    "metric_ties, human_ties, expected",
    [
        ("half", "exclude", 2.5 / 3),
        ("wrong", "exclude", 2 / 3),
        ("half", "half", 3 / 4),
        ("wrong", "half", 2.5 / 4),
    ],
)
def test_pairwise_accuracy_tie_policies(metric_ties, human_ties, expected):
    got = stats.pairwise_accuracy(A, B, PREF, metric_ties=metric_ties, human_ties=human_ties)
    assert got == pytest.approx(expected)


def test_pairwise_accuracy_random_policies_are_seeded():
    values = {stats.pairwise_accuracy(A, B, PREF, metric_ties="random", human_ties="random", seed=s) for s in range(40)}
    assert values <= {2 / 4, 3 / 4, 4 / 4} and len(values) > 1  # coins matter ...
    first = stats.pairwise_accuracy(A, B, PREF, metric_ties="random", human_ties="random", seed=7)
    assert all(first == stats.pairwise_accuracy(A, B, PREF, metric_ties="random", human_ties="random", seed=7)
               for _ in range(3))  # ... and the same seed gives the same coins


def test_pairwise_accuracy_errors():
    with pytest.raises(ValueError, match="pair 3 is a human tie"):
        stats.pairwise_accuracy(A, B, PREF, human_ties="error")
    with pytest.raises(ValueError, match=r"preferred\[0\] is 2"):
        stats.pairwise_accuracy([1], [2], [2])
    with pytest.raises(ValueError, match=r"scores_b\[0\] is nan"):
        stats.pairwise_accuracy([1], [float("nan")], [0])
    with pytest.raises(ValueError, match="no pair left"):
        stats.pairwise_accuracy([1], [2], [None])
    with pytest.raises(ValueError, match="metric_ties"):
        stats.pairwise_accuracy(A, B, PREF, metric_ties="ignore")


def test_bootstrap_is_seeded_and_covers_the_mean():
    rng = np.random.default_rng(1)
    x = rng.normal(10.0, 2.0, size=400)
    ci = stats.bootstrap_ci(lambda idx: float(x[idx].mean()), n_items=len(x), n_resamples=500, seed=5)
    again = stats.bootstrap_ci(lambda idx: float(x[idx].mean()), n_items=len(x), n_resamples=500, seed=5)
    assert ci == again
    half_width = 1.96 * x.std(ddof=1) / math.sqrt(len(x))  # normal-theory 95% half width ~0.2
    assert ci["low"] < x.mean() < ci["high"]
    assert (ci["high"] - ci["low"]) / 2 == pytest.approx(half_width, rel=0.2)
    other = stats.bootstrap_ci(lambda idx: float(x[idx].mean()), n_items=len(x), n_resamples=500, seed=6)
    assert other != ci


def test_bootstrap_resamples_groups_together():
    groups = np.repeat(np.arange(10), 3)  # 10 items with 3 rows each
    seen = []
    ci = stats.bootstrap_ci(lambda idx: seen.append(np.bincount(groups[idx], minlength=10)) or float(len(idx)),
                            groups=groups, n_resamples=50, seed=0)
    assert ci["low"] == ci["high"] == 30.0  # always 10 items x 3 rows
    assert all((counts % 3 == 0).all() for counts in seen)  # each drawn item brings all its rows


def test_bootstrap_refuses_mostly_undefined_statistic():
    def stat(idx):
        raise ValueError("constant")

    with pytest.raises(ValueError, match="undefined on 20 of 20"):
        stats.bootstrap_ci(stat, n_items=5, n_resamples=20)


def test_system_level_correlation():
    systems = ["s1", "s1", "s2", "s2", "s3", "s3"]
    means = stats.system_means(systems, [1, 3, 2, 2, 5, 7])
    assert means == {"s1": 2.0, "s2": 2.0, "s3": 6.0}
    human = {"s1": 1.0, "s2": 2.0, "s3": 3.0, "extra": 9.0}
    out = stats.system_level_correlation(means, human, "pearson")
    assert out["systems"] == ["s1", "s2", "s3"]
    assert out["value"] == pytest.approx(scipy.stats.pearsonr([1, 2, 3], [2, 2, 6]).statistic)
    with pytest.raises(ValueError, match="at least 3 systems"):
        stats.system_level_correlation({"s1": 1, "s2": 2}, human)
    with pytest.raises(ValueError, match="2 system labels but 3 scores"):
        stats.system_means(["a", "b"], [1, 2, 3])
