"""``capeval score --json``: input keyed by image id (COCO results list, pycocoevalcap dicts) gives ``image_ids``, one
per per-caption entry in the same order, as ``capeval.score`` does for keyed input; plain lists give none."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import capeval
from capeval.cli import main

FAST = "bleu,rouge_l,cider_d"
REFS = {"1": ["a dog runs on grass", "a brown dog"], "2": ["a cat sits on a mat"],
        "3": ["a bird flies", "a bird in the sky"], "4": ["a fish swims"]}


def _write(path: Path, content) -> Path:
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


def _score_json(capsys, tmp_path: Path, preds: Path, refs: Path) -> dict:
    out = tmp_path / "result.json"
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", FAST,
                 "--json", str(out)]) == 0
    capsys.readouterr()
    return json.loads(out.read_text(encoding="utf-8"))


def test_coco_results_list_gives_image_ids_aligned_with_per_caption(tmp_path, capsys):
    preds = _write(tmp_path / "p.json", [{"image_id": 3, "caption": "a bird flies"},
                                         {"image_id": 1, "caption": "a dog"},
                                         {"image_id": 4, "caption": "a cat on a mat"}])
    result = _score_json(capsys, tmp_path, preds, _write(tmp_path / "r.json", REFS))
    assert result["image_ids"] == [3, 1, 4]
    assert all(len(values) == 3 for values in result["per_caption"].values())
    with warnings.catch_warnings():  # image 2 has no prediction; three captions are a small corpus for CIDEr-D
        warnings.simplefilter("ignore")
        api = capeval.score([{"image_id": 3, "caption": "a bird flies"}, {"image_id": 1, "caption": "a dog"},
                             {"image_id": 4, "caption": "a cat on a mat"}], REFS, metrics=FAST)
    assert result["image_ids"] == api["image_ids"]
    assert result["per_caption"] == api["per_caption"] and result["cider_d"] == api["cider_d"]
    # the bird caption (image 3) is the best ROUGE-L: the ids say which entry is which
    best = max(range(3), key=lambda i: result["per_caption"]["rouge_l"][i])
    assert result["image_ids"][best] == 3


def test_pycocoevalcap_dicts_give_their_ids(tmp_path, capsys):
    preds = _write(tmp_path / "p.json", {"2": ["a cat sits on a mat"], "1": ["a dog runs"]})
    result = _score_json(capsys, tmp_path, preds, _write(tmp_path / "r.json", REFS))
    assert result["image_ids"] == ["2", "1"]
    assert result["per_caption"]["rouge_l"][0] == 1.0  # "a cat sits on a mat" is image 2's reference


def test_plain_lists_give_no_image_ids(tmp_path, capsys):
    preds = _write(tmp_path / "p.json", ["a dog runs", "a cat"])
    refs = _write(tmp_path / "r.json", [["a dog runs on grass"], ["a cat sits on a mat"]])
    assert "image_ids" not in _score_json(capsys, tmp_path, preds, refs)
