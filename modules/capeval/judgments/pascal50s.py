"""PASCAL-50S (Vedantam et al. 2015): 4,000 caption pairs, which one is closer to the references.

Files under ``<data dir>/pascal50s/``:

* ``cider-matlab/pair_pascal.mat``: ``new_input`` (1×4000 struct: ``name``, ``sent1``, ``sent2``),
  ``new_data`` (4000×2 system codes: 1-5 machine, 6 human, 7 random human caption of another
  image), ``category`` (1×4000: 1 HC, 2 HI, 3 HM, 4 MM). Its ``result`` field is *not* the
  consensus label and is not used.
* ``cider-matlab/pascal50S.mat``: ``refs`` (1×1000 struct: ``image``, ``sent`` with 50 sentences).
* ``expert-processed/pascal_50s.json``: ``{"HC"|"HI"|"HM"|"MM": [{image, captions: [a, b],
  label: 0|1, references: [5]}]}`` in pair order within each category; ``label`` 0 = ``a``
  preferred. These binary labels come from the 48-vote consensus (raw votes not available here;
  how ties were broken upstream is unknown), so records have ``votes=None`` and no ties.

References (``references=``): ``"expert"`` (default: the 5 given per pair in the EXPERT file,
the sample CLIPScore/PAC-S-style numbers use), ``"all"`` (all 50), or an integer k (a seeded
sample of k of the 50 per pair; ``seed=``, the same seed gives the same sample).
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from capeval.judgments.files import PASCAL_IMAGE_DIRS, image_finder, read_json, require_file, resolve_root
from capeval.judgments.records import Benchmark, PairRecord

CATEGORIES = ("HC", "HI", "HM", "MM")
PAIR_FORMAT = "pair_pascal.mat (MATLAB): new_input 1x4000 struct (name, sent1, sent2), new_data 4000x2, category 1x4000"
REFS_FORMAT = "pascal50S.mat (MATLAB): refs 1x1000 struct (image, sent: 50 sentences)"
EXPERT_FORMAT = 'pascal_50s.json: {"HC": [{"image", "captions": [a, b], "label": 0|1, "references": [...]}], "HI": ..., "HM": ..., "MM": ...}'


def _mat_str(value) -> str:
    arr = np.asarray(value).ravel()
    return str(arr[0]) if arr.size else ""


def _loadmat(path: Path, fmt: str) -> dict:
    import scipy.io

    require_file(path, fmt)
    try:
        return scipy.io.loadmat(str(path))
    except Exception as err:  # scipy raises several types for corrupt files
        raise ValueError(f"{path}: cannot be read as a MATLAB file ({err}); expected {fmt}.") from None


def read_pairs(path: Path) -> tuple[list[tuple[str, str, str]], list[str], np.ndarray]:
    """``([(image, sent1, sent2)], [category], new_data)`` from ``pair_pascal.mat`` (text stripped)."""
    mat = _loadmat(path, PAIR_FORMAT)
    for key in ("new_input", "category", "new_data"):
        if key not in mat:
            raise ValueError(f"{path}: variable {key!r} missing; expected {PAIR_FORMAT}.")
    items = mat["new_input"].ravel()
    codes = mat["category"].ravel()
    new_data = np.asarray(mat["new_data"])
    if len(items) != len(codes) or new_data.shape != (len(items), 2):
        raise ValueError(f"{path}: new_input, category and new_data disagree in length.")
    pairs = [(_mat_str(e["name"]).strip(), _mat_str(e["sent1"]).strip(), _mat_str(e["sent2"]).strip()) for e in items]
    bad = [i for i, c in enumerate(codes) if not 1 <= int(c) <= 4]
    if bad:
        raise ValueError(f"{path}: pair {bad[0]} has category code {codes[bad[0]]}; expected 1-4 (HC, HI, HM, MM).")
    return pairs, [CATEGORIES[int(c) - 1] for c in codes], new_data


def read_references(path: Path) -> dict[str, list[str]]:
    """``{image: [50 sentences]}`` from ``pascal50S.mat``."""
    mat = _loadmat(path, REFS_FORMAT)
    if "refs" not in mat:
        raise ValueError(f"{path}: variable 'refs' missing; expected {REFS_FORMAT}.")
    out = {}
    for e in mat["refs"].ravel():
        out[_mat_str(e["image"]).strip()] = [_mat_str(s).strip() for s in np.asarray(e["sent"]).ravel()]
    return out


def load_pascal50s(
    root: str | Path | None = None,
    *,
    references: str | int = "expert",
    seed: int = 0,
    image_dir: str | Path | None = None,
) -> Benchmark:
    """PASCAL-50S pairs with human preference labels; see the module docstring for ``references``."""
    if not (references in ("expert", "all") or (isinstance(references, int) and 1 <= references <= 50)):
        raise ValueError(f"references must be 'expert', 'all' or an integer 1-50, got {references!r}.")
    base = resolve_root(root) / "pascal50s"
    pair_path = base / "cider-matlab" / "pair_pascal.mat"
    refs_path = base / "cider-matlab" / "pascal50S.mat"
    expert_path = base / "expert-processed" / "pascal_50s.json"
    pairs, categories, new_data = read_pairs(pair_path)
    all_refs = read_references(refs_path)
    expert = read_json(expert_path, EXPERT_FORMAT)
    if not isinstance(expert, dict) or set(expert) != set(CATEGORIES):
        raise ValueError(f"{expert_path}: expected the keys {CATEGORIES}; expected {EXPERT_FORMAT}.")
    find_image = image_finder(base.parent, image_dir, PASCAL_IMAGE_DIRS)

    # The EXPERT file lists each category's pairs in pair_pascal.mat order; join by position and check.
    position_in_category: dict[str, int] = defaultdict(int)
    records = []
    for i, ((image, a, b), cat) in enumerate(zip(pairs, categories)):
        j = position_in_category[cat]
        position_in_category[cat] += 1
        if j >= len(expert[cat]):
            raise ValueError(f"{expert_path}: category {cat} has {len(expert[cat])} items, pair_pascal.mat more.")
        item = expert[cat][j]
        if item["image"].rsplit("/", 1)[-1] != image or [c.strip() for c in item["captions"]] != [a, b]:
            raise ValueError(f"{expert_path}: {cat}[{j}] does not match pair {i} of pair_pascal.mat ({image}).")
        if item["label"] not in (0, 1):
            raise ValueError(f"{expert_path}: {cat}[{j}] label must be 0 or 1, got {item['label']!r}.")
        if image not in all_refs:
            raise ValueError(f"{refs_path}: no references for image {image!r} (pair {i}).")
        refs = _pick_references(all_refs[image], item["references"], references, seed, i)
        records.append(PairRecord(
            benchmark="pascal50s",
            source_id=f"pair{i:04d}",
            image_id=image,
            image_path=find_image(image),
            candidates=(a, b),
            references=refs,
            preferred=int(item["label"]),
            votes=None,
            category=cat,
            extra={"pair_index": i, "systems": (int(new_data[i, 0]), int(new_data[i, 1]))},
        ))
    short = {c: len(v) for c, v in expert.items() if len(v) != position_in_category[c]}
    if short:
        raise ValueError(f"{expert_path}: item counts {short} differ from pair_pascal.mat {dict(position_in_category)}.")
    settings = {"refs": references, **({"seed": seed} if isinstance(references, int) else {}), "label": "expert-consensus"}
    return Benchmark(
        name="pascal50s",
        records=records,
        settings=settings,
        statistic="accuracy",
        files=[pair_path, refs_path, expert_path],
        notes=["human labels: binary consensus labels of the EXPERT file (raw 48 votes not available)"],
    )


def _pick_references(all50: list[str], expert5: list[str], how: str | int, seed: int, pair_index: int) -> tuple[str, ...]:
    if how == "expert":
        return tuple(r.strip() for r in expert5)
    if how == "all":
        return tuple(all50)
    rng = np.random.default_rng([seed, pair_index])
    chosen = np.sort(rng.choice(len(all50), size=how, replace=False))
    return tuple(all50[k] for k in chosen)
