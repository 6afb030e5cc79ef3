"""COCO train2014 captions as the text-only critic corpus: benchmark images left out by file name and by Flickr
photo id, a seeded dev split, caption vectors as RC's neighbourhoods, the on-demand neighbour ranking of large
tables, a tiny reference-context training run on it, and the CLI's refusals. Synthetic annotations; seconds."""
from __future__ import annotations

import random

import numpy as np
import pytest

import capeval.coco.captions
from capeval.corpora.coco_train2014 import caption_vector, coco_training_corpus, flickr_photo_id
from capeval.critic.transforms import NearestImages
from capeval.models.word_vectors import WordVectors

WORDS = ["a", "dog", "runs", "on", "grass", "cat", "sits", "mat", "man", "rides", "horse", "boat", "lake", "red"]
SCENES = [["a dog runs on grass", "a dog on the grass", "dog runs"], ["a cat sits on a mat", "a red cat on a mat"],
          ["a man rides a horse", "a man on a horse", "man rides"], ["a boat on a lake", "a red boat on the lake"]]


def _annotations(n_images: int = 40) -> dict:
    """COCO-format captions for ``n_images`` images; image 3 has Flickr photo id 1000268201 (a Flickr8k image),
    image 5 one caption only."""
    images, annotations = [], []
    for i in range(n_images):
        photo = 1000268201 if i == 3 else 5_000_000 + i
        images.append({"id": 100 + i, "file_name": f"COCO_train2014_{100 + i:012d}.jpg",
                       "flickr_url": f"http://farm4.staticflickr.com/3153/{photo}_164f0c0b83_z.jpg"})
        captions = SCENES[i % len(SCENES)][:1] if i == 5 else SCENES[i % len(SCENES)]
        annotations += [{"image_id": 100 + i, "id": len(annotations), "caption": c} for c in captions]
    return {"images": images, "annotations": annotations}


@pytest.fixture
def fake_coco(monkeypatch):
    data = _annotations()
    monkeypatch.setattr(capeval.coco.captions, "load_coco_annotations", lambda split: data)
    return data


def test_flickr_photo_id_only_from_flickr_names():
    assert flickr_photo_id("1000268201_693b08cb0e.jpg") == "1000268201"
    assert flickr_photo_id("/data/flickr30k/36979.jpg") == "36979"
    assert flickr_photo_id("2008_000032.jpg") is None  # PASCAL VOC
    assert flickr_photo_id("COCO_val2014_000000010837.jpg") is None and flickr_photo_id("123.jpg") is None


def test_benchmark_images_left_out_by_name_and_flickr_id(fake_coco):
    benchmarks = {"flickr8k-expert": {"1000268201_693b08cb0e.jpg"}, "composite": {"COCO_train2014_000000000110.jpg"},
                  "pascal50s": {"2008_000032.jpg"}}
    corpus = coco_training_corpus(benchmarks, dev_fraction=0.25, seed=0)
    kept = set(corpus.train) | set(corpus.dev)
    assert "COCO_train2014_000000000103.jpg" not in kept  # same Flickr photo as a Flickr8k-Expert image
    assert "COCO_train2014_000000000110.jpg" not in kept  # same file name as a COMPOSITE image
    assert "COCO_train2014_000000000105.jpg" not in kept  # a single caption: no context for it
    assert len(kept) == 37 and not set(corpus.train) & set(corpus.dev) and len(corpus.dev) == 9
    assert corpus.report["left_out"] == {"composite": 1, "flickr8k-expert": 1}
    assert corpus.report["fewer_than_2_captions"] == 1
    again = coco_training_corpus(benchmarks, dev_fraction=0.25, seed=0)
    assert again.dev == corpus.dev and coco_training_corpus(benchmarks, dev_fraction=0.25, seed=1).dev != corpus.dev
    with pytest.raises(ValueError, match="dev_fraction"):
        coco_training_corpus(benchmarks, dev_fraction=0.0)


def _vectors() -> WordVectors:
    rng = np.random.default_rng(0)
    return WordVectors(WORDS + ["unk"], rng.normal(size=(len(WORDS) + 1, 6)).astype(np.float32), "tiny")


def test_caption_vectors_are_unit_means_and_zero_without_words():
    vectors = _vectors()
    v = caption_vector(["A dog runs.", "dog"], vectors)
    expected = (np.mean([vectors["a"], vectors["dog"], vectors["runs"]], axis=0) + vectors["dog"]) / 2
    assert np.allclose(v, expected / np.linalg.norm(expected), atol=1e-6)
    assert not caption_vector(["zzz qqq", ""], vectors).any()


def test_on_demand_neighbours_equal_the_precomputed_ranking():
    """Large tables rank one image's similarities per draw; the draws are those of the full ranking."""
    feats = np.random.default_rng(1).normal(size=(60, 8)).astype(np.float32)
    names = [f"i{k}" for k in range(60)]
    full, lazy = NearestImages(names, feats), NearestImages(names, feats, precompute_limit=10)
    assert full.order is not None and lazy.order is None
    for seed in range(30):
        for gamma in (0.01, 0.1, 0.5, 1.0):
            assert full.neighbour(names[seed], gamma, random.Random(seed)) == \
                lazy.neighbour(names[seed], gamma, random.Random(seed))


def test_reference_critic_trains_on_the_corpus(fake_coco, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("accelerate")
    from capeval.corpora.coco_train2014 import caption_neighbour_table
    from capeval.critic.model import CriticModel
    from capeval.critic.train import train_critic

    vector_file = tmp_path / "vectors.txt"
    vectors = _vectors()
    vector_file.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in vectors[w])}\n" for w in vectors.words))
    benchmarks = {"flickr8k-expert": {"1000268201_693b08cb0e.jpg"}}
    corpus = coco_training_corpus(benchmarks, dev_fraction=0.25)
    table = caption_neighbour_table({**corpus.train, **corpus.dev}, str(vector_file))
    assert table.feature_dim == 6 and table.settings.startswith("caption_vectors:")
    log = train_critic(table, corpus.train, tmp_path / "critic", dev=corpus.dev,
                       held_out={"benchmark flickr8k-expert": dict.fromkeys(benchmarks["flickr8k-expert"])},
                       config={"context": "reference", "hidden_size": 8, "mlp_size": 8, "interactions": True},
                       mix={"RC": 3, "WP": 1, "RW": 1}, epochs=2, pairs_per_batch=8, word_vectors=str(vector_file),
                       progress_bar=False)
    assert [e["epoch"] for e in log["epochs"]] == [1, 2]
    assert {"dev_s_RC", "dev_s_WP"} <= set(log["epochs"][0]) and all(0 <= e["dev_s"] <= 1 for e in log["epochs"])
    assert CriticModel.from_pretrained(tmp_path / "critic").config.context == "reference"


def test_cli_refuses_image_contexts_and_flickr_inputs_on_coco(tmp_path, capsys):
    from capeval.cli import main

    rc = main(["critic", "train", "--corpus", "coco-train2014", "--out", str(tmp_path / "x")])
    assert rc == 1 and "--context reference" in capsys.readouterr().err
    rc = main(["critic", "train", "--corpus", "coco-train2014", "--context", "reference", "--features",
               str(tmp_path / "f.safetensors"), "--out", str(tmp_path / "x")])
    assert rc == 1 and "--features belongs to --corpus flickr8k" in capsys.readouterr().err
    rc = main(["critic", "train", "--out", str(tmp_path / "x")])
    assert rc == 1 and "give --features FILE" in capsys.readouterr().err
    rc = main(["critic", "train", "--corpus", "coco-train2014", "--context", "reference", "--text-corpus",
               "coco-train2014", "--out", str(tmp_path / "x")])
    assert rc == 1 and "already trains on them" in capsys.readouterr().err
