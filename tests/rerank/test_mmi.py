"""MMI re-ranking (paper §5): hand-computed scores and rankings, bad input, generate outputs, the lambda/alpha
grid search, the LM corpora and the ``capeval mmi`` / ``capeval lm`` commands. Each test takes seconds."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from capeval.cli import main
from capeval.models.caption_lm import UnigramLM
from capeval.corpora.captions import coco_train_captions, corpus_captions, excluded_coco_image_ids, flickr8k_captions
from capeval.rerank.mmi import from_generate_output, mmi_scores, read_candidates_jsonl, rerank, validate_items
from capeval.rerank.tune import geomean, tune
from tests.support import require_data

CORPUS = ["a dog runs"] * 9 + ["a zebra runs"]
# unigram, k=1: tokens a 10, dog 9, runs 10, zebra 1, <eos> 10, <unk> 0 -> N = 40, V = 6, denominator 46
LOGP = {w: math.log((c + 1) / 46) for w, c in {"a": 10, "dog": 9, "runs": 10, "zebra": 1, "<eos>": 10}.items()}


def _items():
    return [{"id": "img1", "extra": [1], "candidates": [
        {"caption": "a dog runs", "logp": -1.0, "beam": 0},
        {"caption": "a zebra runs", "logp": -1.5, "beam": 1}]}]


@pytest.fixture(scope="module")
def unigram():
    return UnigramLM.fit(CORPUS, k=1.0)


def test_mmi_scores_by_hand():
    assert mmi_scores([-1.0, -2.0], [-10.0, -4.0], 0.5) == pytest.approx([4.0, 0.0])
    with pytest.raises(ValueError, match="lambda"):
        mmi_scores([-1.0], [-1.0], float("nan"))


def test_lambda_zero_keeps_beam_order_and_lambda_one_promotes_the_rarer_caption(unigram):
    lp_dog = LOGP["a"] + LOGP["dog"] + LOGP["runs"] + LOGP["<eos>"]
    lp_zebra = LOGP["a"] + LOGP["zebra"] + LOGP["runs"] + LOGP["<eos>"]
    assert unigram.log_prob(["a dog runs", "a zebra runs"]) == pytest.approx([lp_dog, lp_zebra])
    kept = rerank(_items(), unigram, 0.0)[0]
    assert [c["beam"] for c in kept["candidates"]] == [0, 1]
    ranked = rerank(_items(), unigram, 1.0)[0]
    assert [c["caption"] for c in ranked["candidates"]] == ["a zebra runs", "a dog runs"]
    assert ranked["candidates"][0]["mmi_score"] == pytest.approx(-1.5 - lp_zebra)
    assert ranked["candidates"][1]["mmi_score"] == pytest.approx(-1.0 - lp_dog)
    assert ranked["id"] == "img1" and ranked["extra"] == [1] and ranked["candidates"][0]["beam"] == 1
    assert ranked["candidates"][0]["lm_logp"] == pytest.approx(lp_zebra)


def test_ties_are_stable(unigram):
    items = [{"id": 0, "candidates": [{"caption": "a dog runs", "logp": -1.0, "n": i} for i in range(3)]}]
    assert [c["n"] for c in rerank(items, unigram, 0.7)[0]["candidates"]] == [0, 1, 2]


def test_input_is_not_modified(unigram):
    items = _items()
    rerank(items, unigram, 1.0)
    assert items == _items()


@pytest.mark.parametrize("bad, where", [
    ([{"id": "x", "candidates": []}], r"items\[0\]\.candidates"),
    ([{"id": "x"}], r"items\[0\]\.candidates"),
    ([{"id": "x", "candidates": [{"caption": "a", "logp": -1}, {"caption": "b", "logp": float("nan")}]}],
     r"items\[0\]\.candidates\[1\].*logp"),
    ([{"id": "x", "candidates": [{"caption": "a", "logp": float("-inf")}]}], r"items\[0\]\.candidates\[0\]"),
    ([{"id": "x", "candidates": [{"caption": "a", "logp": "-1"}]}], r"items\[0\]\.candidates\[0\]"),
    ([{"id": "x", "candidates": [{"caption": 3, "logp": -1.0}]}], r"items\[0\]\.candidates\[0\].*caption"),
    ([], "non-empty"),
])
def test_bad_input_names_the_item(bad, where):
    with pytest.raises(ValueError, match=where):
        validate_items(bad)


def test_read_jsonl(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in _items()) + "\n\n", encoding="utf-8")
    assert read_candidates_jsonl(path) == _items()
    path.write_text('{"id": 1, "candidates": [{"caption": "a", "logp": NaN}]}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"items\[0\]\.candidates\[0\]"):
        read_candidates_jsonl(path)


def _word_tokenizer(words):
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", unk_token="<unk>",
                                                pad_token="<pad>")


def test_generate_output_groups_and_decodes(tmp_path, unigram):
    tok = _word_tokenizer(["<pad>", "<eos>", "<unk>", "a", "dog", "zebra", "runs"])
    sequences = [[3, 4, 6, 1], [3, 5, 6, 1], [3, 5, 1, 0], [3, 4, 1, 0]]
    items = from_generate_output(sequences, np.array([-1.0, -1.5, -0.5, -0.7]), tok, 2, ids=["p", "q"])
    assert [i["id"] for i in items] == ["p", "q"]
    assert [c["caption"] for c in items[0]["candidates"]] == ["a dog runs", "a zebra runs"]
    assert items[1]["candidates"][1] == {"caption": "a dog", "logp": -0.7}
    with pytest.raises(ValueError, match="num_return_sequences"):
        from_generate_output(sequences, [-1.0] * 4, tok, 3)
    with pytest.raises(ValueError, match=r"items\[0\]\.candidates\[1\]"):
        from_generate_output(sequences, [-1.0, float("nan"), -1.0, -1.0], tok, 2)
    # the CLI reads a generate output saved as JSON
    tok.save_pretrained(tmp_path / "tok")
    unigram.save(tmp_path / "uni")
    gen = tmp_path / "gen.json"
    gen.write_text(json.dumps({"sequences": sequences, "sequences_scores": [-1.0, -1.5, -0.5, -0.7],
                               "num_return_sequences": 2}, indent=1), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["mmi", "rerank", "--candidates", str(gen), "--tokenizer", str(tmp_path / "tok"),
                 "--lm", str(tmp_path / "uni"), "--lambda", "1", "--out", str(out)]) == 0
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["candidates"][0]["caption"] == "a zebra runs"


def test_geomean():
    assert geomean([0.25, 1.0]) == pytest.approx(0.5)
    assert geomean([0.5, 0.0]) == 0.0


def test_tune_finds_the_lambda_a_constructed_objective_prefers(unigram):
    other = UnigramLM.fit(["a zebra runs"] * 5 + ["a dog runs"], k=1.0)  # prefers zebra: MMI with it demotes zebra
    items = _items() * 3
    refs = [["x"]] * 3
    calls = []

    def scorer(preds, rr):
        calls.append(preds)
        return {"zebra_rate": sum("zebra" in p for p in preds) / len(preds)}

    result = tune(items, refs, unigram, other, "zebra_rate", alphas=[1.0, 0.0], scorer=scorer)
    # with the unigram LM (alpha = 1) zebra wins once lambda * (lp_dog - lp_zebra) > 0.5
    lp_dog, lp_zebra = unigram.log_prob(["a dog runs", "a zebra runs"])
    threshold = 0.5 / (lp_dog - lp_zebra)
    assert result["alpha"] == 1.0 and result["value"] == 1.0
    assert result["lambda"] == pytest.approx(math.floor(threshold * 10 + 1) / 10)
    assert len(result["grid"]) == 22 and result["distinct_selections"] == len(calls) == 2


def test_tune_with_real_metrics_bleu_and_cider(unigram):
    dog, zebra = "a dog runs on the green grass", "a zebra runs on the green grass"
    items = [{"id": i, "candidates": [{"caption": dog, "logp": -1.0}, {"caption": zebra, "logp": -1.5}]}
             for i in range(2)]
    items.append({"id": 2, "candidates": [{"caption": "a cat sits on a red mat", "logp": -1.0}]})
    refs = [[zebra, "a zebra runs on the grass"], ["a zebra runs in a field", zebra], ["a cat sits on a mat"]]
    result = tune(items, refs, unigram, unigram, metrics=["bleu_4", "cider_d"], alphas=[0.5])
    assert result["metrics"] == ["bleu_4", "cider_d"] and result["lambda"] > 0
    assert result["value"] == max(g["value"] for g in result["grid"]) > 0
    assert result["grid"][0]["value"] < result["value"]  # lambda = 0 picks the dog


# ---------------------------------------------------------------- corpora


def _fake_data(root):
    (root / "coco_karpathy_test").mkdir(parents=True)
    (root / "coco_karpathy_test" / "karpathy_ref.json").write_text(json.dumps(
        [{"image_id": "COCO_val2014_000000000001.jpg", "caption": "a cat."}]), encoding="utf-8")
    (root / "composite").mkdir()
    (root / "composite" / "composite_coco.jsonl").write_text(
        json.dumps({"image": "COCO_val2014_000000000002.jpg", "image_id": 2}) + "\n", encoding="utf-8")
    (root / "thumb").mkdir()
    (root / "thumb" / "mscoco_THumB-1.0.jsonl").write_text(
        json.dumps({"image": "COCO_val2014_000000000003.jpg"}) + "\n", encoding="utf-8")
    (root / "flickr8k").mkdir()
    (root / "flickr8k" / "Flickr_8k.trainImages.txt").write_text("a.jpg\n", encoding="utf-8")
    (root / "flickr8k" / "Flickr8k.token.txt").write_text(
        "a.jpg#0\tA dog .\na.jpg#1\tA cat .\nb.jpg#0\tA test image .\n", encoding="utf-8")


def test_coco_split_excludes_every_evaluation_image(tmp_path):
    _fake_data(tmp_path)
    coco = {1: ["one"], 2: ["two"], 3: ["three"], 4: ["four"]}
    assert coco_train_captions(tmp_path, coco=coco) == {4: ["four"]}
    assert flickr8k_captions("train", tmp_path) == {"a.jpg": ["A dog .", "A cat ."]}
    assert corpus_captions("coco-karpathy-test", tmp_path) == ["a cat."]
    (tmp_path / "thumb" / "mscoco_THumB-1.0.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="mscoco_THumB"):
        coco_train_captions(tmp_path, coco=coco)
    with pytest.raises(FileNotFoundError):
        coco_train_captions(tmp_path / "nowhere", coco=coco)


def test_lm_training_refuses_without_the_evaluation_files(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path))
    assert main(["lm", "train", "--corpus", "coco-train2014", "--out", str(tmp_path / "lm")]) == 1
    assert "karpathy_ref.json is missing" in capsys.readouterr().err
    assert not (tmp_path / "lm").exists()


def test_tune_refuses_non_finite_lm_log_probs(unigram):
    class Broken:
        name = settings = "broken"

        def log_prob(self, captions):
            return np.full(len(captions), np.nan)

    with pytest.raises(ValueError, match="lstm LM"):
        tune(_items(), [["x"]], unigram, Broken(), "bleu_4", scorer=lambda p, r: {"bleu_4": 0.0})


def test_real_coco_split_has_no_excluded_image():
    for rel in ("coco_karpathy_test", "composite", "thumb", "flickr8k"):
        root = require_data(rel).parent
    excluded = excluded_coco_image_ids(root)
    kept = coco_train_captions(root)
    assert all(len(ids) > 0 for ids in excluded.values())
    assert not set(kept) & set().union(*excluded.values())
    assert len(flickr8k_captions("train", root)) == 6000


# ---------------------------------------------------------------- CLI


def test_cli_lm_train_perplexity_and_mmi_tune(tmp_path, capsys):
    pytest.importorskip("torch")
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({"img1": ["a zebra runs"], "img2": ["a dog runs"]}), encoding="utf-8")
    lm_dir = tmp_path / "lm"
    assert main(["lm", "train", "--corpus", str(refs), "--out", str(lm_dir), "--epochs", "1", "--min-count", "1",
                 "--batch-size", "2"]) == 0
    assert (lm_dir / "unigram" / "unigram.json").is_file() and (lm_dir / "lstm" / "model.safetensors").is_file()
    capsys.readouterr()
    assert main(["lm", "perplexity", "--lm", str(lm_dir / "unigram"), "--captions", str(refs)]) == 0
    assert json.loads(capsys.readouterr().out)["perplexity"] > 1
    cands = tmp_path / "c.jsonl"
    cands.write_text("\n".join(json.dumps(i) for i in _items() + [{"id": "img2", "candidates": [
        {"caption": "a dog runs", "logp": -0.1}]}]), encoding="utf-8")
    out = tmp_path / "tune.json"
    assert main(["mmi", "tune", "--candidates", str(cands), "--references", str(refs), "--unigram",
                 str(lm_dir / "unigram"), "--lstm", str(lm_dir / "lstm"), "--metrics", "bleu_4,cider_d",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert len(result["grid"]) == 121 and 0 <= result["lambda"] <= 1
    assert main(["mmi", "rerank", "--candidates", str(cands), "--unigram", str(lm_dir / "unigram"), "--lstm",
                 str(lm_dir / "lstm"), "--alpha", "0.3", "--lambda", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[-2])["candidates"][0]["caption"] == "a dog runs"


def test_cli_bad_candidates_are_one_line_errors(tmp_path, capsys, unigram):
    unigram.save(tmp_path / "uni")
    cands = tmp_path / "c.jsonl"
    cands.write_text('{"id": "z", "candidates": []}\n', encoding="utf-8")
    assert main(["mmi", "rerank", "--candidates", str(cands), "--lm", str(tmp_path / "uni")]) == 1
    assert "items[0].candidates" in capsys.readouterr().err
