"""Source.chunks: the batches of Source.batches, numbered, with the chunks a process does not want skipped, and
for parquet files and Datasets not read at all (each of N processes no longer converts every row)."""
from __future__ import annotations

import pytest

from capeval.dataset_scoring.sources import open_source

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _rows(n):
    return [{"id": f"r{i}", "prediction": f"caption {i}", "references": [f"ref {i}", f"other {i}"]} for i in range(n)]


def _parquet_folder(tmp_path, rows):
    folder = tmp_path / "shards"
    folder.mkdir()
    cuts = [0, 23, 23, 24, 90, len(rows)]  # an empty file, a one-row file, odd row groups
    for f, (a, b) in enumerate(zip(cuts, cuts[1:])):
        pq.write_table(pa.Table.from_pylist(rows[a:b], schema=pa.Table.from_pylist(rows[:1]).schema),
                       folder / f"part-{f}.parquet", row_group_size=7 + f)
    return folder


@pytest.mark.parametrize("kind", ["parquet", "dataset", "jsonl"])
@pytest.mark.parametrize("size", [1, 10, 16, 500])
def test_chunks_are_the_batches_numbered_and_skipped_ones_are_none(tmp_path, kind, size):
    rows = _rows(131)
    if kind == "parquet":
        data = _parquet_folder(tmp_path, rows)
    elif kind == "dataset":
        datasets = pytest.importorskip("datasets")
        data = datasets.Dataset.from_list(rows)
    else:
        import json

        data = tmp_path / "rows.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    source = open_source(data)
    columns = ["id", "prediction", "references"]
    batches = list(source.batches(size, columns))
    for world in (1, 2, 3):
        for rank in range(world):
            got = list(source.chunks(size, columns, lambda k: k % world == rank))
            assert [k for k, _, _ in got] == list(range(len(batches)))
            assert [n for _, n, _ in got] == [len(b["id"]) for b in batches]
            for k, _, batch in got:
                assert batch == (batches[k] if k % world == rank else None)


def test_parquet_chunks_read_only_the_row_groups_they_need(tmp_path, monkeypatch):
    rows = _rows(131)
    folder = _parquet_folder(tmp_path, rows)
    reads = []
    original = pq.ParquetFile.read_row_group

    def counting(self, i, *args, **kwargs):
        reads.append(i)
        return original(self, i, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counting)
    source = open_source(folder)
    assert sum(n for _, n, _ in source.chunks(10, ["id"], lambda k: False)) == 131 and reads == []
    only = list(source.chunks(10, ["id", "prediction"], lambda k: k == 9))
    assert only[9][2] == {"id": [f"r{i}" for i in range(90, 100)],
                          "prediction": [f"caption {i}" for i in range(90, 100)]}
    assert 1 <= len(reads) <= 2  # the row group(s) of rows 90-99 only
    reads.clear()
    list(source.chunks(2, ["id"], lambda k: True))
    groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in sorted(folder.iterdir())
                 if pq.ParquetFile(f).metadata.num_rows)
    assert len(reads) == groups  # neighbouring chunks in one row group read it once


def test_json_lines_chunks_parse_only_the_lines_of_wanted_chunks(tmp_path):
    import json

    folder = tmp_path / "lines"
    folder.mkdir()
    rows = _rows(40)
    lines = [json.dumps(r) for r in rows]
    lines[25] = '{"id": "r25", "prediction": not json'  # row 25: chunk 2 of chunks of 10
    first = "\ufeff" + "\n".join(lines[:13]) + "\n\n  \n\u00a0\n"  # blank lines, as str.strip sees them, are no rows
    (folder / "a.jsonl").write_text(first, encoding="utf-8")
    (folder / "b.jsonl").write_text("\n".join(lines[13:]) + "\n", encoding="utf-8")
    source = open_source(folder)
    got = list(source.chunks(10, ["id"], lambda k: k != 2))
    assert [(k, n) for k, n, _ in got] == [(0, 10), (1, 10), (2, 10), (3, 10)]
    assert got[2][2] is None and got[3][2] == {"id": [f"r{i}" for i in range(30, 40)]}
    assert got[1][2] == {"id": [f"r{i}" for i in range(10, 20)]}  # across the two files
    with pytest.raises(ValueError, match=r"b\.jsonl:13: not a JSON object \(Expecting value\)\.$"):
        list(source.chunks(10, ["id"], lambda k: k == 2))
    (folder / "a.jsonl").write_bytes(b'{"id": "r0"}\n\xff\n')
    with pytest.raises(ValueError, match="not UTF-8 text"):  # met by every reader, parsed or not
        list(open_source(folder).chunks(10, ["id"], lambda k: False))
