"""LCEval's training pairs (Sharif et al. 2019 §4.3) from what capeval's data directory holds, benchmarks left out.

The paper pairs each image's captions as follows: 3 human candidates, each scored against the image's other human
captions (4 of them), and 3 machine candidates, each against 4 of the image's human captions drawn at random;
label 1 = human-written, 0 = machine-generated. capeval builds such pairs from:

* ``coco-karpathy``: the 5,000 COCO Karpathy test images (``coco_karpathy_test/``): 5 human captions each and
  3 captioning systems' captions;
* ``flickr8k-train``: the 6,000 Flickr8k *train* images: 5 human captions each, and machine captions from
  capeval's own captioner given as JSON-lines files (``capeval captioner generate`` output: ``{"id": image,
  "candidates": [{"caption": ...}, ...]}``; e.g. beam-3 captions and Monte-Carlo samples); the first 3
  distinct machine captions of an image over the files, in file order.

THumB's system captions are not a source: THumB is a reported benchmark, and every THumB image would be left out.

``rc_per_image`` (capeval's addition, default 0 = the paper): also that many *mismatched* negatives per image, a
human caption of another image of the same source (drawn at random) scored against this image's references,
label 0. The paper's negatives are all fluent machine captions, so its classifier learns "machine style"; the
mismatched ones teach it relevance, which is what caption-quality judgments measure (Cui et al.'s RC negatives).

``negatives`` chooses what label 0 means: ``"machine"`` (default, the paper: machine captions, plus ``rc_per_image``
mismatched ones) or ``"mismatched"`` (the caption-level objective of Cui et al. 2018 §4.4, whose critic for
caption-level correlation sees only human captions of other images as negatives: no machine pair is built, so no
machine captions are needed, and ``rc_per_image`` must be at least 1). With ``"mismatched"`` the network judges
whether a caption fits the references, not whether a person wrote it.

**Left out**: every image of every benchmark capeval reports (:data:`REPORTED_BENCHMARKS`: COMPOSITE's COCO,
Flickr8k and Flickr30k subsets, Flickr8k-Expert and -CrowdFlower, PASCAL-50S, THumB), compared by image file
name; :func:`benchmark_images` lists them (benchmarks whose files are absent are skipped and named in the
report). The dev split (model selection) is a seeded 10 % of the remaining *images*, so no image is on both sides.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import Setting, words
from capeval.validation import OptionError
from capeval.corpora.held_out import REPORTED_BENCHMARKS, benchmark_images

__all__ = ["NEGATIVES", "REPORTED_BENCHMARKS", "SOURCES", "TrainingPair", "TrainingSet", "benchmark_images",
           "build_training_set", "paper_pairs", "read_machine_captions"]

SOURCES = ("coco-karpathy", "flickr8k-train")
NEGATIVES = ("machine", "mismatched")


@dataclass(frozen=True)
class TrainingPair:
    """One training example: a candidate, its references, ``label`` (1 human, 0 machine), where it came from."""

    candidate: str
    references: tuple[str, ...]
    label: int
    image_id: str
    source: str
    system: str


@dataclass
class TrainingSet:
    """Train and dev pairs, and what was left out (for the training log and the model card)."""

    train: list[TrainingPair]
    dev: list[TrainingPair]
    report: dict[str, Any] = field(default_factory=dict)


def paper_pairs(image_id: str, humans: Sequence[str], machines: Sequence[str], rng: random.Random, *, source: str,
                systems: Sequence[str] | None = None, n_human: int = 3, n_machine: int = 3,
                n_refs: int = 4) -> list[TrainingPair]:
    """The paper's pairs for one image: ``n_human`` human candidates against ``n_refs`` of the other human
    captions, ``n_machine`` machine candidates against ``n_refs`` random human captions."""
    humans = [h for h in humans if h.strip()]
    if len(humans) < 2:
        return []
    out = []
    for k in range(min(n_human, len(humans))):
        others = humans[:k] + humans[k + 1:]
        refs = others if len(others) <= n_refs else rng.sample(others, n_refs)
        out.append(TrainingPair(humans[k], tuple(refs), 1, image_id, source, "human"))
    systems = list(systems) if systems is not None else [f"machine_{j}" for j in range(len(machines))]
    for caption, system in list(zip(machines, systems))[:n_machine]:
        if not caption.strip():
            continue
        refs = humans if len(humans) <= n_refs else rng.sample(humans, n_refs)
        out.append(TrainingPair(caption, tuple(refs), 0, image_id, source, system))
    return out


def read_machine_captions(paths: Sequence[str | Path]) -> dict[str, list[str]]:
    """``{image: [distinct machine captions in file order]}`` from captioner JSON-lines outputs."""
    captions: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        path = Path(path)
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    image, cands = row["id"], row["candidates"]
                    texts = [c["caption"] if isinstance(c, dict) else c for c in cands]
                except (ValueError, KeyError, TypeError) as err:
                    raise ValueError(f"{path}:{n}: expected {{\"id\": image, \"candidates\": [{{\"caption\": ...}}]}} "
                                     f"({err}).") from err
                for text in texts:
                    if isinstance(text, str) and text.strip() and text not in captions[image]:
                        captions[image].append(text)
    return dict(captions)


def _dev_images(images: Sequence[str], fraction: float, seed: int) -> set[str]:
    ordered = sorted(set(images))
    random.Random(seed).shuffle(ordered)
    return set(ordered[: round(len(ordered) * fraction)])


def _mismatched(humans: dict[str, list[str]], k: int, rng: random.Random,
                source: str, n_refs: int = 4) -> list[TrainingPair]:
    """``k`` pairs per image of ``humans``: another image's human caption against this image's references (label 0)."""
    images = sorted(humans)
    if k < 1 or len(images) < 2:
        return []
    out = []
    for image in images:
        for _ in range(k):
            other = image
            while other == image:
                other = images[rng.randrange(len(images))]
            own = humans[image]
            refs = own if len(own) <= n_refs else rng.sample(own, n_refs)
            out.append(TrainingPair(rng.choice(humans[other]), tuple(refs), 0, image, source, "mismatched"))
    return out


def build_training_set(root: str | Path | None = None, *, machine_captions: Sequence[str | Path] = (),
                       sources: Sequence[str] = SOURCES, seed: int = 0, dev_fraction: float = 0.1,
                       exclude: Sequence[str] = REPORTED_BENCHMARKS, rc_per_image: int = 0,
                       negatives: str = "machine") -> TrainingSet:
    """The training and dev pairs (see the module docstring); ``ValueError`` when no pair is left."""
    from capeval.judgments.files import resolve_root

    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"unknown source(s) {unknown}; choose from {SOURCES}.")
    if negatives not in NEGATIVES:
        raise ValueError(f"negatives must be one of {NEGATIVES}, got {negatives!r}.")
    with_machine = negatives == "machine"
    if not with_machine and rc_per_image < 1:
        raise ValueError(f"negatives='mismatched' needs rc_per_image >= 1 (the only negatives), got {rc_per_image}.")
    if not with_machine and machine_captions:
        raise ValueError("negatives='mismatched' builds no machine pair: drop machine_captions "
                         "(they would be ignored).")
    if not 0 <= dev_fraction < 1:
        raise ValueError(f"dev_fraction must be in [0, 1), got {dev_fraction!r}.")
    root = resolve_root(root)
    left_out = benchmark_images(root, exclude)
    excluded = set().union(*left_out.values()) if left_out else set()
    rng = random.Random(seed)
    pairs: list[TrainingPair] = []
    counts: dict[str, dict[str, int]] = {}
    if "coco-karpathy" in sources:
        from capeval.judgments.coco_karpathy import load_coco_karpathy

        by_image: dict[str, dict[str, str]] = defaultdict(dict)
        refs: dict[str, tuple[str, ...]] = {}
        for rec in load_coco_karpathy(root).records:
            by_image[rec.image_id][rec.system] = rec.candidate
            refs[rec.image_id] = rec.references
        kept = [im for im in by_image if Path(im).name not in excluded]
        coco_humans = {image: [by_image[image]["human"], *refs[image]] for image in kept}
        for image in kept:
            systems = ["model_1", "model_2", "model_3"]
            machines = [by_image[image][s] for s in systems] if with_machine else []
            pairs += paper_pairs(image, coco_humans[image], machines, rng, source="coco-karpathy", systems=systems)
        pairs += _mismatched(coco_humans, rc_per_image, rng, "coco-karpathy")
        counts["coco-karpathy"] = {"images": len(by_image), "kept": len(kept)}
    if "flickr8k-train" in sources:
        from capeval.corpora.captions import flickr8k_captions

        train = flickr8k_captions("train", root)
        machines = read_machine_captions(machine_captions) if with_machine else {}
        if with_machine and not machines:
            raise OptionError(words("machine_captions", "flickr8k-train needs ", Setting(shown=""),
                                    " (captioner JSON-lines outputs for the train images)."))
        foreign = sorted(set(machines) - set(train))
        if foreign:
            raise ValueError(f"machine captions for {len(foreign)} images that are not Flickr8k train images "
                             f"(e.g. {foreign[0]!r}); give captions of train images only.")
        kept = [im for im in train if im not in excluded and (im in machines or not with_machine)]
        for image in kept:
            own = machines.get(image, [])
            pairs += paper_pairs(image, train[image], own, rng, source="flickr8k-train",
                                 systems=[f"captioner_{j}" for j in range(len(own))])
        pairs += _mismatched({image: train[image] for image in kept}, rc_per_image, rng, "flickr8k-train")
        counts["flickr8k-train"] = {"images": len(train), "kept": len(kept)}
    if not pairs:
        raise ValueError("no training pairs: every source image is missing or left out.")
    dev_images = _dev_images([p.image_id for p in pairs], dev_fraction, seed)
    train_pairs = [p for p in pairs if p.image_id not in dev_images]
    dev_pairs = [p for p in pairs if p.image_id in dev_images]
    report = {"sources": counts, "left_out_benchmarks": {k: len(v) for k, v in left_out.items()},
              "missing_benchmarks": [b for b in exclude if b not in left_out], "seed": seed,
              "dev_fraction": dev_fraction, "negatives": negatives, "rc_per_image": rc_per_image,
              "train_pairs": len(train_pairs), "dev_pairs": len(dev_pairs),
              "train_human": sum(p.label for p in train_pairs), "dev_images": len(dev_images)}
    return TrainingSet(train_pairs, dev_pairs, report)


def pair_features(pairs: Sequence[TrainingPair], extractor, *, progress: bool | None = None):
    """``(features (n, 16), labels (n,))`` of training pairs, through ``extractor``
    (a :class:`capeval.lceval.features.FeatureExtractor`: cached per candidate and references)."""
    import numpy as np

    from capeval.batch import CaptionBatch

    batch = CaptionBatch([p.candidate for p in pairs], [list(p.references) for p in pairs], cleanup=None,
                         progress=progress)
    return extractor.extract(batch), np.array([p.label for p in pairs], dtype=np.int64)
