"""Captions keyed by image id: recognising the keyed forms and pairing predictions with references by id.

The one place both front doors match inputs: :mod:`capeval.io` (prediction and reference files) and
:mod:`capeval.inputs` (the API's arguments, the evaluate modules).

* **pycocoevalcap's dicts**: ``{image_id: [caption]}`` (its ``res``: exactly one caption per image, or the caption
  itself) and ``{image_id: [caption, ...]}`` (its ``gts``; each entry a string, a list of strings, or COCO annotation
  dicts ``{"caption": ...}`` as ``COCO.imgToAnns`` holds them).
* **COCO's results list**: ``[{"image_id": ..., "caption": ...}, ...]``, and COCO's annotation file as a dict
  (``{"annotations": [{"image_id", "caption"}, ...]}``).
* **Pairing**: :func:`match` finds each prediction's references by image id (ids compared exactly, else as strings:
  ``391895`` matches ``"391895"``; or as strings only); :func:`unscored_ids` names the reference ids no prediction
  has. Callers raise their own errors (a file's names its path) from what these return.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["SHOWN_IDS", "captions_by_id", "images_in_order", "is_annotations", "is_results_list", "match",
           "references_by_id", "unscored_ids"]

#: The prediction entries the errors name (first few).
SHOWN_IDS = 5


def is_results_list(predictions: Any) -> bool:
    """COCO's results list: a non-empty list whose first entry is a dict with ``image_id`` and ``caption``."""
    return (isinstance(predictions, Sequence) and not isinstance(predictions, (str, bytes)) and len(predictions) > 0
            and isinstance(predictions[0], Mapping) and "image_id" in predictions[0] and "caption" in predictions[0])


def is_annotations(obj: Any) -> bool:
    """COCO's annotation file as a dict: a mapping with an ``annotations`` key."""
    return isinstance(obj, Mapping) and "annotations" in obj


def match(pred_ids: Sequence[Any], ref_ids: Sequence[Any], *, exact_first: bool = True) -> tuple[list[int], list[Any]]:
    """``(positions, missing)``: for each prediction id the position in ``ref_ids`` of its image (the same id, else the
    same id as a string; ``exact_first=False``: as strings only, the last of equal strings), and the prediction ids
    with none (``positions`` then holds only the found ones)."""
    as_text = {str(k): n for n, k in enumerate(ref_ids)}
    exact: dict[Any, int] = {}
    if exact_first:
        for n, k in enumerate(ref_ids):
            try:
                exact.setdefault(k, n)
            except TypeError:  # an unhashable id: compared as a string
                continue
    positions, missing = [], []
    for key in pred_ids:
        n = _exact(exact, key) if exact_first else None
        if n is None:
            n = as_text.get(str(key))
        if n is None:
            missing.append(key)
        else:
            positions.append(n)
    return positions, missing


def _exact(table: dict[Any, int], key: Any) -> int | None:
    try:
        return table.get(key)
    except TypeError:
        return None


def unscored_ids(pred_ids: Sequence[Any] | None, ref_ids: Sequence[Any] | None) -> list[Any]:
    """Reference image ids that no prediction names (ids compared as strings; they take no part in the scores)."""
    if pred_ids is None or ref_ids is None:
        return []
    named = {str(k) for k in pred_ids}
    return [k for k in ref_ids if str(k) not in named]


def captions_by_id(predictions: Any) -> tuple[list[Any], list[Any]]:
    """``(ids, captions)`` of keyed predictions: pycocoevalcap's ``res`` mapping or COCO's results list. Raises
    ``ValueError`` naming the entry: a results entry without ``image_id`` or ``caption``, two results for one image,
    a ``res`` entry with other than one caption. The captions themselves are checked later, with the others."""
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
    return value


def references_by_id(references: Mapping) -> dict[Any, Any]:
    """``{image_id: references}`` of keyed references in memory: COCO's annotation dict (grouped by id) or
    pycocoevalcap's ``gts`` (``{"caption"}`` dicts taken as their caption)."""
    if is_annotations(references) and isinstance(references["annotations"], list):
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


def images_in_order(images: Any, ids: Sequence[Any]) -> Any:
    """``images`` keyed by image id, in the order of ``ids`` (matched as :func:`match` does); anything else (a list in
    prediction order, a single ``datasets.Image`` dict) as given."""
    if not isinstance(images, Mapping) or ("bytes" in images or "path" in images):
        return images
    keys = list(images)
    positions, missing = match(ids, keys)
    if missing:
        raise ValueError(f"images has no entry for {len(missing)} prediction image id(s), e.g. "
                         f"{', '.join(map(repr, missing[:SHOWN_IDS]))}.")
    return [images[keys[n]] for n in positions]
