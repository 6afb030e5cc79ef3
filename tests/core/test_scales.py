"""capeval.scales: the readable map is strictly increasing, keeps every rank statistic, is fitted from quantiles, is
chosen only for the model it was fitted for, and the shipped maps match the shipped models (the metrics' use of it:
tests/critic/test_readable_scale.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from capeval.judgments import stats
from capeval.scales import (LEVELS, SCALES_FILE, ReadableScale, check_scale, fit_scale, scale_field, scale_for,
                            shipped_scales)


def _squashed_sample(n: int = 4000, seed: int = 0) -> np.ndarray:
    """Raw probabilities like a learned metric's on human captions: most near 1, a tail towards 0."""
    rng = np.random.default_rng(seed)
    return 1.0 / (1.0 + np.exp(-rng.normal(3.2, 1.1, n)))


def _scale(sample=None) -> ReadableScale:
    return fit_scale(_squashed_sample() if sample is None else sample, metric="lceval", model="m", weights="w",
                     fitted_on="test sample")


def test_the_map_is_strictly_increasing_from_0_to_1_and_fixes_the_ends():
    scale = _scale()
    grid = np.concatenate([[0.0], np.logspace(-300, -1, 400), np.linspace(0.1, 0.9, 2001),
                           1 - np.logspace(-1, -15, 400)[::-1][::-1], [1.0]])
    grid = np.unique(grid)
    out = scale(grid)
    assert out[0] == 0.0 and out[-1] == 1.0 and np.all((out >= 0) & (out <= 1))
    assert np.all(np.diff(out) > 0), "two distinct raw scores met on the readable scale"


def test_the_fitted_sample_reads_as_its_own_percentiles():
    sample = _squashed_sample()
    scale = _scale(sample)
    assert len(scale.levels) == len(LEVELS)
    assert scale(np.asarray(scale.raw)) == pytest.approx(np.asarray(scale.levels), abs=1e-12)
    readable = scale(sample)
    # spread: the human captions the map was fitted on are spread evenly over (0, 1)
    q25, q50, q75 = np.quantile(readable, (0.25, 0.5, 0.75))
    assert q50 == pytest.approx(0.5, abs=0.01) and q75 - q25 == pytest.approx(0.5, abs=0.02)
    raw_q25, raw_q75 = np.quantile(sample, (0.25, 0.75))
    assert raw_q75 - raw_q25 < 0.1  # what the map is for


def test_rank_statistics_do_not_move_and_ties_stay_ties():
    rng = np.random.default_rng(1)
    scale = _scale()
    # float32 probabilities as the critics return them: saturated values, exact ties, neighbours one float32 step
    # apart (float64 values a few ulps apart may meet: the map is computed in float64 through log-odds)
    raw = (1.0 / (1.0 + np.exp(-rng.normal(3.0, 2.5, 3000)))).astype(np.float32).astype(np.float64)
    raw[:50] = raw[50:100]
    raw[100:110] = 0.0
    raw[110:120] = 1.0
    raw[120] = float(np.nextafter(np.float32(raw[121]), np.float32(1.0)))  # one float32 step apart
    human = rng.integers(1, 5, raw.shape[0]).astype(float)
    readable = scale(raw)
    order = np.argsort(raw, kind="stable")
    assert np.array_equal(np.sign(np.diff(raw[order])), np.sign(np.diff(readable[order])))
    for variant in ("b", "c"):
        assert stats.kendall_tau(human, readable, variant) == stats.kendall_tau(human, raw, variant)
    assert stats.spearman(human, readable) == pytest.approx(stats.spearman(human, raw), abs=1e-15)
    preferred = list(rng.integers(0, 2, 1500))
    assert (stats.pairwise_accuracy(readable[:1500], readable[1500:], preferred)
            == stats.pairwise_accuracy(raw[:1500], raw[1500:], preferred))
    # Pearson is not rank-based: the map moves it (why the benchmarks read the raw scale)
    assert stats.pearson(human, readable) != stats.pearson(human, raw)


def test_bad_values_and_bad_knots_are_refused():
    scale = _scale()
    for bad in (np.nan, -0.01, 1.5, np.inf):
        with pytest.raises(ValueError, match=r"item 1 is"):
            scale([0.5, bad])
    with pytest.raises(ValueError, match="strictly increasing"):
        ReadableScale("m", "x", "w", (0.1, 0.2), (0.9, 0.8))
    with pytest.raises(ValueError, match="at least two knots"):
        ReadableScale("m", "x", "w", (0.1,), (0.9,))
    with pytest.raises(ValueError, match="two finite"):
        fit_scale([0.5], metric="m", model="x", weights="w")
    # saturated raw scores: knots at 1.0 or repeated are left out, the rest still make a map
    saturated = np.concatenate([np.linspace(0.5, 0.99, 600), np.ones(400)])
    fitted = fit_scale(saturated, metric="m", model="x", weights="w")
    assert max(fitted.raw) < 1.0 and len(fitted.raw) < len(LEVELS)
    with pytest.raises(ValueError, match="critic_scale must be one of 'auto', 'readable', 'raw'"):
        check_scale("percentile", "critic_scale")


def test_a_map_applies_only_to_the_model_and_weights_it_was_fitted_for(tmp_path):
    scale = fit_scale(_squashed_sample(), metric="lceval", model="lceval-x", weights="abc", fitted_on="t")
    path = tmp_path / "scales.json"
    path.write_text(json.dumps({"scales": {"lceval": scale.to_json()}}), encoding="utf-8")
    found = scale_for("lceval", "auto", option="lceval_scale", model="lceval-x", weights="abc", path=path)
    assert found == scale and scale_field(found) == f",scale=readable@{scale.digest}"
    assert scale_for("lceval", "raw", option="lceval_scale", model="lceval-x", weights="abc", path=path) is None
    assert scale_field(None) == ",scale=raw"
    # another model, or the same name with other weights (retrained): auto is raw, readable says why
    for model, weights in (("mine", "abc"), ("lceval-x", "retrained"), (None, "abc")):
        assert scale_for("lceval", "auto", option="lceval_scale", model=model, weights=weights, path=path) is None
        with pytest.raises(ValueError, match="lceval_scale='raw'"):
            scale_for("lceval", "readable", option="lceval_scale", model=model, weights=weights, path=path)
    assert scale_for("critic", "auto", option="critic_scale", model="lceval-x", weights="abc", path=path) is None
    # a damaged file: the knots no longer match their digest
    data = scale.to_json()
    data["raw"][3] += 1e-6
    with pytest.raises(ValueError, match="digest"):
        ReadableScale.from_json(data)


def test_the_shipped_maps_belong_to_the_shipped_defaults():
    from capeval.catalog import DEFAULTS

    scales = shipped_scales()
    assert SCALES_FILE.is_file() and {"critic_ref", "lceval", "lceval_plus"} <= set(scales)
    for metric, scale in scales.items():
        assert scale.model == DEFAULTS[metric], metric
        assert len(scale.levels) >= 10 and scale.n >= 4000 and "human captions" in scale.fitted_on
