"""sentence_rank: the model starts at the cosine's ranking, model files round-trip, the training pairs (kinds, no
benchmark image, dev/train disjoint, seeded), training and its resume, the metric (range, never NaN, wordless
captions, signature, missing model), the CLI wiring and the contamination marks.

Everything but one consistency check with the real all-MiniLM-L6-v2 runs on a tiny hash-based fake encoder and tiny
corpora (the whole file takes a few seconds).
"""
from __future__ import annotations

import json
import random
import warnings
import zlib

import numpy as np
import pytest
from support import needs

import capeval
from capeval.meta_evaluation.contamination import contamination, metric_models
from capeval.sentence_rank.data import (NEGATIVE_KINDS, RankCorpus, dev_pairs, epoch_pairs, nearest_rows,
                                        resolve_pairs)
from capeval.sentence_rank.model import SentenceRankConfig, SentenceRankModel, model_digest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")
pytest.importorskip("safetensors")

DIM = 16


class HashEncoder:
    """Deterministic unit vectors from the lower-cased text (uncased like MiniLM); counts what it encodes."""

    name = "fake-hash"
    max_length = 64

    def __init__(self):
        self.encoded = 0

    def encode(self, texts, batch_size=128, progress_bar=None):
        self.encoded += len(texts)
        out = np.stack([np.random.default_rng(zlib.crc32(t.lower().encode())).normal(size=DIM) for t in texts])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


SUBJECTS = "dog cat man woman child bird horse boy girl cow".split()
ACTIONS = "runs sits jumps sleeps eats walks plays stands".split()
PLACES = "grass beach street sofa field road park room".split()


def tiny_corpus(n_train: int = 24, n_dev: int = 4, seed: int = 0):
    rng = random.Random(seed)

    def captions(i):
        s, p = SUBJECTS[i % len(SUBJECTS)], PLACES[i % len(PLACES)]
        return [f"a {s} {rng.choice(ACTIONS)} on the {p} {w}" for w in ("today", "now", "here", "again", "outside")]

    train = {f"img{i:03d}.jpg": captions(i) for i in range(n_train)}
    dev = {f"dev{i:03d}.jpg": captions(i + 3) for i in range(n_dev)}
    return train, dev


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def fake_minilm(monkeypatch):
    """Every load of a sentence encoder by name gets the hash encoder."""
    import capeval.models.sentence_encoder as sentence_encoder

    encoder = HashEncoder()
    monkeypatch.setattr(sentence_encoder, "load_sentence_encoder", lambda name, device=None, max_length=256: encoder)
    return encoder


def small_config(**kw):
    return SentenceRankConfig(dim=DIM, hidden=8, encoder="fake-hash", encoder_max_length=64, **kw)


# -- the model ---------------------------------------------------------------------------------------------------


def test_untrained_model_is_the_cosine_ranking():
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(50, DIM)), rng.normal(size=(50, DIM))
    model = SentenceRankModel.initial(small_config())
    assert np.all(model.mlp(u, v) == 0.0)
    cos = np.einsum("ij,ij->i", u, v) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(model.logits(u, v), 5.0 * cos - 2.5, atol=1e-12)
    assert np.array_equal(np.argsort(model.logits(u, v)), np.argsort(cos))
    p = model.probabilities(u, v)[cos >= 0]
    assert len(p) and np.all((p > 0.07) & (p < 0.93))  # captions' cosines lie in [0, 1]: σ is not saturated
    from capeval.sentence_rank.model import torch_network

    torch.manual_seed(0)
    net = torch_network(small_config())
    ut, vt = torch.from_numpy(u).float(), torch.from_numpy(v).float()
    assert torch.all(net.head(torch.nn.functional.normalize(ut), torch.nn.functional.normalize(vt)) == 0)
    np.testing.assert_allclose(net(ut, vt).detach().numpy(), 5.0 * cos - 2.5, atol=1e-5)


def test_model_files_round_trip(tmp_path):
    from capeval.sentence_rank.model import from_torch, torch_network

    torch.manual_seed(1)
    net = torch_network(small_config(catalog_name="sentence-rank-coco"))
    torch.nn.init.normal_(net.mlp[3].weight)
    model = from_torch(net, small_config(catalog_name="sentence-rank-coco"))
    model.save_pretrained(tmp_path / "m")
    again = SentenceRankModel.from_pretrained(tmp_path / "m")
    assert again.config == model.config and all(np.array_equal(model.params[k], again.params[k]) for k in model.params)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["config.json", "model.safetensors"]
    half = SentenceRankModel.from_pretrained(model.save_pretrained(tmp_path / "h", dtype="float16"))
    u = np.random.default_rng(2).normal(size=(5, DIM))
    np.testing.assert_allclose(half.logits(u, u[::-1]), model.logits(u, u[::-1]), atol=2e-2)
    assert (tmp_path / "h" / "model.safetensors").stat().st_size < (tmp_path / "m" / "model.safetensors").stat().st_size
    with pytest.raises(FileNotFoundError, match="sentence-rank train"):
        SentenceRankModel.from_pretrained(tmp_path)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "config.json").write_text('{"model_type": "lceval"}')
    (tmp_path / "x" / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="not a sentence_rank model"):
        SentenceRankModel.from_pretrained(tmp_path / "x")


# -- training data -----------------------------------------------------------------------------------------------


def test_training_pairs_kinds_and_rules():
    train, dev = tiny_corpus()
    corpus = RankCorpus(train, dev)
    vectors = HashEncoder().encode(corpus.texts)
    plan = epoch_pairs(corpus, random.Random(3), neighbours=5)
    pairs = resolve_pairs(corpus, vectors, plan, 5).pairs
    assert len(pairs) == len(train) and {p.image for p in pairs} == set(train)
    counts = {k: sum(p.kind == k for p in pairs) for k in NEGATIVE_KINDS}
    assert all(c >= 1 for c in counts.values()) and counts["hard"] == counts["random"] == len(train) // 4
    assert counts["WP"] + counts["RW"] == len(train) // 2
    near = dict(zip(range(len(corpus)), nearest_rows(corpus, vectors, range(len(corpus)), 5)))
    for p in pairs:
        start, end = corpus.span[p.image]
        assert start <= p.positive < end and p.positive not in p.references
        assert sorted(p.references + (p.positive,)) == list(range(start, end))
        if p.kind in ("hard", "random"):
            assert p.negative < corpus.train_rows and corpus.owner[p.negative] != p.image
        else:
            text = plan.texts[p.negative - len(corpus)]
            assert text != corpus.texts[p.positive]
            assert sorted(text.split()) == sorted(corpus.texts[p.positive].split()) or p.kind == "RW"
        if p.kind == "hard":
            assert p.negative in near[p.positive]
    # exact nearest neighbours: brute force, other images only, the caption's own text skipped
    unit = vectors.astype(np.float64)
    for q in (0, 7, len(corpus) - 1):
        sims = unit[: corpus.train_rows] @ unit[q]
        ok = [j for j in np.argsort(-sims, kind="stable") if corpus.owner[j] != corpus.owner[q]
              and corpus.lower[j] != corpus.lower[q]]
        assert set(near[q]) == set(ok[:5])


def test_training_pairs_are_seeded_and_dev_is_disjoint():
    train, dev = tiny_corpus()
    corpus = RankCorpus(train, dev)
    a, b = epoch_pairs(corpus, random.Random(5)), epoch_pairs(corpus, random.Random(5))
    assert a.pairs == b.pairs and a.texts == b.texts
    assert epoch_pairs(corpus, random.Random(6)).pairs != a.pairs
    d1, d2 = dev_pairs(corpus, 1234), dev_pairs(corpus, 1234)
    assert d1.pairs == d2.pairs and d1.texts == d2.texts
    assert len(d1.pairs) == 4 * len(dev)
    assert {k: sum(p.kind == k for p in d1.pairs) >= 1 for k in ("hard", "random")} == {"hard": True, "random": True}
    for p in d1.pairs:
        assert p.image in dev and all(corpus.owner[r] == p.image for r in p.references + (p.positive,))
        assert p.positive >= corpus.train_rows  # dev captions are rows after the training ones
    assert not {corpus.owner[p.positive] for p in a.pairs} & set(dev)
    with pytest.raises(ValueError, match="both train and dev"):
        RankCorpus(train, {**dev, "img000.jpg": train["img000.jpg"]})
    with pytest.raises(ValueError, match="belong to benchmark pascal50s"):
        RankCorpus(train, dev, {"benchmark pascal50s": {"img003.jpg"}})


def test_the_coco_corpus_leaves_benchmark_images_out():
    pytest.importorskip("pycocoevalcap")
    from capeval.corpora.coco_train2014 import coco_training_corpus

    try:
        corpus = coco_training_corpus({"fake-bench": {"COCO_train2014_000000000009.jpg"}})
    except (FileNotFoundError, OSError, ModuleNotFoundError) as err:
        pytest.skip(f"COCO train2014 captions unavailable: {err}")
    assert "COCO_train2014_000000000009.jpg" not in corpus.train | corpus.dev
    assert corpus.report["left_out"] == {"fake-bench": 1} and not set(corpus.train) & set(corpus.dev)
    assert 0.015 < len(corpus.dev) / (len(corpus.train) + len(corpus.dev)) < 0.025


# -- training ----------------------------------------------------------------------------------------------------


def _params(folder):
    return SentenceRankModel.from_pretrained(folder).params


def _strip_times(log):
    return [{k: v for k, v in e.items() if not k.startswith("seconds")} for e in log["epochs"]]


def test_training_runs_checkpoints_and_resumes_identically(tmp_path):
    from capeval.sentence_rank.train import train_sentence_rank

    train, dev = tiny_corpus()
    opts = {"batch_size": 8, "hidden": 8, "neighbours": 5, "patience": 0}
    enc = HashEncoder()
    full = train_sentence_rank(train, dev, tmp_path / "full", encoder=enc, cache_dir=tmp_path / "vec", epochs=2,
                               **opts)
    assert len(full["epochs"]) == 2 and full["best_epoch"] in (1, 2)
    assert 0 <= full["initial_dev"]["dev_accuracy"] <= 1 and "dev_accuracy_hard" in full["epochs"][0]
    folder = tmp_path / "full" / "checkpoints" / "epoch-2"
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "optimizer.safetensors",
                                                        "state.json"]
    assert not list((tmp_path / "full").rglob("*.pt")) and not list((tmp_path / "full").rglob("*.bin"))
    best = _params(tmp_path / "full" / "checkpoints" / f"epoch-{full['best_epoch']}")
    assert all(np.array_equal(best[k], _params(tmp_path / "full")[k]) for k in best)
    assert np.any(_params(folder)["mlp.3.weight"] != 0)  # the MLP learned something
    # the corpus vectors are cached: a second run encodes only the WP / RW texts
    enc2 = HashEncoder()
    first = train_sentence_rank(train, dev, tmp_path / "half", encoder=enc2, cache_dir=tmp_path / "vec", epochs=1,
                                **opts)
    assert enc2.encoded < len(set(t for caps in (*train.values(), *dev.values()) for t in caps))
    assert len(first["epochs"]) == 1
    resumed = train_sentence_rank(train, dev, tmp_path / "half", encoder=HashEncoder(), cache_dir=tmp_path / "vec",
                                  epochs=2, **opts)
    assert _strip_times(resumed) == _strip_times(full)
    end_a, end_b = _params(folder), _params(tmp_path / "half" / "checkpoints" / "epoch-2")
    assert all(np.array_equal(end_a[k], end_b[k]) for k in end_a)
    with pytest.raises(ValueError, match="other settings"):
        train_sentence_rank(train, dev, tmp_path / "half", encoder=HashEncoder(), epochs=3, **{**opts, "lr": 0.1})


# -- the metric --------------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_model(tmp_path):
    from capeval.sentence_rank.model import from_torch, torch_network

    torch.manual_seed(0)
    net = torch_network(small_config())
    torch.nn.init.normal_(net.mlp[3].weight, std=3.0)
    return from_torch(net, small_config()).save_pretrained(tmp_path / "tiny-rank")


PREDICTIONS = ["a dog runs on the grass", "🙂", "a man rides a bike", "..."]
REFERENCES = [["a dog running on a lawn", "a brown dog"], ["a cat"], ["a cyclist on a road"], ["x", "y"]]


def test_metric_range_wordless_signature_and_no_nan(tiny_model, fake_minilm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the wordless predictions warn
        result = capeval.score(PREDICTIONS, REFERENCES, metrics=["sentence_rank"], sentence_rank_model=str(tiny_model))
    per = np.array(result["per_caption"]["sentence_rank"])
    assert per.shape == (4,) and np.isfinite(per).all() and np.all((per >= 0) & (per <= 1))
    assert per[1] == 0.0 and per[3] == 0.0 and per[0] > 0
    assert result["sentence_rank"] == pytest.approx(per.mean())
    digest = model_digest(tiny_model)[:10]
    assert f"sentence_rank:model=tiny-rank@{digest},enc=fake-hash,len=64" in result["signature"]
    # extreme logits saturate σ but never give NaN
    model = SentenceRankModel.from_pretrained(tiny_model)
    model.params["scale"][:] = 1e30
    from capeval.sentence_rank.scores import sentence_rank_scores

    out = sentence_rank_scores(["a dog", "a cat"], [["a dog"], ["a bird"]], model=model, encoder=HashEncoder())
    assert np.isfinite(out).all() and out[0] == 1.0


def test_untrained_model_on_real_minilm_is_sigma_of_the_cosine(tmp_path):
    needs("sentence_cosine")
    folder = SentenceRankModel.initial(SentenceRankConfig()).save_pretrained(tmp_path / "init")
    preds = ["a dog runs across the grass", "two cats sleep on a sofa"]
    refs = [["a brown dog running on a lawn"], ["a man riding a bicycle"]]
    result = capeval.score(preds, refs, metrics=["sentence_rank", "sentence_cosine"],
                           sentence_rank_model=str(folder))
    cos = np.array(result["per_caption"]["sentence_cosine"])
    np.testing.assert_allclose(result["per_caption"]["sentence_rank"], 1 / (1 + np.exp(-(5 * cos - 2.5))), atol=1e-5)


def test_missing_model_names_the_training_command(fake_minilm, tmp_path):
    with pytest.raises(FileNotFoundError, match="capeval sentence-rank train"):
        capeval.score(["a dog"], [["a dog"]], metrics=["sentence_rank"])
    with pytest.raises(FileNotFoundError, match="sentence-rank-model"):
        capeval.score(["a dog"], [["a dog"]], metrics=["sentence_rank"], sentence_rank_model=str(tmp_path / "no"))


# -- CLI and contamination ---------------------------------------------------------------------------------------


def test_cli_train_and_score(tmp_path, monkeypatch, fake_minilm, capsys):
    import capeval.corpora.held_out as held_out
    import capeval.corpora.coco_train2014 as coco_corpus
    from capeval.cli import main
    from capeval.corpora.coco_train2014 import CaptionCorpus

    train, dev = tiny_corpus()
    monkeypatch.setattr(held_out, "benchmark_images", lambda *a, **k: {"pascal50s": {"2008_000032.jpg"}})
    monkeypatch.setattr(coco_corpus, "coco_training_corpus",
                        lambda benchmarks, seed=0: CaptionCorpus(dict(train), dict(dev), {
                            "left_out": {}, "benchmarks_checked": sorted(benchmarks)}))
    out = tmp_path / "model"
    assert main(["sentence-rank", "train", "--out", str(out), "--epochs", "1", "--batch-size", "8",
                 "--cache-dir", str(tmp_path / "vec"), "--max-images", "12", "--threads", "1"]) == 0
    err = capsys.readouterr().err
    assert "12 train / 4 dev images" in err and "best epoch 1" in err
    log = json.loads((out / "training.json").read_text())
    assert log["train_images"] == 12 and log["corpus"]["max_images"] == 12
    assert json.loads((out / "config.json").read_text())["catalog_name"] == "sentence-rank-coco"
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"
    preds.write_text(json.dumps([{"image_id": 0, "caption": "a dog runs on the grass"}]))
    refs.write_text(json.dumps({"0": ["a dog running on a lawn", "a brown dog"]}))
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "sentence_rank",
                 "--sentence-rank-model", str(out), "--json", "-"]) == 0
    assert 0 <= json.loads(capsys.readouterr().out)["sentence_rank"] <= 1
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "sentence_rank"]) == 1
    assert "capeval sentence-rank train" in capsys.readouterr().err
    # the trained folder declares its catalog entry: bench marks it as the catalog's model
    options = {"sentence_rank_model": str(out)}
    assert metric_models("sentence_rank", options) == ["sentence-rank-coco"]
    assert contamination("sentence_rank", "pascal50s", options=options) == []
    assert contamination("sentence_rank", "flickr8k-expert", options=options)


def test_contamination_through_minilm(tiny_model):
    reasons = contamination("sentence_rank", "flickr8k-expert")
    assert reasons and all("all-minilm-l6-v2" in r for r in reasons)
    assert any("Flickr30k" in r for r in reasons)
    for bench, subset in (("pascal50s", None), ("thumb", None), ("composite", "coco")):
        assert contamination("sentence_rank", bench, subset) == [], bench
    assert contamination("sentence_rank", "composite", "8k")
    unknown = contamination("sentence_rank", "pascal50s", options={"sentence_rank_model": str(tiny_model)})
    assert len(unknown) == 1 and unknown[0].startswith("unknown:")
