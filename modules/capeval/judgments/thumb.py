"""THumB 1.0 (Kasai et al. 2022): 2,500 MS-COCO captions (500 images × 5 systems) with rubric scores.

Files under ``<data dir>/thumb/``:

* ``mscoco_THumB-1.0.jsonl``: ``SYS``, ``seg_id``, ``set_id``, ``hyp``, ``image``, ``P``, ``R`` (1-5),
  ``Fl``, ``Inc``, ``Con`` (penalties <= 0), ``human_score`` = (P+R)/2 + Fl + Con + Inc.
* ``mscoco_references.json`` (JSON Lines despite the name): ``seg_id``, ``set_id``, ``refs`` (4).

``target=`` picks the judgment that enters the correlation: ``"total"`` (``human_score``, default),
``"P"`` or ``"R"``; every sub-score stays in ``extra``. ``include_human=False`` drops the 500 Human
captions (the paper reports both). Statistic: Pearson (instance level).

Known caveat: after a 2022 data fix, some Human captions appear verbatim in their own 4 references.
"Verbatim" here means equal after collapsing whitespace runs, stripping and lower-casing
(:func:`verbatim_key`); on THumB 1.0 this flags 39 Human captions (the same 39 are also byte-equal
to a reference). Each record has ``extra["candidate_in_references"]``.
"""
from __future__ import annotations

from pathlib import Path

from capeval.judgments.files import COCO_IMAGE_DIRS, image_finder, norm_space, read_jsonl, resolve_root
from capeval.judgments.records import Benchmark, CaptionRecord

SYSTEMS = ("Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human")
TARGETS = {"total": "human_score", "P": "P", "R": "R"}
SCORES_FORMAT = (
    "mscoco_THumB-1.0.jsonl: JSON Lines with SYS, seg_id, set_id, hyp, image, P, R, Fl, Inc, Con, human_score"
)
REFS_FORMAT = 'mscoco_references.json: JSON Lines {"seg_id", "set_id", "refs": [4 captions]}'


def verbatim_key(text: str) -> str:
    """The comparison key for "appears verbatim": whitespace collapsed, stripped, lower-cased."""
    return norm_space(text).lower()


def load_thumb(
    root: str | Path | None = None,
    *,
    include_human: bool = True,
    target: str = "total",
    image_dir: str | Path | None = None,
) -> Benchmark:
    """THumB 1.0 MS-COCO captions with P, R, penalties and total; see the module docstring."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, got {target!r}.")
    base = resolve_root(root) / "thumb"
    scores_path, refs_path = base / "mscoco_THumB-1.0.jsonl", base / "mscoco_references.json"
    rows = read_jsonl(scores_path, SCORES_FORMAT)
    refs_by_seg: dict[str, tuple[str, ...]] = {}
    for n, row in enumerate(read_jsonl(refs_path, REFS_FORMAT), 1):
        if "seg_id" not in row or not isinstance(row.get("refs"), list) or not row["refs"]:
            raise ValueError(f"{refs_path}:{n}: expected seg_id and a non-empty refs list.")
        refs_by_seg[str(row["seg_id"])] = tuple(r.strip() for r in row["refs"])
    find_image = image_finder(base.parent, image_dir, COCO_IMAGE_DIRS)

    records = []
    for n, row in enumerate(rows, 1):
        for key in ("SYS", "seg_id", "set_id", "hyp", "image", "P", "R", "Fl", "Inc", "Con", "human_score"):
            if key not in row:
                raise ValueError(f"{scores_path}:{n}: missing field {key!r}; expected {SCORES_FORMAT}.")
        if row["SYS"] == "Human" and not include_human:
            continue
        seg = str(row["seg_id"])
        if seg not in refs_by_seg:
            raise ValueError(f"{scores_path}:{n}: seg_id {seg!r} has no references in {refs_path.name}.")
        refs = refs_by_seg[seg]
        hyp = row["hyp"].strip()
        sub = {k: float(row[k]) for k in ("P", "R", "Fl", "Con", "Inc")}
        sub["total"] = float(row["human_score"])
        records.append(CaptionRecord(
            benchmark="thumb",
            source_id=f"{row['SYS']}/{seg}",
            image_id=row["image"],
            image_path=find_image(row["image"]),
            candidate=hyp,
            references=refs,
            human_scores=(float(row[TARGETS[target]]),),
            system=row["SYS"],
            extra={**sub, "seg_id": seg, "set_id": int(row["set_id"]),
                   "candidate_in_references": verbatim_key(hyp) in {verbatim_key(r) for r in refs}},
        ))
    flagged = sum(1 for r in records if r.system == "Human" and r.extra["candidate_in_references"])
    notes = [f"{flagged} Human captions appear verbatim in their own references"] if include_human else []
    return Benchmark(
        name="thumb",
        records=records,
        settings={"human": "with" if include_human else "without", "target": target},
        statistic="pearson",
        files=[scores_path, refs_path],
        notes=notes,
    )
