"""Inputs as neighbouring libraries hand them over: pycocoevalcap's dicts and COCO's results list in
``capeval.score``, the ``evaluate`` modules and the CLI, matched by image id; torch tensors as images (torchmetrics'
``CLIPScore`` layout) scoring exactly as the same pixels from a file; ``add_batch(images=...)``."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from support import ROOT

import capeval
from capeval.cli import main
from capeval.validation import UnscoredReferencesWarning

FAST = ["bleu", "rouge_l", "cider_d"]
IDS = [391895, 522418, 184613]
PREDS = ["a man riding a bike down a dirt road", "a woman cutting a large cake", "a boy holding an umbrella"]
REFS = [["a man rides a bike on a dirt road", "a person on a bicycle in the mountains"],
        ["a woman cuts a large white cake", "a lady slicing a cake on a table"],
        ["a child with an umbrella near cows", "a young boy holding an umbrella"]]


def _plain():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return capeval.score(PREDS, REFS, metrics=FAST)


def _same(got: dict, want: dict) -> None:
    for key in ("bleu_4", "rouge_l", "cider_d"):
        assert got[key] == want[key], key
        assert got["per_caption"][key] == want["per_caption"][key], key


@pytest.mark.parametrize("key", [int, str], ids=["int-ids", "str-ids"])
def test_pycocoevalcap_dicts_are_matched_by_id_not_scored_as_keys(key):
    res = {key(i): [p] for i, p in zip(IDS, PREDS)}
    gts = {key(i): r for i, r in zip(reversed(IDS), reversed(REFS))}  # another order: matched by id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = capeval.score(res, gts, metrics=FAST)
    _same(got, _plain())
    assert got["image_ids"] == [key(i) for i in IDS]
    assert got["bleu_4"] > 0.1  # the bug scored the key "391895" against the references: 3e-5


def test_coco_results_list_with_the_annotation_dict_or_file(tmp_path):
    results = [{"image_id": i, "caption": p} for i, p in zip(IDS, PREDS)]
    annotations = {"annotations": [{"image_id": i, "id": k, "caption": c}
                                   for k, (i, refs) in enumerate(zip(IDS, REFS)) for c in refs], "images": []}
    (tmp_path / "captions_val2014.json").write_text(json.dumps(annotations))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from_dict = capeval.score(results, annotations, metrics=FAST)
        from_file = capeval.score(results, tmp_path / "captions_val2014.json", metrics=FAST)
        from_anns = capeval.score({i: [{"image_id": i, "caption": p}] for i, p in zip(IDS, PREDS)},
                                  {i: [{"image_id": i, "caption": c} for c in r] for i, r in zip(IDS, REFS)},
                                  metrics=FAST)  # COCO.imgToAnns entries, as pycocoevalcap's examples build them
    for got in (from_dict, from_file, from_anns):
        _same(got, _plain())


def test_reference_images_without_a_prediction_are_named_in_a_warning():
    gts = {i: r for i, r in zip(IDS, REFS)} | {999: ["an extra image"]}
    with pytest.warns(UnscoredReferencesWarning, match=r"1 reference image\(s\) have no prediction.*999"):
        capeval.score({i: [p] for i, p in zip(IDS, PREDS)}, gts, metrics=["bleu"])


@pytest.mark.parametrize("predictions, references, message", [
    ({1: ["a dog", "a cat"]}, {1: ["a dog"]}, r"predictions\[1\] holds 2 captions; pycocoevalcap's res has exactly one"),
    (["a dog"], {1: ["a dog"]}, "references are keyed by image id .* but predictions are a plain list"),
    ({1: ["a dog"]}, [["a dog"]], "predictions are keyed by image id .* but references are a plain list"),
    ({7: ["a dog"]}, {1: ["a dog"]}, r"1 prediction image id\(s\) have no references, e.g. 7"),
    ([{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}], {1: ["a"]},
     r"predictions\[0\] and predictions\[1\] are both captions of image 1"),
    ({1: [7]}, {1: ["a dog"]}, r"predictions\[0\] is a int"),
])
def test_keyed_inputs_refused_in_one_line_naming_the_id(predictions, references, message):
    with pytest.raises((ValueError, TypeError), match=message) as err:
        capeval.score(predictions, references, metrics=["bleu"])
    assert "\n" not in str(err.value)


def test_the_cli_reads_pycocoevalcap_dict_files(tmp_path, capsys):
    (tmp_path / "res.json").write_text(json.dumps({str(i): [p] for i, p in zip(IDS, PREDS)}))
    (tmp_path / "gts.json").write_text(json.dumps({str(i): r for i, r in zip(IDS, REFS)}))
    assert main(["score", "--predictions", str(tmp_path / "res.json"), "--references", str(tmp_path / "gts.json"),
                 "--metrics", ",".join(FAST), "--json", str(tmp_path / "out.json")]) == 0
    got = json.loads((tmp_path / "out.json").read_text())
    _same(got, _plain())


evaluate = pytest.importorskip("evaluate")


def test_the_coco_caption_module_takes_the_dicts(monkeypatch):
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    module = evaluate.load(str(ROOT / "metrics" / "coco_caption"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = module.compute(predictions={str(i): [p] for i, p in zip(IDS, PREDS)},
                             references={str(i): r for i, r in zip(IDS, REFS)}, metrics=FAST)
    _same(got, _plain())
    assert got["image_ids"] == [str(i) for i in IDS]
    with pytest.raises(ValueError, match="the coco_caption module reads no images: leave images= out"):
        module.add_batch(predictions=PREDS, references=REFS, images=["a.png"] * 3)


# -- tensors as images -------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Three noise PNGs and their pixels (H×W×3 uint8)."""
    from PIL import Image

    folder = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    pixels = [rng.integers(0, 256, size=(40 + 8 * k, 56, 3), dtype=np.uint8) for k in range(3)]
    paths = []
    for k, p in enumerate(pixels):
        Image.fromarray(p).save(folder / f"{k}.png")
        paths.append(str(folder / f"{k}.png"))
    return paths, pixels


def test_tensors_decode_to_the_files_pixels(photos):
    from capeval.models.images import read_item

    paths, pixels = photos
    for path, p in zip(paths, pixels):
        want = np.asarray(read_item(path, 0).decode())
        chw = torch.from_numpy(p).permute(2, 0, 1).contiguous()
        for tensor in (chw, torch.from_numpy(p), chw.float() / 255, (chw.float() / 255).half(),
                       (chw.float() / 255).to(torch.bfloat16)):
            got = np.asarray(read_item(tensor, 0).decode())
            if tensor.dtype == torch.bfloat16:  # 8 bits of mantissa: not every x/255 survives
                assert np.abs(got.astype(int) - want).max() <= 1
            else:
                assert np.array_equal(got, want), tensor.dtype
    with pytest.raises(ValueError, match=r"images\[0\] is a float array with values outside \[0, 1\]"):
        read_item(torch.full((3, 4, 4), 2.0), 0).decode()


def test_a_tensor_batch_scores_as_the_files(photos, tiny_clip):
    """torchmetrics' CLIPScore layout: one N×C×H×W tensor (same-size images) or a list of C×H×W tensors."""
    paths, pixels = photos
    preds, refs = PREDS, REFS
    want = capeval.score(preds, refs, metrics=["clip_s", "ref_clip_s"], images=paths,
                         clip_model=tiny_clip["clip_model"])
    as_list = [torch.from_numpy(p).permute(2, 0, 1) for p in pixels]
    got = capeval.score(preds, refs, metrics=["clip_s", "ref_clip_s"], images=as_list,
                        clip_model=tiny_clip["clip_model"])
    assert got["per_caption"]["clip_s"] == want["per_caption"]["clip_s"]
    assert got["per_caption"]["ref_clip_s"] == want["per_caption"]["ref_clip_s"]
    batch = torch.stack([torch.from_numpy(pixels[0]).permute(2, 0, 1)] * 3).float() / 255
    one = capeval.score(preds, refs, metrics=["clip_s"], images=[paths[0]] * 3, clip_model=tiny_clip["clip_model"])
    got = capeval.score(preds, refs, metrics=["clip_s"], images=batch, clip_model=tiny_clip["clip_model"])
    assert got["per_caption"]["clip_s"] == one["per_caption"]["clip_s"]


def test_the_clip_module_takes_images_in_add_batch(photos, tiny_clip):
    paths, _ = photos
    module = evaluate.load(str(ROOT / "metrics" / "clip_score"))
    want = module.compute(predictions=PREDS, references=REFS, images=paths, clip_model=tiny_clip["clip_model"])
    module.add_batch(predictions=PREDS[:2], references=REFS[:2], images=paths[:2])
    module.add_batch(predictions=PREDS[2:], references=REFS[2:], images=paths[2:])
    got = module.compute(clip_model=tiny_clip["clip_model"])
    assert got["per_caption"]["clip_s"] == want["per_caption"]["clip_s"]
    with pytest.raises(ValueError, match="add_batch\\(\\) got 2 predictions but 1 images"):
        module.add_batch(predictions=PREDS[:2], references=REFS[:2], images=paths[:1])
