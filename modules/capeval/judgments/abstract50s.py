"""ABSTRACT-50S (Vedantam et al. 2015): 400 caption pairs of abstract (clip-art) scenes.

Files under ``<data dir>/abstract50s/`` (the CIDEr release; not in shared/):

* ``abstract48S.json``: ``[{"image_id", "caption"}]``, 48 reference captions per scene.
* ``abstract_candsB.json``, ``abstract_candsC.json``: 400 entries ``{"image_id", "caption"}`` each;
  entry i of both files is candidate pair i of that scene.
* ``consensus_abstract.mat``: struct array ``triplets`` (1 × 19,200) with fields ``A`` (a reference),
  ``B``, ``C`` (the two candidates) and ``rating`` (+1: ``B`` judged closer to ``A``; -1: ``C``).
  Triplets come in 400 consecutive blocks of 48, block i = pair i. In the released file each text
  field is a 1 × 1 cell holding a char row vector and ``rating`` a 1 × 1 integer array; plain char
  fields (no cell) and double ratings are read too.

Careful: a triplet's ``B`` is ``abstract_candsC.json[i]`` and its ``C`` is ``abstract_candsB.json[i]``.
The loader does not trust that blindly: it compares the texts of every block with both candidate
files and counts each vote for the candidate it names (``ValueError`` naming the pair when neither
orientation matches; ``check_text=False`` falls back to the documented swap).

Records: ``candidates = (candsB[i], candsC[i])``; ``votes`` = (votes for candsB, votes for candsC);
``preferred`` = the majority, ``None`` on a tie. In the released file 12 of the 400 pairs split
their 48 votes 24/24; :meth:`Benchmark.evaluate` leaves them out of the accuracy by default
(``human_ties="exclude"``; ``"half"`` gives every metric 0.5 on them instead), and the benchmark's
notes report how many there are. Categories as in CIDEr-R's tables: the first
``hc_pairs`` (200) pairs are HC, the rest HI. References: ``"all"`` 48 (default) or a seeded sample
of k.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from capeval.judgments.files import image_finder, norm_space, read_json, require_file, resolve_root
from capeval.judgments.records import Benchmark, PairRecord

TRIPLETS_PER_PAIR = 48
REFS_FORMAT = 'abstract48S.json: [{"image_id": "<scene>.png", "caption": "..."}, ...] (48 per scene)'
CANDS_FORMAT = 'abstract_cands{B,C}.json: [{"image_id": "<scene>.png", "caption": "..."}, ...] (one per pair)'
MAT_FORMAT = (
    "consensus_abstract.mat (MATLAB): struct array 'triplets' 1 x (48 * pairs) with fields A, B, C (strings) "
    "and rating (+1: B closer to A, -1: C closer)"
)


def _mat_unwrap(value, what: str):
    """The single element inside MATLAB cells (object arrays of one element, at any nesting depth)."""
    for _ in range(16):
        if isinstance(value, np.ndarray) and value.dtype == object:
            if value.size != 1:
                raise ValueError(f"{what}: expected a 1 x 1 cell, got a cell of {value.size} elements")
            value = value.ravel()[0]
            continue
        return value
    raise ValueError(f"{what}: cells nested too deeply")


def _mat_str(value, what: str = "text") -> str:
    """A MATLAB string as scipy reads it: a char row vector (``array(['...'])``), possibly inside 1 x 1 cells.

    The released ``consensus_abstract.mat`` stores every ``A``/``B``/``C`` as a 1 x 1 cell holding a char
    row vector; ``chars_as_strings=False`` files give one character per element, which are joined.
    """
    value = _mat_unwrap(value, what)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    arr = np.asarray(value)
    if arr.dtype.kind in "US":
        flat = [x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x) for x in arr.ravel().tolist()]
        if not flat:
            return ""
        if len(flat) == 1:
            return flat[0]
        if all(len(x) <= 1 for x in flat):  # one character per element (chars_as_strings=False)
            return "".join(flat)
        raise ValueError(f"{what}: expected one string, got a char array of shape {arr.shape}")
    raise ValueError(f"{what}: expected a string, got {type(value).__name__} of dtype {getattr(arr, 'dtype', '?')}")


def _mat_num(value, what: str = "number") -> float:
    value = _mat_unwrap(value, what)
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected one number, got {type(value).__name__}") from None
    if arr.size != 1:
        raise ValueError(f"expected one number, got {arr.size}")
    return float(arr[0])


def read_triplets(path: Path) -> list[tuple[str, str, str, int]]:
    """``[(A, B, C, rating)]`` from ``consensus_abstract.mat`` (``rating`` in {+1, -1})."""
    import scipy.io

    require_file(path, MAT_FORMAT)
    try:
        mat = scipy.io.loadmat(str(path))
    except Exception as err:  # scipy raises several types for corrupt files
        raise ValueError(f"{path}: cannot be read as a MATLAB file ({err}); expected {MAT_FORMAT}.") from None
    if "triplets" not in mat:
        raise ValueError(f"{path}: variable 'triplets' missing; expected {MAT_FORMAT}.")
    trip = mat["triplets"]
    names = trip.dtype.names or ()
    if not {"A", "B", "C", "rating"} <= set(names):
        raise ValueError(f"{path}: 'triplets' has fields {names}; expected A, B, C, rating.")
    out = []
    for k, e in enumerate(trip.ravel()):
        try:
            rating = _mat_num(e["rating"], "rating")
            a, b, c = (_mat_str(e[f], f).strip() for f in "ABC")
        except ValueError as err:
            raise ValueError(f"{path}: triplet {k}: {err}; expected {MAT_FORMAT}.") from None
        if rating not in (1.0, -1.0):
            raise ValueError(f"{path}: triplet {k} has rating {rating}; expected +1 or -1.")
        out.append((a, b, c, int(rating)))
    return out


def _entries(path: Path, fmt: str) -> list[tuple[str, str]]:
    data = read_json(path, fmt)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list; expected {fmt}.")
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or "image_id" not in item or "caption" not in item:
            raise ValueError(f"{path}: item {i} needs 'image_id' and 'caption'; expected {fmt}.")
        out.append((str(item["image_id"]), str(item["caption"]).strip()))
    return out


def _key(text: str) -> str:
    return norm_space(text).lower()


def load_abstract50s(
    root: str | Path | None = None,
    *,
    references: str | int = "all",
    seed: int = 0,
    hc_pairs: int = 200,
    check_text: bool = True,
    image_dir: str | Path | None = None,
) -> Benchmark:
    """ABSTRACT-50S pairs with the 48-vote human majority (ties kept as ``preferred=None``)."""
    if not (references == "all" or (isinstance(references, int) and references >= 1)):
        raise ValueError(f"references must be 'all' or a positive integer, got {references!r}.")
    base = resolve_root(root) / "abstract50s"
    refs_path, b_path, c_path = base / "abstract48S.json", base / "abstract_candsB.json", base / "abstract_candsC.json"
    mat_path = base / "consensus_abstract.mat"
    scene_refs: dict[str, list[str]] = defaultdict(list)
    for scene, caption in _entries(refs_path, REFS_FORMAT):
        scene_refs[scene].append(caption)
    cands_b, cands_c = _entries(b_path, CANDS_FORMAT), _entries(c_path, CANDS_FORMAT)
    triplets = read_triplets(mat_path)
    if len(cands_b) != len(cands_c):
        raise ValueError(f"{b_path.name} has {len(cands_b)} entries but {c_path.name} has {len(cands_c)}.")
    if len(triplets) != TRIPLETS_PER_PAIR * len(cands_b):
        raise ValueError(
            f"{mat_path}: {len(triplets)} triplets for {len(cands_b)} pairs; expected {TRIPLETS_PER_PAIR} per pair."
        )
    find_image = image_finder(base, image_dir, ("images",))

    records, unswapped = [], 0
    for i, ((scene, text_b), (scene_c, text_c)) in enumerate(zip(cands_b, cands_c)):
        if scene != scene_c:
            raise ValueError(f"pair {i}: {b_path.name} names scene {scene!r} but {c_path.name} names {scene_c!r}.")
        if scene not in scene_refs:
            raise ValueError(f"pair {i}: scene {scene!r} has no references in {refs_path.name}.")
        block = triplets[i * TRIPLETS_PER_PAIR:(i + 1) * TRIPLETS_PER_PAIR]
        swapped = _orientation(block, text_b, text_c, i, check_text)
        unswapped += not swapped
        # rating +1 = the triplet's B is closer. With the documented swap B is candsC (candidate b).
        plus_for_b = sum(1 for *_, r in block if r == 1)
        minus = TRIPLETS_PER_PAIR - plus_for_b
        votes = (minus, plus_for_b) if swapped else (plus_for_b, minus)
        preferred = None if votes[0] == votes[1] else int(votes[1] > votes[0])
        records.append(PairRecord(
            benchmark="abstract50s",
            source_id=f"pair{i:03d}",
            image_id=scene,
            image_path=find_image(scene),
            candidates=(text_b, text_c),
            references=_pick(scene_refs[scene], references, seed, i),
            preferred=preferred,
            votes=votes,
            category="HC" if i < hc_pairs else "HI",
            extra={"pair_index": i},
        ))
    notes = [f"{sum(r.is_tie for r in records)} pairs tied (24/24 votes)"]
    if unswapped:
        notes.append(f"{unswapped} pairs had triplet B = candsB (not the documented swap); votes follow the text")
    settings = {"refs": references, **({"seed": seed} if isinstance(references, int) else {}), "label": "majority-48"}
    return Benchmark(
        name="abstract50s", records=records, settings=settings, statistic="accuracy",
        files=[refs_path, b_path, c_path, mat_path], notes=notes,
    )


def _orientation(block, text_b: str, text_c: str, i: int, check_text: bool) -> bool:
    """True when the block's B/C are candsC/candsB (the documented swap)."""
    if not check_text:
        return True
    kb, kc = _key(text_b), _key(text_c)
    triplet_pairs = {(_key(b), _key(c)) for _, b, c, _ in block}
    if triplet_pairs == {(kc, kb)}:
        return True
    if triplet_pairs == {(kb, kc)}:
        return False
    raise ValueError(
        f"pair {i}: the triplets' B/C texts {sorted(triplet_pairs)[:1]} match neither (candsC, candsB) "
        f"= ({text_c!r}, {text_b!r}) nor the reverse; pass check_text=False to trust the documented swap."
    )


def _pick(refs: list[str], how: str | int, seed: int, pair_index: int) -> tuple[str, ...]:
    if how == "all":
        return tuple(refs)
    if how > len(refs):
        raise ValueError(f"pair {pair_index}: asked for {how} references but the scene has {len(refs)}.")
    rng = np.random.default_rng([seed, pair_index])
    return tuple(refs[k] for k in np.sort(rng.choice(len(refs), size=how, replace=False)))
