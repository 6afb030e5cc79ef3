"""SPICE-U uniqueness (Eq. 6/7), the table format and the resumable builder."""
from __future__ import annotations

import pytest

from capeval.spice_u.build import build_uniqueness_table
from capeval.spice_u.uniqueness import UniquenessTable, caption_uniqueness, spice_u_score

# The paper's worked example (§4): Un(person)=.75, Un(table)=.87, Un(elephant)=.98.
PAPER_UN = {"person": 0.75, "table": 0.87, "elephant": 0.98}
IMAGE = ["person", "table", "elephant"]


@pytest.mark.parametrize("obj, expected", [("person", 0.0), ("table", 0.52), ("elephant", 1.0)])
def test_paper_one_object_uniqueness(obj, expected):
    assert caption_uniqueness([obj], IMAGE, PAPER_UN.get) == pytest.approx(expected, abs=0.005)


def test_paper_spice_u_elephant_vs_table():
    # "There is an elephant" / "There is a table": recall 1/3, precision 1 -> SPICE .5 for both.
    elephant = spice_u_score(1.0, 1 / 3, caption_uniqueness(["elephant"], IMAGE, PAPER_UN.get))
    table = spice_u_score(1.0, 1 / 3, caption_uniqueness(["table"], IMAGE, PAPER_UN.get))
    assert elephant == pytest.approx(0.67, abs=0.005)
    assert table == pytest.approx(0.51, abs=0.005)
    assert spice_u_score(1.0, 1 / 3, caption_uniqueness(["person"], IMAGE, PAPER_UN.get)) == 0.0


def test_more_unique_but_wrong_object_gets_no_extra_reward():
    # Image without an elephant: predicting "table" (most unique available) already earns 1.
    assert caption_uniqueness(["table"], ["person", "table"], PAPER_UN.get) == 1.0


def test_ties_and_empty_candidate_give_one():
    assert caption_uniqueness([], ["person"], PAPER_UN.get) == 1.0
    assert caption_uniqueness(["person"], ["person"], PAPER_UN.get) == 1.0


def test_duplicates_do_not_count_twice():
    assert caption_uniqueness(["table", "table"], IMAGE, PAPER_UN.get) == pytest.approx(0.12 / 0.23)


def test_table_un_unseen_is_one_and_roundtrip(tmp_path):
    table = UniquenessTable.from_image_concepts([["dog", "dog brown"], ["dog"], ["cat"], []], meta={"source": "t"})
    assert table.n_images == 4
    assert table.un("dog") == pytest.approx(0.5)
    assert table.un("never seen") == 1.0
    loaded = UniquenessTable.load(table.save(tmp_path / "t.tsv.gz"))
    assert loaded.counts == table.counts and loaded.n_images == 4 and loaded.meta == {"source": "t"}


def test_table_rejects_bad_counts():
    with pytest.raises(ValueError, match="outside"):
        UniquenessTable(n_images=2, counts={"dog": 3})


def _words(texts):
    return [set(t.split()) for t in texts]


def test_builder_counts_images_not_captions(tmp_path):
    corpus = {1: ["a dog", "the dog runs"], 2: ["a cat"], 3: ["nothing here"], 4: []}
    table = build_uniqueness_table(corpus, _words, checkpoint=tmp_path / "ck.sqlite", chunk_images=2)
    assert table.n_images == 4
    assert table.counts["dog"] == 1 and table.counts["a"] == 2
    assert table.un("a") == pytest.approx(0.5)


def test_builder_resumes_after_interruption(tmp_path):
    corpus = {i: [f"w{i % 3} common"] for i in range(10)}
    calls = []

    def flaky(texts):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return _words(texts)

    ck = tmp_path / "ck.sqlite"
    with pytest.raises(KeyboardInterrupt):
        build_uniqueness_table(corpus, flaky, checkpoint=ck, chunk_images=2)
    seen = []
    table = build_uniqueness_table(corpus, lambda t: seen.append(len(t)) or _words(t), checkpoint=ck, chunk_images=2)
    assert sum(seen) == 6  # 4 images were committed before the interruption
    full = build_uniqueness_table(corpus, _words, checkpoint=tmp_path / "other.sqlite", chunk_images=4)
    assert table.counts == full.counts and table.n_images == 10


def test_builder_refuses_resume_with_other_settings(tmp_path):
    ck = tmp_path / "ck.sqlite"
    build_uniqueness_table({1: ["a"]}, _words, checkpoint=ck, meta={"parser": "1"})
    with pytest.raises(ValueError, match="different settings"):
        build_uniqueness_table({1: ["a"]}, _words, checkpoint=ck, meta={"parser": "2"})
    table = build_uniqueness_table({1: ["a"]}, _words, checkpoint=ck, meta={"parser": "2"}, restart=True)
    assert table.meta == {"parser": "2"}
