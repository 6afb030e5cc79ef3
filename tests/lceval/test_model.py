"""The LCEval network (numpy scoring), the released layer's port and training (torch)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from capeval.lceval.features import FEATURE_NAMES, GROUPS, feature_group_columns
from capeval.lceval.model import LCEvalConfig, LCEvalModel

from capeval.paths import data_dir

DATA = data_dir()
DECODED = (DATA or Path("/nonexistent")) / "lceval_release" / "decoded_weights.json"


def _random_model(hidden=12, features=None, seed=0):
    rng = np.random.default_rng(seed)
    config = LCEvalConfig(hidden=hidden, **({"features": features} if features else {}))
    d = len(config.features)
    params = ({"W1": rng.normal(size=(d, hidden)), "b1": rng.normal(size=hidden), "W2": rng.normal(size=(hidden, 2)),
               "b2": rng.normal(size=2)} if hidden else {"W": rng.normal(size=(d, 2)), "b": rng.normal(size=2)})
    return LCEvalModel(config, params)


def test_groups_cover_every_feature_once():
    names = [n for g in GROUPS.values() for n in g]
    assert sorted(names) == sorted(FEATURE_NAMES) and len(names) == 16
    assert feature_group_columns(["syntactic"]) == [11, 12, 13, 14, 15]
    with pytest.raises(ValueError, match="unknown feature group"):
        feature_group_columns(["grammar"])


@pytest.mark.parametrize("hidden", [0, 12])
def test_save_and_load_round_trip(tmp_path, hidden):
    model = _random_model(hidden, features=["p1", "meteor", "spice"] if hidden else None)
    model.save_pretrained(tmp_path / "m")
    back = LCEvalModel.from_pretrained(tmp_path / "m")
    x = np.random.default_rng(1).random((7, 16))
    assert back.config == model.config
    np.testing.assert_allclose(back.predict(x), model.predict(x), rtol=1e-6)
    p = back.predict(x)
    assert np.all((p > 0) & (p < 1))


def test_model_reads_only_its_columns():
    model = _random_model(12, features=["meteor", "spice"])
    x = np.zeros((1, 16))
    y = x.copy()
    y[0, 0] = 5.0  # p1 is not read
    assert model.predict(x) == pytest.approx(model.predict(y))
    y[0, FEATURE_NAMES.index("spice")] = 1.0
    assert model.predict(x) != pytest.approx(model.predict(y))


def test_bad_parameters_and_inputs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="do not fit"):
        LCEvalModel(LCEvalConfig(hidden=0), {"W": np.zeros((3, 2)), "b": np.zeros(2)})
    with pytest.raises(ValueError, match="NaN"):
        LCEvalModel(LCEvalConfig(hidden=0), {"W": np.full((16, 2), np.nan), "b": np.zeros(2)})
    with pytest.raises(ValueError, match="subset"):
        LCEvalConfig(features=["p1", "bleu"])
    with pytest.raises(ValueError, match=r"\(n, 16\)"):
        _random_model(0).predict(np.zeros((2, 15)))
    with pytest.raises(FileNotFoundError, match="neither a folder nor a model of capeval's catalog"):
        LCEvalModel.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="not an LCEval model folder"):
        LCEvalModel.from_pretrained(tmp_path / "empty")


def test_extreme_features_give_finite_probabilities():
    model = _random_model(0)
    p = model.predict(np.full((2, 16), 1e6))
    assert np.all(np.isfinite(p))


@pytest.mark.parametrize("step", ["9990", "8010"])
def test_shipped_released_layers_are_the_released_tensors(step):
    model = LCEvalModel.from_pretrained(f"lceval-released-{step}")
    assert model.config.hidden == 0 and model.config.features == list(FEATURE_NAMES)
    if not DECODED.is_file():
        pytest.skip(f"{DECODED} not available")
    entry = json.loads(DECODED.read_text())[step]
    np.testing.assert_array_equal(model.params["W"], np.asarray(entry["W_out"], dtype=np.float32))
    np.testing.assert_array_equal(model.params["b"], np.asarray(entry["b_out"], dtype=np.float32))
    # score = softmax(x W + b)[1], computed by hand
    x = np.random.default_rng(0).random((5, 16))
    z = x @ np.asarray(entry["W_out"]) + np.asarray(entry["b_out"])
    want = np.exp(z[:, 1]) / np.exp(z).sum(1)
    np.testing.assert_allclose(model.predict(x), want, rtol=1e-5)


def test_port_released_writes_a_model_folder(tmp_path):
    if not DECODED.is_file():
        pytest.skip(f"{DECODED} not available")
    from capeval.lceval.released import port_released

    port_released(DECODED, tmp_path / "r", "8010")
    assert LCEvalModel.from_pretrained(tmp_path / "r").params["W"].shape == (16, 2)
    with pytest.raises(ValueError, match="no checkpoint"):
        port_released(DECODED, tmp_path / "x", "1234")


def _toy_data(n, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.random((n, 16)) * 0.5
    x[:, 6] += 0.4 * y  # meteor separates the classes
    return x, y


def test_training_learns_resumes_and_reproduces(tmp_path):
    pytest.importorskip("torch")
    from capeval.lceval.train import train_lceval

    xt, yt = _toy_data(600, 0)
    xd, yd = _toy_data(200, 1)
    log = train_lceval(xt, yt, xd, yd, tmp_path / "a", epochs=6, patience=0, lr=1e-2, progress_bar=False)
    assert len(log["epochs"]) == 6 and log["epochs"][-1]["dev_accuracy"] > 0.75
    model = LCEvalModel.from_pretrained(tmp_path / "a")
    assert model.config.hidden == 12 and (tmp_path / "a" / "training.json").is_file()
    # interrupted after 3 epochs, resumed to 6: identical to the uninterrupted run
    train_lceval(xt, yt, xd, yd, tmp_path / "b", epochs=3, patience=0, lr=1e-2, progress_bar=False)
    log_b = train_lceval(xt, yt, xd, yd, tmp_path / "b", epochs=6, patience=0, lr=1e-2, progress_bar=False)
    assert [e["train_loss"] for e in log_b["epochs"]] == pytest.approx([e["train_loss"] for e in log["epochs"]])
    x = np.random.default_rng(2).random((4, 16))
    np.testing.assert_allclose(LCEvalModel.from_pretrained(tmp_path / "b").predict(x), model.predict(x), rtol=1e-6)


def test_training_the_linear_variant_on_a_feature_subset(tmp_path):
    pytest.importorskip("torch")
    from capeval.lceval.train import train_lceval

    xt, yt = _toy_data(300, 0)
    xd, yd = _toy_data(100, 1)
    train_lceval(xt, yt, xd, yd, tmp_path / "lin", hidden=0, features=["meteor", "spice"], epochs=3,
                 progress_bar=False)
    model = LCEvalModel.from_pretrained(tmp_path / "lin")
    assert model.config.features == ["meteor", "spice"] and model.params["W"].shape == (2, 2)
    with pytest.raises(ValueError, match="other features"):
        train_lceval(xt, yt, xd, yd, tmp_path / "lin", hidden=0, features=["p1"], epochs=4, progress_bar=False)


def test_training_refuses_bad_data(tmp_path):
    pytest.importorskip("torch")
    from capeval.lceval.train import train_lceval

    xt, yt = _toy_data(50, 0)
    bad = xt.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        train_lceval(bad, yt, xt, yt, tmp_path / "x", epochs=1)
    with pytest.raises(ValueError, match="labels must be"):
        train_lceval(xt, yt + 1, xt, yt, tmp_path / "x", epochs=1)
    with pytest.raises(ValueError, match="Unknown training option"):
        train_lceval(xt, yt, xt, yt, tmp_path / "x", epochs=1, momentum=0.9)


@pytest.mark.parametrize("name", ["lceval-flickr8k-coco", "lceval-caption-flickr8k-coco",
                                  "lceval-plus-caption-flickr8k-coco"])
def test_shipped_retrained_networks_left_out_every_reported_benchmark(name):
    from capeval.model_store import model_dir as pretrained_dir

    folder = pretrained_dir(name)
    model = LCEvalModel.from_pretrained(name)
    assert model.config.hidden == 12
    log = json.loads((folder / "training.json").read_text())
    report = log["training_set"]
    assert {"composite", "flickr8k-expert", "pascal50s", "thumb"} <= set(report["left_out_benchmarks"])
    assert report["sources"]["coco-karpathy"]["kept"] < report["sources"]["coco-karpathy"]["images"]
    assert log["best_epoch"] is not None and log["train_pairs"] > 10_000
    x = np.random.default_rng(0).random((3, 19 if model.config.uses_extra else 16))
    assert np.all((model.predict(x) > 0) & (model.predict(x) < 1))


@pytest.mark.parametrize("name", ["lceval-caption-flickr8k-coco", "lceval-plus-caption-flickr8k-coco"])
def test_shipped_caption_level_networks_saw_no_machine_caption(name):
    """The caption-level networks (``--negatives mismatched``): balanced human vs mismatched pairs, no machine
    negative, and LCEval+'s critic feature read from the COCO critic (not trained on these Flickr8k train images)."""
    from capeval.model_store import model_dir as pretrained_dir

    model = LCEvalModel.from_pretrained(name)
    report = json.loads((pretrained_dir(name) / "training.json").read_text())["training_set"]
    assert report["negatives"] == "mismatched" and report["rc_per_image"] == 3
    assert report["train_human"] * 2 == report["train_pairs"]
    assert report["sources"]["flickr8k-train"]["kept"] == 6000
    assert "mismatched human captions per image only" in model.config.description
    if model.config.uses_extra:
        assert model.config.extra_critic == "critic-coco-ref"
