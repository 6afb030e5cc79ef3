"""Attention checks for THumB annotation sheets: known-bad captions mixed in blindly, and who caught them.

``capeval thumb sheet ... --checks N`` (:func:`add_checks`) picks ``N`` distinct images and gives each one
extra item: a caption of ANOTHER image of the sheet (cleaned as the sheet's captions are, and different from
every caption of the target image), inserted at a seeded random place among that image's items. The image's
items are then re-lettered, so item ids stay consecutive (``3-A``, ``3-B``, ...) and neither the ids, the
order nor the text tell a check from a real caption; the CSV sheet, the HTML page and Label Studio's
``tasks.json`` show it like any other item. Only the key says which items are checks: such an item has
``"systems": []`` and ``"check": {"kind": "other-image", "caption_of": "<source image>"}``.

When collecting, check items are left out of the ratings, the un-blinding, the aggregation, κ and the
disagreements (:func:`split_checks`), and each annotator's pass rate is reported
(:func:`attention_checks`) by the rule :data:`PASS_RULE`: THumB's precision measures how accurate a caption
is for the image, and a caption of another image is mostly wrong, so an attentive annotator gives it a
precision of at most :data:`MAX_CHECK_PRECISION` (2).
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

from capeval.advice import OPTION, Setting, words
from capeval.validation import OptionError
from capeval.thumb.sheets import SheetItem, SheetKey, _letters

#: ``check["kind"]`` of an item showing a caption of another image.
CHECK_KIND = "other-image"
#: Highest precision (1–5) that passes a check: a caption of another image is mostly wrong.
MAX_CHECK_PRECISION = 2
#: The pass rule in words (``thumb_report.json``'s ``attention_checks.rule``).
PASS_RULE = (f"a check item shows a caption of another image; an annotator passes it when their precision for it "
             f"is at most {MAX_CHECK_PRECISION} (of 1-5)")


# -------------------------------------------------------------------------------------------- sheets


def _norm(caption: str) -> str:
    """Caption text compared case- and space-insensitively (a check must differ from the image's own captions)."""
    return " ".join(caption.casefold().split())


def _check_count(n: int, images: int) -> None:
    """One-line errors for a bad number of checks (0 ≤ n ≤ images, and at least 2 images when n > 0)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OptionError(words("checks", "the number of attention checks (", OPTION,
                                f") must be a whole number, 0 or more; got {n!r}."))
    if n and images < 2:
        raise ValueError(f"attention checks need at least 2 images (a check shows a caption of another image); "
                         f"the sheet has {images}.")
    if n > images:
        raise OptionError(words("checks", f"{n} attention checks asked for, but the sheet has {images} images; at most "
                                "one check per image (give ", Setting(images), " or fewer)."))


def _candidates(image: str, groups: dict[str, list[SheetItem]]) -> list[tuple[str, str]]:
    """``(source image, caption)`` of every other image whose caption differs from all of ``image``'s captions."""
    own = {_norm(it.caption) for it in groups[image]}
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for source, group in groups.items():
        if source == image:
            continue
        for it in group:
            text = _norm(it.caption)
            if it.check is None and text not in own and text not in seen:
                seen.add(text)
                out.append((source, it.caption))
    return out


def _reletter(group: list[SheetItem]) -> list[SheetItem]:
    """The image's items with consecutive letters in their (new) order: ``3-A``, ``3-B``, ..."""
    number = group[0].item.rsplit("-", 1)[0]
    return [dataclasses.replace(it, item=f"{number}-{_letters(k)}") for k, it in enumerate(group)]


def add_checks(items: Sequence[SheetItem], n: int, seed: int = 0) -> list[SheetItem]:
    """Mix ``n`` attention-check items into the sheet's items (see the module docstring).

    Deterministic for ``(seed, items)``: targets, captions and positions come from
    ``random.Random(f"{seed}|checks")``. ``n = 0`` returns the items unchanged. A caption is reused as a
    check only when every other choice for that image is used already.

    Raises:
        ValueError: ``n`` < 0, ``n`` > number of images, fewer than 2 images, or fewer than ``n`` images with
            a caption of another image that differs from all of their own.
    """
    groups: dict[str, list[SheetItem]] = {}
    for it in items:
        groups.setdefault(it.image, []).append(it)
    _check_count(n, len(groups))
    if n == 0:
        return list(items)
    candidates = {image: _candidates(image, groups) for image in groups}
    eligible = [image for image in groups if candidates[image]]
    if len(eligible) < n:
        raise OptionError(words("checks", f"only {len(eligible)} image(s) have a caption of another image that "
                                "differs from all of their own; give ", Setting(len(eligible)), " or fewer."))
    rng = random.Random(f"{seed}|checks")
    targets = set(rng.sample(eligible, n))
    used: set[str] = set()
    out: list[SheetItem] = []
    for image, group in groups.items():
        if image in targets:
            fresh = [c for c in candidates[image] if _norm(c[1]) not in used] or candidates[image]
            source, caption = rng.choice(fresh)
            used.add(_norm(caption))
            check = SheetItem(item=group[0].item, image=image, caption=caption, systems=[],
                              check={"kind": CHECK_KIND, "caption_of": source})
            group = list(group)
            group.insert(rng.randint(0, len(group)), check)
            group = _reletter(group)
        out.extend(group)
    return out


# ------------------------------------------------------------------------------------------ collect


def split_checks(key: SheetKey, sheets: Sequence[dict[str, dict[str, float]]]
                 ) -> tuple[SheetKey, list[dict[str, dict[str, float]]], list[SheetItem]]:
    """``(key without checks, sheets without check items, check items)``; unchanged when there are none."""
    checks = [it for it in key.items if it.check is not None]
    if not checks:
        return key, list(sheets), []
    ids = {it.item for it in checks}
    real = SheetKey([it for it in key.items if it.check is None], key.systems)
    rated = [{item: values for item, values in sheet.items() if item not in ids} for sheet in sheets]
    if not any(rated):
        raise ValueError(f"nothing to collect: only the {len(checks)} attention-check item(s) are rated so far, no "
                         "caption of a system.")
    return real, rated, checks


def passes(values: dict[str, float]) -> bool:
    """Whether one annotator's ratings of a check item pass it (:data:`PASS_RULE`)."""
    return values["precision"] <= MAX_CHECK_PRECISION


def attention_checks(checks: Sequence[SheetItem], sheets: Sequence[dict[str, dict[str, float]]],
                     annotators: Sequence[str]) -> dict[str, Any] | None:
    """Each annotator's pass rate on the check items, or None when the sheet has none.

    Returns:
        ``{"rule": PASS_RULE, "items": n, "annotators": [{"annotator", "checked", "passed", "pass_rate",
        "failed"}]}``: ``checked`` counts the check items the annotator rated (a Label Studio export may
        lack some), ``pass_rate`` = passed / checked in [0, 1] (None when nothing was checked), ``failed``
        the failed items' ids in sheet order.
    """
    if not checks:
        return None
    rows = []
    for label, sheet in zip(annotators, sheets):
        rated = [it.item for it in checks if it.item in sheet]
        failed = [item for item in rated if not passes(sheet[item])]
        passed = len(rated) - len(failed)
        rows.append({"annotator": label, "checked": len(rated), "passed": passed,
                     "pass_rate": passed / len(rated) if rated else None, "failed": failed})
    return {"rule": PASS_RULE, "items": len(checks), "annotators": rows}


def describe(row: dict[str, Any], items: int) -> str:
    """One line for the terminal, e.g. ``ann1@example.org passed 3/4 (75%): failed 7-B``."""
    if not row["checked"]:
        return f"{row['annotator']} rated none of the {items} check item(s)"
    line = f"{row['annotator']} passed {row['passed']}/{row['checked']} ({100 * row['pass_rate']:.0f}%)"
    return line + (f": failed {', '.join(row['failed'])}" if row["failed"] else "")
