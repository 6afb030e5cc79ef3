"""Benchmark loaders on self-made fixtures in the original formats (no shared data needed)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from capeval.judgments import BENCHMARK_NAMES, load_benchmark, stats
from capeval.judgments.records import Benchmark, CaptionRecord
from support import FIXTURES

DATA_FIXTURES = FIXTURES / "data"
IMG_A, IMG_B, IMG_C = "1000000001_aaaaaaaaaa.jpg", "1000000002_bbbbbbbbbb.jpg", "1000000003_cccccccccc.jpg"


def token_captions(image: str) -> list[str]:
    lines = (DATA_FIXTURES / "flickr8k" / "Flickr8k.token.txt").read_text().splitlines()
    return [line.split("\t")[1] for line in lines if line.startswith(image + "#")]


# -- Flickr8k-Expert --------------------------------------------------------------------------------
def test_expert_clipscore_protocol_drops_self_pairs():
    bench = load_benchmark("flickr8k-expert", DATA_FIXTURES)
    assert bench.statistic == "kendall_c"
    assert len(bench) == 5 and bench.counts()["judgments"] == 15
    assert not any(r.extra["candidate_in_references"] for r in bench.records)
    first = bench.records[0]
    assert first.source_id == f"{IMG_A}|{IMG_B}#1"
    assert first.candidate == token_captions(IMG_B)[1]
    assert first.references == tuple(token_captions(IMG_A))
    assert first.human_scores == (1.0, 1.0, 2.0)
    assert "dropped 2 pairs" in " ".join(bench.notes)
    assert "2258277193_586949ec62.jpg.1" in " ".join(bench.notes)  # the bogus token-file name is reported


def test_expert_cui_protocol_keeps_all_pairs_and_removes_candidate_from_references():
    bench = load_benchmark("flickr8k-expert", DATA_FIXTURES, protocol="cui")
    assert bench.statistic == "kendall_b" and len(bench) == 7
    self_pair = next(r for r in bench.records if r.source_id == f"{IMG_A}|{IMG_A}#2")
    assert self_pair.extra["candidate_in_references"]
    assert self_pair.references == tuple(c for n, c in enumerate(token_captions(IMG_A)) if n != 2)
    assert load_benchmark("flickr8k-expert", DATA_FIXTURES, protocol="cui", tau_variant="c").statistic == "kendall_c"


def test_image_paths_only_when_the_file_exists():
    bench = load_benchmark("flickr8k-expert", DATA_FIXTURES)
    by_image = {r.image_id: r.image_path for r in bench.records}
    assert by_image[IMG_A] == DATA_FIXTURES / "flickr8k" / "images-224" / IMG_A
    assert by_image[IMG_C] is None


def test_evaluate_expands_every_judgment_to_a_row():
    bench = load_benchmark("flickr8k-expert", DATA_FIXTURES)
    metric = [0.1, 0.3, 0.2, 0.05, 0.4]
    human, rows_metric, item = bench.judgment_rows(metric)
    assert len(human) == 15 and list(item[:3]) == [0, 0, 0] and list(rows_metric[:3]) == [0.1] * 3
    out = bench.evaluate(metric)
    assert out["value"] == pytest.approx(stats.kendall_tau(human, rows_metric, "c"))
    assert out["rows"] == 15 and out["items"] == 5
    with_ci = bench.evaluate(metric, bootstrap=200, seed=1)
    assert with_ci["ci"]["n_resamples"] == 200 and with_ci["ci"]["low"] <= with_ci["ci"]["high"]
    with pytest.raises(ValueError, match="expected 5 scores"):
        bench.evaluate(metric[:4])
    with pytest.raises(ValueError, match=r"metric_scores\[1\] is nan"):
        bench.evaluate([0.1, float("nan"), 0.2, 0.3, 0.4])


# -- Flickr8k-CrowdFlower ---------------------------------------------------------------------------
def test_crowdflower_clipscore_references_drop_every_candidate_of_the_image():
    bench = load_benchmark("flickr8k-crowdflower", DATA_FIXTURES)
    assert bench.statistic == "kendall_b" and len(bench) == 6
    caps_a = token_captions(IMG_A)
    a_rows = [r for r in bench.records if r.image_id == IMG_A]
    # image A's candidates #2 and #3 are its own captions: both leave the shared reference list
    assert all(r.references == (caps_a[0], caps_a[1], caps_a[4]) for r in a_rows)
    first = bench.records[0]
    assert first.human_scores == (pytest.approx(1 / 3),)
    assert (first.extra["n_yes"], first.extra["n_no"]) == (1, 2)


def test_crowdflower_cui_removes_only_the_candidate():
    bench = load_benchmark("flickr8k-crowdflower", DATA_FIXTURES, protocol="cui")
    caps_a = token_captions(IMG_A)
    row = next(r for r in bench.records if r.source_id == f"{IMG_A}|{IMG_A}#3")
    assert row.references == tuple(c for n, c in enumerate(caps_a) if n != 3)
    other = next(r for r in bench.records if r.source_id == f"{IMG_A}|{IMG_B}#1")
    assert other.references == tuple(caps_a)


def test_crowdflower_rejects_inconsistent_fraction(tmp_path):
    shutil.copytree(DATA_FIXTURES / "flickr8k", tmp_path / "flickr8k")
    path = tmp_path / "flickr8k" / "CrowdFlowerAnnotations.txt"
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace("\t0.75\t", "\t0.5\t")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"CrowdFlowerAnnotations.txt:3: fraction 0.5 does not equal"):
        load_benchmark("flickr8k-crowdflower", tmp_path)


def test_unknown_caption_id_is_named(tmp_path):
    shutil.copytree(DATA_FIXTURES / "flickr8k", tmp_path / "flickr8k")
    path = tmp_path / "flickr8k" / "ExpertAnnotations.txt"
    path.write_text(path.read_text().replace(f"{IMG_B}#1", f"{IMG_B}#9", 1))
    with pytest.raises(ValueError, match=r"row 1: caption id '1000000002_bbbbbbbbbb.jpg#9' is not in"):
        load_benchmark("flickr8k-expert", tmp_path)


def test_bad_protocol():
    with pytest.raises(ValueError, match="protocol must be one of"):
        load_benchmark("flickr8k-expert", DATA_FIXTURES, protocol="spice")


# -- ABSTRACT-50S -----------------------------------------------------------------------------------
def test_abstract50s_votes_follow_the_documented_swap():
    bench = load_benchmark("abstract50s", DATA_FIXTURES, hc_pairs=2)
    cands_b = json.loads((DATA_FIXTURES / "abstract50s" / "abstract_candsB.json").read_text())
    cands_c = json.loads((DATA_FIXTURES / "abstract50s" / "abstract_candsC.json").read_text())
    assert [r.candidates for r in bench.records] == [(b["caption"], c["caption"]) for b, c in zip(cands_b, cands_c)]
    # fixture: 30, 24, 8, 25 of 48 ratings favour candsB (written as triplet C with rating -1)
    assert [r.votes for r in bench.records] == [(30, 18), (24, 24), (8, 40), (25, 23)]
    assert [r.preferred for r in bench.records] == [0, None, 1, 0]
    assert [r.category for r in bench.records] == ["HC", "HC", "HI", "HI"]
    assert all(len(r.references) == 48 for r in bench.records)
    assert bench.counts()["ties"] == 1


def test_abstract50s_evaluate_applies_tie_policies():
    bench = load_benchmark("abstract50s", DATA_FIXTURES, hc_pairs=2)
    a, b = [0.9, 0.1, 0.2, 0.5], [0.1, 0.5, 0.8, 0.5]  # right, (human tie), right, metric tie
    out = bench.evaluate(a, b)
    assert out["categories"]["HC"] == {"value": 1.0, "pairs": 1}
    assert out["categories"]["HI"] == {"value": 0.75, "pairs": 2}
    assert out["value"] == pytest.approx((1.0 + 0.75) / 2)
    strict = bench.evaluate(a, b, metric_ties="wrong", human_ties="half")
    assert strict["categories"]["HC"]["value"] == pytest.approx(0.75)
    assert strict["categories"]["HI"]["value"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="pairwise"):
        bench.evaluate(a)


def _rewrite_mat(src: Path, dst: Path, change) -> None:
    import scipy.io

    trip = scipy.io.loadmat(str(src))["triplets"]
    out = np.empty(trip.shape, dtype=[("A", "O"), ("B", "O"), ("C", "O"), ("rating", "O")])
    for k, e in enumerate(trip.ravel()):
        a, b, c = (str(np.asarray(e[f]).ravel()[0]) for f in "ABC")
        out[0, k] = change(k, a, b, c, float(np.asarray(e["rating"]).ravel()[0]))
    scipy.io.savemat(str(dst), {"triplets": out})


def test_abstract50s_detects_unswapped_blocks_by_text(tmp_path):
    shutil.copytree(DATA_FIXTURES / "abstract50s", tmp_path / "abstract50s")
    mat = tmp_path / "abstract50s" / "consensus_abstract.mat"
    # Pair 0 written the other way round (B = candsB) with ratings flipped: same human votes.
    _rewrite_mat(mat, mat, lambda k, a, b, c, r: (a, c, b, -r) if k < 48 else (a, b, c, r))
    bench = load_benchmark("abstract50s", tmp_path, hc_pairs=2)
    assert bench.records[0].votes == (30, 18)
    assert any("not the documented swap" in n for n in bench.notes)


def test_abstract50s_text_mismatch_is_an_error(tmp_path):
    shutil.copytree(DATA_FIXTURES / "abstract50s", tmp_path / "abstract50s")
    mat = tmp_path / "abstract50s" / "consensus_abstract.mat"
    _rewrite_mat(mat, mat, lambda k, a, b, c, r: (a, "something else", c, r) if 48 <= k < 96 else (a, b, c, r))
    with pytest.raises(ValueError, match="pair 1: the triplets' B/C texts"):
        load_benchmark("abstract50s", tmp_path)
    trusted = load_benchmark("abstract50s", tmp_path, check_text=False)
    assert trusted.records[1].votes == (24, 24)


def test_abstract50s_triplet_count_must_match_pairs(tmp_path):
    shutil.copytree(DATA_FIXTURES / "abstract50s", tmp_path / "abstract50s")
    path = tmp_path / "abstract50s" / "abstract_candsB.json"
    path.write_text(json.dumps(json.loads(path.read_text())[:3]))
    with pytest.raises(ValueError, match="has 3 entries but abstract_candsC.json has 4"):
        load_benchmark("abstract50s", tmp_path)


def test_abstract50s_reference_sampling_is_seeded():
    five = load_benchmark("abstract50s", DATA_FIXTURES, references=5, seed=3)
    again = load_benchmark("abstract50s", DATA_FIXTURES, references=5, seed=3)
    other = load_benchmark("abstract50s", DATA_FIXTURES, references=5, seed=4)
    assert [r.references for r in five] == [r.references for r in again]
    assert [r.references for r in five] != [r.references for r in other]
    full = load_benchmark("abstract50s", DATA_FIXTURES)
    assert all(len(r.references) == 5 and set(r.references) <= set(f.references) for r, f in zip(five, full))
    assert five.settings_string() == "bench:abstract50s|refs:5|seed:3|label:majority-48"


# -- registry and missing files ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, settings, missing",
    [
        ("flickr8k-expert", {}, "Flickr8k.token.txt"),
        ("flickr8k-crowdflower", {}, "CrowdFlowerAnnotations.txt"),
        ("composite", {}, "composite_8k.jsonl"),
        ("pascal50s", {}, "pair_pascal.mat"),
        ("abstract50s", {}, "abstract48S.json"),
        ("thumb", {}, "mscoco_THumB-1.0.jsonl"),
        ("nebula", {}, "nebula_test.json"),
        ("polaris", {"split": "train"}, "polaris_train.json"),
        ("coco-karpathy-test", {}, "karpathy_ref.json"),
        ("detailcaps", {}, "DetailCaps-4870.parquet"),
        ("caparena", {}, "caparena_annots_eval.json"),
        ("longcap-arena", {"aspect": "rel"}, "rel_dci_test.csv"),
    ],
)
def test_missing_files_name_path_and_format(tmp_path, name, settings, missing):
    with pytest.raises(FileNotFoundError, match=rf"{missing} not found; expected .+"):
        load_benchmark(name, tmp_path, **settings)


def test_every_registered_name_has_a_missing_file_case():
    assert set(BENCHMARK_NAMES) == {
        "flickr8k-expert", "flickr8k-crowdflower", "composite", "pascal50s", "abstract50s", "thumb", "nebula",
        "polaris", "coco-karpathy-test", "detailcaps", "caparena", "longcap-arena",
    }


def test_registry_names_and_settings():
    assert load_benchmark("Flickr8k_Expert", DATA_FIXTURES).name == "flickr8k-expert"
    with pytest.raises(ValueError, match="unknown benchmark 'flickr30k'"):
        load_benchmark("flickr30k", DATA_FIXTURES)
    with pytest.raises(ValueError, match="unexpected keyword argument 'refs'"):
        load_benchmark("flickr8k-expert", DATA_FIXTURES, refs=5)


def test_benchmark_container_checks():
    rec = CaptionRecord("x", "0", "img", None, "a cat", ("a cat .",), ())
    bench = Benchmark("x", [rec], {}, "none")
    with pytest.raises(ValueError, match="no human judgments"):
        bench.evaluate([0.5])
    with pytest.raises(ValueError, match="has no human judgment"):
        _ = rec.human_mean
    with pytest.raises(ValueError, match="unknown statistic"):
        Benchmark("x", [rec], {}, "kendall")
