"""LCEval's training pairs: the paper's pairing, and no image of a reported benchmark (checked by image id)."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from capeval.corpora.lceval_pairs import (REPORTED_BENCHMARKS, benchmark_images, build_training_set, paper_pairs,
                                                read_machine_captions)


def test_paper_pairs_follow_the_paper():
    humans = [f"human caption {k}" for k in range(5)]
    machines = ["machine a", "machine b", "machine c", "machine d"]
    pairs = paper_pairs("img.jpg", humans, machines, random.Random(0), source="s")
    assert [p.label for p in pairs] == [1, 1, 1, 0, 0, 0]
    for p in pairs[:3]:
        assert p.candidate not in p.references and len(p.references) == 4 and set(p.references) <= set(humans)
    for p in pairs[3:]:
        assert len(p.references) == 4 and set(p.references) <= set(humans)
    assert [p.candidate for p in pairs[3:]] == machines[:3]
    assert paper_pairs("x", ["only one"], machines, random.Random(0), source="s") == []


def test_read_machine_captions(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"id": "a.jpg", "candidates": [{"caption": "x"}, {"caption": "x"}, {"caption": "y"}]}) + "\n"
                 + json.dumps({"id": "b.jpg", "candidates": ["z"]}) + "\n")
    assert read_machine_captions([f]) == {"a.jpg": ["x", "y"], "b.jpg": ["z"]}
    f.write_text('{"image": "a.jpg"}\n')
    with pytest.raises(ValueError, match="m.jsonl:1"):
        read_machine_captions([f])


@pytest.fixture(scope="module")
def training_set(shared_data, tmp_path_factory):
    from capeval.corpora.captions import flickr8k_captions

    train = flickr8k_captions("train", shared_data)
    machine = tmp_path_factory.mktemp("m") / "machine.jsonl"
    with machine.open("w") as fh:
        for k, image in enumerate(sorted(train)[:300]):
            fh.write(json.dumps({"id": image, "candidates": [{"caption": f"a dog number {k}"},
                                                             {"caption": "a man on a bike"}]}) + "\n")
    return build_training_set(shared_data, machine_captions=[machine], seed=0), shared_data


def test_no_training_image_is_an_image_of_a_reported_benchmark(training_set):
    ts, root = training_set
    used = {Path(p.image_id).name for p in ts.train + ts.dev}
    left_out = benchmark_images(root)
    assert {"composite", "flickr8k-expert", "pascal50s", "thumb"} <= set(left_out)
    assert set(left_out) <= set(REPORTED_BENCHMARKS)
    for name, images in left_out.items():
        assert not used & images, f"training uses {len(used & images)} {name} images"
    # the whole Flickr8k test split (CrowdFlower's and Expert's images, whether or not their files are here)
    test_images = set((root / "flickr8k" / "Flickr_8k.testImages.txt").read_text().split())
    assert not used & test_images
    # COMPOSITE's COCO subset overlaps the Karpathy test split: those images really were removed
    assert ts.report["sources"]["coco-karpathy"]["kept"] < ts.report["sources"]["coco-karpathy"]["images"] - 2000


def test_dev_and_train_share_no_image_and_both_classes_are_there(training_set):
    ts, _ = training_set
    assert not {p.image_id for p in ts.train} & {p.image_id for p in ts.dev}
    assert 0.05 < len(ts.dev) / (len(ts.train) + len(ts.dev)) < 0.15
    assert {p.label for p in ts.train} == {0, 1} and {p.source for p in ts.train} == {"coco-karpathy", "flickr8k-train"}
    assert ts.report["train_pairs"] == len(ts.train)


def test_training_set_refuses_bad_sources(shared_data, tmp_path):
    with pytest.raises(ValueError, match="unknown source"):
        build_training_set(shared_data, sources=["flickr30k"])
    with pytest.raises(ValueError, match="needs machine_captions"):
        build_training_set(shared_data, sources=["flickr8k-train"])
    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"id": "COCO_val2014_000000391895.jpg", "candidates": ["x"]}) + "\n")
    with pytest.raises(ValueError, match="not Flickr8k train images"):
        build_training_set(shared_data, sources=["flickr8k-train"], machine_captions=[f])


def test_mismatched_negatives_build_no_machine_pair_and_need_no_machine_captions(shared_data):
    ts = build_training_set(shared_data, seed=0, rc_per_image=3, negatives="mismatched")
    pairs = ts.train + ts.dev
    assert {p.system for p in pairs} == {"human", "mismatched"}
    by_image: dict[str, list] = {}
    for p in pairs:
        by_image.setdefault(p.image_id, []).append(p)
    # 3 human candidates and 3 mismatched ones per image: balanced classes, every Flickr8k train image kept
    assert all(sorted(q.label for q in v) == [0, 0, 0, 1, 1, 1] for v in by_image.values())
    assert ts.report["negatives"] == "mismatched"
    assert ts.report["sources"]["flickr8k-train"]["kept"] == 6000
    # a mismatched candidate is not one of its image's own captions
    own = {p.image_id: set(p.references) | ({p.candidate} if p.label else set()) for p in pairs if p.label}
    assert all(p.candidate not in own[p.image_id] for p in pairs if not p.label)
    # the same images are left out as with the paper's objective
    used = {Path(p.image_id).name for p in pairs}
    for name, images in benchmark_images(shared_data).items():
        assert not used & images, name


def test_mismatched_negatives_refuse_no_negatives(shared_data):
    with pytest.raises(ValueError, match="rc_per_image >= 1"):
        build_training_set(shared_data, negatives="mismatched", rc_per_image=0)
    with pytest.raises(ValueError, match="negatives must be one of"):
        build_training_set(shared_data, negatives="random", rc_per_image=3)
    with pytest.raises(ValueError, match="drop machine_captions"):
        build_training_set(shared_data, negatives="mismatched", rc_per_image=3, machine_captions=["m.jsonl"])
