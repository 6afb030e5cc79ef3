"""Hub datasets: build, load back with datasets.load_dataset, compare with the loaders; push errors."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from capeval.judgments import load_benchmark
from capeval.hub.build import build_dataset
from capeval.hub.cards import split_front_matter
from capeval.hub.push import push_dataset
from support import FIXTURES, ROOT, require_data

DATA_FIXTURES = FIXTURES / "data"
REPO = ROOT


def load_back(folder: Path, config: str, tmp_path: Path):
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "hf-cache"))


def card_meta(folder: Path) -> tuple[dict, str]:
    return split_front_matter((folder / "README.md").read_text(encoding="utf-8"), "README.md")


# -- fixture build (runs without the shared data) ---------------------------------------------------
def test_flickr8k_fixture_build_round_trips(tmp_path):
    from datasets import Image, List, Value

    out = tmp_path / "flickr8k"
    report = build_dataset("flickr8k", DATA_FIXTURES, out)
    assert set(report.splits) == {"expert/test", "crowdflower/test"}
    assert report.splits["expert/test"]["images"] == 6  # 6 of the 7 pairs have a query image on disk

    expert = load_back(out, "expert", tmp_path)["test"]
    assert isinstance(expert.features["image"], Image)
    assert expert.features["expert_scores"] == List(Value("int8"))
    records = load_benchmark("flickr8k-expert", DATA_FIXTURES, protocol="cui").records
    assert expert.num_rows == len(records) == 7
    for row, rec in zip(expert, records):
        assert (row["image_id"], row["caption"], tuple(row["expert_scores"])) == (
            rec.image_id, rec.candidate, tuple(int(s) for s in rec.human_scores))
        # protocol-neutral references: all 5 captions of the query image + a flag
        kept = tuple(r for r in row["references"] if not (row["candidate_in_references"] and r == row["caption"]))
        assert kept == rec.references
        if rec.image_path is None:
            assert row["image"] is None
        else:
            assert row["image"].size == (8, 8)
    crowd = load_back(out, "crowdflower", tmp_path)["test"]
    cf = load_benchmark("flickr8k-crowdflower", DATA_FIXTURES).records
    assert crowd["fraction_yes"] == [r.human_scores[0] for r in cf]
    assert crowd["n_yes"] == [r.extra["n_yes"] for r in cf]

    meta, body = card_meta(out)
    assert [c["config_name"] for c in meta["configs"]] == ["expert", "crowdflower"]
    assert meta["configs"][0]["default"] is True
    assert meta["configs"][0]["data_files"] == [{"split": "test", "path": "data/expert/test-*.parquet"}]
    assert meta["license"] == "other" and meta["task_categories"] == ["image-to-text"]
    assert meta["size_categories"] == ["n<1K"]
    info = {c["config_name"]: c for c in meta["dataset_info"]}
    assert info["expert"]["splits"][0]["num_examples"] == 7
    assert "224 × 224" in body and "| expert | test | 7 | 6 |" in body
    assert "$" not in body.replace("$$", "")  # every placeholder was filled


def test_text_only_and_partial_builds(tmp_path):
    out = tmp_path / "text"
    build_dataset("flickr8k", DATA_FIXTURES, out, images=False, limit=3)
    ds = load_back(out, "expert", tmp_path)["test"]
    assert "image" not in ds.features and ds.num_rows == 3
    _, body = card_meta(out)
    assert "text-only build" in body and "first 3 rows" in body


def test_build_refuses_non_empty_output_and_bad_arguments(tmp_path):
    (tmp_path / "x.txt").write_text("keep me")
    with pytest.raises(ValueError, match="is not empty"):
        build_dataset("flickr8k", DATA_FIXTURES, tmp_path)
    assert (tmp_path / "x.txt").exists()
    with pytest.raises(ValueError, match="unknown dataset 'coco'"):
        build_dataset("coco", DATA_FIXTURES, tmp_path / "a")
    with pytest.raises(ValueError, match="limit must be"):
        build_dataset("flickr8k", DATA_FIXTURES, tmp_path / "b", limit=0)
    with pytest.raises(FileNotFoundError, match="card templates not found"):
        build_dataset("flickr8k", DATA_FIXTURES, tmp_path / "c", cards_dir=tmp_path / "nowhere")


# -- shared-data builds -------------------------------------------------------------------------------
@pytest.mark.data
def test_flickr8k_full_build_with_images_matches_loader(tmp_path):
    root = require_data("flickr8k", "ExpertAnnotations.txt").parents[1]
    out = tmp_path / "flickr8k"
    report = build_dataset("flickr8k", root, out)  # ~3 s, ~15 MB: repeated images are dictionary-encoded
    assert report.splits["expert/test"]["rows"] == report.splits["expert/test"]["images"] == 5822
    assert report.splits["expert/test"]["bytes"] < 40e6
    ds = load_back(out, "expert", tmp_path)["test"]
    records = load_benchmark("flickr8k-expert", root, protocol="cui").records
    assert ds["caption"] == [r.candidate for r in records]
    assert ds["expert_scores"] == [[int(s) for s in r.human_scores] for r in records]
    assert sum(ds["candidate_in_references"]) == 158
    assert ds[0]["image"].size == (224, 224)


@pytest.mark.data
def test_composite_text_build_matches_loader(tmp_path):
    root = require_data("composite", "composite_8k.jsonl").parents[1]
    out = tmp_path / "composite"
    build_dataset("composite", root, out, images=False)
    ds = load_back(out, "default", tmp_path)
    assert {k: v.num_rows for k, v in ds.items()} == {"flickr8k": 2991, "flickr30k": 2973, "mscoco": 6021}
    for subset, split in (("8k", "flickr8k"), ("30k", "flickr30k"), ("coco", "mscoco")):
        records = load_benchmark("composite", root, subset=subset).records
        table = ds[split]
        assert table["caption"] == [r.candidate for r in records]
        assert table["score"] == [int(r.human_scores[0]) for r in records]
        assert table["references"] == [list(r.references) for r in records]
        names = table.features["source"].names
        assert [names[i] for i in table["source"]] == [r.system for r in records]
    assert sum(len(x) for x in ds["flickr8k"]["removed_references"]) == 2991  # one per image, 3 rows each


@pytest.mark.data
def test_pascal50s_text_build_matches_loader(tmp_path):
    root = require_data("pascal50s", "cider-matlab", "pair_pascal.mat").parents[2]
    out = tmp_path / "pascal"
    build_dataset("pascal50s", root, out, images=False)
    ds = load_back(out, "default", tmp_path)["test"]
    records = load_benchmark("pascal50s", root).records
    assert ds.num_rows == 4000
    assert ds.features["category"].names == ["HC", "HI", "HM", "MM"]
    assert ds.features["label"].names == ["a", "b"]
    assert [(a, b) for a, b in zip(ds["caption_a"], ds["caption_b"])] == [r.candidates for r in records]
    assert ds["label"] == [r.preferred for r in records]
    assert [ds.features["category"].names[c] for c in ds["category"]] == [r.category for r in records]
    assert ds["expert_references"] == [list(r.references) for r in records]
    assert {len(x) for x in ds["references"]} == {50}


@pytest.mark.data
def test_thumb_build_with_images_matches_loader(tmp_path):
    root = require_data("thumb", "mscoco_THumB-1.0.jsonl").parents[1]
    out = tmp_path / "thumb"
    report = build_dataset("thumb", root, out)  # full build: 2,500 rows, 45 with one of the 9 images
    assert report.splits["default/test"]["images"] == 45
    ds = load_back(out, "default", tmp_path)["test"]
    records = load_benchmark("thumb", root).records
    assert ds.num_rows == 2500
    assert ds["caption"] == [r.candidate for r in records]
    assert ds["total"] == [r.extra["total"] for r in records]
    assert ds["P"] == [r.extra["P"] for r in records]
    assert sum(ds["candidate_in_references"]) == sum(r.extra["candidate_in_references"] for r in records)
    names = ds.features["system"].names
    assert [names[i] for i in ds["system"]] == [r.system for r in records]
    with_image = [i for i, r in enumerate(records) if r.image_path is not None]
    first = ds[with_image[0]]["image"]
    assert first.size[0] > 100 and first.mode == "RGB"
    meta, body = card_meta(out)
    assert meta["size_categories"] == ["1K<n<10K"] and "39 Human captions" in body


@pytest.mark.data
@pytest.mark.parametrize("name, needs", [("flickr8k", ("flickr8k", "images-224")),
                                         ("pascal50s", ("pascal50s", "images")),
                                         ("composite", ("coco_val2014_images",))])
def test_image_builds_on_a_subset(tmp_path, name, needs):
    root = require_data(*needs).parents[len(needs) - 1]
    out = tmp_path / name
    report = build_dataset(name, root, out, limit=20)
    config = "expert" if name == "flickr8k" else "default"
    ds = load_back(out, config, tmp_path)
    first_split = next(iter(ds.values()))
    assert first_split.num_rows == 20
    image = first_split[0]["image"]
    assert image is not None and image.size[0] >= 100
    assert all(c["rows"] <= 20 for c in report.splits.values())


# -- push ---------------------------------------------------------------------------------------------
@pytest.fixture()
def built(tmp_path) -> Path:
    out = tmp_path / "built"
    build_dataset("flickr8k", DATA_FIXTURES, out, images=False)
    return out


def test_push_offline_mode_is_a_clear_error(built, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE is set"):
        push_dataset(built, "someone/flickr8k-judgments", token="hf_dummy")


def test_push_without_token_is_a_clear_error(built, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    with pytest.raises(RuntimeError, match="no Hugging Face token"):
        push_dataset(built, "someone/flickr8k-judgments")


def test_push_unreachable_hub_is_a_clear_error(built, monkeypatch):
    # A closed local port: no traffic leaves the machine.
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: an earlier test may have imported it offline.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(RuntimeError, match="cannot reach http://127.0.0.1:9"):
        push_dataset(built, "someone/flickr8k-judgments", token="hf_dummy", endpoint="http://127.0.0.1:9")


def test_push_checks_the_folder_and_repo_id(built, tmp_path):
    with pytest.raises(ValueError, match="repo_id must look like"):
        push_dataset(built, "no-namespace", token="hf_dummy")
    with pytest.raises(ValueError, match="has no README.md"):
        push_dataset(tmp_path, "a/b", token="hf_dummy")


def test_cli_build_and_push_messages(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "modules"), "HF_HUB_OFFLINE": "1"}
    out = tmp_path / "cli"
    run = subprocess.run([sys.executable, "-m", "capeval", "hub", "build-dataset", "flickr8k", "--source",
                          str(DATA_FIXTURES), "--out", str(out), "--no-images"], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "expert/test: 7 rows" in run.stdout
    again = subprocess.run([sys.executable, "-m", "capeval", "hub", "build-dataset", "flickr8k", "--source",
                            str(DATA_FIXTURES), "--out", str(out)], capture_output=True, text=True, env=env)
    assert again.returncode == 1 and "is not empty" in again.stderr
    push = subprocess.run([sys.executable, "-m", "capeval", "hub", "push", str(out), "--repo-id", "a/b",
                           "--token", "hf_dummy"], capture_output=True, text=True, env=env)
    assert push.returncode == 1 and "HF_HUB_OFFLINE is set" in push.stderr
    meta = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert meta["pretty_name"].startswith("Flickr8k")


def test_dataset_image_cells_read_regular_files_only(tmp_path):
    """Building a Hub dataset embeds image bytes: a data folder whose image is a link to a device or a FIFO is
    refused in one line naming the file (never read until memory runs out, never blocking)."""
    import os

    from capeval.hub.tables import image_cells
    from capeval.io import InputFormatError

    photo = tmp_path / "photo.jpg"
    photo.write_bytes(b"\xff\xd8 bytes as stored")
    cells = image_cells([photo, None, photo], "images")
    assert cells[0] == {"bytes": b"\xff\xd8 bytes as stored", "path": "photo.jpg"} and cells[1] is None
    linked = tmp_path / "zero.jpg"
    linked.symlink_to("/dev/zero")
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)
    for bad, words in ((linked, "character device"), (fifo, "FIFO")):
        with pytest.raises(InputFormatError, match=words) as err:
            image_cells([bad], "images")
        assert str(bad) in str(err.value)
