"""capeval.thumb: rubric validation, totals, weights, bootstrap, strictly best/worst, Cohen's kappa."""
from __future__ import annotations

import math

import numpy as np
import pytest

from capeval import thumb
from capeval.signature import parse_signature
from capeval.thumb.agreement import cohen_kappa, disagreements
from capeval.thumb.aggregate import BootstrapSettings, bootstrap_mean_intervals, strictly_best_worst
from capeval.thumb.rubric import RubricWeights, validate_ratings


def test_default_total_is_mean_of_p_and_r_minus_penalties():
    r = thumb.score([5, 3, 4], [4, 5, 4], fluency=[-0.1, 0.2, 0], conciseness=[0, 0, -0.5], inclusive=[0, 2, 0],
                    bootstrap_samples=0)
    assert r["per_caption"]["total"] == pytest.approx([4.4, 1.8, 3.5])
    assert r["total"] == pytest.approx((4.4 + 1.8 + 3.5) / 3)
    assert r["total_ci"] is None
    assert r["systems"] == {}


def test_signed_and_positive_penalties_are_the_same():
    signed = thumb.score([5, 4], [5, 4], fluency=[-0.1, -0.5], inclusive=[-2, 0], bootstrap_samples=0)
    positive = thumb.score([5, 4], [5, 4], fluency=[0.1, 0.5], inclusive=[2, 0], bootstrap_samples=0)
    assert signed["per_caption"] == positive["per_caption"]
    assert signed["per_caption"]["total"] == pytest.approx([2.9, 3.5])


def test_reweighting_and_penalty_scales():
    r = thumb.score([5, 2], [1, 4], fluency=[0.5, 0], conciseness=[0, 0.5], precision_weight=0.8,
                    fluency_scale=2.0, conciseness_scale=0.0, bootstrap_samples=0)
    assert r["per_caption"]["total"] == pytest.approx([0.8 * 5 + 0.2 * 1 - 1.0, 0.8 * 2 + 0.2 * 4])
    sig = parse_signature(r["signature"])
    assert sig["thumb"] == "p=0.8,r=0.2,flu=2,con=0,inc=1"
    assert sig["boot"] == "none"


def test_system_means_report_penalty_magnitudes():
    r = thumb.score([5, 4, 3, 3], [5, 4, 2, 4], fluency=[-0.1, 0, -0.3, 0], systems=["a", "a", "b", "b"],
                    bootstrap_samples=0)
    a, b = r["systems"]["a"], r["systems"]["b"]
    assert (a["precision"], a["recall"], a["fluency"], a["n"]) == (4.5, 4.5, pytest.approx(0.05), 2)
    assert b["total"] == pytest.approx(((2.5 - 0.3) + 3.5) / 2)
    assert a["strictly_best"] is None and a["images_compared"] is None  # no image labels
    assert list(r["systems"]) == ["a", "b"]  # order of first appearance


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(precision=[5, 6], recall=[3, 3]), r"caption 1: precision is 6, outside the THumB range \[1, 5\]"),
        (dict(precision=[5, 0], recall=[3, 3]), r"caption 1: precision is 0, outside"),
        (dict(precision=[5, 4], recall=[3, None]), r"caption 1: recall is missing"),
        (dict(precision=[5, math.nan], recall=[3, 3]), r"caption 1: precision is NaN"),
        (dict(precision=[5, "x"], recall=[3, 3]), r"caption 1: precision is 'x', not a number"),
        (dict(precision=[5, 4], recall=[3, 3], fluency=[0, 6]), r"caption 1: fluency penalty is 6, larger than 5"),
        (dict(precision=[5, 4], recall=[3, 3], inclusive=[0, None]), r"caption 1: inclusive is missing"),
        (dict(precision=[5, 4], recall=[3]), r"recall has 1 entries but precision has 2"),
        (dict(precision=[], recall=[]), r"No captions given"),
        (dict(precision=[5, 4], recall=[3, 3], systems=["a"]), r"systems has 1 entries but there are 2 captions"),
        (dict(precision=[5, 4], recall=[3, 3], systems=["a", None]), r"caption 1: system is missing"),
        (dict(precision=[5, 4], recall=[3, 9], systems=["a", "b"], images=["x", "y"]),
         r"caption 1 \(system 'b', image 'y'\): recall is 9"),
        (dict(precision=[5, 4], recall=[3, 3], precision_weight=1.5), r"precision_weight must be a number in \[0, 1\]"),
        (dict(precision=[5, 4], recall=[3, 3], fluency_scale=-1), r"fluency_scale must be a finite number"),
        (dict(precision=[5, 4], recall=[3, 3], confidence_level=90), r"confidence_level must be in \(0, 1\)"),
        (dict(precision=[5, 4], recall=[3, 3], bootstrap_samples=-5), r"bootstrap_samples must be an integer"),
        (dict(precision="5", recall=[3]), r"precision must be a list"),
    ],
)
def test_bad_input_names_the_caption(kwargs, match):
    with pytest.raises(ValueError, match=match):
        thumb.score(**kwargs)


def test_duplicate_system_image_pair_is_rejected():
    with pytest.raises(ValueError, match=r"caption 2 \(system 'a', image 'x'\): system 'a' already has caption 0"):
        thumb.score([5, 4, 3], [5, 4, 3], systems=["a", "b", "a"], images=["x", "x", "x"], bootstrap_samples=0)


def test_validate_ratings_accepts_fractional_averages_and_numpy():
    ratings = validate_ratings(np.array([4.5, 1.0]), [5, 2.5])
    assert ratings.totals().tolist() == [4.75, 1.75]
    assert ratings.totals(RubricWeights(precision_weight=1.0)).tolist() == [4.5, 1.0]


# ------------------------------------------------------------------------------------ best / worst


def _best_worst(p, r, systems, images):
    bw = strictly_best_worst(np.array(p, float), np.array(r, float), systems, images)
    return bw.best, bw.worst, bw.compared


def test_strictly_best_requires_both_p_and_r():
    # image x: A best in both; C worst in both. image y: A best in P, B best in R -> nobody strictly best.
    best, worst, compared = _best_worst(
        p=[5, 4, 3, 5, 4, 4], r=[5, 4, 3, 3, 5, 2],
        systems=["A", "B", "C"] * 2, images=["x"] * 3 + ["y"] * 3,
    )
    assert best == {"A": 1, "B": 0, "C": 0}
    assert worst == {"A": 0, "B": 0, "C": 2}  # y: C has P 4 = min(P) and R 2 = min(R)
    assert compared == {"A": 2, "B": 2, "C": 2}


def test_ties_count_for_every_tied_system():
    best, worst, _ = _best_worst(p=[5, 5, 5], r=[4, 4, 4], systems=["A", "B", "C"], images=["x"] * 3)
    assert best == worst == {"A": 1, "B": 1, "C": 1}
    best, worst, _ = _best_worst(p=[5, 5, 2], r=[4, 4, 2], systems=["A", "B", "C"], images=["x"] * 3)
    assert best == {"A": 1, "B": 1, "C": 0} and worst == {"A": 0, "B": 0, "C": 1}


def test_images_with_a_single_system_are_skipped():
    best, worst, compared = _best_worst(p=[5, 3, 4], r=[5, 3, 4], systems=["A", "B", "A"], images=["x", "x", "y"])
    assert best == {"A": 1, "B": 0} and worst == {"A": 0, "B": 1}
    assert compared == {"A": 1, "B": 1}


# ---------------------------------------------------------------------------------------- bootstrap


def test_bootstrap_is_seeded_and_brackets_the_mean():
    rng = np.random.default_rng(0)
    p = rng.integers(1, 6, 200)
    r = rng.integers(1, 6, 200)
    kwargs = dict(systems=["a", "b"] * 100, images=[str(i // 2) for i in range(200)], bootstrap_samples=500)
    one = thumb.score(p, r, seed=7, **kwargs)
    two = thumb.score(p, r, seed=7, **kwargs)
    other = thumb.score(p, r, seed=8, **kwargs)
    assert one == two
    assert one["systems"]["a"]["total_ci"] != other["systems"]["a"]["total_ci"]
    for name, entry in one["systems"].items():
        low, high = entry["total_ci"]
        assert low < entry["total"] < high
        assert high - low < 1.0
    assert parse_signature(one["signature"])["boot"] == "n=500,seed=7,ci=0.9,unit=image"


def test_bootstrap_interval_matches_normal_approximation():
    """For a large sample the percentile interval is close to mean ± 1.645·sd/√n."""
    rng = np.random.default_rng(1)
    values = rng.integers(1, 6, 4000).astype(float)
    ci = bootstrap_mean_intervals(values, np.arange(4000), np.zeros(4000, dtype=np.int64), 1,
                                  BootstrapSettings(samples=2000, seed=3, level=0.9))[0]
    half = 1.6449 * values.std(ddof=1) / math.sqrt(len(values))
    assert ci[0] == pytest.approx(values.mean() - half, abs=0.01)
    assert ci[1] == pytest.approx(values.mean() + half, abs=0.01)


def test_bootstrap_resamples_images_not_captions():
    """Captions of one image move together: when both systems got the same totals on every image, the two
    systems' replicate means are identical, so their intervals are identical too."""
    p = [5, 5, 1, 1, 3, 3, 4, 4, 2, 2]
    r = [5, 5, 2, 2, 3, 3, 4, 4, 1, 1]
    res = thumb.score(p, r, systems=["a", "b"] * 5, images=[str(i // 2) for i in range(10)], bootstrap_samples=300)
    assert res["systems"]["a"]["total_ci"] == res["systems"]["b"]["total_ci"]
    unpaired = thumb.score(p, r, systems=["a", "b"] * 5, bootstrap_samples=300)  # no images: caption units
    assert parse_signature(unpaired["signature"])["boot"].endswith("unit=caption")
    assert unpaired["systems"]["a"]["strictly_best"] is None


# ---------------------------------------------------------------------------------------- agreement


def test_cohen_kappa_textbook_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(a, a) == pytest.approx(1.0)


def test_quadratic_weighted_kappa_matches_covariance_identity():
    rng = np.random.default_rng(5)
    a = rng.integers(1, 6, 300)
    b = np.clip(a + rng.integers(-1, 2, 300), 1, 5)
    kappa = cohen_kappa(a.tolist(), b.tolist(), labels=[1, 2, 3, 4, 5], weights="quadratic")
    cov = np.mean((a - a.mean()) * (b - b.mean()))
    expected = 2 * cov / (a.var() + b.var() + (a.mean() - b.mean()) ** 2)
    assert kappa == pytest.approx(expected)
    assert cohen_kappa(a.tolist(), b.tolist(), labels=[1, 2, 3, 4, 5]) < kappa  # near misses count as half right


def test_cohen_kappa_errors():
    with pytest.raises(ValueError, match="undefined"):
        cohen_kappa([5, 5, 5], [5, 5, 5])
    with pytest.raises(ValueError, match="different numbers of items: 2 vs 1"):
        cohen_kappa([1, 2], [1])
    with pytest.raises(ValueError, match=r"item 1: the second annotator's label 7 is not one of"):
        cohen_kappa([1, 2], [1, 7], labels=[1, 2, 3, 4, 5])


def test_disagreement_list():
    first = {"1-A": {"precision": 5, "recall": 4}, "1-B": {"precision": 3, "recall": 3}}
    second = {"1-A": {"precision": 5, "recall": 3}, "1-B": {"precision": 3, "recall": 3}}
    rows = disagreements(["1-A", "1-B"], first, second, ["precision", "recall"])
    assert rows == [{"item": "1-A", "differs": ["recall"], "precision_1": 5, "precision_2": 5,
                     "recall_1": 4, "recall_2": 3}]
