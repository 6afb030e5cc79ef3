"""Captioner workflows on tiny random features: training (checkpoints, resume = uninterrupted, split checks),
beam / sampled candidates, JSONL, evaluation and the §3.1 distractor analysis. Seconds each."""
from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from capeval.models.feature_table import FeatureTable, check_disjoint  # noqa: E402
from capeval.captioning.distractors import distractor_analysis, most_common_captions  # noqa: E402
from capeval.captioning.evaluate import evaluate_captioner  # noqa: E402
from capeval.captioning.generate import beam_candidates, sample_captions, write_jsonl  # noqa: E402
from capeval.captioning.train import train_captioner  # noqa: E402

WORDS = ["dog", "cat", "man", "horse", "ball", "grass", "runs", "sits", "rides", "plays"]
TINY = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32, "dropout": 0.1}


def _data(n_train=12, n_dev=4, n_test=4, dim=8):
    g = torch.Generator().manual_seed(0)
    names = [f"img{i}.jpg" for i in range(n_train + n_dev + n_test)]
    feats = torch.randn(len(names), 4, dim, generator=g)
    caps = {n: [f"a {WORDS[i % 10]} {WORDS[6 + i % 4]} on the {WORDS[(i + k) % 6]}." for k in range(3)]
            for i, n in enumerate(names)}
    split = lambda a, b: {n: caps[n] for n in names[a:b]}  # noqa: E731
    table = FeatureTable(names, feats, settings="test-features", kind="grid")
    return table, split(0, n_train), split(n_train, n_train + n_dev), split(n_train + n_dev, len(names))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    table, train, dev, test = _data()
    out = tmp_path_factory.mktemp("cap")
    log = train_captioner(table, train, out, dev=dev, held_out={"test": test}, config=TINY, epochs=2,
                          images_per_batch=4, min_count=1, warmup_steps=2, progress_bar=False)
    from transformers import AutoTokenizer

    from capeval.models.captioner import CaptionerForImageCaptioning

    return table, train, dev, test, out, log, CaptionerForImageCaptioning.from_pretrained(out).eval(), \
        AutoTokenizer.from_pretrained(out)


def test_training_writes_checkpoints_best_model_and_log(trained):
    _, _, _, _, out, log, model, tok = trained
    assert [e["epoch"] for e in log["epochs"]] == [1, 2]
    assert all("dev_cider_d" in e and e["train_loss"] > 0 for e in log["epochs"])
    assert log["best_epoch"] in (1, 2)
    for e in (1, 2):
        assert (out / "checkpoints" / f"epoch-{e}" / "training_state.json").is_file()
    assert json.loads((out / "training.json").read_text())["best_epoch"] == log["best_epoch"]
    assert model.config.feature_dim == 8 and len(tok) == model.config.vocab_size


def test_resume_equals_an_uninterrupted_run(tmp_path):
    table, train, dev, _ = _data()
    kw = dict(dev=dev, config=TINY, images_per_batch=4, min_count=1, warmup_steps=2, progress_bar=False, patience=0)
    train_captioner(table, train, tmp_path / "a", epochs=2, **kw)
    # a run killed after its first epoch: only the epoch-1 checkpoint exists
    shutil.copytree(tmp_path / "a" / "checkpoints" / "epoch-1", tmp_path / "b" / "checkpoints" / "epoch-1")
    log_b = train_captioner(table, train, tmp_path / "b", epochs=2, **kw)  # resumes from epoch 1
    assert [e["epoch"] for e in log_b["epochs"]] == [1, 2]
    from safetensors.torch import load_file

    a = load_file(tmp_path / "a" / "checkpoints" / "epoch-2" / "model.safetensors")
    b = load_file(tmp_path / "b" / "checkpoints" / "epoch-2" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_training_refuses_evaluated_images_and_bad_options(tmp_path):
    table, train, dev, test = _data()
    with pytest.raises(ValueError, match="test split"):
        train_captioner(table, {**train, **test}, tmp_path, held_out={"test": test}, config=TINY)
    with pytest.raises(ValueError, match="Unknown training option"):
        train_captioner(table, train, tmp_path, config=TINY, epoch=3)
    with pytest.raises(KeyError, match="No features for image"):
        train_captioner(table, {"missing.jpg": ["a dog"]}, tmp_path, config=TINY)
    with pytest.raises(ValueError, match="dev split"):
        check_disjoint(train, dev=train)


def test_feature_table_checks():
    with pytest.raises(ValueError, match="Duplicate"):
        FeatureTable(["a", "a"], torch.zeros(2, 3))
    with pytest.raises(ValueError, match="NaN"):
        FeatureTable(["a"], torch.full((1, 3), float("nan")))
    with pytest.raises(ValueError, match="2 image names"):
        FeatureTable(["a", "b"], torch.zeros(3, 3))
    grid = FeatureTable(["a"], torch.arange(12.0).view(1, 3, 2, 2))
    assert grid.rows(["a"]).shape == (1, 4, 3)  # [N, C, H, W] -> [N, H*W, C]


def test_beam_candidates_format_and_logp(trained):
    table, _, _, test, _, _, model, tok = trained
    names = sorted(test)
    rows = beam_candidates(model, tok, table, names, num_beams=3, num_return_sequences=2, batch_size=3,
                           progress_bar=False)
    assert [r["id"] for r in rows] == names
    assert all(len(r["candidates"]) == 2 and r["candidates"][0]["logp"] >= r["candidates"][1]["logp"] for r in rows)
    greedy = beam_candidates(model, tok, table, names, num_beams=1, progress_bar=False)
    assert all(isinstance(r["candidates"][0]["caption"], str) and r["candidates"][0]["logp"] <= 0 for r in greedy)
    with pytest.raises(ValueError, match="num_return_sequences"):
        beam_candidates(model, tok, table, names, num_beams=2, num_return_sequences=3)
    with pytest.raises(ValueError, match="num_beams"):
        beam_candidates(model, tok, table, names, num_beams=0)


def test_samples_are_seeded_and_written_as_jsonl(trained, tmp_path):
    table, _, _, test, _, _, model, tok = trained
    names = sorted(test)
    a = sample_captions(model, tok, table, names, num_samples=3, seed=1, progress_bar=False)
    b = sample_captions(model, tok, table, names, num_samples=3, seed=1, progress_bar=False)
    assert a == b and all(len(r["candidates"]) == 3 for r in a)
    path = write_jsonl(a, tmp_path / "s.jsonl", {"decoding": "sample"})
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [x["id"] for x in lines] == names and lines[0]["settings"] == {"decoding": "sample"}
    with pytest.raises(ValueError, match="temperature"):
        sample_captions(model, tok, table, names, temperature=0)


def test_evaluate_reports_capeval_keys_and_settings(trained, tmp_path):
    table, _, _, test, _, _, model, tok = trained
    out = evaluate_captioner(model, tok, table, test, split="tiny-test", num_beams=2, metrics=["bleu", "cider_d"],
                             captions_out=tmp_path / "caps.jsonl", progress=False)
    assert set(out["results"]) == {"bleu_1", "bleu_2", "bleu_3", "bleu_4", "cider_d"}
    assert all(0 <= v <= 10 for v in out["results"].values())
    assert out["settings"]["num_beams"] == 2 and out["settings"]["images"] == 4
    assert len((tmp_path / "caps.jsonl").read_text().splitlines()) == 4


def test_most_common_captions_normalise_and_break_ties():
    caps = ["A dog runs.", "a dog runs", "A cat.", "A bird.", "a cat"]
    assert most_common_captions(caps, 2) == [("a cat", 2), ("a dog runs", 2)]
    with pytest.raises(ValueError, match="top"):
        most_common_captions(caps, 0)


def test_distractor_analysis_shares(trained):
    table, train, _, test, _, _, model, tok = trained
    out = distractor_analysis(model, tok, table, test, train, top=3, progress_bar=False)
    r = out["results"]
    assert 0 <= r["share_best"] <= r["share_any"] <= 1 and 0 <= r["share_pairs"] <= 1
    assert len(out["distractors"]) == 3 and out["settings"]["images"] == 4
    with pytest.raises(ValueError, match="both training and evaluated"):
        distractor_analysis(model, tok, table, train, train)


def test_cider_reward_matches_capeval_cider_d():
    from capeval.api import score
    from capeval.captioning.rewards import CiderReward

    refs = {"a": ["A dog runs on grass.", "a dog running"], "b": ["A cat sleeps.", "a cat on a bed"],
            "c": ["a man rides a horse", "a man on a horse"]}
    preds = {"a": "a dog runs", "b": "a cat", "c": "a man on a horse"}
    reward = CiderReward(refs)
    got = reward([preds[i].split() for i in "abc"], list("abc"))
    # the same df (one document per image, all three images) as pycocoevalcap over the three items
    want = score([preds[i] for i in "abc"], [refs[i] for i in "abc"], ["cider_d"])["per_caption"]["cider_d"]
    assert got == pytest.approx(want, abs=1e-9)
    with pytest.raises(ValueError, match="2 samples for 1 images"):
        reward([["a"], ["b"]], ["a"])


def test_scst_fine_tunes_a_trained_captioner(trained, tmp_path):
    table, train, dev, _, out, _, _, _ = trained
    log = train_captioner(table, train, tmp_path / "scst", dev=dev, objective="scst", init_from=out, epochs=1,
                          images_per_batch=4, scst_samples=3, lr=1e-4, warmup_steps=1, progress_bar=False)
    assert log["options"]["objective"] == "scst" and log["options"]["init_from"] == str(out)
    assert (tmp_path / "scst" / "model.safetensors").is_file()
    import math

    assert math.isfinite(log["epochs"][0]["train_loss"])
    with pytest.raises(ValueError, match="init_from"):
        train_captioner(table, train, tmp_path / "x", objective="scst")
    with pytest.raises(ValueError, match="objective"):
        train_captioner(table, train, tmp_path / "x", objective="rl")
