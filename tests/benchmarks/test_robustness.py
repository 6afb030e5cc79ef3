"""`capeval robustness` (Cui et al. 2018 §3.4): curves, AUC, seeding, normalisation, the CLI, errors.

Everything but the last test runs on a tiny made-up data set (6 images × 5 captions, 2-d fake features), BLEU-4
and CIDEr-D only, so the module takes seconds.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import capeval.api
from capeval.meta_evaluation import robustness as rb
from capeval.meta_evaluation.robustness import (
    RobustnessData, check_gammas, metric_key, parse_gammas, plot_robustness, point_seed, render, run_robustness,
    train_vocabulary, transform_captions, trapezoid_auc,
)
from capeval.cli import main
from capeval.critic.transforms import NearestImages

from support import require_data

CAPTIONS = {  # each image's captions share 4-grams, so that BLEU-4 of the human captions is far from 0
    "dog.jpg": ["a brown dog runs through the green grass", "a brown dog runs across the green grass in a park",
                "the brown dog runs through the grass", "a happy brown dog runs through the green field",
                "a dog runs through the green grass"],
    "puppy.jpg": ["a small puppy plays in the grass", "a small puppy plays on the lawn with a ball",
                  "a small white puppy plays in the grass", "a young puppy plays in the grass outside",
                  "the small puppy plays in the yard"],
    "beach.jpg": ["two children play in the sand at the beach", "two children play in the sand near the ocean",
                  "two young children play in the sand", "children dig in the sand at the beach",
                  "two kids play in the sand at the beach"],
    "sea.jpg": ["a boy swims in the blue ocean", "a young boy swims in the ocean near the beach",
                "a boy swims in the ocean water", "a little boy swims in the blue ocean waves",
                "a boy is swimming in the ocean"],
    "bike.jpg": ["a man rides a bicycle down a city street", "a man rides a bicycle down the road",
                 "a man rides his bicycle down a busy street", "a young man rides a bicycle on the street",
                 "a man rides a bike down a city street"],
    "car.jpg": ["a red car drives down the street", "a red car drives down a city street",
                "a shiny red car drives down the road", "a red sports car drives down the busy street",
                "a red car drives along the street"],
}
#: 2-d features: dog/puppy, beach/sea, bike/car are each other's nearest image
FEATURES = {"dog.jpg": [1.0, 0.05], "puppy.jpg": [1.0, 0.1], "beach.jpg": [0.0, 1.0], "sea.jpg": [0.1, 1.0],
            "bike.jpg": [-1.0, 0.05], "car.jpg": [-1.0, 0.1]}
VOCABULARY = ["zebra", "violin", "cloud", "purple", "quickly", "mountain", "pencil", "orange", "sleeping", "under",
              "telescope", "jumping", "window", "seven", "banana", "river"]
GAMMAS = [0, 0.25, 0.5, 0.75, 1]


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def _data(**kw) -> RobustnessData:
    return RobustnessData(CAPTIONS, VOCABULARY, features=kw.pop("features", FEATURES), **kw)


@pytest.fixture(scope="module")
def result():
    return run_robustness(["bleu_4", "cider_d"], _data(), gammas=GAMMAS, seed=3, use_cache=False)


def test_curves_start_at_one_and_normalise_by_the_human_mean(result):
    direct = capeval.api.score(*_data().candidates()[1:], metrics=["bleu_4", "cider_d"])
    for key in ("bleu_4", "cider_d"):
        human = result.metrics[key]["human_mean"]
        assert human == pytest.approx(np.mean(direct["per_caption"][key]))
        for t in ("RC", "WP", "RW"):
            curve = result.curves[key][t]
            assert curve["gammas"] == GAMMAS
            assert curve["normalised"][0] == 1.0 and curve["raw"][0] == human
            assert curve["normalised"] == pytest.approx([v / human for v in curve["raw"]])


def test_auc_is_the_trapezoid_area(result):
    assert trapezoid_auc([0, 0.5, 1], [1, 0.5, 0]) == pytest.approx(0.5)
    assert trapezoid_auc([0, 0.2, 1], [1, 1, 0]) == pytest.approx(0.2 + 0.4)  # uneven steps
    assert trapezoid_auc([0, 1], [1, 1]) == 1.0
    for key, per in result.curves.items():
        for t, c in per.items():
            y = c["normalised"]
            hand = 0.25 * ((y[0] + y[1]) / 2 + (y[1] + y[2]) / 2 + (y[2] + y[3]) / 2 + (y[3] + y[4]) / 2)
            assert c["auc"] == pytest.approx(hand)
            assert result.auc[key][t] == c["auc"]


@pytest.mark.parametrize("transform", ["WP", "RW"])
@pytest.mark.parametrize("key", ["bleu_4", "cider_d"])
def test_ngram_metrics_drop_as_gamma_grows(result, key, transform):
    y = result.curves[key][transform]["normalised"]
    assert y[-1] < 0.9 * y[0]
    assert np.mean(y[3:]) < np.mean(y[1:3]) < y[0]
    assert 0 < result.auc[key][transform] < 1


def test_rc_takes_captions_of_the_nearest_image_first(result):
    data = _data()
    nearest = NearestImages(data.images, np.array([FEATURES[i] for i in data.images]))
    images, originals, _ = data.candidates()
    swapped = transform_captions(data, "RC", 0.1, seed=0, nearest=nearest)  # 0.1 of 5 others: the single nearest
    partner = {"dog.jpg": "puppy.jpg", "puppy.jpg": "dog.jpg", "beach.jpg": "sea.jpg", "sea.jpg": "beach.jpg",
               "bike.jpg": "car.jpg", "car.jpg": "bike.jpg"}
    for image, caption in zip(images, swapped):
        assert caption in CAPTIONS[partner[image]]
    assert transform_captions(data, "RC", 0, seed=0, nearest=nearest) == originals
    for key in ("bleu_4", "cider_d"):
        assert result.curves[key]["RC"]["normalised"][-1] < 1


def test_seeded_and_every_point_reproducible_alone():
    data = _data()
    a = run_robustness("bleu_4", data, transforms="WP,RW", gammas=GAMMAS, seed=5, use_cache=False)
    b = run_robustness("bleu_4", data, transforms="WP,RW", gammas=GAMMAS, seed=5, use_cache=False)
    assert (a.curves, a.examples, a.settings) == (b.curves, b.examples, b.settings)
    alone = run_robustness("bleu_4", data, transforms="RW", gammas=[0, 0.5], seed=5, use_cache=False)
    assert alone.curves["bleu_4"]["RW"]["raw"][1] == a.curves["bleu_4"]["RW"]["raw"][2]
    assert alone.examples["RW"]["0.5"] == a.examples["RW"]["0.5"]
    other = run_robustness("bleu_4", data, transforms="WP,RW", gammas=GAMMAS, seed=6, use_cache=False)
    assert other.examples["WP"] != a.examples["WP"]
    assert transform_captions(data, "WP", 0.5, seed=5) == transform_captions(data, "WP", 0.5, seed=5)
    assert point_seed(5, "RW", 0.5) == 5 + 20_000 + 500


def test_transforms_change_what_they_promise():
    data = _data()
    _, originals, _ = data.candidates()
    permuted = transform_captions(data, "WP", 1.0, seed=0)
    assert all(sorted(p.split()) == sorted(o.split()) for p, o in zip(permuted, originals))
    assert sum(p != o for p, o in zip(permuted, originals)) == len(originals)
    replaced = transform_captions(data, "RW", 1.0, seed=0)
    assert all(set(r.split()) <= set(VOCABULARY) for r in replaced)
    assert train_vocabulary({"x": ["A dog .", "a Cat , runs"]}) == ["a", "cat", "dog", "runs"]


def test_score_cache_is_used(tmp_path):
    from capeval.meta_evaluation.score_cache import ScoreCache

    cache = ScoreCache(tmp_path / "s.sqlite")
    first = run_robustness("cider_d", _data(), transforms="WP", gammas=[0, 1], cache=cache)
    n = cache._con.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
    assert n == 2  # gamma 0 and WP at 1
    again = run_robustness("cider_d", _data(), transforms="WP", gammas=[0, 1], cache=cache)
    assert again.curves == first.curves
    assert cache._con.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == n


def test_features_from_an_encoder_or_a_feature_table():
    class FakeEncoder:
        settings = "fake-encoder"

        def __init__(self):
            self.calls = []

        def encode(self, paths, kind="pooled"):
            self.calls.append((list(paths), kind))
            return np.array([FEATURES[p.split("/")[-1]] for p in paths])

    paths = {name: f"/nowhere/{name}" for name in CAPTIONS}
    encoder = FakeEncoder()
    out = run_robustness("bleu_4", _data(features=None, image_paths=paths), transforms="RC", gammas=[0, 0.1],
                         features=encoder, use_cache=False)
    assert encoder.calls == [([f"/nowhere/{n}" for n in CAPTIONS], "pooled")]
    assert out.settings["feature_encoder"] == "fake-encoder"
    given = run_robustness("bleu_4", _data(), transforms="RC", gammas=[0, 0.1], use_cache=False)
    assert given.curves == out.curves  # same features, same seed: same RC captions
    torch = pytest.importorskip("torch")
    from capeval.models.feature_table import FeatureTable

    names = list(CAPTIONS)
    grid = torch.tensor([[FEATURES[n], FEATURES[n]] for n in names])  # [n, 2 regions, 2]: pooled by the mean
    table = FeatureTable(names[::-1], grid.flip(0), settings="fake-table", kind="grid")
    tabled = run_robustness("bleu_4", _data(features=None), transforms="RC", gammas=[0, 0.1], features=table,
                            use_cache=False)
    assert tabled.curves == out.curves and "fake-table" in tabled.settings["feature_encoder"]


def test_metrics_that_need_images_get_one_path_per_candidate(monkeypatch):
    from capeval.coco.bleu import Bleu

    seen = {}
    original = capeval.api.score

    def score(predictions, references, metrics=None, *, images=None, **kw):
        seen.setdefault("images", []).append(images)
        return original(predictions, references, metrics, images=images, **kw)

    monkeypatch.setattr(Bleu, "needs_images", True, raising=False)
    monkeypatch.setattr(capeval.api, "score", score)
    paths = {name: f"/img/{name}" for name in CAPTIONS}
    run_robustness("bleu_4", _data(image_paths=paths), transforms="WP", gammas=[0, 1], use_cache=False)
    expected = [f"/img/{name}" for name, caps in CAPTIONS.items() for _ in caps]
    assert seen["images"] == [expected, expected]
    monkeypatch.setattr(Bleu, "needs_images", False, raising=False)
    seen.clear()
    run_robustness("bleu_4", _data(image_paths=paths), transforms="WP", gammas=[0, 1], use_cache=False)
    assert seen["images"] == [None, None]  # score_items -> capeval.score without images=
    with pytest.raises(FileNotFoundError, match="need the images"):
        monkeypatch.setattr(Bleu, "needs_images", True, raising=False)
        run_robustness("bleu_4", _data(), transforms="WP", gammas=[0, 1], use_cache=False)


def test_images_limit_on_given_data():
    out = run_robustness("bleu_4", _data(features=np.array([FEATURES[n] for n in CAPTIONS])), gammas=[0, 0.5],
                         images_limit=4, use_cache=False)
    assert out.settings["n_images"] == 4 and out.settings["n_candidates"] == 20


def test_report_and_plot(result, tmp_path):
    text = render(result)
    assert "AUC RC" in text and "bleu_4" in text and "cider_d" in text
    assert "| metric |" in render(result, "markdown")
    png = plot_robustness(result, tmp_path / "sub" / "r.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    payload = result.to_json()
    assert set(payload) >= {"settings", "auc", "results", "examples"}
    assert set(payload["settings"]) >= {"seed", "gammas", "transforms", "n_images", "n_candidates", "data",
                                        "feature_encoder"}
    assert payload["results"]["cider_d"]["transforms"]["WP"]["auc"] == result.auc["cider_d"]["WP"]
    json.dumps(payload)


def _captions_json(tmp_path):
    path = tmp_path / "captions.json"
    path.write_text(json.dumps({"captions": CAPTIONS, "vocabulary": VOCABULARY, "features": FEATURES}))
    return path


def test_cli_on_given_captions(tmp_path, capsys):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    code = main(["robustness", "--metrics", "bleu_4,cider", "--gammas", "0,0.5,1", "--seed", "2", "--captions-json",
                 str(_captions_json(tmp_path)), "--json", str(out), "--plot", str(png), "--no-cache"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "AUC WP" in printed and "cider_d" in printed
    payload = json.loads(out.read_text())
    assert payload["settings"]["seed"] == 2 and payload["settings"]["gammas"] == [0, 0.5, 1]
    assert payload["settings"]["n_candidates"] == 30 and payload["settings"]["feature_encoder"]
    assert set(payload["auc"]) == {"bleu_4", "cider_d"} and set(payload["auc"]["bleu_4"]) == {"RC", "WP", "RW"}
    assert png.is_file()
    same = run_robustness("bleu_4,cider_d", _data(), gammas=[0, 0.5, 1], seed=2, use_cache=False)
    assert payload["auc"] == same.auc  # JSON floats round-trip exactly


@pytest.mark.parametrize("args, message", [
    (["--metrics", "blue_4"], "Unknown metric 'blue_4'; did you mean 'bleu_4'"),
    (["--metrics", "bleu"], "several result keys"),
    (["--metrics", "bleu_4", "--gammas", "0,0.5,1.5"], "gammas must lie in [0, 1]"),
    (["--metrics", "bleu_4", "--gammas", "0.1,0.5,1"], "gammas must start at 0"),
    (["--metrics", "bleu_4", "--gammas", "0,0.5,0.5"], "strictly increasing"),
    (["--metrics", "bleu_4", "--gammas", "0,x"], "numbers separated by commas"),
    (["--metrics", "bleu_4", "--transforms", "WP,XX"], "unknown transformation 'XX'"),
    (["--metrics", "bleu_4", "--images-limit", "1"], "images_limit must be an integer"),
])
def test_cli_errors(tmp_path, capsys, args, message):
    assert main(["robustness", *args, "--captions-json", str(_captions_json(tmp_path))]) == 1
    err = capsys.readouterr().err
    assert err.startswith("capeval robustness: error:") and message in err
    if "Unknown metric" in message:
        assert len(err.splitlines()) == 1  # the closest names, not the whole registry


def test_missing_data_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path / "absent"))
    assert main(["robustness", "--metrics", "bleu_4"]) == 1
    assert "CAPEVAL_DATA_DIR" in capsys.readouterr().err
    assert main(["robustness", "--metrics", "bleu_4", "--data-dir", str(tmp_path / "nope")]) == 1
    assert "is not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="Flickr_8k.testImages.txt"):
        rb.flickr8k_test_data(tmp_path / "empty")


def test_checks():
    assert check_gammas([0, 1]) == [0.0, 1.0]
    assert parse_gammas("0:1:0.25") == GAMMAS
    assert parse_gammas("0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1") == list(rb.GAMMAS)
    with pytest.raises(ValueError, match="at least two"):
        check_gammas([0])
    assert metric_key("cider") == ("cider_d", "cider_d")
    assert metric_key("spice") == ("spice", "spice")
    with pytest.raises(ValueError, match="at least 2"):
        RobustnessData({"a.jpg": ["only one"]}, VOCABULARY)


def test_flickr8k_twenty_images(tmp_path, capsys):
    require_data("flickr8k", "Flickr_8k.testImages.txt")
    out = tmp_path / "r.json"
    assert main(["robustness", "--metrics", "bleu_4", "--images-limit", "20", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    s = payload["settings"]
    assert s["n_images"] == 20 and s["n_candidates"] == 100 and s["transforms"] == ["RC", "WP", "RW"]
    assert "efficientnet-lite0" in s["feature_encoder"] and int(s["rw_vocabulary"].split()[0]) > 5000
    for t in ("RC", "WP", "RW"):
        curve = payload["results"]["bleu_4"]["transforms"][t]["normalised"]
        assert curve[0] == 1.0 and curve[-1] < 0.5
        assert 0 < payload["auc"]["bleu_4"][t] < 0.6
    assert "AUC RC" in capsys.readouterr().out


def test_flickr8k_dev_split_reads_no_test_image(tmp_path):
    """``--split dev``: the same protocol on Flickr8k dev (for choosing between models without reading test)."""
    root = require_data("flickr8k", "Flickr_8k.devImages.txt").parents[1]
    dev = rb.flickr8k_split_data("dev", root, images_limit=12)
    test_images = set((root / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split())
    assert len(dev.captions) == 12 and not set(dev.captions) & test_images and "Flickr8k dev" in dev.source
    out = tmp_path / "r.json"
    assert main(["robustness", "--metrics", "bleu_4", "--split", "dev", "--images-limit", "12", "--transforms", "WP",
                 "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["settings"]["data"].startswith("Flickr8k dev") and payload["settings"]["n_candidates"] == 60
    with pytest.raises(ValueError, match="split must be one of"):
        rb.flickr8k_split_data("train", root)
