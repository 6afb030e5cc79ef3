"""The spice_u metric end to end on a small uniqueness table built with the real SPICE pipeline."""
from __future__ import annotations

import math

import pytest

import capeval
from capeval.spice_u.build import build_uniqueness_table
from capeval.spice_u.concepts import concept_extractor

pytest.importorskip("spacy")
TOKENIZER = "ptb-java"

CORPUS = {  # "man", "table" common; "elephant", "giraffe" rare
    i: caps
    for i, caps in enumerate(
        [["A man sitting at a table."], ["A man standing next to a table."], ["A man with a dog."],
         ["A woman at a table."], ["An elephant in a field."], ["A man and a giraffe."]]
    )
}


@pytest.fixture(scope="module")
def table_path(tmp_path_factory, java):
    extract, settings = concept_extractor(tokenizer=TOKENIZER)
    tmp = tmp_path_factory.mktemp("spiceu")
    table = build_uniqueness_table(CORPUS, extract, checkpoint=tmp / "ck.sqlite", meta=settings)
    assert table.n_images == 6 and table.counts["man"] == 4 and table.counts["elephant"] == 1
    return str(table.save(tmp / "toy.tsv.gz"))


def test_spice_u_prefers_the_unique_object(table_path):
    # Un(man) = 1 - 4/6, Un(table) = 1 - 3/6, Un(elephant) = 1 - 1/6 in the toy table.
    refs = [["A man.", "An elephant.", "A table."]] * 2
    out = capeval.score(["An elephant.", "A table."], refs, metrics=["spice_u", "spice"], tokenizer=TOKENIZER,
                        spice_u_table=table_path, spice_u_detailed=True)
    u = out["per_caption"]["uniqueness"]
    assert u[0] == pytest.approx(1.0)  # elephant is the most unique concept available
    assert u[1] == pytest.approx((0.5 - 1 / 3) / (5 / 6 - 1 / 3))
    assert out["per_caption"]["spice"][0] == pytest.approx(0.5)  # P = 1, R = 1/3
    assert out["per_caption"]["spice_u"][0] > out["per_caption"]["spice_u"][1]
    for f, uq, su in zip(out["per_caption"]["spice"], u, out["per_caption"]["spice_u"]):
        assert su == pytest.approx(0.0 if f == 0 else 2 * f * uq / (f + uq))
    assert out["spice_u"] == pytest.approx(sum(out["per_caption"]["spice_u"]) / 2)
    assert "table=toy:6img" in out["signature"]
    details = out["spice_u_details"][0]
    assert details["candidate_concepts"] == {"elephant": pytest.approx(1 - 1 / 6)}


def test_spice_u_zero_when_nothing_matches(table_path):
    out = capeval.score(["A giraffe."], [["A man at a table."]], metrics=["spice_u"], tokenizer=TOKENIZER,
                        spice_u_table=table_path)
    assert out["spice_u"] == 0.0 and not math.isnan(out["uniqueness"])


def test_missing_table_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="build-uniqueness"):
        capeval.score(["A dog."], [["A dog."]], metrics=["spice_u"], tokenizer=TOKENIZER,
                      spice_u_table=str(tmp_path / "nope.tsv.gz"))
