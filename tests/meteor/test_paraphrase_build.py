"""METEOR's paraphrase table built with numpy (capeval.meteor.phrase_arrays) equals the line-by-line build; its cache
is keyed by the installed file's content, honours the umask, and its one-time build says so off a terminal."""
from __future__ import annotations

import gzip
import os
import random
import shutil
import stat

import numpy as np
import pytest

from capeval.meteor import paraphrase as paraphrase_module
from capeval.meteor.paraphrase import ParaphraseTable
from capeval.meteor.phrase_arrays import LineScan, gather, hash_bytes, padded, unique_slices, words_of

_ARRAYS = ("hashes", "offsets", "texts", "is_phrase", "is_paraphrase", "keys", "ranks")


def _same(a: ParaphraseTable, b: ParaphraseTable) -> None:
    for name in _ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.vocabulary == b.vocabulary and a.shift == b.shift


def _random_lines(seed: int, entries: int = 3000) -> list[str]:
    rng = random.Random(seed)
    words = ["dog", "big", "a", "hound", "très", "grand", "犬", "x" * 9, "abcdefgh", "abcdefghijklmnopq", "sofa"]
    phrases = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 7))) for _ in range(400)]
    lines = []
    for _ in range(entries):  # phrase groups not contiguous, entries repeated, long and non-ASCII phrases
        lines += [f"{rng.random():.4f}", rng.choice(phrases), rng.choice(phrases)]
    return lines


@pytest.mark.parametrize("seed", [0, 1])
def test_numpy_build_equals_the_line_by_line_build(seed):
    lines = _random_lines(seed)
    fast = ParaphraseTable.from_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    assert fast is not None
    _same(fast, ParaphraseTable.from_lines(list(lines), canonical=True))
    # no final line end, and a trailing partial entry (never read by the jar's loop)
    _same(ParaphraseTable.from_bytes(("\n".join(lines + ["0.5", "big dog"])).encode("utf-8")),
          ParaphraseTable.from_lines(list(lines)))
    phrase = lines[1]
    assert fast.phrase_id(phrase) is not None and fast.phrase_id(phrase + " zzz") is None
    assert "dog" in fast.vocabulary and "zebra" not in fast.vocabulary


@pytest.mark.parametrize("bad", ["big  dog", " big dog", "big dog ", "big\tdog", "big\fdog"])
def test_a_file_that_is_not_canonical_is_read_line_by_line(tmp_path, bad):
    lines = ["0.5", "big dog", "large dog", "0.1", bad, "huge hound", "0.3", "sofa", "couch"]
    assert ParaphraseTable.from_bytes(("\n".join(lines) + "\n").encode("utf-8")) is None
    source = tmp_path / "paraphrase-en.gz"
    source.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8")))
    table = ParaphraseTable.from_file(source)
    _same(table, ParaphraseTable.from_lines(list(lines)))
    assert table.group(table.phrase_id("big dog")) == {table.phrase_id("large dog"): (0,),
                                                       table.phrase_id("huge hound"): (1,)}


def test_carriage_returns_and_invalid_utf8_take_the_line_by_line_path(tmp_path):
    crlf = b"0.5\r\nbig dog\r\nlarge dog\r\n"
    assert ParaphraseTable.from_bytes(crlf) is None
    source = tmp_path / "p.gz"
    source.write_bytes(gzip.compress(crlf))
    assert ParaphraseTable.from_file(source).phrase_id("big dog") is not None
    assert ParaphraseTable.from_bytes(b"0.5\nbig \xff\nlarge dog\n") is None


def test_phrase_arrays_parts():
    rng = random.Random(3)
    strings = [bytes(rng.choice(b"ab ") for _ in range(rng.randint(0, 20))) for _ in range(4000)]
    lengths = np.array([len(s) for s in strings])
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    buffer = padded(b"".join(strings))
    hashes, first, ids = unique_slices(buffer, starts, lengths)
    assert len(hashes) == len(set(strings)) and np.all(np.diff(hashes.astype(np.float64)) >= 0)
    assert all(strings[first[ids[k]]] == strings[k] for k in range(len(strings)))
    assert np.array_equal(hash_bytes(strings), hashes[ids])  # the same hash, wherever the bytes lie
    texts, offsets = gather(buffer, starts[first], lengths[first], block=64)
    assert [texts[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(first))] == [strings[f] for f in first]
    word_starts, word_lengths = words_of(texts, offsets)
    got = [texts[a : a + n].tobytes() for a, n in zip(word_starts, word_lengths)]
    assert got == [w for f in first for w in strings[f].split(b" ") if w]


def test_gzip_scan_reads_every_member_and_refuses_a_cut_file():
    data = b"x y\n" * 50_000
    scan = LineScan.of_gzip(gzip.compress(data) + gzip.compress(b"z"))
    assert scan.buffer[: scan.size].tobytes() == data + b"z" and len(scan.ends) == 50_001
    with pytest.raises(EOFError):
        LineScan.of_gzip(gzip.compress(data)[:-40])


def _tiny_source(path):
    path.write_bytes(gzip.compress(b"0.5\nbig dog\nlarge dog\n0.3\nsofa\ncouch\n"))
    return path


def test_cache_keyed_by_content_shared_and_umask(tmp_path, monkeypatch, capsys):
    (tmp_path / "env1").mkdir()
    source = _tiny_source(tmp_path / "env1" / "paraphrase-en.gz")
    cache = tmp_path / "cache"
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(cache))
    monkeypatch.setattr(paraphrase_module, "paraphrase_file", lambda: source)
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    (cache / "meteor").mkdir(parents=True)
    (cache / "meteor" / "paraphrase-en-v1-61813011-1795825358770355693.npz").write_bytes(b"an older format")
    old = os.umask(0o022)
    try:
        paraphrase_module.default_table()  # stderr is not a terminal here: the build still says so, once
        assert paraphrase_module.BUILD_DESC in capsys.readouterr().err
        (built,) = (cache / "meteor").glob("*.npz")  # the older format's copy is gone
        assert stat.S_IMODE(built.stat().st_mode) == 0o644
        # another environment's copy of the same file (other path, other time stamp): the same cache file
        other = tmp_path / "env2" / "paraphrase-en.gz"
        other.parent.mkdir()
        shutil.copyfile(source, other)
        os.utime(other, (1, 1))
        assert paraphrase_module._cache_path(other) == built
        os.utime(source, None)  # touched, not changed
        assert paraphrase_module._cache_path(source) == built
        other.write_bytes(gzip.compress(b"0.5\nbig dog\nhuge dog\n"))
        assert paraphrase_module._cache_path(other) != built  # changed content, another key
        os.umask(0o077)
        monkeypatch.setattr(paraphrase_module, "paraphrase_file", lambda: other)
        monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
        paraphrase_module.default_table(progress=False)
        assert capsys.readouterr().err == ""  # progress=False: silent
        assert stat.S_IMODE(paraphrase_module._cache_path(other).stat().st_mode) == 0o600
    finally:
        os.umask(old)
        monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)


def test_a_failing_scan_leaves_no_decompressing_thread(monkeypatch):
    import threading

    def fail(self, piece):
        raise MemoryError("no room")

    monkeypatch.setattr(LineScan, "add", fail)
    with pytest.raises(MemoryError):
        LineScan.of_gzip(gzip.compress(bytes(random.Random(0).randbytes(4_000_000))), piece=1 << 12)
    assert not [t for t in threading.enumerate() if t.name == "capeval-gunzip"]


def _saved_with(path, table, **changes):
    arrays = {name: getattr(table, name) for name in _ARRAYS}
    arrays["vocabulary"] = np.frombuffer(table.vocabulary.bits, dtype=np.uint8)
    arrays["meta"] = np.array([paraphrase_module._FORMAT, table.shift])
    arrays.update(changes)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


@pytest.mark.parametrize("change", ["hashes unsorted", "offsets past texts", "keys out of range", "ranks float",
                                    "two-dimensional texts", "short is_phrase"])
def test_a_cache_that_unpacks_but_holds_wrong_arrays_is_rebuilt(tmp_path, monkeypatch, change):
    """A saved table whose zip members are intact (their CRC passes) but whose arrays are not what ``save`` writes
    (a foreign or hand-edited file): refused on loading, moved aside with one warning and rebuilt, so lookups never
    bisect an unsorted array or slice past the texts."""
    source = _tiny_source(tmp_path / "paraphrase-en.gz")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(paraphrase_module, "paraphrase_file", lambda: source)
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    good = paraphrase_module.default_table(progress=False)
    path = paraphrase_module._cache_path(source)
    changes = {
        "hashes unsorted": {"hashes": good.hashes[::-1].copy()},
        "offsets past texts": {"offsets": good.offsets + 5},
        "keys out of range": {"keys": good.keys + (len(good.hashes) << good.shift)},
        "ranks float": {"ranks": good.ranks.astype(np.float64)},
        "two-dimensional texts": {"texts": good.texts.reshape(1, -1)},
        "short is_phrase": {"is_phrase": good.is_phrase[:-1]},
    }[change]
    _saved_with(path, good, **changes)
    with pytest.raises(ValueError):
        ParaphraseTable.load(path)
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    with pytest.warns(UserWarning, match="could not be read") as caught:
        rebuilt = paraphrase_module.default_table(progress=False)
    assert len(caught) == 1 and "CAPEVAL_CACHE_DIR" in str(caught[0].message)
    _same(rebuilt, good)
    _same(ParaphraseTable.load(path), good)  # the rebuilt file is what save writes
    assert list(path.parent.glob(path.name + ".corrupt-*"))
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
