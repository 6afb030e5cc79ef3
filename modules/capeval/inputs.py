"""Captions as neighbouring libraries hand them over, matched by image id.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The prediction entries :func:`by_image_id` names in errors (first few).
SHOWN_IDS = 5


@dataclass
class KeyedInputs:
    """Predictions, their references and images as plain lists in prediction order, with each one's image id."""

    ids: list[Any]
    predictions: list[Any]
    references: list[Any]
    images: list[Any] | None
    #: Reference image ids that have no prediction (they take no part in the scores).
    unscored: list[Any]


def is_results_list(predictions: Any) -> bool:
    """COCO's results list: a non-empty list whose first entry is a dict with ``image_id`` and ``caption``."""
    return (isinstance(predictions, Sequence) and not isinstance(predictions, (str, bytes)) and len(predictions) > 0
            and isinstance(predictions[0], Mapping) and "image_id" in predictions[0] and "caption" in predictions[0])


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
    ids, preds = _predictions(predictions)
    refs_by_id = _references(references)
    lookup = {str(k): k for k in refs_by_id}
    missing = [i for i in ids if i not in refs_by_id and str(i) not in lookup]
    if missing:
        raise ValueError(f"{len(missing)} prediction image id(s) have no references, e.g. "
                         f"{', '.join(map(repr, missing[:SHOWN_IDS]))}; the references hold ids such as "
                         f"{', '.join(map(repr, list(refs_by_id)[:3]))}.")
    refs = [refs_by_id[i] if i in refs_by_id else refs_by_id[lookup[str(i)]] for i in ids]
    wanted = {str(i) for i in ids}
    unscored = [k for k in refs_by_id if str(k) not in wanted]
    return KeyedInputs(ids, preds, refs, _images(images, ids), unscored)


def _predictions(predictions: Any) -> tuple[list[Any], list[Any]]:
    if isinstance(predictions, Mapping):
        ids, preds = [], []
        for key, value in predictions.items():
            ids.append(key)
            preds.append(_one_caption(value, key))
        return ids, preds
    ids, preds, seen = [], [], {}
    for i, entry in enumerate(predictions):
        if not isinstance(entry, Mapping) or "image_id" not in entry or "caption" not in entry:
            raise ValueError(f"predictions[{i}] is not a COCO result ({str(entry)[:60]}); every entry of a results "
                             "list is {'image_id': ..., 'caption': ...}.")
        key = entry["image_id"]
        if str(key) in seen:
            raise ValueError(f"predictions[{seen[str(key)]}] and predictions[{i}] are both captions of image "
                             f"{key!r}; a results list holds one caption per image.")
        seen[str(key)] = i
        ids.append(key)
        preds.append(entry["caption"])
    return ids, preds


def _one_caption(value: Any, key: Any) -> Any:
    """A ``res`` entry: the caption, or a list holding exactly one (a string or a ``{"caption"}`` dict)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"predictions[{key!r}] holds {len(value)} captions; pycocoevalcap's res has exactly one "
                             "caption per image id (score several captioners in separate calls).")
        value = value[0]
    if isinstance(value, Mapping):
        if "caption" not in value:
            raise ValueError(f"predictions[{key!r}] is a dict without 'caption' ({str(value)[:60]}).")
        value = value["caption"]
    return value  # the caption itself: checked with the others by capeval.validation


def _references(references: Any) -> dict[Any, Any]:
    if isinstance(references, (str, os.PathLike)):
        from pathlib import Path

        from capeval.io import load_references

        ids, refs = load_references(Path(references))
        if ids is None:
            raise ValueError(f"references file {os.fspath(references)} has no image ids; keyed predictions need a COCO "
                             "annotation file or a {image_id: [captions]} JSON.")
        return dict(zip(ids, refs))
    if "annotations" in references and isinstance(references["annotations"], list):
        grouped: dict[Any, list[Any]] = {}
        for i, ann in enumerate(references["annotations"]):
            if not isinstance(ann, Mapping) or "image_id" not in ann or "caption" not in ann:
                raise ValueError(f"references['annotations'][{i}] is not a COCO annotation ({str(ann)[:60]}); each "
                                 "is {'image_id': ..., 'caption': ...}.")
            grouped.setdefault(ann["image_id"], []).append(ann["caption"])
        return grouped
    out = {}
    for key, value in references.items():
        if isinstance(value, (list, tuple)):
            value = [v["caption"] if isinstance(v, Mapping) and "caption" in v else v for v in value]
        out[key] = value
    return out


def _images(images: Any, ids: list[Any]) -> Any:
    """``images`` keyed by image id matched like the references; anything else as given (prediction order)."""
    if not isinstance(images, Mapping) or ("bytes" in images or "path" in images):
        return images
    lookup = {str(k): k for k in images}
    missing = [i for i in ids if i not in images and str(i) not in lookup]
    if missing:
        raise ValueError(f"images has no entry for {len(missing)} prediction image id(s), e.g. "
                         f"{', '.join(map(repr, missing[:SHOWN_IDS]))}.")
    return [images[i] if i in images else images[lookup[str(i)]] for i in ids]
