"""Caches survive a killed writer and damaged files: stale temporary files are removed, an unusable
cache file is rebuilt with a warning (never an exception on every later call)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

from capeval.coco import document_frequency as cider_df
from capeval.coco.document_frequency import CacheRebuiltWarning, remove_stale_temp_files
from support import ROOT



@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    cider_df._MEMORY.clear()
    yield tmp_path / "cache"
    cider_df._MEMORY.clear()


@pytest.fixture
def tiny_table(monkeypatch):
    """Replace the COCO computation (seconds of tokenising) by a small table; count the computations."""
    calls = []

    def compute(settings, tok):
        calls.append(settings)
        return cider_df.DocumentFrequency(df={"a": 3, "a dog": 1}, n_documents=3, settings=settings)

    monkeypatch.setattr(cider_df, "_compute", compute)
    return calls


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_kill_9_while_writing_leaves_nothing_behind_after_the_next_call(cache, tiny_table):
    """A writer killed with SIGKILL half-way through its temporary file: the next call removes it."""
    table = cider_df.coco_document_frequency(tokenizer="ptb")
    path = cider_df._cache_path(table.settings)
    path.unlink()
    code = (
        "import time\n"
        "from pathlib import Path\n"
        "from capeval.coco import document_frequency as cider_df\n"
        "def slow():\n"
        "    yield cider_df.MAGIC + b'x' * 100000\n"
        "    time.sleep(120)\n"
        "    yield b''\n"
        f"cider_df._write_atomic(Path({str(path)!r}), slow())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "modules")}
    writer = subprocess.Popen([sys.executable, "-c", code], env=env)
    deadline = time.monotonic() + 60
    while not list(path.parent.glob("*.tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    temps = list(path.parent.glob("*.tmp"))
    assert len(temps) == 1 and f".{writer.pid}." in temps[0].name
    while temps[0].stat().st_size < 100000 and time.monotonic() < deadline:
        time.sleep(0.05)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert temps[0].exists()  # what kill -9 leaves

    cider_df._MEMORY.clear()
    again = cider_df.coco_document_frequency(tokenizer="ptb")
    assert not list(path.parent.glob("*.tmp"))
    assert again.df == {"a": 3, "a dog": 1} and path.is_file()


def test_remove_stale_temp_files_keeps_live_writers(tmp_path):
    name = "coco-val2014_tok-ptb-py.1_0123456789abcdef.json"
    dead = tmp_path / f"{name}.{_dead_pid()}.abc_123.tmp"
    mine = tmp_path / f"{name}.{os.getpid()}.xyz.tmp"
    parent = tmp_path / f"{name}.{os.getppid()}.xyz.tmp"
    old_unknown = tmp_path / f"{name}.q1w2e3.tmp"  # the naming before writer pids were recorded
    new_unknown = tmp_path / f"{name}.r4t5y6.tmp"
    for p in (dead, mine, parent, old_unknown, new_unknown):
        p.write_text("{")
    os.utime(old_unknown, (time.time() - 7200, time.time() - 7200))
    removed = remove_stale_temp_files(tmp_path)
    assert sorted(removed) == sorted([dead, old_unknown])
    assert mine.exists() and parent.exists() and new_unknown.exists()


def _file(settings, grams=("a", "a dog"), counts=(3, 1), **header) -> bytes:
    """A cache file's bytes for this table of 3 documents, with header fields overridden (``None`` removes one)."""
    table = cider_df.SortedDocumentFrequency(list(grams), np.array(counts, dtype=np.int64), 3, settings)
    magic, head, body, text = cider_df._encode(settings, table)
    fields = {**json.loads(head), **header}
    return magic + json.dumps({k: v for k, v in fields.items() if v is not None}).encode() + b"\n" + body + text


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda s: b"", "not a capeval CIDEr-D document-frequency file"),
        (lambda s: b"\xff\xfe\x00", "not a capeval CIDEr-D document-frequency file"),
        (lambda s: json.dumps({"settings": s, "n_documents": 3, "df": {"a": 3}}).encode(),  # format 2's JSON
         "not a capeval CIDEr-D document-frequency file"),
        (lambda s: cider_df.MAGIC + b'{"settings": ', "cannot be read"),
        (lambda s: cider_df.MAGIC + b"\xff\xfe\n", "cannot be read"),
        (lambda s: cider_df.MAGIC + b"[]\n", "has a JSON list as its header"),
        (lambda s: cider_df.MAGIC + b"null\n", "has a JSON null as its header"),
        (lambda s: _file({}), "written for other settings"),
        (lambda s: _file(s, n_documents=-1), "n_documents=-1"),
        (lambda s: _file(s, n_documents=True), "n_documents=True"),
        (lambda s: _file(s, grams=(), counts=()), "n_grams=0: no 'df' table"),
        (lambda s: _file(s)[:-3], "truncated or damaged"),
        (lambda s: _file(s) + b"\n", "truncated or damaged"),
        (lambda s: _file(s)[:-1] + b"X", "CRC-32"),
        (lambda s: _file(s, crc32=None), "CRC-32"),
        (lambda s: _file(s, counts=(7, 1)), r"not integers in \[1, n_documents\]"),
        (lambda s: _file(s, counts=(3, 0)), r"not integers in \[1, n_documents\]"),
        (lambda s: _file(s, grams=("a", "\udcff")), "cannot be read"),  # not UTF-8 (a lone surrogate)
        (lambda s: _file(s, n_grams=1, text_bytes=11), "holds 2 grams where its header announces 1"),
    ],
)
def test_unusable_cache_file_is_rebuilt_with_a_warning(cache, tiny_table, make, why):
    table = cider_df.coco_document_frequency(tokenizer="ptb")
    path = cider_df._cache_path(table.settings)
    try:
        content = make(table.settings)
    except UnicodeEncodeError:  # a lone surrogate: write the bytes by hand
        good = _file(table.settings, grams=("a", "b"))
        content = good[:-1] + b"\xff"
        head = json.loads(good[len(cider_df.MAGIC):good.index(b"\n", len(cider_df.MAGIC))])
        body = content[len(good) - head["text_bytes"] - 8:]
        content = cider_df.MAGIC + json.dumps({**head, "crc32": zlib.crc32(body)}).encode() + b"\n" + body
    path.write_bytes(content)
    cider_df._MEMORY.clear()
    with pytest.warns(CacheRebuiltWarning, match=why):
        again = cider_df.coco_document_frequency(tokenizer="ptb")
    assert again.df == {"a": 3, "a dog": 1} and len(tiny_table) == 2
    # rebuilt on disk: the next process reads it without a warning
    cider_df._MEMORY.clear()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cider_df.coco_document_frequency(tokenizer="ptb").df == again.df
    assert len(tiny_table) == 2


def test_cache_file_round_trip_and_umask(cache, tiny_table):
    """What is written is read back as the same table (sorted grams, lookups by bisection and by dict alike), with
    the umask's permissions."""
    old = os.umask(0o027)
    try:
        table = cider_df.coco_document_frequency(tokenizer="ptb")
    finally:
        os.umask(old)
    path = cider_df._cache_path(table.settings)
    assert path.suffix == ".df" and path.stat().st_mode & 0o777 == 0o640
    cider_df._MEMORY.clear()
    again = cider_df.coco_document_frequency(tokenizer="ptb")
    assert isinstance(again, cider_df.SortedDocumentFrequency) and again.grams == ["a", "a dog"]
    assert again.n_documents == 3 and again.settings == table.settings
    assert again.df == {"a": 3, "a dog": 1}
    assert again.lookup(["a dog", "dog", "a", ""]).tolist() == [1.0, 0.0, 3.0, 0.0]


def test_sorted_table_looks_up_by_bisection_then_by_dict():
    rng = np.random.default_rng(0)
    grams = [f"w{i} x{i % 7}" for i in rng.permutation(1000)] + ["", "é", "a\x01", "a b"]
    counts = rng.integers(1, 50, len(grams))
    table = cider_df.SortedDocumentFrequency.from_arrays(grams, counts, 50, {})
    assert table.grams == sorted(grams)
    expected = dict(zip(grams, counts.tolist()))
    queries = grams[::97] + ["a", "a\x02", "w1", "zz", "é x"]
    want = [float(expected.get(q, 0)) for q in queries]
    assert table.lookup(queries).tolist() == want and table._df is None  # few grams: bisection, no dict
    assert table.lookup(grams + queries).tolist() == [float(c) for c in counts] + want  # many: the dict
    assert table._df == expected


def test_cider_d_with_a_damaged_cache_still_scores(cache, tiny_table):
    import capeval

    table = cider_df.coco_document_frequency(tokenizer="ptb")
    cider_df._cache_path(table.settings).write_text("[]")
    cider_df._MEMORY.clear()
    with pytest.warns(CacheRebuiltWarning):
        result = capeval.score(["a dog"], [["a dog", "a cat"]], metrics="cider_d", cider_df="coco-val2014")
    assert result["cider_d"] >= 0 and "df=coco-val2014" in result["signature"]


def test_cache_does_not_depend_on_the_cleanup(cache, tiny_table):
    """Tokens never see the clean-up, so one table serves every clean-up."""
    thumb = cider_df.coco_document_frequency(cleanup="thumb", tokenizer="ptb")
    none = cider_df.coco_document_frequency(cleanup="none", tokenizer="ptb")
    assert thumb is none and len(tiny_table) == 1
    assert "clean" not in cider_df._cache_path(thumb.settings).name


# -- SQLite caches ---------------------------------------------------------------------------------------


def test_damaged_parse_cache_is_moved_aside_and_rebuilt(tmp_path):
    from capeval.spice.cache import ParseCache

    path = tmp_path / "parses.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.warns(CacheRebuiltWarning, match="not a usable SQLite database"):
        cache = ParseCache("parser-1", path)
    cache.put_many([("a dog", [("dog",)])])
    assert cache.get_many(["a dog", "a cat"]) == {"a dog": [("dog",)]}
    cache._conn.execute("UPDATE parses SET tuples = '{not json' WHERE text = 'a dog'")
    assert cache.get_many(["a dog"]) == {}  # a damaged row is parsed again, not an exception
    cache.close()
    assert list(tmp_path.glob("parses.sqlite.corrupt-*"))


def test_damaged_score_cache_is_moved_aside_and_rebuilt(tmp_path):
    from capeval.meta_evaluation.score_cache import ScoreCache
    from capeval.meta_evaluation.scorers import score_items

    path = tmp_path / "scores.sqlite"
    path.write_text("garbage" * 100)
    with pytest.warns(CacheRebuiltWarning):
        cache = ScoreCache(path)
    first = score_items("bleu_1", ["a dog"], [["a dog"]], cache=cache)
    cache._con.execute("UPDATE scores SET payload = '[]'")
    again = score_items("bleu_1", ["a dog"], [["a dog"]], cache=cache)  # damaged entry: recomputed
    assert again["bleu_1"].values.tolist() == first["bleu_1"].values.tolist() == [pytest.approx(1.0)]
    cache._con.execute("UPDATE scores SET payload = '{\"per_caption\": {\"bleu_1\": [\"x\"]}, \"signature\": \"s\"}'")
    assert score_items("bleu_1", ["a dog"], [["a dog"]], cache=cache)["bleu_1"].values.tolist() == [pytest.approx(1.0)]
    cache.close()


_OPEN_MANY = """
import sys, time
from capeval.lceval.cache import FeatureCache
from capeval.spice.cache import ParseCache
from capeval.meta_evaluation.score_cache import ScoreCache
folder, start = sys.argv[1], float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
for i in range(15):
    for path in (f"{folder}/features-{i}.sqlite", f"{folder}/parses-{i}.sqlite", f"{folder}/scores-{i}.sqlite"):
        cache = (FeatureCache("s", 2, path) if "features" in path else
                 ParseCache("p", path) if "parses" in path else ScoreCache(path))
        cache.close()
print("ok")
"""


def test_sqlite_caches_opened_by_several_processes_at_once(tmp_path):
    """Two or three processes creating the same SQLite cache files at the same moment (as `--processes 2` does with
    LCEval's feature cache): switching a new file to WAL must wait for the other process, never fail with 'locked'."""
    import subprocess
    import sys
    import time

    start = str(time.time() + 3)
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_MANY, str(tmp_path), start], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-1500:] for _, err in results]
    assert all(out.strip() == "ok" for out, _ in results)


def test_retry_locked_gives_up_on_other_errors():
    import sqlite3

    from capeval.sqlite_retry import retry_locked

    calls = []

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"

    assert retry_locked(locked_twice) == "done" and len(calls) == 3
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        retry_locked(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("no such table: x")))
