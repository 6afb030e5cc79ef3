"""Polos equals the transcribed reference procedure (keio-smilab24/Polos, ``tests/support/polos_reference.py``) on the
same random weights (≤ 1e-5, float32): a tiny RoBERTa as the SimCSE encoder and a tiny OpenAI-code CLIP inside a
checkpoint in the released layout (Lightning ``.ckpt`` + ``hparams.yaml``), through ``capeval.score``, the
``evaluate`` module and the command line; batch sizes and reference counts that change which references a batch
keeps; the other accepted files; and the errors.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("open_clip")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import capeval  # noqa: E402
from capeval.vision_language.metric import CaptionTruncatedWarning  # noqa: E402
from support import clip_reference as cref  # noqa: E402
from support import polos_reference as pref  # noqa: E402
from support.images import write_pngs  # noqa: E402

TOL = 1e-5
CANDIDATES = ["a dog runs on the grass", "two cats sleep on a red blanket", "A man rides a bike down the street.",
              "fruit", "people walk in the park", "a bird sits on a branch", "the car is parked near the house",
              "a child plays with a ball", "Ein Hund läuft über die Wiese"]
#: Reference lists of 1 to 3: batches keep different numbers of them.
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping", "two cats", "a blanket"],
              ["a man cycling"], ["a bowl of fruit", "fruit on a table"], ["a crowd of people", "people walking"],
              ["a small bird", "a bird on a tree", "birds"], ["a car", "a house"], ["a kid with a ball", "a game"],
              ["a dog on a meadow", "a dog"]]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    clip = cref.require_clip_stack()
    folder = tmp_path_factory.mktemp("polos")
    text = pref.text_encoder_folder(folder / "simcse")
    clip_model = cref.random_openai_clip(cref.TINY, seed=3)
    checkpoint = pref.write_checkpoint(folder / "reprod", clip_model, text)
    pngs = [str(p) for p in write_pngs(folder / "images", 5, size=(64, 48))]
    images = [pngs[i % len(pngs)] for i in range(len(CANDIDATES))]
    return {"clip": clip, "clip_model": clip_model, "text": text, "checkpoint": checkpoint, "folder": folder,
            "images": images, "reference": pref.load_reference(checkpoint, clip)}


def _polos(setup, model=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return capeval.score(CANDIDATES, REFERENCES, metrics="polos", images=setup["images"],
                             polos_model=str(model or setup["checkpoint"].parent), language_check=False, **options)


@pytest.mark.parametrize("batch_size", [32, 4, 1])
def test_polos_equals_the_reference_procedure(setup, batch_size):
    expected = pref.reference_scores(setup["reference"], CANDIDATES, REFERENCES, setup["images"],
                                     batch_size=batch_size)
    result = _polos(setup, polos_batch_size=batch_size)
    got = np.asarray(result["per_caption"]["polos"])
    assert np.max(np.abs(got - expected)) <= TOL
    assert result["polos"] == pytest.approx(float(np.mean(got)), abs=1e-12)
    assert ((got > 0) & (got < 1)).all()
    assert f"polos:model=reprod/reprod.ckpt#" in result["signature"] and f",batch={batch_size}," in result["signature"]


def test_the_batch_decides_which_references_count(setup):
    """The reference keeps, per batch, as many references as its item with the fewest (item 2 has one): in one batch
    of all items, every item is scored on its first reference only; alone, item 1 is scored on its three."""
    alone = _polos(setup, polos_batch_size=1)["per_caption"]["polos"]
    batched = _polos(setup, polos_batch_size=32)["per_caption"]["polos"]
    assert abs(alone[1] - batched[1]) > 1e-4
    first_only = pref.reference_scores(setup["reference"], CANDIDATES, [r[:1] for r in REFERENCES], setup["images"],
                                       batch_size=32)
    assert np.max(np.abs(np.asarray(batched) - first_only)) <= TOL


def test_hyper_parameters_inside_the_checkpoint_and_a_safetensors_copy_score_the_same(setup, tmp_path):
    import torch
    from safetensors.torch import save_file

    expected = _polos(setup)["per_caption"]["polos"]
    inside = pref.write_checkpoint(tmp_path / "inside", setup["clip_model"], setup["text"], yaml_beside=False)
    assert np.allclose(_polos(setup, model=inside)["per_caption"]["polos"], expected, atol=1e-7, rtol=0)
    import argparse

    with torch.serialization.safe_globals([argparse.Namespace]):
        state = torch.load(str(setup["checkpoint"]), weights_only=True)["state_dict"]
    folder = tmp_path / "st"
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / "polos.safetensors"))
    (folder / "hparams.yaml").write_text((setup["checkpoint"].parent / "hparams.yaml").read_text())
    assert np.allclose(_polos(setup, model=folder)["per_caption"]["polos"], expected, atol=1e-7, rtol=0)


def test_average_pooling_and_a_final_activation_follow_the_reference(setup, tmp_path):
    checkpoint = pref.write_checkpoint(tmp_path / "avg", setup["clip_model"], setup["text"], seed=7, pool="avg",
                                       final_activation="Tanh", hidden_sizes=(40,))
    expected = pref.reference_scores(pref.load_reference(checkpoint, setup["clip"]), CANDIDATES, REFERENCES,
                                     setup["images"], batch_size=32)
    got = np.asarray(_polos(setup, model=checkpoint)["per_caption"]["polos"])
    assert np.max(np.abs(got - expected)) <= TOL


def test_long_texts_are_cut_with_one_warning_naming_them(setup):
    long = "a dog runs on the grass " * 14  # over the tiny encoder's 40 tokens and CLIP's 77
    with pytest.warns(CaptionTruncatedWarning) as caught:
        result = capeval.score([long, "fruit"], [["a dog"], [long]], metrics="polos", images=setup["images"][:2],
                               polos_model=str(setup["checkpoint"]))
    texts = " ".join(str(w.message) for w in caught)
    assert "predictions[0]" in texts and "references[1][0]" in texts
    assert all(np.isfinite(result["per_caption"]["polos"]))


def test_an_empty_prediction_scores_zero_with_empty_zero(setup):
    with pytest.warns(UserWarning):
        result = capeval.score(["", "fruit"], [["a dog"], ["a bowl of fruit"]], metrics="polos",
                               images=setup["images"][:2], polos_model=str(setup["checkpoint"]), empty="zero")
    assert result["per_caption"]["polos"][0] == 0.0 and 0 < result["per_caption"]["polos"][1] < 1


def test_the_command_line_gives_the_python_scores(setup, tmp_path, capsys):
    from capeval.cli import main

    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(CANDIDATES[:4])]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({str(i): r for i, r in enumerate(REFERENCES[:4])}))
    listing = tmp_path / "images.txt"
    listing.write_text("\n".join(setup["images"][:4]) + "\n")
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--images", str(listing),
                 "--metrics", "polos", "--polos-model", str(setup["checkpoint"]), "--polos-batch-size", "2",
                 "--json", "-"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = pref.reference_scores(setup["reference"], CANDIDATES[:4], REFERENCES[:4], setup["images"][:4],
                                     batch_size=2)
    assert np.max(np.abs(np.asarray(printed["per_caption"]["polos"]) - expected)) <= TOL


def test_the_evaluate_module_gives_the_reference_scores(setup):
    evaluate = pytest.importorskip("evaluate")
    from support import ROOT

    module = evaluate.load(str(ROOT / "metrics" / "polos"))
    english = slice(0, 8)  # the ninth caption is German (a NonEnglishWarning)
    result = module.compute(predictions=CANDIDATES[english], references=REFERENCES[english],
                            images=setup["images"][english], polos_model=str(setup["checkpoint"]))
    expected = pref.reference_scores(setup["reference"], CANDIDATES[english], REFERENCES[english],
                                     setup["images"][english], batch_size=32)
    assert sorted(result) == ["per_caption", "polos", "signature"]
    assert np.max(np.abs(np.asarray(result["per_caption"]["polos"]) - expected)) <= TOL


def test_the_default_checkpoint_missing_says_where_to_put_it(setup, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(FileNotFoundError, match=r"reprod\.zip.*models/polos|models/polos.*reprod\.zip"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", images=setup["images"][:1])


def test_the_default_checkpoint_is_found_in_the_cache_folder(setup, tmp_path, monkeypatch):
    import shutil

    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    shutil.copytree(setup["checkpoint"].parent, tmp_path / "cache" / "models" / "polos")
    result = capeval.score(CANDIDATES[:2], REFERENCES[:2], metrics="polos", images=setup["images"][:2])
    expected = pref.reference_scores(setup["reference"], CANDIDATES[:2], REFERENCES[:2], setup["images"][:2])
    assert np.max(np.abs(np.asarray(result["per_caption"]["polos"]) - expected)) <= TOL


class Payload:
    def __reduce__(self):
        return (print, ("ran code",))


def test_files_that_are_not_polos_checkpoints_are_refused(setup, tmp_path):
    import torch

    bad = tmp_path / "code" / "reprod.ckpt"
    bad.parent.mkdir()
    torch.save({"state_dict": {}, "hyper_parameters": Payload()}, bad)
    (bad.parent / "hparams.yaml").write_text("pool: cls\n")
    with pytest.raises(ValueError, match="never unpickles code"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", images=setup["images"][:1], polos_model=str(bad))
    clip_file = tmp_path / "clip" / "clip.ckpt"
    clip_file.parent.mkdir()
    cref.save_state_dict(setup["clip_model"], clip_file)
    (clip_file.parent / "hparams.yaml").write_text("pool: cls\n")
    with pytest.raises(ValueError, match="not a Polos checkpoint"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", images=setup["images"][:1], polos_model=str(clip_file))
    bare = pref.write_checkpoint(tmp_path / "bare", setup["clip_model"], setup["text"], yaml_beside=False,
                                 hparams_inside=False)
    with pytest.raises(ValueError, match="no hparams.yaml"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", images=setup["images"][:1], polos_model=str(bare))
    with pytest.raises(ValueError, match="polos needs one image per prediction"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", polos_model=str(setup["checkpoint"]))
    with pytest.raises(ValueError, match="polos_batch_size"):
        capeval.score(["a dog"], [["a dog"]], metrics="polos", images=setup["images"][:1], polos_batch_size=0,
                      polos_model=str(setup["checkpoint"]))


def test_the_released_widths_score_as_the_reference(tmp_path):
    """RoBERTa-base's widths (768, 12 heads), CLIP ViT-B/32's (512-d features) and the released head (2,304, 1,152):
    the 6,144-wide concatenation the reference hard-codes (768·4 + 512·6). Two layers each, to stay fast."""
    clip = cref.require_clip_stack()
    text = pref.text_encoder_folder(tmp_path / "simcse", hidden=768, heads=12, intermediate=3072)
    clip_model = cref.random_openai_clip(dict(cref.VIT_B_32, vision_layers=2, transformer_layers=2), seed=5)
    checkpoint = pref.write_checkpoint(tmp_path / "reprod", clip_model, text, hidden_sizes=(2304, 1152))
    pngs = [str(p) for p in write_pngs(tmp_path / "images", 4, size=(320, 240))]
    expected = pref.reference_scores(pref.load_reference(checkpoint, clip), CANDIDATES[:4], REFERENCES[:4], pngs)
    result = capeval.score(CANDIDATES[:4], REFERENCES[:4], metrics="polos", images=pngs,
                           polos_model=str(checkpoint))
    assert np.max(np.abs(np.asarray(result["per_caption"]["polos"]) - expected)) <= TOL
