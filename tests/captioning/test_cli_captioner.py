"""``capeval caption`` and ``capeval captioner evaluate|generate|distractors`` end to end with a tiny random captioner
(features: a self-made file for the Flickr8k test split; the real offline encoder for image files)."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("timm")

from support.images import write_pngs  # noqa: E402

from capeval.cli import main  # noqa: E402
from capeval.models.caption_tokenizer import build_caption_tokenizer  # noqa: E402
from capeval.models.captioner import CaptionerConfig, CaptionerForImageCaptioning  # noqa: E402

WORDS = "a dog man woman runs sits on the grass in water red shirt".split()


def _tiny(folder, feature_dim, kind):
    tok = build_caption_tokenizer([" ".join(WORDS)], min_count=1)
    torch.manual_seed(0)
    cfg = CaptionerConfig(vocab_size=len(tok), feature_dim=feature_dim, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, feature_kind=kind)
    CaptionerForImageCaptioning(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def test_split_inputs(tmp_path_factory):
    from capeval.corpora.captions import flickr8k_captions
    from capeval.paths import data_dir

    if data_dir() is None:
        pytest.skip("benchmark data not found")
    from safetensors.torch import save_file

    root = tmp_path_factory.mktemp("cli")
    names = sorted(flickr8k_captions("test"))
    feats = torch.randn(len(names), 2, 8, generator=torch.Generator().manual_seed(0))
    save_file({"features": feats}, str(root / "f.safetensors"),
              metadata={"images": json.dumps(names), "settings": "random-test-features", "kind": "grid"})
    return _tiny(root / "model", 8, "grid"), root / "f.safetensors", root


def test_captioner_evaluate_writes_settings_and_results(test_split_inputs):
    model, feats, root = test_split_inputs
    out = root / "eval.json"
    assert main(["captioner", "evaluate", "--split", "test", "--model", str(model), "--features", str(feats),
                 "--json", str(out), "--metrics", "bleu,cider_d", "--num-beams", "2"]) == 0
    data = json.loads(out.read_text())
    assert set(data["results"]) == {"bleu_1", "bleu_2", "bleu_3", "bleu_4", "cider_d"}
    assert data["settings"]["images"] == 1000 and data["settings"]["split"] == "flickr8k-test"
    assert data["settings"]["references_per_image"] == [5]


def test_captioner_generate_beam_and_samples(test_split_inputs):
    model, feats, root = test_split_inputs
    beam, samples = root / "beam.jsonl", root / "samples.jsonl"
    assert main(["captioner", "generate", "--split", "test", "--model", str(model), "--features", str(feats),
                 "--out", str(beam), "--num-beams", "3", "--num-return", "3"]) == 0
    rows = [json.loads(x) for x in beam.read_text().splitlines()]
    assert len(rows) == 1000 and all(len(r["candidates"]) == 3 for r in rows)
    assert rows[0]["settings"]["decoding"] == "beam"
    assert main(["captioner", "generate", "--split", "test", "--model", str(model), "--features", str(feats),
                 "--out", str(samples), "--samples", "2", "--seed", "3"]) == 0
    rows = [json.loads(x) for x in samples.read_text().splitlines()]
    assert all(len(r["candidates"]) == 2 for r in rows) and rows[0]["settings"]["seed"] == 3


def test_captioner_distractors(test_split_inputs):
    model, feats, root = test_split_inputs
    out = root / "d.json"
    assert main(["captioner", "distractors", "--split", "test", "--model", str(model), "--features", str(feats),
                 "--json", str(out), "--top", "5"]) == 0
    data = json.loads(out.read_text())
    assert len(data["distractors"]) == 5 and data["distractors"][0]["train_count"] >= data["distractors"][4]["train_count"]
    assert 0 <= data["results"]["share_any"] <= 1


def test_caption_image_files_with_the_real_encoder(tmp_path, capsys):
    model = _tiny(tmp_path / "model", 1280, "pooled")
    images = write_pngs(tmp_path / "imgs", 2)
    assert main(["caption", *map(str, images), "--model", str(model), "--json", "-", "--num-return", "2"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)  # one JSON document on stdout, the text lines on stderr
    assert [r["id"] for r in rows] == [str(p) for p in images] and all(len(r["candidates"]) == 2 for r in rows)
    assert len(captured.err.strip().splitlines()) == 4 and captured.err.startswith(str(images[0]))
    assert main(["caption", *map(str, images), "--model", str(model), "--json", str(tmp_path / "c.json")]) == 0
    assert len(json.loads((tmp_path / "c.json").read_text())) == 2
    assert main(["caption", str(tmp_path / "missing.jpg"), "--model", str(model)]) != 0
    assert "missing.jpg" in capsys.readouterr().err
