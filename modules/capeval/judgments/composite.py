"""COMPOSITE (Aditya et al. 2017): 11,985 captions with 1-5 correctness judgments.

Files under ``<data dir>/composite/`` (decoded from UMIC's WordPiece ids; see its PROVENANCE.md):

* ``composite_{8k,30k,coco}.jsonl``: one caption per line with ``subset``, ``txt_id``, ``image``
  (file name), ``image_id``, ``candidate_position`` (0 = the dataset's human caption, 1 = a neural
  captioner, 2 = the scene-description-graph system), ``source_guess``, ``caption``, ``score``
  (1-5), ``human_ref_match``, ``matched_ref_ids``.
* ``references_{8k,30k,coco}.json``: ``{image file: [{"ref_id", "caption"}, ...]}``.

The position-0 candidate is one of its image's references. Following CLIPScore, the matched
reference(s) (``matched_ref_ids`` of the position-0 caption) are removed from that image's
references for all three candidates (``drop_matched_reference=True``), leaving 4 (8k, 30k, 2,003
COCO images), 5 (2 COCO images with 6 captions) or 3 (2 COCO images whose human caption occurs
twice among their 5). Caveat: the caption text is UMIC's lowercased, mostly punctuation-free text.
Statistic: Kendall tau-c by default (CLIPScore/PAC-S report tau-c; ``tau_variant="b"`` also).
"""
from __future__ import annotations

from pathlib import Path

from capeval.judgments.files import COCO_IMAGE_DIRS, FLICKR8K_IMAGE_DIRS, image_finder, read_json, read_jsonl, resolve_root
from capeval.judgments.records import Benchmark, CaptionRecord

SUBSETS = ("8k", "30k", "coco")
CAPTIONS_FORMAT = (
    "composite_<subset>.jsonl: one JSON object per caption with subset, txt_id, image, image_id, "
    "candidate_position, source_guess, caption, score (1-5), matched_ref_ids"
)
REFERENCES_FORMAT = 'references_<subset>.json: {"<image file>": [{"ref_id": ..., "caption": "..."}, ...]}'
_IMAGE_DIRS = {"8k": FLICKR8K_IMAGE_DIRS, "30k": ("flickr30k/images", "flickr30k-images"), "coco": COCO_IMAGE_DIRS}


def _subsets(subset: str) -> tuple[str, ...]:
    if subset == "all":
        return SUBSETS
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {(*SUBSETS, 'all')}, got {subset!r}.")
    return (subset,)


def load_composite(
    root: str | Path | None = None,
    *,
    subset: str = "all",
    drop_matched_reference: bool = True,
    tau_variant: str = "c",
) -> Benchmark:
    """COMPOSITE correctness judgments; ``subset`` is ``"8k"``, ``"30k"``, ``"coco"`` or ``"all"``."""
    if tau_variant not in ("b", "c"):
        raise ValueError(f"tau_variant must be 'b' or 'c', got {tau_variant!r}.")
    base = resolve_root(root) / "composite"
    records: list[CaptionRecord] = []
    files: list[Path] = []
    for sub in _subsets(subset):
        cap_path, ref_path = base / f"composite_{sub}.jsonl", base / f"references_{sub}.json"
        rows = read_jsonl(cap_path, CAPTIONS_FORMAT)
        refs = read_json(ref_path, REFERENCES_FORMAT)
        files += [cap_path, ref_path]
        find_image = image_finder(base.parent, None, _IMAGE_DIRS[sub])
        matched: dict[str, set] = {}
        for n, row in enumerate(rows, 1):
            _check_row(row, cap_path, n)
            if row["candidate_position"] == 0:
                matched[row["image"]] = set(row.get("matched_ref_ids") or [])
        for n, row in enumerate(rows, 1):
            image = row["image"]
            if image not in refs:
                raise ValueError(f"{cap_path}:{n}: image {image!r} has no entry in {ref_path.name}.")
            drop = matched.get(image, set()) if drop_matched_reference else set()
            if drop_matched_reference and not drop:
                raise ValueError(
                    f"{cap_path}:{n}: image {image!r} has no position-0 caption matched to a reference; "
                    "load with drop_matched_reference=False to keep all references."
                )
            kept = tuple(r["caption"].strip() for r in refs[image] if r["ref_id"] not in drop)
            records.append(CaptionRecord(
                benchmark="composite",
                source_id=f"{sub}/{row['txt_id']}",
                image_id=image,
                image_path=find_image(image),
                candidate=row["caption"].strip(),
                references=kept,
                human_scores=(float(row["score"]),),
                category=sub,
                system=row.get("source_guess"),
                extra={"txt_id": str(row["txt_id"]), "original_image_id": str(row["image_id"]),
                       "candidate_position": int(row["candidate_position"])},
            ))
    return Benchmark(
        name="composite",
        records=records,
        settings={"subset": subset, "refs": "minus-matched" if drop_matched_reference else "all", "tau": tau_variant},
        statistic=f"kendall_{tau_variant}",
        files=files,
        notes=["caption text is UMIC's decoded text: lowercase, most punctuation removed"],
    )


def _check_row(row: dict, path: Path, n: int) -> None:
    for key in ("txt_id", "image", "image_id", "candidate_position", "caption", "score"):
        if key not in row:
            raise ValueError(f"{path}:{n}: missing field {key!r}; expected {CAPTIONS_FORMAT}.")
    if not isinstance(row["caption"], str) or not row["caption"].strip():
        raise ValueError(f"{path}:{n}: empty caption.")
    if row["score"] not in (1, 2, 3, 4, 5):
        raise ValueError(f"{path}:{n}: score must be an integer 1-5, got {row['score']!r}.")
