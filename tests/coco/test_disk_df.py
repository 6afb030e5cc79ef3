"""CIDEr-D's document-frequency table on disk (capeval.coco.disk_df): the counts a dict of n-gram strings gives, with
the counter's memory bounded (sorted runs spilled to disk and merged in rounds) and lookups read block by block."""
from __future__ import annotations

import os
import random

import numpy as np
import pytest

from capeval.coco import disk_df
from capeval.coco.disk_df import DiskDocumentFrequency, DiskDocumentFrequencyCounter, read_header


def _chunks(seed=0, chunks=30, size=700):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(1500)] + ["ünïcode", "日本語", "a\u00a0b", "", "'s"]
    for _ in range(chunks):
        counts: dict[str, int] = {}
        for _ in range(size):
            g = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
            counts[g] = counts.get(g, 0) + rng.randint(0, 3)
        yield list(counts), list(counts.values())


def _count(counter, seed=0):
    truth: dict[str, int] = {}
    for grams, counts in _chunks(seed):
        counter.add(grams, np.array(counts), documents=3)
        for g, c in zip(grams, counts):
            if c:
                truth[g] = truth.get(g, 0) + c
    return truth


@pytest.mark.parametrize("memory_entries,merge_every,fan_in", [(10**9, 10**9, 32), (4_000, 1_500, 32), (500, 1, 3)])
def test_counts_equal_a_dicts_whatever_the_spilling(tmp_path, monkeypatch, memory_entries, merge_every, fan_in):
    monkeypatch.setattr(disk_df, "FAN_IN", fan_in)
    monkeypatch.setattr(disk_df, "MERGE_BLOCK", 257)  # many merge steps, ragged against the runs
    counter = DiskDocumentFrequencyCounter(tmp_path / ".tmp-runs", memory_entries=memory_entries,
                                           merge_every=merge_every)
    truth = _count(counter)
    spilled = counter.runs
    assert (spilled == 0) == (memory_entries > len(truth))  # the small settings really spilled (and merged in rounds)
    if fan_in == 3:
        assert spilled > 9
    header = counter.write(tmp_path / "df.bin")
    assert header["entries"] == len(truth) and header["documents"] == 90
    assert sorted(os.listdir(tmp_path)) == ["df.bin"]  # runs and temporaries gone
    table = DiskDocumentFrequency.open(tmp_path / "df.bin")
    assert table.n_documents == 90 and table.settings == {"source": "references", "rows": 90}
    asked = list(truth) + ["never seen", "w1 w2 w3 w4 w5", ""]
    random.Random(1).shuffle(asked)
    expected = np.array([truth.get(g, 0) for g in asked], dtype=np.float64)
    got = table.lookup(asked)
    assert got.dtype == np.float64 and np.array_equal(got, expected)


@pytest.mark.parametrize("max_read_blocks", [1, 2, 256])
def test_lookups_across_blocks_and_reads(tmp_path, monkeypatch, max_read_blocks):
    """Entries at block edges, sparse and dense lookups, reads split into several pread calls."""
    monkeypatch.setattr(disk_df, "BLOCK", 16)
    counter = DiskDocumentFrequencyCounter(tmp_path / ".tmp-runs", memory_entries=300, merge_every=100)
    truth = _count(counter, seed=5)
    counter.write(tmp_path / "df.bin")
    monkeypatch.setattr(disk_df, "MAX_READ_BLOCKS", max_read_blocks)
    table = DiskDocumentFrequency.open(tmp_path / "df.bin")
    assert table.header["block"] == 16 and len(table.index) == -(-len(truth) // 16)
    grams = sorted(truth)
    for asked in (grams, grams[::97], grams[:1], grams[-1:], ["zzz unseen", grams[0]], []):
        assert table.lookup(asked).tolist() == [float(truth.get(g, 0)) for g in asked]


def test_an_empty_table_and_a_damaged_file(tmp_path):
    counter = DiskDocumentFrequencyCounter(tmp_path / ".tmp-runs")
    counter.add(["a", "b"], [0, 0], documents=2)
    assert counter.write(tmp_path / "df.bin")["entries"] == 0
    table = DiskDocumentFrequency.open(tmp_path / "df.bin")
    assert table.n_documents == 2 and table.lookup(["a", "c"]).tolist() == [0.0, 0.0]

    full = DiskDocumentFrequencyCounter(tmp_path / ".tmp-runs")
    full.add(["a dog", "dog"], [2, 3], documents=4)
    full.write(tmp_path / "full.bin")
    data = (tmp_path / "full.bin").read_bytes()
    (tmp_path / "cut.bin").write_bytes(data[:-5])
    with pytest.raises(ValueError, match="not a complete"):
        read_header(tmp_path / "cut.bin")
    (tmp_path / "other.bin").write_bytes(b"PAR1" + data[4:])
    with pytest.raises(ValueError, match="not a capeval document-frequency table"):
        DiskDocumentFrequency.open(tmp_path / "other.bin")
    with pytest.raises(ValueError, match="2 grams but 1 counts"):
        full.add(["a", "b"], [1])


def test_a_killed_first_pass_leaves_nothing_that_a_resumed_run_keeps(tmp_path):
    """The spill folder and the table's temporaries are '.tmp-' names, which a resumed run removes."""
    from capeval.dataset_scoring import store

    counter = DiskDocumentFrequencyCounter(tmp_path / ".tmp-cider-df-runs", memory_entries=100, merge_every=50)
    _count(counter)
    assert counter.runs > 0 and (tmp_path / ".tmp-cider-df-runs").is_dir()
    (tmp_path / ".tmp-cider-df.bin.abc").write_bytes(b"half")
    removed = store.remove_temporaries(tmp_path)
    assert {p.name for p in removed} == {".tmp-cider-df-runs", ".tmp-cider-df.bin.abc"}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fan_in", [2, 32])
def test_tables_of_disjoint_shares_merge_into_the_whole_table(tmp_path, monkeypatch, fan_in):
    """What score_dataset's processes count (one table per share of the chunks) merges into the one-process table."""
    from capeval.coco.disk_df import merge_tables

    monkeypatch.setattr(disk_df, "FAN_IN", fan_in)
    monkeypatch.setattr(disk_df, "MERGE_BLOCK", 100)
    whole = DiskDocumentFrequencyCounter(tmp_path / ".tmp-whole")
    shares = [DiskDocumentFrequencyCounter(tmp_path / f".tmp-{r}", memory_entries=700, merge_every=300)
              for r in range(5)]
    for k, (grams, counts) in enumerate(_chunks(seed=3)):
        whole.add(grams, counts, documents=k + 1)
        shares[k % 5].add(grams, counts, documents=k + 1)
    whole.write(tmp_path / "whole.bin")
    parts = [tmp_path / f"part-{r}.bin" for r in range(5)]
    for share, part in zip(shares, parts):
        share.write(part)
    header = merge_tables(parts, tmp_path / "merged.bin")
    assert all(p.is_file() for p in parts)  # inputs left in place
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["whole.bin", "merged.bin"] + [p.name for p in parts])
    assert header["documents"] == sum(range(1, 31))
    # the same file as one counter's, byte for byte
    assert (tmp_path / "merged.bin").read_bytes() == (tmp_path / "whole.bin").read_bytes()
