"""The API's captions keyed by image id, as neighbouring libraries hand them over (``capeval.score``, the evaluate
modules): which arguments are keyed, and the plain lists they mean.

The forms and their matching are :mod:`capeval.matching`'s (the file loader, :mod:`capeval.io`, uses the same):

* **pycocoevalcap's dicts**: ``predictions = {image_id: [caption]}`` (its ``res``: exactly one caption per image, or
  the caption itself) and ``references = {image_id: [caption, ...]}`` (its ``gts``; each entry a string, a list of
  strings, or COCO annotation dicts ``{"caption": ...}`` as ``COCO.imgToAnns`` holds them).
* **COCO's results list**: ``predictions = [{"image_id": ..., "caption": ...}, ...]`` with the references as the
  annotation file's path, its loaded dict (``{"annotations": [...]}``), or a ``gts`` dict as above.

:func:`by_image_id` pairs each prediction with the references of its image (ids compared exactly, else as strings:
``391895`` matches ``"391895"``) and returns the plain lists :func:`capeval.score` scores, in the predictions' order,
with the ids (``result["image_ids"]``). Plain lists pass through untouched (``None``). Mixing a keyed side with a
plain list is refused: a dict read as a list is its keys, which would be scored as captions.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capeval.matching import (SHOWN_IDS, captions_by_id, images_in_order, is_results_list, match,
                              references_by_id, unscored_ids)

__all__ = ["SHOWN_IDS", "KeyedInputs", "by_image_id", "is_results_list"]


@dataclass
class KeyedInputs:
    """Predictions, their references and images as plain lists in prediction order, with each one's image id."""

    ids: list[Any]
    predictions: list[Any]
    references: list[Any]
    images: list[Any] | None
    #: Reference image ids that have no prediction (they take no part in the scores).
    unscored: list[Any]


def by_image_id(predictions: Any, references: Any, images: Any = None) -> KeyedInputs | None:
    """Plain lists for ``predictions`` / ``references`` given keyed by image id (module docstring), else ``None``.

    Raises ``ValueError`` / ``TypeError`` naming the image id: a prediction with no references, a ``res`` entry with
    more than one caption, a results entry without ``image_id`` or ``caption``, two predictions for one image, one
    side keyed and the other a plain list."""
    keyed_preds = isinstance(predictions, Mapping) or is_results_list(predictions)
    # a path is an annotation file only beside keyed predictions (else a lone string is refused as references)
    keyed_refs = isinstance(references, Mapping) or (keyed_preds and isinstance(references, (str, os.PathLike)))
    if not keyed_preds and not keyed_refs:
        return None
    if not keyed_preds:
        raise TypeError("references are keyed by image id (a dict or an annotation file) but predictions are a plain "
                        "list: give predictions keyed the same way ({image_id: [caption]}, pycocoevalcap's res, or "
                        "COCO's results list [{'image_id', 'caption'}]), or references as a list in prediction order.")
    if not keyed_refs:
        raise TypeError("predictions are keyed by image id (pycocoevalcap's res or COCO's results list) but "
                        "references are a plain list: give references keyed the same way ({image_id: [captions]}, "
                        "pycocoevalcap's gts, or COCO's annotation file or dict).")
    ids, preds = captions_by_id(predictions)
    refs_by_id = _references(references)
    keys = list(refs_by_id)
    positions, missing = match(ids, keys)
    if missing:
        raise ValueError(f"{len(missing)} prediction image id(s) have no references, e.g. "
                         f"{', '.join(map(repr, missing[:SHOWN_IDS]))}; the references hold ids such as "
                         f"{', '.join(map(repr, keys[:3]))}.")
    refs = [refs_by_id[keys[n]] for n in positions]
    return KeyedInputs(ids, preds, refs, images_in_order(images, ids), unscored_ids(ids, keys))


def _references(references: Any) -> dict[Any, Any]:
    """``{image_id: references}``: an annotation file's path read by :func:`capeval.io.load_references`, anything
    else by :func:`capeval.matching.references_by_id`."""
    if isinstance(references, (str, os.PathLike)):
        from pathlib import Path

        from capeval.io import load_references

        ids, refs = load_references(Path(references))
        if ids is None:
            raise ValueError(f"references file {os.fspath(references)} has no image ids; keyed predictions need a COCO "
                             "annotation file or a {image_id: [captions]} JSON.")
        return dict(zip(ids, refs))
    return references_by_id(references)
