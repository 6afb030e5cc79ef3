"""Caches heal instead of crashing: a file damaged in its middle is met by a later read, moved aside and
rebuilt with one warning and the right numbers; a read-only cache is read and the rest kept in memory; a full disk
is one warning, never a traceback; temporary files of killed writers and old damaged copies are not kept forever,
and ``capeval cache`` counts them."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from capeval.paths import CacheRebuiltWarning, CacheUnwritableWarning


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(root))
    return root


def _damage_middle(path) -> None:
    """4 KB of random bytes at the middle of ``path`` (as a bad sector, or another program's write, leaves it)."""
    size = os.path.getsize(path)
    rng = np.random.default_rng(54)
    with open(path, "r+b") as handle:
        handle.seek(size // 2)
        handle.write(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())


def _caught(action):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = action()
    return result, [w for w in caught if issubclass(w.category, (CacheRebuiltWarning, CacheUnwritableWarning))]


# -- the three SQLite caches: parses (SPICE, LCEval's dependency parses), LCEval features, benchmark scores --------

PARSES = [(f"caption number {i} " + "word " * 40, [("dog",), ("dog", str(i))]) for i in range(300)]


def _parse_cache(path):
    from capeval.spice.cache import ParseCache

    return ParseCache("parser-1", path)


def _feature_cache(path):
    from capeval.lceval.cache import FeatureCache

    return FeatureCache("settings-1", 16, path)


def _vector(i: int) -> np.ndarray:
    return np.arange(16, dtype=np.float64) + i


FEATURES = [(f"{i:040x}", _vector(i)) for i in range(300)]


def _fill(kind, path):
    cache = _parse_cache(path) if kind == "parses" else _feature_cache(path)
    cache.put_many(PARSES if kind == "parses" else FEATURES)
    cache.close()


def _read_all(kind, path):
    cache = _parse_cache(path) if kind == "parses" else _feature_cache(path)
    try:
        if kind == "parses":
            return cache.get_many([t for t, _ in PARSES]), cache
        return cache.get_many([k for k, _ in FEATURES]), cache
    finally:
        cache.close()


def _check_values(kind, found) -> None:
    expected = dict(PARSES) if kind == "parses" else dict(FEATURES)
    assert set(found) <= set(expected)
    for key, value in found.items():  # whatever is read is right; what is not is computed again
        if kind == "parses":
            assert value == expected[key]
        else:
            np.testing.assert_array_equal(value, expected[key])


@pytest.mark.parametrize("kind", ["parses", "features"])
def test_garbage_in_the_middle_is_met_on_reading_moved_aside_and_rebuilt(tmp_path, kind):
    path = tmp_path / f"{kind}.sqlite"
    _fill(kind, path)
    _damage_middle(path)
    # opening still works (the header is intact): the damage is met by the read
    (found, cache), caught = _caught(lambda: _read_all(kind, path))
    assert len(caught) == 1 and issubclass(caught[0].category, CacheRebuiltWarning)
    message = str(caught[0].message)
    assert str(path) in message and "moved aside" in message and "CAPEVAL_CACHE_DIR" in message
    _check_values(kind, found)
    assert len(list(tmp_path.glob(f"{kind}.sqlite.corrupt-*"))) == 1
    # the caller computes what was missing and stores it: the new file takes it, the next run reads all, silently
    _, caught = _caught(lambda: _fill(kind, path))
    assert caught == []
    (found, _), caught = _caught(lambda: _read_all(kind, path))
    assert caught == [] and len(found) == 300
    _check_values(kind, found)


@pytest.mark.parametrize("kind", ["parses", "features"])
def test_damage_met_by_a_write_is_healed_and_the_write_kept(tmp_path, kind):
    path = tmp_path / f"{kind}.sqlite"
    _fill(kind, path)
    cache = _parse_cache(path) if kind == "parses" else _feature_cache(path)
    _damage_middle(path)  # under an open connection
    _, caught = _caught(lambda: cache.put_many(PARSES if kind == "parses" else FEATURES))
    assert len(caught) <= 1
    found = cache.get_many([k for k, _ in (PARSES if kind == "parses" else FEATURES)])
    cache.close()
    _check_values(kind, found)


def test_damaged_score_cache_row_pages_heal(tmp_path):
    from capeval.meta_evaluation.score_cache import ScoreCache

    path = tmp_path / "scores.sqlite"
    cache = ScoreCache(path)
    for i in range(300):
        cache.put(f"key-{i}", {"value": i, "pad": "x" * 200})
    cache.close()
    _damage_middle(path)
    cache = ScoreCache(path)
    got, caught = _caught(lambda: [cache.get(f"key-{i}") for i in range(300)])
    assert len(caught) == 1 and str(path) in str(caught[0].message)
    assert all(g is None or g == {"value": i, "pad": "x" * 200} for i, g in enumerate(got))
    cache.put("key-1", {"value": 1})
    assert cache.get("key-1") == {"value": 1}
    cache.close()


def test_a_damaged_spice_parse_cache_gives_the_same_scores(cache_root):
    """A real SPICE parse cache (spaCy parses of real captions) with garbage in its middle: the same SPICE scores,
    one warning, and the next run without any."""
    pytest.importorskip("spacy")
    import capeval

    candidates = [f"a {c} dog is running on the {p} grass near a {t} tree" for c in ("black", "brown", "white")
                  for p in ("green", "wet", "long") for t in ("tall", "small", "old")] * 3
    candidates = [f"{c} number {i}" for i, c in enumerate(candidates)]
    references = [["a dog runs on the grass", "a black dog is running near a tree"]] * len(candidates)

    def spice():
        out = capeval.score(candidates, references, metrics=["spice"])
        return [out["spice"], *out["per_caption"]["spice"]]

    first, caught = _caught(spice)
    path = cache_root / "spice" / "parses.sqlite"
    assert caught == [] and path.is_file() and os.path.getsize(path) > 3 * 4096
    _damage_middle(path)
    again, caught = _caught(spice)
    assert again == first
    assert len(caught) == 1 and str(path) in str(caught[0].message)
    third, caught = _caught(spice)
    assert third == first and caught == []


# -- read-only caches --------------------------------------------------------------------------------------------


def _refuse_to_open_for_writing(monkeypatch):
    """What a read-only file or folder answers (root ignores permissions, so the answer is simulated): opening for
    writing fails as SQLite fails, reading through ``mode=ro`` works for real."""
    from capeval import sqlite_retry

    def refuse(path, schema, probe):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(sqlite_retry, "connect_shared", refuse)


@pytest.mark.parametrize("kind", ["parses", "features"])
def test_read_only_cache_is_read_and_the_rest_kept_in_memory(tmp_path, monkeypatch, kind):
    path = tmp_path / f"{kind}.sqlite"
    cache = _parse_cache(path) if kind == "parses" else _feature_cache(path)
    items = PARSES if kind == "parses" else FEATURES
    cache.put_many(items[:100])
    cache.close()
    before = path.read_bytes()
    _refuse_to_open_for_writing(monkeypatch)

    def use():
        c = _parse_cache(path) if kind == "parses" else _feature_cache(path)
        found = c.get_many([k for k, _ in items])
        c.put_many([item for item in items if item[0] not in found])  # what the caller computed
        return found, c.get_many([k for k, _ in items])

    (found, after), caught = _caught(use)
    assert len(found) == 100 and len(after) == 300  # read what it holds; the rest from memory
    _check_values(kind, after)
    assert len(caught) == 1 and issubclass(caught[0].category, CacheUnwritableWarning)
    message = str(caught[0].message)
    assert str(path) in message and "CAPEVAL_CACHE_DIR" in message and "None" not in message
    assert path.read_bytes() == before and not list(tmp_path.glob("*.corrupt-*"))  # never moved aside


def test_read_only_connection_refusing_writes(tmp_path, monkeypatch):
    """The file opens (read-only, as SQLite falls back to for a file without write permission) and the first write
    fails: one warning, the parses kept in memory, the file untouched."""
    from capeval import sqlite_retry

    path = tmp_path / "parses.sqlite"
    _fill("parses", path)
    read_only = sqlite_retry.connect_read_only
    monkeypatch.setattr(sqlite_retry, "connect_shared", lambda p, schema, probe: read_only(p, probe))
    cache = _parse_cache(path)
    _, caught = _caught(lambda: cache.put_many([("a new caption", [("caption", "new")])]))
    assert len(caught) == 1 and "cannot be written" in str(caught[0].message)
    assert cache.get_many(["a new caption", PARSES[0][0]]) == {"a new caption": [("caption", "new")],
                                                               PARSES[0][0]: PARSES[0][1]}
    cache.close()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root ignores file permissions; the read-only case is simulated above instead")
def test_read_only_folder_for_real(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    _fill("parses", folder / "parses.sqlite")
    os.chmod(folder / "parses.sqlite", 0o444)
    os.chmod(folder, 0o555)
    try:
        (found, _), caught = _caught(lambda: _read_all("parses", folder / "parses.sqlite"))
        assert len(found) == 300 and len(caught) <= 1
    finally:
        os.chmod(folder, 0o755)


# -- disk full ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["parses", "features", "scores"])
def test_disk_full_while_writing_is_one_warning_and_memory(tmp_path, kind):
    """SQLite's own 'database or disk is full' (a page limit on the connection, as a full disk answers)."""
    from capeval.meta_evaluation.score_cache import ScoreCache

    path = tmp_path / f"{kind}.sqlite"
    cache = ScoreCache(path) if kind == "scores" else (_parse_cache(path) if kind == "parses" else _feature_cache(path))
    conn = cache._db.conn
    (pages,) = conn.execute("PRAGMA page_count").fetchone()
    conn.execute(f"PRAGMA max_page_count = {pages + 1}")

    def write():
        if kind == "scores":
            for i in range(300):
                cache.put(f"key-{i}", {"value": i, "pad": "x" * 400})
        else:
            for start in range(0, 300, 30):
                cache.put_many((PARSES if kind == "parses" else FEATURES)[start:start + 30])

    _, caught = _caught(write)
    assert len(caught) == 1 and issubclass(caught[0].category, CacheUnwritableWarning)
    assert str(path) in str(caught[0].message) and "full" in str(caught[0].message)
    assert "CAPEVAL_CACHE_DIR" in str(caught[0].message)
    if kind == "scores":
        assert [cache.get(f"key-{i}")["value"] for i in range(300)] == list(range(300))
    else:
        found = cache.get_many([k for k, _ in (PARSES if kind == "parses" else FEATURES)])
        assert len(found) == 300
        _check_values(kind, found)
    cache.close()


def test_cider_df_cache_on_a_full_disk_keeps_the_table_in_memory(cache_root, monkeypatch):
    import errno

    from capeval.coco import document_frequency as cider_df

    def compute(settings, tok):
        return cider_df.DocumentFrequency(df={"a": 3, "a dog": 1}, n_documents=3, settings=settings)

    def full(path, chunks):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cider_df, "_compute", compute)
    monkeypatch.setattr(cider_df, "_write_atomic", full)
    cider_df._MEMORY.clear()
    try:
        table, caught = _caught(lambda: cider_df.coco_document_frequency(tokenizer="ptb"))
        assert table.df == {"a": 3, "a dog": 1}
        assert len(caught) == 1 and "No space left" in str(caught[0].message)
        assert "CAPEVAL_CACHE_DIR" in str(caught[0].message)
    finally:
        cider_df._MEMORY.clear()


# -- leftovers: temporary files of killed writers, damaged copies ------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_and_old_damaged_copies_are_swept(cache_root):
    from capeval import paths

    folder = cache_root / "meteor"
    folder.mkdir(parents=True)
    dead, hour_ago = _dead_pid(), time.time() - 2 * 3600
    killed = folder / f"paraphrase-en-v3-0123.npz.{dead}.abcd1234.tmp"  # a killed writer's (its pid is gone)
    old_style = folder / "paraphrase-en-v3-0123.npz.abcd1234.tmp"  # no pid in its name, two hours old
    fresh = folder / "paraphrase-en-v3-0123.npz.zyxw9876.tmp"  # no pid, just written: maybe a live writer
    live = folder / f".tmp-table.{os.getpid()}.qwer5678"  # this process's own
    for path in (killed, old_style, fresh, live):
        path.write_bytes(b"x" * 1000)
    os.utime(old_style, (hour_ago, hour_ago))
    corrupt = [folder / f"parses.sqlite.corrupt-{1_700_000_000 + i}" for i in range(3)]
    for i, path in enumerate(corrupt):
        path.write_bytes(b"y" * 500)
        os.utime(path, (time.time() - 100 + i, time.time() - 100 + i))
    ancient = folder / "other.sqlite.corrupt-1600000000"
    ancient.write_bytes(b"z")
    os.utime(ancient, (time.time() - 3 * 86400,) * 2)
    paths._SWEPT.discard(str(folder))
    paths.cache_dir("meteor")
    left = sorted(p.name for p in folder.iterdir())
    assert left == sorted([fresh.name, live.name, corrupt[-1].name])  # only the newest damaged copy


def test_moving_aside_keeps_only_the_newest_damaged_copy(tmp_path):
    from capeval.paths import quarantine_cache_file

    path = tmp_path / "parses.sqlite"
    for i in range(3):
        path.write_bytes(b"garbage %d" % i)
        quarantine_cache_file(path, "is damaged", warn=False)
    assert len(list(tmp_path.glob("parses.sqlite.corrupt-*"))) == 1


def test_capeval_cache_counts_and_clears_leftovers(cache_root, capsys):
    from capeval.cli import main

    (cache_root / "spice").mkdir(parents=True)
    (cache_root / "spice" / "parses.sqlite").write_bytes(b"p" * 100)
    (cache_root / "spice" / "parses.sqlite.corrupt-1700000000").write_bytes(b"c" * 2000)
    (cache_root / "meteor").mkdir()
    (cache_root / "meteor" / f"paraphrase-en-v3-0123.npz.{_dead_pid()}.abcd1234.tmp").write_bytes(b"t" * 3000)
    live = cache_root / "meteor" / f"paraphrase-en-v3-0123.npz.{os.getpid()}.abcd1234.tmp"
    live.write_bytes(b"t")
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("leftovers"))
    assert "3 file(s)" in line and "5.0 kB" in line and "capeval cache clear --leftovers" in line
    assert max(len(line) for line in out.splitlines()) <= 100
    assert main(["cache", "clear", "--leftovers"]) == 0
    out = capsys.readouterr().out
    assert "removed leftovers: 2 file(s), 5.0 kB" in out
    assert (cache_root / "spice" / "parses.sqlite").is_file() and live.is_file()  # a live writer's file stays
    assert not list(cache_root.rglob("*.corrupt-*"))


def test_sentence_vector_cache_damaged_in_the_middle_heals(tmp_path, monkeypatch):
    from capeval.models.sentence_cache import SentenceVectorStore

    path = tmp_path / "vectors.sqlite"
    texts = [f"sentence {i}" for i in range(300)]
    vectors = np.stack([np.full(64, i, dtype=np.float32) for i in range(300)])
    store = SentenceVectorStore("s", 64, path)
    store.put_many(texts, vectors)
    store.close()
    _damage_middle(path)
    store = SentenceVectorStore("s", 64, path)
    found, caught = _caught(lambda: store.get_many(texts))
    assert len(caught) == 1 and issubclass(caught[0].category, CacheRebuiltWarning) and str(path) in str(
        caught[0].message)
    assert all(np.array_equal(v, vectors[int(t.split()[1])]) for t, v in found.items())
    _, caught = _caught(lambda: store.put_many(texts, vectors))
    assert caught == [] and not store.in_memory and len(store.get_many(texts)) == 300
    store.close()


def test_a_document_frequency_table_damaged_in_the_middle_is_refused_not_misread(tmp_path):
    from capeval.coco.disk_df import DiskDocumentFrequency, DiskDocumentFrequencyCounter

    counter = DiskDocumentFrequencyCounter(tmp_path / ".tmp-runs")
    grams = [f"w{i} w{i + 1}" for i in range(5000)]
    counter.add(grams, np.arange(1, 5001, dtype=np.int64) % 7 + 1, documents=10)
    counter.write(tmp_path / "df.bin")
    good = DiskDocumentFrequency.open(tmp_path / "df.bin").lookup(grams)
    _damage_middle(tmp_path / "df.bin")
    with pytest.raises(ValueError, match="damaged"):
        DiskDocumentFrequency.open(tmp_path / "df.bin")
    assert not np.array_equal(DiskDocumentFrequency.open(tmp_path / "df.bin", verify=False).lookup(grams), good)


def test_a_damaged_file_that_cannot_be_moved_or_deleted_leaves_the_run_in_memory(tmp_path, monkeypatch):
    """A damaged cache in a folder where nothing can be renamed or deleted: one warning naming the file and
    CAPEVAL_CACHE_DIR, the parses kept in memory, the numbers right, no traceback."""
    import pathlib

    from capeval import paths

    path = tmp_path / "parses.sqlite"
    _fill("parses", path)
    _damage_middle(path)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    cache = _parse_cache(path)
    with monkeypatch.context() as m:
        m.setattr(paths.os, "replace", refuse)
        m.setattr(pathlib.Path, "unlink", refuse)
        found, caught = _caught(lambda: cache.get_many([t for t, _ in PARSES]))
    assert len(caught) == 1 and "cannot be replaced" in str(caught[0].message)
    assert str(path) in str(caught[0].message) and "CAPEVAL_CACHE_DIR" in str(caught[0].message)
    _check_values("parses", found)
    cache.put_many(PARSES)
    assert cache.get_many([t for t, _ in PARSES]) == dict(PARSES)
    cache.close()
    assert path.is_file() and not list(tmp_path.glob("*.corrupt-*"))


def test_a_cache_folder_that_cannot_be_created_keeps_to_memory(tmp_path, monkeypatch):
    """CAPEVAL_CACHE_DIR under a regular file (so nothing can be created there, even by root): each SQLite cache is
    one warning naming the path and CAPEVAL_CACHE_DIR, and works from memory."""
    from capeval.meta_evaluation.score_cache import ScoreCache

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(blocker / "cache"))
    for make in (lambda: _parse_cache(None), lambda: _feature_cache(None), ScoreCache):
        cache, caught = _caught(make)
        assert len(caught) == 1 and "CAPEVAL_CACHE_DIR" in str(caught[0].message)
        assert str(blocker / "cache") in str(caught[0].message)
        if isinstance(cache, ScoreCache):
            cache.put("k", {"v": 1})
            assert cache.get("k") == {"v": 1}
        else:
            items = PARSES[:3] if hasattr(cache, "parser_key") else FEATURES[:3]
            cache.put_many(items)
            _check_values("parses" if hasattr(cache, "parser_key") else "features",
                          cache.get_many([k for k, _ in items]))
            assert len(cache.get_many([k for k, _ in items])) == 3
        cache.close()
