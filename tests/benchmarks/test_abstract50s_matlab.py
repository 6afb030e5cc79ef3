"""ABSTRACT-50S from a ``consensus_abstract.mat`` laid out the way MATLAB writes the released file.

The CIDEr release's file is a 1 x 19,200 struct array ``triplets`` whose ``A``, ``B``, ``C`` fields are
each a 1 x 1 *cell* holding a char row vector, and whose ``rating`` is a 1 x 1 integer array (+1/-1).
scipy reads a cell as an object array, so a loader that takes "the first element" gets the inner
char array and stringifies it as ``"['...']"``. The fixture here is written with ``scipy.io.savemat``
from object arrays of 1 x 1 cells (``oned_as='row'``), with quotes, commas and non-ASCII text.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from capeval.judgments import load_benchmark
from capeval.judgments.abstract50s import read_triplets

SCENES = ["Seed7K_223_2.png", "Seed7K_301_0.png", "Seed7K_005_1.png"]
# (scene, candsB caption, candsC caption, votes for candsB out of 48)
PAIRS = [
    (SCENES[0], 'mike, jenny, and the dog are "playing" outside', "Jenny kicks the ball; Mike waves.", 30),
    (SCENES[1], "Mike's café: jenny eats a crêpe, naïvely", "the bear, the owl — and a tree", 24),  # even split
    (SCENES[2], "Jenny is sad.", 'Mike says "hi" to the cat, twice', 9),
]


def _refs(scene: str) -> list[str]:
    return [f"Reference {k} of {scene}: Mike, Jenny — “quoted” ünïcode, comma" for k in range(48)]


def _cell(value) -> np.ndarray:
    cell = np.empty((1, 1), dtype=object)
    cell[0, 0] = value
    return cell


def write_matlab_layout(root: Path, pairs=PAIRS, *, cells: bool = True, rating_dtype=np.int8) -> Path:
    """Write the four ABSTRACT-50S files under ``root/abstract50s``; triplet B = candsC, C = candsB."""
    import scipy.io

    base = root / "abstract50s"
    base.mkdir(parents=True, exist_ok=True)
    refs = [{"image_id": s, "caption": c} for s in dict.fromkeys(p[0] for p in pairs) for c in _refs(s)]
    (base / "abstract48S.json").write_text(json.dumps(refs, ensure_ascii=False), encoding="utf-8")
    (base / "abstract_candsB.json").write_text(
        json.dumps([{"image_id": s, "caption": b} for s, b, _, _ in pairs], ensure_ascii=False), encoding="utf-8")
    (base / "abstract_candsC.json").write_text(
        json.dumps([{"image_id": s, "caption": c} for s, _, c, _ in pairs], ensure_ascii=False), encoding="utf-8")
    triplets = np.empty((1, 48 * len(pairs)), dtype=[("A", "O"), ("B", "O"), ("C", "O"), ("rating", "O")])
    wrap = _cell if cells else (lambda v: v)
    k = 0
    for scene, cand_b, cand_c, for_b in pairs:
        ratings = [-1] * for_b + [1] * (48 - for_b)  # -1: triplet C (= candsB) is closer
        for a, rating in zip(_refs(scene), ratings):
            triplets[0, k] = (wrap(a), wrap(cand_c), wrap(cand_b), np.array([[rating]], dtype=rating_dtype))
            k += 1
    path = base / "consensus_abstract.mat"
    scipy.io.savemat(str(path), {"triplets": triplets}, oned_as="row")
    return path


def test_fixture_has_the_released_layout(tmp_path):
    """The fixture really is cell-wrapped: scipy gives object arrays around the char arrays."""
    import scipy.io

    path = write_matlab_layout(tmp_path)
    trip = scipy.io.loadmat(str(path))["triplets"]
    assert trip.shape == (1, 144)
    first = trip.ravel()[0]
    assert first["A"].dtype == object and first["A"].shape == (1, 1)
    inner = first["A"].ravel()[0]
    assert inner.dtype.kind == "U" and inner.shape == (1,)
    assert str(inner).startswith("['Reference 0")  # what the old loader produced
    assert first["rating"].dtype.kind == "i"


@pytest.mark.parametrize("cells", [True, False])
@pytest.mark.parametrize("rating_dtype", [np.int8, np.int16, np.float64])
def test_read_triplets_real_and_simplified_layout(tmp_path, cells, rating_dtype):
    path = write_matlab_layout(tmp_path, cells=cells, rating_dtype=rating_dtype)
    triplets = read_triplets(path)
    assert len(triplets) == 144
    a, b, c, r = triplets[0]
    assert a == _refs(SCENES[0])[0] and b == PAIRS[0][2] and c == PAIRS[0][1] and r == -1
    assert triplets[48][1] == "the bear, the owl — and a tree" and triplets[48][2] == "Mike's café: jenny eats a crêpe, naïvely"
    assert [t[3] for t in triplets[:48]].count(-1) == 30


def test_load_abstract50s_from_matlab_cells(tmp_path):
    write_matlab_layout(tmp_path)
    bench = load_benchmark("abstract50s", tmp_path, hc_pairs=2)
    assert [r.candidates for r in bench.records] == [(b, c) for _, b, c, _ in PAIRS]
    assert [r.votes for r in bench.records] == [(30, 18), (24, 24), (9, 39)]
    assert [r.preferred for r in bench.records] == [0, None, 1]
    assert bench.counts()["ties"] == 1 and any("1 pairs tied" in n for n in bench.notes)
    assert not any("documented swap" in n for n in bench.notes)
    assert all(len(r.references) == 48 and r.references[0].startswith("Reference 0") for r in bench.records)
    # even human split: excluded from accuracy by default, half credit on request
    out = bench.evaluate([1.0, 0.0, 0.0], [0.0, 1.0, 1.0])
    assert out["value"] == pytest.approx(1.0)
    half = bench.evaluate([1.0, 0.0, 0.0], [0.0, 1.0, 1.0], human_ties="half")
    assert half["categories"]["HC"]["value"] == pytest.approx(0.75)


def test_cell_with_several_strings_is_refused_naming_the_triplet(tmp_path):
    import scipy.io

    path = write_matlab_layout(tmp_path)
    trip = scipy.io.loadmat(str(path))["triplets"]
    two = np.empty((1, 2), dtype=object)
    two[0, 0], two[0, 1] = "one", "two"
    trip[0, 5]["B"] = two
    scipy.io.savemat(str(path), {"triplets": trip}, oned_as="row")
    with pytest.raises(ValueError, match=r"triplet 5: B: expected a 1 x 1 cell, got a cell of 2 elements"):
        read_triplets(path)


def test_capeval_bench_abstract50s_cli_reads_the_matlab_file(tmp_path, monkeypatch, capsys):
    """The command that failed on the released file (`pair 0: the triplets' B/C texts [("['...']", ...)]`)."""
    from capeval.cli import main

    write_matlab_layout(tmp_path / "data")
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["bench", "abstract50s", "--metrics", "bleu_4", "--no-cache"]) == 0
    out = capsys.readouterr()
    assert "bleu_4" in out.out and "Traceback" not in out.err and "match neither" not in out.err
