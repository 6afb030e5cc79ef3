"""The streaming readers of ``capeval score``'s large inputs (capeval.io.stream) give what the in-memory readers give:
the same items in the same order, or the same one-line refusal, for every input form (generated files, read in
pieces as small as a few bytes so that every value and line end falls across a piece's end somewhere)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from capeval.io import InputFormatError, load_predictions, load_references, stream
from capeval.io.stream import Index, count_items, read_predictions, read_references
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]}
KEYS = ["image_id", "id", "caption", "captions", "references", "reference", "refs", "text", "annotations", "images", "x"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=False, allow_infinity=False),
                    st.sampled_from(["a dog", "", " ", "1", "a cat on a mat", "\u2028", "\u200b", "..."]),
                    st.text(max_size=8))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
                           max_leaves=12)
entry = st.fixed_dictionaries({}, optional={"image_id": scalars, "caption": scalars, "references": json_values,
                                            "id": scalars, "x": json_values})
shaped = st.one_of(
    st.lists(entry, max_size=5),
    st.fixed_dictionaries({"images": st.lists(scalars, max_size=3),
                           "annotations": st.one_of(st.lists(entry, max_size=5), json_values)}),
    st.dictionaries(st.text(max_size=3), st.one_of(st.lists(scalars, max_size=3), scalars), max_size=4),
    st.lists(st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=5),
)


def _streamed_predictions(path: Path, folder: Path, allow_empty: bool = False):
    index = Index(folder / "index.sqlite")
    try:
        keyed = read_predictions(path, index, allow_empty=allow_empty)
        return (list(index.ids()) if keyed else None), list(index.captions())
    finally:
        index.close()
        (folder / "index.sqlite").unlink()


def _streamed_references(path: Path, folder: Path):
    index = Index(folder / "index.sqlite")
    try:
        if not read_references(path, index):
            return None, [json.loads(t) for (t,) in index.db.execute("SELECT texts FROM refs ORDER BY n")]
        ids, refs = [], []
        for key, value in index.db.execute("SELECT key, id FROM ref_keys ORDER BY first").fetchall():
            ids.append(json.loads(value))
            refs.append([t for (texts,) in index.db.execute("SELECT texts FROM refs WHERE key = ? ORDER BY n", (key,))
                         for t in json.loads(texts)])
        return ids, refs
    finally:
        index.close()
        (folder / "index.sqlite").unlink()


def _outcome(read, *args):
    try:
        return "ok", read(*args)
    except (InputFormatError, FileNotFoundError) as err:
        return type(err).__name__, str(err)


def _same(path: Path, folder: Path) -> None:
    for allow_empty in (False, True):
        expected = _outcome(lambda p, allow=allow_empty: load_predictions(p, allow_empty=allow), path)
        assert _outcome(_streamed_predictions, path, folder, allow_empty) == expected
    assert _outcome(_streamed_references, path, folder) == _outcome(load_references, path)


@pytest.fixture(params=[5, 1 << 20], ids=["5-byte pieces", "1-MiB pieces"])
def piece(request, monkeypatch):
    monkeypatch.setattr(stream, "PIECE", request.param)
    return request.param


@settings(max_examples=400, **SETTINGS)
@given(value=st.one_of(json_values, shaped), kind=st.sampled_from(["json", "jsonl", "pretty"]))
def test_json_and_json_lines_read_as_in_memory(tmp_path, piece, value, kind):
    path = tmp_path / ("input.jsonl" if kind == "jsonl" else "input.json")
    if kind == "jsonl" and isinstance(value, list):
        path.write_text("\n".join(json.dumps(v, ensure_ascii=False) for v in value) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(value, indent=2 if kind == "pretty" else None, ensure_ascii=False), encoding="utf-8")
    _same(path, tmp_path)


csv_cell = st.one_of(st.sampled_from(["a dog", "1", "2", '"', ",", "a, b", '"quoted"', "", " ", "\n", "\r\n", "\r",
                                      '"open', "é", "\ufeff", "\u2028"]), st.text(max_size=6))


@settings(max_examples=300, **SETTINGS)
@given(st.sampled_from(["image_id,caption", "caption", "id,reference", "image_id,ref1,ref2", "caption,caption", ""]),
       st.lists(st.lists(csv_cell, min_size=1, max_size=4), max_size=6), st.booleans(), st.sampled_from(["\n", "\r\n"]))
def test_csv_reads_as_in_memory(tmp_path, piece, header, rows, raw, end):
    lines = [",".join(r) if raw else ",".join('"' + c.replace('"', '""') + '"' if any(x in c for x in ',"\n\r') else c
                                              for c in r) for r in rows]
    path = tmp_path / "input.csv"
    path.write_bytes((header + end + end.join(lines) + (end if lines else "")).encode("utf-8"))
    _same(path, tmp_path)


@pytest.mark.parametrize("data", [
    b'\xef\xbb\xbf[{"image_id": 1, "caption": "a dog"}]',  # a BOM
    b'\xef\xbb\xbf["a dog", "a \xff cat"]',  # a BOM and a bad byte (named as the in-memory reader names it)
    b'["a dog",\n "a cat \xe2\x82"]',  # a sequence cut short
    b'["a dog", "a cat"]\xe2',  # cut at the end
    b'\n\n  \t',  # empty
    b'\xc2\xa0["a dog"]\xc2\xa0\n',  # Unicode spaces around a document
    b'{"1": ["a dog"], "1": ["a cat"]}',  # a key twice
    b'{"image_id": 1, "caption": "a dog"}\n{"image_id": 2, "caption": "a cat", "caption": "x"}\n',
    b'{"image_id": 1, "caption": "a dog", "image_id": 3}\n{"image_id": 2, "caption": "a cat"}\n',
    b'[' * 5000 + b']' * 5000,  # nested too deeply
    b'{"image_id": 1, "caption": "a dog\xe2\x80\xa8runs"}\n',  # U+2028 splits a JSON line, as splitlines does
    b'[1e5, 2.5, -3, "12345678901234567890"]',
    b'{"images": [{"id": 1}], "annotations": {"a": 1}}',
    b'{"images": [{"id": 1}], "annotations": []}',
    b'{"info": {"a": {"b": 1, "b": 2}}, "annotations": [{"image_id": 1, "caption": "x"}]}',
    b'[{"image_id": 1, "caption": "a"}, {"caption": "b"}, {"image_id": 1, "caption": 5}]',
    b'[{"caption": "b"}, {"image_id": 1, "caption": "a"}]',
    b'[null, "a dog"]',
    b'[null, {"image_id": 1, "caption": "a"}]',
    b'[{"image_id": 1, "caption": "a"}, {"image_id": "1", "caption": "b"}]',
    b'"a dog"',
    b'{"1": "a dog", "2": ["a cat", "b"]}',
])
def test_edge_files_read_as_in_memory(tmp_path, piece, data):
    path = tmp_path / "input.json"
    path.write_bytes(data)
    _same(path, tmp_path)


@pytest.mark.parametrize("lines", [
    ['{"image_id": 1, "caption": ""}', '{"image_id": 2, "caption": "a cat"}', '{"image_id": 3, "caption": "a'],
    ['{"image_id": 1, "caption": 5}', '{"image_id": 2, "caption": "a cat"}', '{"image_id": 3, "image_id": 4}'],
    ['null', '"a dog"', '"a cat"'],
    ['null', '{"image_id": 1, "caption": "a"}'],
    ['"a dog"', '{"image_id": 1, "caption": "a"}', '"a cat"'],
    ['["a dog", "a cat"]', '"a bird"', '{"image_id": 1, "references": ["x"]}'],
    ['["a dog", ""]', '["a cat"]', '7'],
    ['[]', '["a cat"]', '["x"'],
    ['{"image_id": 1, "references": ["a dog"]}', '["a cat"]', '{"references": ["b"]}'],
    ['{"image_id": 1, "references": []}', '{"image_id": 1, "references": ["a"]}', '{"image_id": 2, "caption": "b"}'],
    ['{"image_id": 1, "caption": "a"}', '{"caption": "b"}', '{"image_id": 1, "caption": "c"}'],
    ['{"image_id": 1, "caption": "a"}', '', '  ', '{"image_id": 1, "caption": "c"}'],
    ['"a dog"', '', '"a cat"', '{bad json'],
], ids=lambda lines: "|".join(lines)[:40])
def test_json_lines_read_in_one_pass_as_in_memory(tmp_path, piece, lines):
    """JSON Lines are read in one pass: an item's refusal waits for the rest of the file's syntax, and a file whose
    first line does not tell its form (or a later line contradicts it) is read in two."""
    path = tmp_path / "input.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _same(path, tmp_path)


def test_an_images_reference_rows_are_joined_into_one_list(tmp_path):
    """Pairing by id joins the JSON texts of an image's reference rows (empty rows, quotes, non-ASCII text) into the
    list their items make, for every prediction of that image."""
    index = Index(tmp_path / "index.sqlite")
    try:
        for label, key, caption in [("line 1", 2, "a"), ("line 2", "x", "b"), ("line 3", 7, "c")]:
            index.add_prediction(label, key, caption)
        index.done()
        rows = [(2, ["a dog", 'say "hi"']), ("x", []), (2, []), (7, ["\u00e9t\u00e9 \u2028"]), (2, ["\\ back"]),
                ("x", ["one"])]
        for key, texts in rows:
            index.add_reference(key, texts)
        index.done()
        texts = list(index.paired_texts(True))
        assert [(c, json.loads(t), json.loads(i)) for c, t, i in texts] == [
            ("a", ["a dog", 'say "hi"', "\\ back"], 2), ("b", ["one"], "x"), ("c", ["\u00e9t\u00e9 \u2028"], 7)]
        assert list(index.paired(True)) == [(c, json.loads(t)) for c, t, _ in texts]
    finally:
        index.close()


def test_large_values_cross_the_window(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "PIECE", 64)
    long = "a dog " * 200  # a caption longer than several pieces
    value = {"info": {"x": list(range(300))}, "images": [{"id": i} for i in range(50)],
             "annotations": [{"image_id": i % 7, "caption": f"{long} {i}"} for i in range(40)]}
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    _same(path, tmp_path)


def test_the_route_count_stops_early(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"image_id": i, "caption": "a dog"}) + "\n" for i in range(50)))
    assert count_items(path, stop=10) == 11
    assert count_items(path, stop=100) == 50
    doc = tmp_path / "p.json"
    doc.write_text(json.dumps({str(i): ["a dog"] for i in range(30)}))
    assert count_items(doc, stop=5) == 6 and count_items(doc, stop=100) == 30
    csv = tmp_path / "p.csv"
    csv.write_text("id,caption\n" + "".join(f"{i},a dog\n" for i in range(20)))
    assert count_items(csv, stop=100) == 20
