"""The compact document-frequency table of score_dataset's first pass (capeval.coco.compact_df) gives exactly the
counts a dict of n-gram strings gives."""
from __future__ import annotations

import random

import numpy as np
import pytest

from capeval.coco.compact_df import (CompactDocumentFrequency, DocumentFrequencyCounter, gram_keys, keys_from_words,
                                     keys_to_words)


def _chunks(seed=0, chunks=25, size=800):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(2000)] + ["ünïcode", "日本語", "a\u00a0b", "", "'s"]
    for _ in range(chunks):
        grams = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) for _ in range(size)]
        counts: dict[str, int] = {}
        for g in grams:
            counts[g] = counts.get(g, 0) + rng.randint(0, 3)
        yield list(counts), list(counts.values())


@pytest.mark.parametrize("merge_every", [1, 1_000, 10_000_000])
def test_counts_added_over_chunks_equal_a_dicts(merge_every):
    truth: dict[str, int] = {}
    counter = DocumentFrequencyCounter(merge_every=merge_every)
    for grams, counts in _chunks():
        counter.add(grams, np.array(counts))
        for g, c in zip(grams, counts):
            if c:
                truth[g] = truth.get(g, 0) + c
    keys, counts = counter.table()
    assert len(keys) == len(truth) and (keys[1:] > keys[:-1]).all()  # sorted, no key twice
    table = CompactDocumentFrequency({}, 7, {"source": "references"}, keys, counts)
    asked = list(truth) + ["never seen", "w1 w2 w3 w4 w5", ""]
    expected = np.array([truth.get(g, 0) for g in asked], dtype=np.float64)
    got = table.lookup(asked)
    assert got.dtype == np.float64 and np.array_equal(got, expected)
    assert CompactDocumentFrequency({}, 0, {}).lookup(["a"]).tolist() == [0.0]


def test_keys_survive_the_two_uint64_columns_in_order():
    keys = np.sort(np.concatenate([gram_keys([f"g{i}" for i in range(500)]),
                                   np.array([bytes(15) + b"\x01", bytes(16), b"\xff" * 16], dtype="S16")]))
    high, low = keys_to_words(keys)
    assert high.dtype == low.dtype == np.uint64
    assert np.array_equal(keys_from_words(high, low), keys)
    order = np.lexsort((low, high))
    assert np.array_equal(order, np.arange(len(keys)))  # (high, low) order = the keys' byte order


def test_a_folder_with_the_older_string_table_still_resumes(tmp_path):
    """cider-df.parquet written with n-gram strings (before the compact table): read into the same lookups."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from capeval.dataset_scoring import store
    from capeval.coco.dataset_pass import open_legacy_parquet_table

    grams, counts = ["a dog", "dog", "a", "ünï"], [3, 5, 9, 1]
    table = pa.table({"gram": grams, "df": pa.array(counts, pa.int64())})
    table = table.replace_schema_metadata({store.META_KEY: b'{"documents": 12}'})
    pq.write_table(table, tmp_path / store.CIDER_DF_PARQUET)
    df = open_legacy_parquet_table(tmp_path / store.CIDER_DF_PARQUET, store.META_KEY)
    assert df.n_documents == 12 and df.settings["source"] == "references"
    assert df.lookup(grams + ["cat"]).tolist() == [3.0, 5.0, 9.0, 1.0, 0.0]
