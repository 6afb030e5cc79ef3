"""Flickr8k-Expert and Flickr8k-CrowdFlower (Hodosh, Young & Hockenmaier 2013).

Files, as in the official ``Flickr8k_text`` release, under ``<data dir>/flickr8k/``:

* ``Flickr8k.token.txt``: ``<image>.jpg#<0-4>\\t<caption>``, 40,460 lines. It carries one known
  bogus image name, ``2258277193_586949ec62.jpg.1`` (5 captions of an image that is in no split
  and has no file); names that do not end in ``.jpg`` are skipped and reported in the notes.
* ``ExpertAnnotations.txt``: ``image\\tcaption id\\ts1\\ts2\\ts3``, three expert scores 1-4,
  5,822 rows over 1,000 test images.
* ``CrowdFlowerAnnotations.txt``: ``image\\tcaption id\\tfraction yes\\t#yes\\t#no``
  (47,830 rows over 1,000 test images).

The candidate of a row is the caption ``caption id`` of the token file; it is a caption of some
image (often another one). When it is a caption of the query image itself the pair is a
"self-reference" pair (158 of the expert rows).

Protocols (``protocol=``):

* ``"clipscore"`` (default; Hessel et al. 2021, appendix A; PAC-S): Expert: drop the pairs whose
  candidate text is one of the query image's captions, keep the 5 captions as references, one row
  per expert score, Kendall tau-c. CrowdFlower: keep every row; the references of a query image are
  its captions minus every caption that occurs as a candidate of that image anywhere in the file
  (CLIPScore removes them from the image's shared reference list); Kendall tau-b against the
  fraction of "yes".
* ``"cui"`` (Cui et al. 2018 following SPICE): every pair; the candidate is removed from its own
  references (so the self-reference pairs keep 4); one row per (human score, metric score) pair;
  Kendall tau-b (scipy's default; the paper does not name the variant) — override with
  ``tau_variant=``.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from capeval.judgments.files import FLICKR8K_IMAGE_DIRS, image_finder, require_file, resolve_root
from capeval.judgments.records import Benchmark, CaptionRecord

PROTOCOLS = ("clipscore", "cui")
TOKEN_FORMAT = "Flickr8k.token.txt: one caption per line, '<image>.jpg#<0-4>' TAB caption"
EXPERT_FORMAT = "ExpertAnnotations.txt: tab-separated image, caption id '<image>.jpg#<0-4>', three expert scores 1-4"
CROWDFLOWER_FORMAT = (
    "CrowdFlowerAnnotations.txt (official Flickr8k text release): tab-separated, no header: image, "
    "caption id '<image>.jpg#<0-4>', fraction of 'yes', number of yes, number of no"
)
_CAPTION_ID = re.compile(r"^(?P<image>.+)#(?P<n>\d+)$")


@dataclass
class Flickr8kCaptions:
    """The token file: caption text by caption id, and each image's captions in file order."""

    by_id: dict[str, str]
    by_image: dict[str, list[tuple[str, str]]]  # image -> [(caption id, caption)]
    skipped_images: list[str]


def read_token_file(path: Path) -> Flickr8kCaptions:
    """Parse ``Flickr8k.token.txt`` (``ValueError`` naming the line on malformed input)."""
    require_file(path, TOKEN_FORMAT)
    by_id: dict[str, str] = {}
    by_image: dict[str, list[tuple[str, str]]] = defaultdict(list)
    skipped: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            cap_id, tab, caption = line.partition("\t")
            match = _CAPTION_ID.match(cap_id)
            if not tab or match is None:
                raise ValueError(f"{path}:{n}: expected '<image>.jpg#<n>' TAB caption, got {line[:80]!r}.")
            image = match["image"]
            if not image.endswith(".jpg"):  # the bogus '2258277193_586949ec62.jpg.1'
                if image not in skipped:
                    skipped.append(image)
                continue
            if cap_id in by_id:
                raise ValueError(f"{path}:{n}: caption id {cap_id!r} occurs twice.")
            by_id[cap_id] = caption.strip()
            by_image[image].append((cap_id, caption.strip()))
    return Flickr8kCaptions(by_id, dict(by_image), skipped)


def _tsv_rows(path: Path, n_cols: int) -> Iterator[tuple[int, list[str]]]:
    """``(line number, columns)`` for every non-blank line; ``ValueError`` naming a line with another width."""
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            cols = line.rstrip("\r\n").split("\t")
            if len(cols) != n_cols:
                raise ValueError(f"{path}:{n}: expected {n_cols} tab-separated columns, got {len(cols)}.")
            yield n, cols


def read_expert_file(path: Path) -> list[tuple[str, str, tuple[int, int, int]]]:
    """``[(query image, caption id, (s1, s2, s3))]`` from ``ExpertAnnotations.txt``."""
    require_file(path, EXPERT_FORMAT)
    rows = []
    for n, cols in _tsv_rows(path, 5):
        try:
            scores = tuple(int(c) for c in cols[2:])
        except ValueError:
            raise ValueError(f"{path}:{n}: expert scores must be integers 1-4, got {cols[2:]}.") from None
        if not all(1 <= s <= 4 for s in scores):
            raise ValueError(f"{path}:{n}: expert scores must be in 1..4, got {scores}.")
        rows.append((cols[0], cols[1], scores))
    return rows


def read_crowdflower_file(path: Path) -> list[tuple[str, str, float, int, int]]:
    """``[(query image, caption id, fraction yes, #yes, #no)]`` from ``CrowdFlowerAnnotations.txt``.

    The fraction must equal ``#yes / (#yes + #no)`` to 1e-4 (``ValueError`` naming the line).
    """
    require_file(path, CROWDFLOWER_FORMAT)
    rows = []
    for n, cols in _tsv_rows(path, 5):
        try:
            frac, n_yes, n_no = float(cols[2]), int(cols[3]), int(cols[4])
        except ValueError:
            raise ValueError(f"{path}:{n}: expected fraction, #yes, #no numbers, got {cols[2:]}.") from None
        if n_yes < 0 or n_no < 0 or n_yes + n_no == 0:
            raise ValueError(f"{path}:{n}: needs at least one judgment, got #yes={n_yes} #no={n_no}.")
        if not math.isfinite(frac) or abs(frac - n_yes / (n_yes + n_no)) > 1e-4:
            raise ValueError(
                f"{path}:{n}: fraction {cols[2]} does not equal #yes/(#yes+#no) = {n_yes}/{n_yes + n_no}."
            )
        rows.append((cols[0], cols[1], frac, n_yes, n_no))
    return rows


def _lookup(captions: Flickr8kCaptions, path: Path, n: int, image: str, cap_id: str) -> str:
    if image not in captions.by_image:
        raise ValueError(f"{path} row {n}: query image {image!r} has no captions in Flickr8k.token.txt.")
    if cap_id not in captions.by_id:
        raise ValueError(f"{path} row {n}: caption id {cap_id!r} is not in Flickr8k.token.txt.")
    return captions.by_id[cap_id]


def _check_protocol(protocol: str, tau_variant: str | None, default_variant: str) -> str:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
    variant = tau_variant or default_variant
    if variant not in ("b", "c"):
        raise ValueError(f"tau_variant must be 'b' or 'c', got {tau_variant!r}.")
    return variant


def load_expert(
    root: str | Path | None = None,
    *,
    protocol: str = "clipscore",
    tau_variant: str | None = None,
    image_dir: str | Path | None = None,
) -> Benchmark:
    """Flickr8k-Expert: 5,822 pairs × 3 expert scores (1-4); see the module docstring for protocols."""
    variant = _check_protocol(protocol, tau_variant, "c" if protocol == "clipscore" else "b")
    base = resolve_root(root) / "flickr8k"
    token_path, expert_path = base / "Flickr8k.token.txt", base / "ExpertAnnotations.txt"
    captions = read_token_file(token_path)
    rows = read_expert_file(expert_path)
    find_image = image_finder(base.parent, image_dir, FLICKR8K_IMAGE_DIRS)

    records, dropped = [], 0
    for n, (image, cap_id, scores) in enumerate(rows, 1):
        candidate = _lookup(captions, expert_path, n, image, cap_id)
        own = captions.by_image[image]
        is_self = any(text == candidate for _, text in own)
        if protocol == "clipscore":
            if is_self:
                dropped += 1
                continue
            refs = tuple(text for _, text in own)
        else:
            refs = tuple(text for cid, text in own if cid != cap_id)
        records.append(CaptionRecord(
            benchmark="flickr8k-expert",
            source_id=f"{image}|{cap_id}",
            image_id=image,
            image_path=find_image(image),
            candidate=candidate,
            references=refs,
            human_scores=tuple(float(s) for s in scores),
            extra={"caption_id": cap_id, "candidate_in_references": is_self},
        ))
    notes = [f"token file: skipped bogus image name(s) {captions.skipped_images}"] if captions.skipped_images else []
    if protocol == "clipscore":
        notes.append(f"dropped {dropped} pairs whose candidate is one of the query image's own captions")
    else:
        notes.append("candidate removed from its own references (self-reference pairs keep 4)")
    return Benchmark(
        name="flickr8k-expert",
        records=records,
        settings={"protocol": protocol, "tau": variant, "refs": "own-5" if protocol == "clipscore" else "own-minus-candidate"},
        statistic=f"kendall_{variant}",
        files=[token_path, expert_path],
        notes=notes,
    )


def load_crowdflower(
    root: str | Path | None = None,
    *,
    protocol: str = "clipscore",
    tau_variant: str | None = None,
    image_dir: str | Path | None = None,
) -> Benchmark:
    """Flickr8k-CrowdFlower: fraction of raters who said the caption describes the image.

    ``human_scores`` is the fraction (in [0, 1]) as written in the file; ``extra`` keeps ``n_yes``
    and ``n_no``. Both protocols keep every row and use Kendall tau-b by default; they differ in
    the references (see the module docstring).
    """
    variant = _check_protocol(protocol, tau_variant, "b")
    base = resolve_root(root) / "flickr8k"
    token_path, cf_path = base / "Flickr8k.token.txt", base / "CrowdFlowerAnnotations.txt"
    rows = read_crowdflower_file(cf_path)
    captions = read_token_file(token_path)
    find_image = image_finder(base.parent, image_dir, FLICKR8K_IMAGE_DIRS)

    texts = [_lookup(captions, cf_path, n, image, cap_id) for n, (image, cap_id, *_) in enumerate(rows, 1)]
    shared_refs: dict[str, list[str]] = {}
    if protocol == "clipscore":
        # CLIPScore's preprocessing: every candidate text found among the query image's captions is
        # removed (first occurrence) from that image's one shared reference list.
        for (image, *_), text in zip(rows, texts):
            refs_of_image = shared_refs.setdefault(image, [t for _, t in captions.by_image[image]])
            if text in refs_of_image:
                refs_of_image.remove(text)

    records = []
    for (image, cap_id, frac, n_yes, n_no), text in zip(rows, texts):
        own = captions.by_image[image]
        if protocol == "clipscore":
            refs = tuple(shared_refs[image])
        else:
            refs = tuple(t for cid, t in own if cid != cap_id)
        if not refs:
            raise ValueError(f"{cf_path}: query image {image!r} has no reference left after removing candidates.")
        records.append(CaptionRecord(
            benchmark="flickr8k-crowdflower",
            source_id=f"{image}|{cap_id}",
            image_id=image,
            image_path=find_image(image),
            candidate=text,
            references=refs,
            human_scores=(frac,),
            extra={"caption_id": cap_id, "n_yes": n_yes, "n_no": n_no,
                   "candidate_in_references": any(cid == cap_id for cid, _ in own)},
        ))
    refs_setting = "own-minus-all-candidates" if protocol == "clipscore" else "own-minus-candidate"
    return Benchmark(
        name="flickr8k-crowdflower",
        records=records,
        settings={"protocol": protocol, "tau": variant, "refs": refs_setting},
        statistic=f"kendall_{variant}",
        files=[token_path, cf_path],
        notes=[f"token file: skipped bogus image name(s) {captions.skipped_images}"] if captions.skipped_images else [],
    )
