"""Long-CLIP checkpoints in ``clip_s`` / ``ref_clip_s``: recognised from the checkpoint (248-token context, the second
positional embedding), tokenised and encoded as Long-CLIP's own code does (:mod:`support.longclip_reference`, its
transcription on OpenAI's modules), per caption within 1e-5 through ``capeval.score``, evaluate and the CLI, on random
weights of the tiny and the real architectures (LongCLIP-B: ViT-B/16; LongCLIP-L: ViT-L/14)."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("torchvision")

import capeval  # noqa: E402
from support import longclip_reference as ref  # noqa: E402
from support.clip_reference import require_clip_stack  # noqa: E402
from support.images import write_pngs  # noqa: E402

TOL = 1e-5
LONG = ("a detailed photograph of a busy street market where " + "vendors sell fresh fruit and colourful "
        "vegetables under striped awnings while shoppers walk past " * 6).strip()  # about 150 tokens: past 77
VERY_LONG = "a dog " * 200 + "on the grass"  # over 248 tokens: cut, end-of-text kept
CAPTIONS = ["a dog runs on the grass", LONG, "two cats sleep on a red blanket", VERY_LONG]
REFERENCES = [["a dog running", LONG], ["a market street with fruit stalls"], ["cats sleeping"],
              ["a dog", "a brown dog on grass"]]


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return [str(p) for p in write_pngs(tmp_path_factory.mktemp("longclip-images"), len(CAPTIONS), size=(96, 64))]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, images):
    require_clip_stack()
    model = ref.random_long_clip(ref.TINY, seed=3)
    path = tmp_path_factory.mktemp("longclip") / "longclip-tiny.pt"
    ref.save_state_dict(model, path)
    return model, path


def _score(images, path, captions=CAPTIONS, references=REFERENCES, **options):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = capeval.score(captions, references, metrics=["clip_s", "ref_clip_s"], images=images,
                               clip_model=str(path), **options)
    return result, seen


def test_a_long_clip_checkpoint_scores_as_long_clip_s_own_code(tiny, images):
    model, path = tiny
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES)
    result, seen = _score(images, path)
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per).max() <= TOL
    assert np.abs(np.array(result["per_caption"]["ref_clip_s"]) - combined).max() <= TOL
    assert "ctx=248" in result["signature"]
    cut = [str(w.message) for w in seen if w.category.__name__ == "CaptionTruncatedWarning"]
    assert len(cut) == 1 and "248-token context" in cut[0] and "predictions[3]" in cut[0], cut
    assert "predictions[1]" not in cut[0] and "references[0][1]" not in cut[0]  # ~150 tokens fit in 248


def test_the_words_past_77_tokens_count(tiny, images):
    """The caption of about 150 tokens scores differently from its first 75 tokens: Long-CLIP reads them all."""
    model, path = tiny
    from capeval.vision_language.tokenizer import encode_texts

    ids = encode_texts([LONG], "A photo depicts ", 248).ids[0]
    assert 77 < len(ids) < 248
    whole = ref.tokenize(["A photo depicts " + LONG], truncate=True)
    cut77 = ref.tokenize(["A photo depicts " + LONG], context_length=77, truncate=True)
    padded = torch.zeros_like(whole)
    padded[:, :77] = cut77
    with torch.no_grad():
        assert not torch.allclose(model.encode_text(whole), model.encode_text(padded))
    assert list(ids) == whole[0, :len(ids)].tolist()


def test_through_evaluate_and_the_command_line(tiny, images, tmp_path):
    evaluate = pytest.importorskip("evaluate")
    from support import ROOT

    from capeval.cli import main

    model, path = tiny
    per, combined = ref.reference_scores(model, images, CAPTIONS, REFERENCES)
    module = evaluate.load(str(ROOT / "metrics" / "clip_score"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = module.compute(predictions=CAPTIONS, references=REFERENCES, images=images,
                                metrics=["clip_s", "ref_clip_s"], clip_model=str(path))
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per).max() <= TOL
    assert np.abs(np.array(result["per_caption"]["ref_clip_s"]) - combined).max() <= TOL
    preds, refs, listing, out = (tmp_path / n for n in ("p.json", "r.json", "images.txt", "out.json"))
    preds.write_text(json.dumps(CAPTIONS))
    refs.write_text(json.dumps(REFERENCES))
    listing.write_text("\n".join(images) + "\n")
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--images", str(listing),
                 "--metrics", "clip_s,ref_clip_s", "--clip-model", str(path), "--json", str(out),
                 "--no-language-check"]) == 0
    got = json.loads(out.read_text())
    assert np.abs(np.array(got["per_caption"]["clip_s"]) - per).max() <= TOL
    assert np.abs(np.array(got["per_caption"]["ref_clip_s"]) - combined).max() <= TOL
    assert "ctx=248" in got["signature"]


def test_a_safetensors_long_clip_and_a_mismatched_second_embedding(tiny, images, tmp_path):
    model, _ = tiny
    path = tmp_path / "longclip.safetensors"
    ref.save_state_dict(model, path)
    per, _ = ref.reference_scores(model, images, CAPTIONS, REFERENCES)
    result, _ = _score(images, path)
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per).max() <= TOL
    from safetensors.torch import load_file, save_file

    state = load_file(str(path))
    state["positional_embedding_res"] = state["positional_embedding_res"][:100].clone()
    bad = tmp_path / "bad.safetensors"
    save_file(state, str(bad))
    with pytest.raises(ValueError, match="positional_embedding and positional_embedding_res of one shape"):
        _score(images, bad)


def test_an_ordinary_clip_keeps_its_signature_and_77_tokens(images, tmp_path):
    from support import clip_reference

    model = clip_reference.random_openai_clip(clip_reference.TINY, seed=0)
    path = tmp_path / "clip.pt"
    clip_reference.save_state_dict(model, path)
    result, seen = _score(images, path)
    assert "ctx=" not in result["signature"]
    cut = [str(w.message) for w in seen if w.category.__name__ == "CaptionTruncatedWarning"]
    assert len(cut) == 1 and "77-token context" in cut[0] and "predictions[1]" in cut[0]


@pytest.mark.slow
@pytest.mark.parametrize("dims, name", [(ref.LONGCLIP_B, "LongCLIP-B (ViT-B/16)"),
                                        (ref.LONGCLIP_L, "LongCLIP-L (ViT-L/14)")])
def test_the_released_architectures(dims, name, images, tmp_path):
    """Random weights of the released shapes: the same parity (two images and captions, one past 77 tokens)."""
    require_clip_stack()
    model = ref.random_long_clip(dims, seed=1)
    path = tmp_path / "longclip.pt"
    ref.save_state_dict(model, path)
    captions, references = CAPTIONS[:2], REFERENCES[:2]
    per, combined = ref.reference_scores(model, images[:2], captions, references)
    del model
    result, _ = _score(images[:2], path, captions, references)
    assert np.abs(np.array(result["per_caption"]["clip_s"]) - per).max() <= TOL, name
    assert np.abs(np.array(result["per_caption"]["ref_clip_s"]) - combined).max() <= TOL, name
    capeval.clear_loaded_models()


def test_the_catalog_names_resolve_to_the_authors_hub_repos(images, tmp_path, monkeypatch):
    """``clip_model="longclip-l"`` is the authors' Hub repo; offline and not cached it is one OSError naming the
    download command, and the catalog gives its training data (ShareGPT4V: its web part unknown) for contamination."""
    require_clip_stack()
    from capeval.meta_evaluation.contamination import metric_models
    from capeval.catalog import MODELS

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    capeval.clear_loaded_models()
    for name, repo in [("longclip-b", "BeichenZhang/LongCLIP-B"), ("longclip-l", "BeichenZhang/LongCLIP-L")]:
        assert MODELS[name].hub_id == repo and MODELS[name].metric == "clip_s"
        with pytest.raises(OSError, match=f"hf download {repo}"):
            capeval.score(CAPTIONS[:1], REFERENCES[:1], metrics="clip_s", images=images[:1], clip_model=name)
        assert metric_models("ref_clip_s", {"clip_model": repo}) == [name]
        assert metric_models("clip_s", {"clip_model": name}) == [name]
    assert {"sharegpt4v-pt-coco", "sharegpt4v-pt-web"} <= set(MODELS["longclip-l"].sources)
