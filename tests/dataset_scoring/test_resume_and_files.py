"""score_dataset on shared machines: files honour the umask, an input touched but not changed resumes (a
changed one is refused saying what changed), a resumed run says so and its bar counts only its own rows, and the
shards hold every per-caption key result.json reports."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import capeval
from capeval.dataset_scoring import store

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

WORDS = "a man woman dog cat two red small sits runs on in near the with street beach field bike ball".split()


def _rows(n: int) -> list[dict]:
    import random

    rng = random.Random(7)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))

    return [{"id": f"i{k}", "prediction": caption(), "references": [caption(), caption()]} for k in range(n)]


def _parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _score(data: Path, out: Path, **kwargs):
    kwargs.setdefault("metrics", ["bleu", "cider_d"])
    return capeval.score_dataset(str(data), output_dir=out, chunk_size=10, language_check=False, **kwargs)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


@pytest.mark.parametrize("mask, file_mode, dir_mode", [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700)])
def test_every_file_honours_the_umask(tmp_path, mask, file_mode, dir_mode):
    data = _parquet(tmp_path / "data.parquet", _rows(25))
    old = os.umask(mask)
    try:
        _score(data, tmp_path / "out")
    finally:
        os.umask(old)
    files = _files(tmp_path / "out")
    names = {p.name for p in files}
    assert {store.MANIFEST, store.RESULT, store.PLAN, store.CIDER_DF, "part-000000.parquet"} <= names
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: file_mode for p in files}
    assert stat.S_IMODE((tmp_path / "out" / store.SHARDS).stat().st_mode) == dir_mode


def test_a_touched_input_resumes_and_a_changed_one_is_refused_saying_what_changed(tmp_path, capsys):
    rows = _rows(25)
    data = _parquet(tmp_path / "coco3k.parquet", rows)
    first = _score(data, tmp_path / "out")
    capsys.readouterr()
    os.utime(data, (1_700_000_000, 1_700_000_000))  # touched: another time stamp, the same bytes
    assert _score(data, tmp_path / "out") == first
    assert "resuming: 3 of 3 chunks done" in capsys.readouterr().err
    before = (tmp_path / "out" / store.MANIFEST).read_bytes()
    rows[4]["prediction"] = rows[4]["prediction"][::-1]  # the same size, other content
    _parquet(data, rows)
    with pytest.raises(ValueError) as err:
        _score(data, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and "[[" not in message
    assert "another input" in message and "coco3k.parquet" in message and "sha256" in message
    assert "then" in message and "now" in message
    assert "Use another output_dir folder" in message and err.value.option == "output_dir"  # the CLI says --out
    assert (tmp_path / "out" / store.MANIFEST).read_bytes() == before  # left untouched


def test_a_folder_recorded_with_time_stamps_resumes_when_they_match(tmp_path):
    """Folders begun before content hashes recorded [name, size, mtime_ns] per file: the same file resumes."""
    data = _parquet(tmp_path / "data.parquet", _rows(15))
    out = tmp_path / "out"
    first = _score(data, out)
    manifest = json.loads((out / store.MANIFEST).read_text())
    manifest["settings"]["input"]["files"] = [["data.parquet", data.stat().st_size, data.stat().st_mtime_ns]]
    (out / store.MANIFEST).write_text(json.dumps(manifest))
    assert _score(data, out) == first
    os.utime(data, (1, 1))
    with pytest.raises(ValueError, match=r"data.parquet: [\d,]+ bytes modified .* then, [\d,]+ bytes modified"):
        _score(data, out)


def test_a_resumed_run_says_so_and_its_bar_counts_only_its_rows(tmp_path, monkeypatch, capsys):
    import capeval.progress

    data = _parquet(tmp_path / "data.parquet", _rows(45))  # 5 chunks of 10, the last of 5
    out = tmp_path / "out"
    _score(data, out)
    for k in (1, 4):  # as if killed before these chunks were written
        store.shard_path(out, k).unlink()
    (out / store.RESULT).unlink()
    bars = []
    real = capeval.progress.progress

    def recording(*args, **kwargs):
        bar = real(*args, **kwargs)
        updates = []
        bar.update = lambda n=1, _update=bar.update: (updates.append(n), _update(n))[1]
        bars.append((kwargs, updates))
        return bar

    monkeypatch.setattr(capeval.progress, "progress", recording)
    capsys.readouterr()
    _score(data, out)
    err = capsys.readouterr().err
    assert err.count("resuming:") == 1 and "resuming: 3 of 5 chunks done" in err
    (kwargs, updates), = [b for b in bars if b[0].get("desc") == "score-dataset"]
    assert kwargs["initial"] == 30 and kwargs["total"] == 45  # done before this run: the bar starts there
    assert sum(updates) == 15  # this run's rows only (chunks 1 and 4)
    _score(data, out, progress=False)
    assert "resuming" not in capsys.readouterr().err


def test_shards_hold_every_per_caption_key_result_json_reports(tmp_path):
    import pyarrow.dataset as ds

    rows = _rows(25)
    data = _parquet(tmp_path / "data.parquet", rows)
    result = _score(data, tmp_path / "out", metrics="bleu_4,rouge_l")
    reported = {k for k, v in result.items() if isinstance(v, float)}
    columns = set(ds.dataset(str(tmp_path / "out" / "shards"), format="parquet").schema.names) - {"id"}
    assert reported == columns == {"bleu_4", "rouge_l"}
    whole = capeval.score([r["prediction"] for r in rows], [r["references"] for r in rows], metrics="bleu_4,rouge_l",
                          language_check=False)
    assert reported == {k for k, v in whole.items() if isinstance(v, float)}
    assert json.loads((tmp_path / "out" / store.RESULT).read_text())["bleu_4"] == pytest.approx(whole["bleu_4"])


@pytest.mark.parametrize("mask, file_mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_writes_and_caches_honour_the_umask(tmp_path, mask, file_mode):
    from capeval.coco import document_frequency
    from capeval.paths import atomic_write, write_bytes_atomic

    old = os.umask(mask)
    try:
        write_bytes_atomic(tmp_path / "new" / "a.bin", b"x")
        with atomic_write(tmp_path / "b.bin", fsync=False) as handle:
            handle.write(b"y")
        document_frequency._write_atomic(tmp_path / "df.json", [b"header\n", b"body"])  # the CIDEr-D cache's writer
    finally:
        os.umask(old)
    for path in (tmp_path / "new" / "a.bin", tmp_path / "b.bin", tmp_path / "df.json"):
        assert stat.S_IMODE(path.stat().st_mode) == file_mode, path
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o777 & ~mask
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.bin", "b.bin", "df.json", "new"]  # no temporary left


def test_a_damaged_document_frequency_table_is_counted_again(tmp_path):
    """``cider-df.bin`` damaged in the middle after a run: the next run of the folder says so in one
    warning, counts it again and gives the same result; the run after that is silent."""
    import warnings

    from capeval.coco.dataset_pass import forget_checked_tables

    data = _parquet(tmp_path / "data.parquet", _rows(45))
    out = tmp_path / "out"
    first = _score(data, out)
    table = out / store.CIDER_DF
    size = table.stat().st_size
    with table.open("r+b") as handle:
        handle.seek(size // 2)
        handle.write(bytes(b ^ 0xFF for b in handle.read(64)))
    (out / store.RESULT).unlink()
    store.shard_path(out, 0).unlink()  # a chunk left to score: it needs the table
    forget_checked_tables()  # as a new process
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        again = _score(data, out)
    damaged = [w for w in seen if "damaged" in str(w.message)]
    assert len(damaged) == 1 and str(table) in str(damaged[0].message)
    assert again == first
    forget_checked_tables()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert _score(data, out) == first
    assert not [w for w in seen if "damaged" in str(w.message)]


def test_shards_merged_as_they_are_written_give_the_result_and_wait_for_a_missing_or_damaged_one(tmp_path):
    """The parent of the workers merges the shards written so far while they score (merge.InOrder); what it merged
    is what finalize would have merged from all of them."""
    from types import SimpleNamespace

    from capeval.dataset_scoring.merge import InOrder

    data = _parquet(tmp_path / "data.parquet", _rows(45))
    out = tmp_path / "out"
    result = _score(data, out, metrics=["bleu", "meteor", "cider_d"])
    assert result["chunks"] == 5
    run = SimpleNamespace(folder=out, selected={"bleu": ["bleu_4"], "meteor": ["meteor"], "cider_d": ["cider_d"]})
    third = store.shard_path(out, 2)
    held = third.read_bytes()
    third.unlink()
    merged = InOrder(run)
    merged.catch_up()
    assert merged.next == 2  # stops where a shard is not written yet
    third.write_bytes(held[: len(held) // 2])  # damaged: waits for it to be written again
    merged.catch_up()
    assert merged.next == 2
    with pytest.raises(RuntimeError, match=r"part-000002\.parquet is missing or unreadable: chunk 2 was not scored"):
        merged.catch_up(5)
    third.write_bytes(held)
    merged.catch_up()
    assert merged.next == 5
    merged.catch_up(5)
    got = merged.merge.result()
    assert [got[key] for key in ("bleu_4", "meteor", "cider_d", "rows")] == [
        result[key] for key in ("bleu_4", "meteor", "cider_d", "rows")]
