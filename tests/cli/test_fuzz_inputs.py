"""Fuzz tests of the files ``capeval score`` reads (hypothesis): JSON, JSON Lines, CSV.

Properties: reading a generated file either succeeds with well-formed data (strings, lists of
strings, ids that are strings or integers, no duplicate prediction ids) or raises
:class:`capeval.io.InputFormatError` (a ``ValueError``) naming the file; never another exception,
never a hang. A CSV record is never taken from more than one line (an unterminated quote used to
swallow the following rows silently). Through ``capeval score`` itself: exit code 0 or 1, and on 1
exactly one ``capeval score: error: ...`` line, no traceback.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capeval.cli import main
from capeval.io import InputFormatError, load_predictions, load_references

pytestmark = pytest.mark.timeout(600)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
KEYS = ["image_id", "id", "caption", "captions", "references", "reference", "refs", "text", "annotations", "images", "x"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["a dog", "", " ", "1", "a cat on a mat", "COCO_1.jpg", "\u200b", "..."]),
                    st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=12,
)
# shaped like the real formats, with random defects
entry = st.fixed_dictionaries({}, optional={"image_id": scalars, "caption": scalars, "references": json_values,
                                            "id": scalars, "x": json_values})
shaped = st.one_of(
    st.lists(entry, max_size=5),
    st.fixed_dictionaries({"annotations": st.one_of(st.lists(entry, max_size=5), json_values)}),
    st.dictionaries(st.text(max_size=3), st.one_of(st.lists(scalars, max_size=3), scalars), max_size=4),
    st.lists(st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=5),
)


def _check_predictions(result) -> None:
    ids, preds = result
    assert isinstance(preds, list) and preds and all(isinstance(p, str) and p.strip() for p in preds)
    if ids is not None:
        assert len(ids) == len(preds)
        assert all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids)
        assert len({str(i) for i in ids}) == len(ids)  # one prediction per image


def _check_references(result) -> None:
    ids, refs = result
    assert isinstance(refs, list) and refs
    assert all(isinstance(r, list) and r and all(isinstance(t, str) and t.strip() for t in r) for r in refs)
    if ids is not None:
        assert len(ids) == len(refs) and len({str(i) for i in ids}) == len(ids)


def _load(loader, check, path: Path) -> None:
    try:
        result = loader(path)
    except InputFormatError as err:
        assert path.name in str(err)
        return
    check(result)


@settings(max_examples=3000, **SETTINGS)
@given(st.one_of(json_values, shaped), st.sampled_from(["json", "jsonl"]))
def test_json_files_load_or_raise_input_format_error(tmp_path, value, kind):
    path = tmp_path / f"input.{kind}"  # overwritten by every example
    if kind == "jsonl" and isinstance(value, list):
        path.write_text("\n".join(json.dumps(v) for v in value) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(value), encoding="utf-8")
    _load(load_predictions, _check_predictions, path)
    _load(load_references, _check_references, path)


csv_cell = st.one_of(st.sampled_from(["a dog", "1", "2", '"', '""', ",", "a, b", '"quoted"', "", " ", "\n", "\r\n",
                                      '"open', 'close"', "é", "\ufeff"]), st.text(max_size=6))


@settings(max_examples=1500, **SETTINGS)
@given(st.sampled_from(["image_id,caption", "caption", "id,reference", "image_id,ref1,ref2", "caption,caption", ""]),
       st.lists(st.lists(csv_cell, min_size=1, max_size=4), max_size=5), st.booleans())
def test_csv_files_load_or_raise_and_never_join_lines(tmp_path, header, rows, raw_join):
    # raw_join: write cells without any quoting (the defects a hand-edited file has)
    lines = [",".join(r) if raw_join else ",".join(_quote(c) for c in r) for r in rows]
    text = header + "\n" + "\n".join(lines) + ("\n" if lines else "")
    path = tmp_path / "input.csv"  # overwritten by every example
    path.write_text(text, encoding="utf-8")
    physical_lines = len(text.splitlines())
    for loader, check in ((load_predictions, _check_predictions), (load_references, _check_references)):
        try:
            result = loader(path)
        except InputFormatError as err:
            assert path.name in str(err)
            continue
        check(result)
        texts = result[1] if loader is load_predictions else [t for r in result[1] for t in r]
        assert all("\n" not in t and "\r" not in t for t in texts)  # no record spans lines
        assert len(result[1]) <= physical_lines - 1


def _quote(cell: str) -> str:
    if any(c in cell for c in ',"\n\r'):
        return '"' + cell.replace('"', '""') + '"'
    return cell


REFS = {"1": ["a dog runs", "a brown dog"], "2": ["a cat sits"], "x": ["a bird"]}


@settings(max_examples=150, **SETTINGS)
@given(st.one_of(json_values, shaped))
def test_capeval_score_exits_0_or_1_with_one_error_line(tmp_path, capsys, value):
    preds, refs = tmp_path / "p.json", tmp_path / "r.json"  # overwritten by every example
    preds.write_text(json.dumps(value), encoding="utf-8")
    refs.write_text(json.dumps(REFS), encoding="utf-8")
    for args in (["--predictions", preds, "--references", refs], ["--predictions", refs, "--references", preds]):
        rc = main(["score", *map(str, args), "--metrics", "bleu_1"])
        out = capsys.readouterr()
        assert rc in (0, 1)
        assert "Traceback" not in out.err
        if rc == 1:
            errors = [line for line in out.err.splitlines() if "error:" in line]
            assert len(errors) == 1 and errors[0].startswith("capeval score: error: "), out.err
        else:
            assert re.search(r"\d+ predictions? scored", out.out), out.out
