"""PAC-S's open_clip checkpoint (``openClip_ViT-L-14.pth``) scores as open_clip's own model; PAC-S++'s are refused.

The model: a tiny configuration of open_clip's ViT-L-14 family (its JSON's fields, tiny widths, no ``quick_gelu``)
registered with ``open_clip.add_model_config`` and built by ``open_clip.create_model``, seeded random weights, saved
here as PAC-S distributes it (``torch.save({"state_dict": ...})``). The reference: aimagelab/pacscore's
``compute_metrics.py`` + ``pac_score.py`` on that model (``encode_image`` / ``encode_text``, the ``preprocess`` of
``create_model_and_transforms('ViT-L-14', pretrained='laion2b_s32b_b82k')``, ``w = 2.0``), through
``tests/support/clip_reference.py``.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
open_clip = pytest.importorskip("open_clip")
pytest.importorskip("torchvision")

import capeval  # noqa: E402
from capeval.vision_language import backends  # noqa: E402
from capeval.vision_language.checkpoints import build_openai_clip, open_clip_release, read_state_dict  # noqa: E402
from support import clip_reference as ref  # noqa: E402
from support.images import write_pngs  # noqa: E402

TOL = 1e-5
TINY_NAME = "capeval-tiny-ViT-L-14"
#: ViT-L-14.json's fields at tiny widths (2 heads of 64 in each tower, as ViT-L-14's 16 and 12).
TINY_CONFIG = {"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 128, "patch_size": 8},
               "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 128, "heads": 2, "layers": 2}}
CAPTIONS = ["a dog runs on the grass", "two cats sleep on a red blanket", "A man rides a bike down the street.",
            "a bowl of fruit", "people", "an orange cat and a grey cat are lying together"]
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping"], ["a man cycling", "a cyclist"],
              ["fruit in a bowl"], ["a crowd of people"], ["two cats lying together"]]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return [str(p) for p in write_pngs(tmp_path_factory.mktemp("oc-images"), len(CAPTIONS), size=(64, 48))]


@pytest.fixture(scope="module")
def tiny_config(tmp_path_factory):
    """The tiny configuration registered with open_clip (its own registry, as a model_configs/ JSON)."""
    path = tmp_path_factory.mktemp("oc-config") / f"{TINY_NAME}.json"
    path.write_text(json.dumps(TINY_CONFIG), encoding="utf-8")
    open_clip.add_model_config(path)
    assert open_clip.get_model_config(TINY_NAME) == TINY_CONFIG
    return TINY_NAME


def _pac_preprocess(model):
    """PAC-S's ``preprocess`` for its open_clip checkpoint: open_clip's eval transform with the mean / std of
    ``ViT-L-14`` / ``laion2b_s32b_b82k`` (read from open_clip's pretrained configuration, not from capeval)."""
    pretrained = open_clip.get_pretrained_cfg("ViT-L-14", "laion2b_s32b_b82k")
    return open_clip.image_transform(model.visual.image_size, is_train=False, mean=pretrained["mean"],
                                     std=pretrained["std"])


def _spread_open_clip_model(name, images):
    """The first seed whose reference PAC-S scores are positive for two captions and zero for two: both sides of
    the clip at 0 are exercised."""
    for seed in range(100):
        torch.manual_seed(seed)
        model = open_clip.create_model(name, precision="fp32").eval()
        assert isinstance(model.visual.transformer.resblocks[0].mlp.gelu, torch.nn.GELU)  # the family's activation
        per, _ = ref.reference_scores(model, images, CAPTIONS, w=2.0, transform=_pac_preprocess(model))
        if (per > 0).sum() >= 2 and (per == 0).sum() >= 2:
            return model
    raise AssertionError("no seed in 0..99 gives spread scores")


@pytest.fixture(scope="module")
def pac_open_clip(tiny_config, images, tmp_path_factory):
    """``(open_clip model, checkpoint path)``: the weights saved under PAC-S's file name, as PAC-S distributes them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _spread_open_clip_model(tiny_config, images)
    path = tmp_path_factory.mktemp("oc-ckpt") / "openClip_ViT-L-14.pth"
    torch.save({"state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()}, "epoch": 3}, path)
    return model, path


def _score(metrics, images, **options):
    backends.clear_loaded()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(CAPTIONS, REFERENCES, metrics=metrics, images=images, **options)


def test_the_open_clip_layout_is_openais_key_for_key(tiny_config):
    """Why the file name decides: open_clip's state dict has OpenAI's keys and shapes (the mask is not stored)."""
    torch.manual_seed(0)
    theirs = open_clip.create_model(tiny_config, precision="fp32").state_dict()
    ours = build_openai_clip({k: v.clone() for k, v in theirs.items()}).state_dict()
    assert list(theirs) == list(ours) and "attn_mask" not in theirs
    assert all(theirs[k].shape == ours[k].shape for k in theirs)


def test_pac_s_on_the_open_clip_checkpoint_equals_open_clips_own_model(pac_open_clip, images):
    model, path = pac_open_clip
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES, w=2.0, transform=_pac_preprocess(model))
    assert (per > 0).sum() >= 2 and (per == 0).sum() >= 2
    result = _score(["pac_s", "ref_pac_s"], images, pac_model=str(path))
    assert np.abs(np.array(result["per_caption"]["pac_s"]) - per).max() <= TOL
    assert np.abs(np.array(result["per_caption"]["ref_pac_s"]) - combined).max() <= TOL
    assert "open_clip-ViT-L-14-gelu" in result["signature"]
    clip = _score(["clip_s"], images, clip_model=str(path))  # the same file as clip_model: w = 2.5
    assert np.abs(np.array(clip["per_caption"]["clip_s"]) - 2.5 / 2.0 * per).max() <= TOL


def test_the_same_file_built_as_openais_clip_scores_otherwise(pac_open_clip, images, tmp_path):
    """QuickGELU (what the file would get as an OpenAI checkpoint) or OpenAI's normalisation each change the scores
    well beyond the tolerance: the parity above could fail."""
    model, path = pac_open_clip
    per, _ = ref.reference_scores(model, images, CAPTIONS, w=2.0, transform=_pac_preprocess(model))
    quick = build_openai_clip(read_state_dict(path, what="pac_model"))
    quick_per, _ = ref.reference_scores(quick, images, CAPTIONS, w=2.0, transform=_pac_preprocess(model))
    assert np.abs(quick_per - per).max() > 100 * TOL
    renamed = tmp_path / "clip_finetuned.pth"  # any other name: OpenAI's CLIP (QuickGELU, OpenAI's mean / std)
    renamed.write_bytes(path.read_bytes())
    assert open_clip_release(renamed) is None
    as_openai = _score(["pac_s"], images, pac_model=str(renamed))["per_caption"]["pac_s"]
    assert np.abs(np.array(as_openai) - per).max() > 100 * TOL


def test_the_release_settings_are_open_clips_vit_l_14():
    release = open_clip_release("checkpoints/OPENCLIP_ViT-L-14.pth")
    assert (release.name, release.tag, release.quick_gelu) == ("ViT-L-14", "laion2b_s32b_b82k", False)
    assert release.mean == release.std == (0.5, 0.5, 0.5)


def test_vit_l_14_shapes_build_open_clips_vit_l_14_module_for_module():
    """ViT-L/14's real shapes (on the meta device: no memory) give open_clip's ``create_model('ViT-L-14')``: the
    same modules (GELU, 16 vision heads, 12 text heads) and the same tensor shapes."""
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = open_clip.create_model("ViT-L-14", device="meta")
        ours = build_openai_clip(dict(theirs.state_dict()), quick_gelu=False)
    assert repr(ours) == repr(theirs)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in theirs.state_dict().items()}
    assert ours.visual.transformer.resblocks[0].attn.num_heads == 16
    assert ours.transformer.resblocks[0].attn.num_heads == 12


def test_a_pac_s_plus_plus_checkpoint_is_refused_in_one_line(tmp_path, images):
    """PAC-S++ (aimagelab/pacscore ``models/clip_lora``): OpenAI's CLIP with LoRA tensors beside the weights
    (``attn.in_proj_weight_lora_A`` / ``_B`` of its MultiheadAttention, ``lora_A`` / ``lora_B`` of its Linear)."""
    model = ref.random_openai_clip(ref.TINY, seed=0)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    r = 4
    for tower, width in (("transformer", 64), ("visual.transformer", 64)):
        for i in range(2):
            block = f"{tower}.resblocks.{i}"
            state[f"{block}.attn.in_proj_weight_lora_A"] = torch.zeros(r, width)
            state[f"{block}.attn.in_proj_weight_lora_B"] = torch.zeros(3 * width, r)
            state[f"{block}.mlp.c_fc.lora_A"] = torch.zeros(r, width)
            state[f"{block}.mlp.c_fc.lora_B"] = torch.zeros(4 * width, r)
    path = tmp_path / "PAC++_clip_ViT-B-32.pth"
    torch.save({"state_dict": state}, path)
    backends.clear_loaded()
    with pytest.raises(ValueError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        capeval.score(CAPTIONS[:2], REFERENCES[:2], metrics="pac_s", images=images[:2], pac_model=str(path))
    message = str(err.value)
    assert "\n" not in message and message.startswith("pac_model: ") and str(path) in message
    assert "LoRA" in message and "16 tensors" in message and "PAC-S++" in message and "lora_A" in message
