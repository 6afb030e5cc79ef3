"""`capeval models random DIR`: seeded random checkpoints of the real vision-language architectures, scored through the
same loaders as the released weights (docs/vision_language.md, "Try it without downloading weights")."""
from __future__ import annotations

import math
import shlex

import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import capeval  # noqa: E402
from capeval.cli import main  # noqa: E402
from capeval.vision_language.checkpoints import infer_architecture, read_state_dict  # noqa: E402
from capeval.vision_language.random_weights import REAL, TINY, clip_state_dict, random_clip  # noqa: E402

METRICS = ["clip_s", "ref_clip_s", "pac_s", "ref_pac_s", "polos"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def test_real_sizes_are_openai_vit_b_32():
    """The default (not --tiny) CLIP has ViT-B/32's shapes as OpenAI's build_model reads them from a state dict."""
    import torch

    state = clip_state_dict(random_clip(REAL, seed=0))
    assert all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point())
    arch = infer_architecture(state)
    assert arch == {"embed_dim": 512, "image_size": 224, "vision_layers": 12, "vision_width": 768, "patch_size": 32,
                    "context_length": 77, "vocab_size": 49408, "text_width": 512, "text_heads": 8, "text_layers": 12}
    assert sum(v.numel() for v in state.values()) == pytest.approx(151.28e6, rel=1e-3)


def test_cli_writes_checkpoints_that_every_vision_language_metric_scores(tmp_path, capsys):
    folder = tmp_path / "vl"
    assert main(["models", "random", str(folder), "--tiny", "--seed", "3"]) == 0
    out, err = capsys.readouterr()
    command = shlex.split(out.strip())
    assert command[:2] == ["capeval", "score"] and "wrote random tiny checkpoints" in err
    assert read_state_dict(folder / "clip-vit-b-32.safetensors")  # the plain loader reads it (weights only)
    assert (folder / "polos" / "reprod.safetensors").is_file() and (folder / "polos" / "hparams.yaml").is_file()
    # the printed command runs and scores all five metrics
    json_out = tmp_path / "out.json"
    assert main(command[1:] + ["--json", str(json_out)]) == 0
    import json

    result = json.loads(json_out.read_text())
    scores = {m: result[m] for m in METRICS}
    assert all(isinstance(v, float) and math.isfinite(v) for v in scores.values()), scores
    assert 0 < scores["polos"] < 1 and scores["clip_s"] >= 0
    # the same files through the Python API give the same numbers
    preds = json.loads((folder / "predictions.json").read_text())
    refs = json.loads((folder / "references.json").read_text())
    images = (folder / "images.txt").read_text().split()
    api = capeval.score(preds, refs, metrics=METRICS, images=images, clip_model=str(folder / "clip-vit-b-32.safetensors"),
                        pac_model=str(folder / "clip-vit-b-32.safetensors"), polos_model=str(folder / "polos"))
    for metric in METRICS:
        assert api[metric] == pytest.approx(scores[metric], abs=1e-6), metric


def test_seed_changes_the_weights_and_repeats_them():
    import torch

    a, b, again = (clip_state_dict(random_clip(TINY, seed=s)) for s in (0, 1, 0))
    assert not torch.equal(a["visual.conv1.weight"], b["visual.conv1.weight"])
    assert all(torch.equal(a[k], again[k]) for k in a)
