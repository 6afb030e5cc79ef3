"""The data ``D`` of a robustness run (:class:`RobustnessData`): each image's human captions, RW's vocabulary, the
image paths and RC's features; :func:`flickr8k_split_data` reads a Flickr8k split (``test`` or ``dev``) from the data
directory, its RW vocabulary from the train captions."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.judgments.files import FLICKR8K_IMAGE_DIRS, image_finder, require_file, resolve_root


@dataclass
class RobustnessData:
    """The data ``D``: each image's human captions (≥ 2 each: one is the candidate, the others its references).

    ``vocabulary``: RW's replacement words. ``image_paths``: per image, for RC features computed by the encoder
    and for metrics that need images (``None`` when there are none). ``features``: optional pooled features
    for RC (``[n, d]`` in the order of ``captions``, a ``{image: vector}`` mapping, a
    :class:`~capeval.models.feature_table.FeatureTable`, or an encoder with ``encode(paths, kind="pooled")``).
    """

    captions: dict[str, list[str]]
    vocabulary: list[str]
    image_paths: dict[str, Path] | None = None
    features: Any = None
    source: str = "given captions"
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.captions = {str(k): [str(c) for c in v] for k, v in self.captions.items()}
        if not self.captions:
            raise ValueError("the robustness data holds no images.")
        for image, caps in self.captions.items():
            if len(caps) < 2:
                raise ValueError(f"image {image!r} has {len(caps)} caption(s); each image needs at least 2 (one "
                                 "candidate, the others its references).")
            blank = [j for j, c in enumerate(caps) if not c.strip()]
            if blank:
                raise ValueError(f"image {image!r}: caption {blank[0]} is empty.")
        self.vocabulary = list(self.vocabulary)

    @property
    def images(self) -> list[str]:
        return list(self.captions)

    def candidates(self) -> tuple[list[str], list[str], list[list[str]]]:
        """``(image per candidate, candidates, references)``: every caption against its image's other captions."""
        images, cands, refs = [], [], []
        for image, caps in self.captions.items():
            for j, c in enumerate(caps):
                images.append(image)
                cands.append(c)
                refs.append(caps[:j] + caps[j + 1:])
        return images, cands, refs


def train_vocabulary(captions: Mapping[str, Sequence[str]] | Sequence[str]) -> list[str]:
    """RW's vocabulary: the distinct lower-cased whitespace tokens holding a letter or digit, sorted."""
    texts = [c for caps in captions.values() for c in caps] if isinstance(captions, Mapping) else list(captions)
    words = {w.lower() for text in texts for w in text.split()}
    return sorted(w for w in words if any(ch.isalnum() for ch in w))


#: Flickr8k splits the robustness test reads (listed in ``Flickr_8k.<split>Images.txt``): ``test`` (the reported
#: numbers) and ``dev`` (for choosing a model without looking at test).
SPLITS = ("test", "dev")


def flickr8k_split_data(split: str = "test", root: str | Path | None = None,
                        images_limit: int | None = None) -> RobustnessData:
    """A Flickr8k split (images in its listing's order, the first ``images_limit``), its 5 captions per image,
    image paths (``flickr8k/images-224`` or an original-resolution folder), RW vocabulary from train."""
    from capeval.corpora.captions import flickr8k_captions

    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}.")
    base = resolve_root(root)
    listing = require_file(base / "flickr8k" / f"Flickr_8k.{split}Images.txt", f"one {split} image file name per line")
    order = [ln.strip() for ln in listing.read_text(encoding="utf-8").splitlines() if ln.strip()]
    captions = flickr8k_captions(split, base)
    missing = [name for name in order if name not in captions]
    if missing:
        raise ValueError(f"{len(missing)} Flickr8k {split} images have no captions in Flickr8k.token.txt "
                         f"(e.g. {missing[0]}).")
    if images_limit is not None:
        order = order[:check_limit(images_limit)]
    find = image_finder(base, None, FLICKR8K_IMAGE_DIRS)
    paths = {name: find(name) for name in order}
    found = [p for p in paths.values() if p is not None]
    notes = []
    if len(found) < len(paths):
        notes.append(f"{len(paths) - len(found)} of {len(paths)} images not found under {base / 'flickr8k'}")
    return RobustnessData(
        captions={name: captions[name] for name in order},
        vocabulary=train_vocabulary(flickr8k_captions("train", base)),
        image_paths=paths if found else None,
        source=f"Flickr8k {split} ({base})",
        notes=notes,
    )


def flickr8k_test_data(root: str | Path | None = None, images_limit: int | None = None) -> RobustnessData:
    """Flickr8k test: :func:`flickr8k_split_data` with ``split="test"``."""
    return flickr8k_split_data("test", root, images_limit)


def check_limit(limit: Any) -> int:
    """``images_limit`` checked: an integer ≥ 2 (``ValueError`` otherwise)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ValueError(f"images_limit must be an integer ≥ 2, got {limit!r}.")
    return limit



def subset(data: RobustnessData, images_limit: int) -> RobustnessData:
    """``data`` cut to its first ``images_limit`` images (array features cut with it)."""
    kept = list(data.captions)[:check_limit(images_limit)]
    return RobustnessData({k: data.captions[k] for k in kept}, data.vocabulary,
                          None if data.image_paths is None else {k: data.image_paths.get(k) for k in kept},
                          subset_features(data.features, data.images, kept), data.source, list(data.notes))


def subset_features(features: Any, names: list[str], kept: list[str]) -> Any:
    """Cut array features (rows in ``names`` order) to ``kept``; mappings, tables and encoders stay as they are."""
    if features is None or isinstance(features, Mapping) or hasattr(features, "encode") or hasattr(features, "rows"):
        return features
    return features[: len(kept)]

