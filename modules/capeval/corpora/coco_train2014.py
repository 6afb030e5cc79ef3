"""COCO train2014's human captions as a text-only training corpus for reference-context critics.

Cui et al. trained their critic on COCO (113k images). Offline, capeval has COCO's *captions* (414,113 of them, for
82,783 train2014 images, inside pycocoevalcap's SPICE jar: :mod:`capeval.coco.captions`) but not its images, so this
corpus trains critics whose context is the **reference only** (``context="reference"``), with the pathological
negatives that need no image or captioner: RC, WP and RW (:mod:`capeval.critic.data`). RC's neighbourhoods, which
the paper takes from image features, come here from the captions: an image's *caption vector* is the mean over its
captions of their mean word vectors (GloVe 6B 50-d offline), and :func:`caption_neighbour_table` returns them as
the :class:`~capeval.models.feature_table.FeatureTable` that :func:`capeval.critic.train.train_critic` reads (a
reference-context critic never reads those rows as an image).

**Left out** (:func:`coco_training_corpus`): every COCO image that is an image of a reported benchmark, compared by
file name *and* by Flickr photo id (COCO's ``flickr_url``; a Flickr8k name is ``<photo id>_<secret>.jpg``, a
Flickr30k one ``<photo id>.jpg``): 5 Flickr8k images and 3 COMPOSITE-Flickr30k images are also COCO train2014
images. PASCAL-50S's images (PASCAL VOC names) cannot be matched to COCO's Flickr ids, which the report says.
The dev split (epoch selection) is a seeded ``dev_fraction`` of the remaining images.
"""
from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CORPORA", "CaptionCorpus", "caption_neighbour_table", "coco_training_corpus", "flickr_photo_id"]

CORPORA = ("flickr8k", "coco-train2014")
_FLICKR_URL_ID = re.compile(r"/(\d+)_[0-9a-f]+(?:_[a-z])?\.jpg$")
_NAME_ID = re.compile(r"^(\d{5,})(?:_[0-9a-f]+)?\.(?:jpe?g|png)$", re.IGNORECASE)


@dataclass
class CaptionCorpus:
    """``{image name: [human captions]}`` for training and dev, and what was left out (for the log and the card)."""

    train: dict[str, list[str]]
    dev: dict[str, list[str]]
    report: dict[str, Any] = field(default_factory=dict)


def flickr_photo_id(name: str) -> str | None:
    """The Flickr photo id in an image file name (``1000268201_693b08cb0e.jpg``, ``36979.jpg``), or ``None``.

    Only names that are a number of 5 or more digits, optionally followed by ``_<hex secret>``, count (a PASCAL VOC
    name such as ``2008_000032.jpg`` does not).
    """
    match = _NAME_ID.match(Path(str(name)).name)
    return match.group(1) if match else None


def _coco_flickr_ids(annotations: Mapping[str, Any]) -> dict[str, str]:
    """``{COCO file name: Flickr photo id}`` from the annotation file's ``flickr_url`` fields."""
    out = {}
    for image in annotations["images"]:
        match = _FLICKR_URL_ID.search(str(image.get("flickr_url", "")))
        if match:
            out[image["file_name"]] = match.group(1)
    return out


def coco_training_corpus(benchmarks: Mapping[str, set[str]], *, dev_fraction: float = 0.02, seed: int = 0,
                         split: str = "train2014") -> CaptionCorpus:
    """COCO ``split``'s captions by image file name, minus every image of ``benchmarks`` (``{benchmark: image
    file names}``, e.g. :func:`capeval.corpora.held_out.benchmark_images`), split into train and dev.

    ``dev_fraction``: share of the kept images in dev, in (0, 0.5]; ``seed`` draws them. Images with fewer than 2
    non-empty captions are dropped (a critic example needs a context and a candidate).
    """
    from capeval.coco.captions import load_coco_annotations

    if not 0 < dev_fraction <= 0.5:
        raise ValueError(f"dev_fraction must be in (0, 0.5], got {dev_fraction!r}.")
    annotations = load_coco_annotations(split)
    names = {image["id"]: image["file_name"] for image in annotations["images"]}
    captions: dict[str, list[str]] = {name: [] for name in names.values()}
    for ann in annotations["annotations"]:
        text = " ".join(str(ann["caption"]).split())
        if text:
            captions[names[ann["image_id"]]].append(text)
    flickr = _coco_flickr_ids(annotations)
    left_out: dict[str, list[str]] = {}
    for bench, images in sorted(benchmarks.items()):
        bench_names = {Path(str(n)).name for n in images}
        bench_ids = {i for i in map(flickr_photo_id, bench_names) if i}
        hits = sorted(n for n in captions if n in bench_names or flickr.get(n) in bench_ids)
        if hits:
            left_out[bench] = hits
    dropped = set().union(*left_out.values()) if left_out else set()
    short = sorted(n for n, caps in captions.items() if n not in dropped and len(caps) < 2)
    kept = sorted(set(captions) - dropped - set(short))
    dev_names = set(random.Random(seed).sample(kept, max(1, int(round(dev_fraction * len(kept))))))
    report = {"source": f"COCO {split} captions (pycocoevalcap's spice-1.0.jar)", "images": len(captions),
              "captions": sum(len(c) for c in captions.values()), "kept_images": len(kept),
              "dev_images": len(dev_names), "dev_fraction": dev_fraction, "seed": seed,
              "left_out": {b: len(h) for b, h in left_out.items()}, "left_out_examples": {b: h[:3] for b, h in
                                                                                          left_out.items()},
              "benchmarks_checked": sorted(benchmarks), "fewer_than_2_captions": len(short)}
    return CaptionCorpus({n: captions[n] for n in kept if n not in dev_names},
                         {n: captions[n] for n in kept if n in dev_names}, report)


def caption_vector(captions: Sequence[str], vectors) -> np.ndarray:
    """Unit mean over ``captions`` of each caption's mean word vector (lower-cased, punctuation-split words;
    words without a vector skipped); a zero vector when no word has one."""
    rows = []
    for caption in captions:
        found = [v for v in (vectors.get(w) for w in re.findall(r"[a-z0-9]+", caption.lower())) if v is not None]
        if found:
            rows.append(np.mean(found, axis=0))
    if not rows:
        return np.zeros(vectors.dim, dtype=np.float32)
    mean = np.mean(rows, axis=0).astype(np.float32)
    return mean / max(float(np.linalg.norm(mean)), 1e-12)


def caption_neighbour_table(captions: Mapping[str, Sequence[str]], word_vectors: str = "glove-6b-50d"):
    """A :class:`~capeval.models.feature_table.FeatureTable` of every image's :func:`caption_vector` (RC's
    neighbourhoods for a corpus without image features); its settings say so."""
    from capeval.dependencies import require
    from capeval.models.feature_table import FeatureTable
    from capeval.models.word_vectors import load_word_vectors

    torch = require("torch", what="the critic's training corpus")

    vectors = load_word_vectors(word_vectors)
    names = sorted(captions)
    rows = np.stack([caption_vector(captions[n], vectors) for n in names])
    return FeatureTable(names, torch.from_numpy(rows), f"caption_vectors:{vectors.name}", kind="pooled")
