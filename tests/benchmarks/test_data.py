"""Benchmark loaders on the real files (skipped when the data directory is absent).

Counts are checked against each folder's PROVENANCE.md and shared/spec/REFERENCE.md, and the
Flickr8k-Expert CLIPScore protocol against the independently preprocessed EXPERT json.
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from capeval.judgments import load_benchmark
from capeval.judgments.thumb import verbatim_key
from support import require_data

pytestmark = pytest.mark.data


def test_flickr8k_expert_counts():
    root = require_data("flickr8k", "ExpertAnnotations.txt").parents[1]
    clip = load_benchmark("flickr8k-expert", root)
    assert clip.counts() == {"items": 5664, "images": 1000, "images_available": 1000, "judgments": 16992}
    assert all(len(r.references) == 5 for r in clip.records)
    cui = load_benchmark("flickr8k-expert", root, protocol="cui")
    assert cui.counts()["items"] == 5822 and cui.counts()["judgments"] == 17466
    self_pairs = [r for r in cui.records if r.extra["candidate_in_references"]]
    assert len(self_pairs) == 158
    assert all(len(r.references) == 4 and r.candidate not in r.references for r in self_pairs)
    hist = Counter(s for r in cui.records for s in r.human_scores)
    assert hist == {1.0: 9797, 2.0: 4997, 3.0: 1701, 4.0: 971}  # PROVENANCE.md histogram


def test_flickr8k_expert_matches_the_expert_processed_json():
    path = require_data("flickr8k", "expert-processed", "flickr8k.json")
    bench = load_benchmark("flickr8k-expert", path.parents[2])
    processed = json.loads(path.read_text())
    ours_by_image: dict[str, Counter] = {}
    for r in bench.records:
        key = r.image_id.removesuffix(".jpg")
        ours_by_image.setdefault(key, Counter()).update((" ".join(r.candidate.split()), s) for s in r.human_scores)
        refs = [" ".join(x.split()) for x in processed[key]["ground_truth"]]
        assert [" ".join(x.split()) for x in r.references] == refs
    theirs = {k: Counter((" ".join(j["caption"].split()), j["rating"]) for j in v["human_judgement"])
              for k, v in processed.items()}
    assert ours_by_image == theirs
    assert sum(sum(c.values()) for c in theirs.values()) == 16992


def test_flickr8k_crowdflower_real_file_counts():
    root = require_data("flickr8k", "CrowdFlowerAnnotations.txt").parents[1]
    bench = load_benchmark("flickr8k-crowdflower", root)
    counts = bench.counts()
    assert counts["items"] == 47830 and counts["images"] == 1000
    assert sum(r.extra["n_yes"] + r.extra["n_no"] for r in bench.records) == 144860
    assert all(r.candidate not in r.references for r in bench.records)


def test_composite_counts_and_references():
    root = require_data("composite", "composite_8k.jsonl").parents[1]
    bench = load_benchmark("composite", root)
    assert bench.counts() == {"items": 11985, "images": 3995, "images_available": 1115, "judgments": 11985}
    per_subset = Counter(r.category for r in bench.records)
    assert per_subset == {"8k": 2991, "30k": 2973, "coco": 6021}
    hist = Counter((r.category, int(r.human_scores[0])) for r in bench.records)
    assert [hist["8k", s] for s in range(1, 6)] == [838, 357, 309, 350, 1137]  # PROVENANCE.md
    assert [hist["coco", s] for s in range(1, 6)] == [1590, 726, 775, 834, 2096]
    n_refs = Counter((r.category, len(r.references)) for r in bench.records)
    assert {k for k in n_refs if k[0] != "coco"} == {("8k", 4), ("30k", 4)}
    # COCO: 5 captions per image (2 images have 6 and keep 5); in 2 images the human caption occurs twice
    # among the 5, both copies are matched_ref_ids of position 0 and leave, so those keep 3.
    coco = {n: v // 3 for (c, n), v in n_refs.items() if c == "coco"}
    assert coco == {3: 2, 4: 2003, 5: 2}
    humans = [r for r in bench.records if r.extra["candidate_position"] == 0]
    assert len(humans) == 3995 and {r.system for r in humans} == {"human"}
    full = load_benchmark("composite", root, subset="8k", drop_matched_reference=False)
    assert all(len(r.references) == 5 for r in full.records)


def test_pascal50s_counts_labels_and_references():
    root = require_data("pascal50s", "cider-matlab", "pair_pascal.mat").parents[2]
    bench = load_benchmark("pascal50s", root)
    assert bench.counts() == {"items": 4000, "images": 1000, "images_available": 1000, "ties": 0}
    by_cat = Counter((r.category, r.preferred) for r in bench.records)
    # PROVENANCE.md label balance: HC 512/488, HI 499/501, HM 511/489, MM 503/497
    assert [by_cat[c, 0] for c in ("HC", "HI", "HM", "MM")] == [512, 499, 511, 503]
    assert all(len(r.references) == 5 for r in bench.records)
    full = load_benchmark("pascal50s", root, references="all")
    assert all(len(r.references) == 50 for r in full.records)
    assert all(set(e.references) <= set(f.references) for e, f in zip(bench.records, full.records))
    # system codes: HC pairs are human-human (6, 6); HI human vs random human (6, 7) in some order
    assert all(r.extra["systems"] == (6, 6) for r in full.records if r.category == "HC")
    assert all(sorted(r.extra["systems"]) == [6, 7] for r in full.records if r.category == "HI")
    k5 = load_benchmark("pascal50s", root, references=5, seed=0)
    assert [r.references for r in k5.records[:50]] == [r.references for r in load_benchmark(
        "pascal50s", root, references=5, seed=0).records[:50]]
    assert [r.references for r in k5.records[:50]] != [r.references for r in bench.records[:50]]


def test_thumb_counts_verbatim_captions_and_system_means():
    root = require_data("thumb", "mscoco_THumB-1.0.jsonl").parents[1]
    bench = load_benchmark("thumb", root)
    assert bench.counts() == {"items": 2500, "images": 500, "images_available": 9, "judgments": 2500}
    flagged = [r for r in bench.records if r.extra["candidate_in_references"]]
    humans_flagged = [r for r in flagged if r.system == "Human"]
    assert len(humans_flagged) == 39
    # the same 39 are byte-equal to a reference: the normalisation only defines, never inflates, the count
    assert sum(r.candidate in r.references for r in bench.records if r.system == "Human") == 39
    assert all(verbatim_key(r.candidate) in {verbatim_key(x) for x in r.references} for r in flagged)
    means = {s: np.mean([r.human_scores[0] for r in bench.records if r.system == s]) for s in
             ("Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human")}
    assert [round(m, 3) for m in means.values()] == [3.884, 4.058, 4.208, 4.248, 4.564]  # THumB 1.0's system means
    without = load_benchmark("thumb", root, include_human=False, target="P")
    assert len(without) == 2000 and without.settings_string() == "bench:thumb|human:without|target:P"
    assert all(r.human_scores[0] == r.extra["P"] for r in without.records)


def test_coco_karpathy_counts():
    root = require_data("coco_karpathy_test", "karpathy_cand.json").parents[1]
    bench = load_benchmark("coco-karpathy-test", root)
    assert bench.counts()["items"] == 20000 and bench.counts()["images"] == 5000
    per_image = Counter(len(r.references) for r in bench.records if r.system == "human")
    assert per_image == {4: 4990, 5: 10}
    assert Counter(r.system for r in bench.records) == {"human": 5000, "model_1": 5000, "model_2": 5000, "model_3": 5000}
    with pytest.raises(ValueError, match="systems must be"):
        load_benchmark("coco-karpathy-test", root, systems=["gpt"])


def test_abstract50s_real_files():
    root = require_data("abstract50s", "consensus_abstract.mat").parents[1]
    bench = load_benchmark("abstract50s", root)
    assert len(bench) == 400
    assert Counter(r.category for r in bench.records) == {"HC": 200, "HI": 200}
    assert all(sum(r.votes) == 48 and len(r.references) == 48 for r in bench.records)
