"""SPICE without Java: synonyms, rules, scene graphs, scoring, cache, metric."""
from __future__ import annotations

import math
import multiprocessing as mp

import pytest

pytest.importorskip("spacy")

from capeval.spice.cache import ParseCache  # noqa: E402
from capeval.spice.depgraph import DepGraph, Node  # noqa: E402
from capeval.spice.graph import SceneGraph  # noqa: E402
from capeval.spice.rules import extract_tuples  # noqa: E402
from capeval.spice.scorer import categories_of, macro_average, score_caption  # noqa: E402
from capeval.meteor.synonyms import SynonymDictionary, default_synonyms  # noqa: E402


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def parser():
    from capeval.spice.parser import SceneGraphParser

    return SceneGraphParser(use_cache=False)


# ----------------------------------------------------------------------------------- synonyms
def test_synonym_dictionary_rules():
    syn = SynonymDictionary("dog\n1 2\nman\n5\nhope\n7\nwonder\n9\n", "man\nmen\n")
    assert syn.word_synsets("dog") == {1, 2}
    assert syn.stem_synsets("dogs") == {1, 2}  # morph: -s
    assert syn.stem_synsets("men") == {5}  # exception list
    assert syn.morph("hoping") == "hope"  # -ing -> -e
    assert syn.morph("glass") == "glass"  # ss: unchanged
    assert syn.morph("wonderful") == ""  # no rule applies: empty
    assert syn.concept_synsets("Dogs ") == {1, 2}


def test_meteor_synonyms_loaded_from_jar():
    syn = default_synonyms()
    assert len(syn) > 140_000
    assert syn.concept_synsets("men") >= syn.word_synsets("man")
    assert not syn.concept_synsets("gray").isdisjoint(syn.concept_synsets("grey"))
    assert syn.concept_synsets("in front of") == frozenset()


# ----------------------------------------------------------------------------------- rules on hand-built graphs
def _graph(words, edges, roots):
    g = DepGraph()
    for i, (w, lemma, tag) in enumerate(words, start=1):
        g.nodes[i] = Node(i, w, lemma, tag)
    g.edges = list(edges)
    g.roots = list(roots)
    return g


def test_rules_copula_with_preposition():
    # a cat is on the table: table <- nsubj cat, cop is, case on
    g = _graph(
        [("a", "a", "DT"), ("cat", "cat", "NN"), ("is", "be", "VBZ"), ("on", "on", "IN"), ("the", "the", "DT"), ("table", "table", "NN")],
        [(2, 1, "det"), (6, 2, "nsubj"), (6, 3, "cop"), (6, 4, "case"), (6, 5, "det")],
        [6],
    )
    assert extract_tuples(g) == [("cat", "table", "on"), ("cat",), ("table",)]


def test_rules_passive_agent_and_plural_count():
    # two men are chased by a dog
    g = _graph(
        [("two", "two", "CD"), ("men", "man", "NNS"), ("are", "be", "VBP"), ("chased", "chase", "VBN"), ("by", "by", "IN"), ("a", "a", "DT"), ("dog", "dog", "NN")],
        [(2, 1, "nummod"), (4, 2, "nsubjpass"), (4, 3, "auxpass"), (4, 7, "nmod:agent"), (7, 5, "case"), (7, 6, "det")],
        [4],
    )
    tuples = extract_tuples(g)
    assert ("dog", "man", "chase") in tuples
    assert ("man", "two") in tuples
    assert ("man",) in tuples and ("dog",) in tuples


def test_rules_quantificational_modifier_and_pronoun():
    # a lot of people with their dogs
    g = _graph(
        [("a", "a", "DT"), ("lot", "lot", "NN"), ("of", "of", "IN"), ("people", "people", "NNS"), ("with", "with", "IN"), ("their", "their", "PRP$"), ("dogs", "dog", "NNS")],
        [(2, 1, "det"), (2, 4, "nmod:of"), (4, 3, "case"), (4, 7, "nmod:with"), (7, 5, "case"), (7, 6, "nmod:poss")],
        [2],
    )
    tuples = extract_tuples(g)
    assert g.roots == [4]  # "people" promoted to head
    assert ("people", "a") in tuples  # det:qmod head is "a", as in the original
    assert ("people", "dog", "with") in tuples
    assert ("people", "dog", "have") in tuples  # "their" resolved to "people"
    assert ("lot",) in tuples  # the quantifier noun is still a node


def test_rules_compound_is_attribute_not_object():
    g = _graph([("tennis", "tennis", "NN"), ("racket", "racket", "NN")], [(2, 1, "compound")], [2])
    assert extract_tuples(g) == [("racket", "tennis")]


# ----------------------------------------------------------------------------------- spaCy conversion + rules
@pytest.mark.parametrize(
    "text, expected, absent",
    [
        ("a man riding a horse on the beach", [("man", "horse", "ride"), ("man", "beach", "ride on")], []),
        ("a cat is on the table", [("cat", "table", "on")], []),
        ("a dog in front of a building", [("dog", "building", "in front of"), ("front",)], []),
        ("a cat is next to a dog", [("cat", "dog", "next to")], [("cat", "next")]),
        ("a man holding his phone", [("man", "phone", "hold"), ("man", "phone", "have")], []),
        ("two dogs and a cat are playing with a ball", [("dog", "ball", "play with"), ("cat", "ball", "play with"), ("dog", "two")], []),
        ("a black and white cat", [("cat", "black"), ("cat", "white")], []),
        ("a man who is riding a horse", [("man", "horse", "ride")], []),
        ("a woman is smiling", [("woman", "smile")], []),
        ("the man is tall", [("man", "tall")], []),
        ("a tennis player", [("player", "tennis")], [("tennis",), ("player",)]),
        ("there is a cat on the table", [("cat", "table", "on")], [("cat", "be")]),
    ],
)
def test_parser_constructions(parser, text, expected, absent):
    tuples = parser.parse([text])[0]
    for t in expected:
        assert t in tuples, (text, tuples)
    for t in absent:
        assert t not in tuples, (text, tuples)


def test_parser_deduplicates_and_keeps_order(parser):
    out = parser.parse(["a dog", "a cat", "a dog"])
    assert out[0] == out[2] == [("dog",)] and out[1] == [("cat",)]


# ----------------------------------------------------------------------------------- scene graphs and scoring
def test_scene_graph_merges_synonyms_and_duplicates():
    syn = default_synonyms()
    g = SceneGraph.from_tuples([[("man",), ("man", "tall"), ("man", "horse", "ride")], [("man", "horse", "ride"), ("grey",), ("gray",)]], syn)
    texts = [t.text() for t in g.tuples()]
    assert texts.count(("man", "ride", "horse")) == 1  # exact duplicate dropped
    assert ("man", "tall") in texts
    keys = [t.key for t in g.tuples()]
    assert "man ride horse" in keys
    # "grey" then "gray": the second node merges into the first (shared synsets)
    assert any(t.concepts[0].words.keys() == {"grey", "gray"} for t in g.tuples())


def test_scene_graph_without_synonym_merging():
    g = SceneGraph.from_tuples([[("grey",), ("gray",)]], default_synonyms(), merge=False)
    assert sorted(t.key for t in g.tuples()) == ["gray", "grey"]


def test_score_caption_counts_and_categories():
    syn = default_synonyms()
    cand = SceneGraph.from_tuples([[("dog",), ("dog", "brown"), ("dog", "ball", "chase")]], syn).tuples()
    ref = SceneGraph.from_tuples([[("dog",), ("dog", "brown"), ("ball",), ("dog", "ball", "chase"), ("dog", "two")]], syn).tuples()
    scores = score_caption(cand, ref)
    # candidate: dog, (dog brown), ball, (dog chase ball) = 4 tuples, all matched; refs: 5
    assert (scores["all"].tp, scores["all"].fp, scores["all"].fn) == (4, 0, 1)
    assert scores["all"].precision == 1.0 and scores["all"].recall == pytest.approx(0.8)
    assert scores["all"].f == pytest.approx(2 * 0.8 / 1.8)
    assert scores["color"].f == 1.0
    assert scores["count"].recall == 0.0 and scores["count"].f == 0.0
    assert math.isnan(scores["size"].f)  # no size tuple in the references
    assert all(t.matched for t in cand)
    avg = macro_average([scores, scores], "size")
    assert avg["f"] is None and avg["num_images"] == 0  # undefined, JSON-safe
    assert categories_of(ref[1]) == ("attribute", "color")


def test_synonym_matching_between_candidate_and_reference():
    syn = default_synonyms()
    cand = SceneGraph.from_tuples([[("automobile",)]], syn).tuples()
    ref = SceneGraph.from_tuples([[("car",)]], syn).tuples()
    assert score_caption(cand, ref)["all"].tp == 1
    assert score_caption(cand, ref, use_synonyms=False)["all"].tp == 0


# ----------------------------------------------------------------------------------- cache
def _writer(path, key, start):
    cache = ParseCache(key, path)
    for i in range(start, start + 50):
        cache.put_many([(f"text {i}", [("x",), (str(i),)])])
    cache.close()


def test_parse_cache_roundtrip_and_concurrent_writers(tmp_path):
    path = tmp_path / "parses.sqlite"
    cache = ParseCache("k1", path)
    cache.put_many([("a dog", [("dog",)]), ("a cat", [("cat", "black")])])
    assert cache.get_many(["a dog", "a cat", "missing"]) == {"a dog": [("dog",)], "a cat": [("cat", "black")]}
    assert ParseCache("k2", path).get_many(["a dog"]) == {}  # other parser version: no stale hits
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, "k3", s)) for s in (0, 50)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(ParseCache("k3", path)) == 100


# ----------------------------------------------------------------------------------- metric
def test_spice_metric_end_to_end(java):
    import capeval

    result = capeval.score(
        ["A man riding a horse on the beach.", "Two dogs play in the snow."],
        [["A man rides a horse along the beach.", "A person on a horse at the shore."], ["Two dogs playing in snow."]],
        metrics=["spice"],
        tokenizer="ptb-java",
        spice_detailed=True,
    )
    assert 0 < result["spice"] <= 1
    assert result["spice"] == pytest.approx(sum(result["per_caption"]["spice"]) / 2)
    assert len(result["per_caption"]["spice_precision"]) == 2
    assert "spice:parser=" in result["signature"] and "syn=meteor-1.5-wordnet" in result["signature"]
    assert "input=tokens" in result["signature"]
    details = result["spice_details"]
    assert {"tuple", "key", "truth_value"} <= set(details[0]["test_tuples"][0])
    assert set(result["spice_categories"]) == {"all", "object", "attribute", "relation", "color", "count", "size"}
    # identical caption and reference: perfect score
    same = capeval.score(["a cat on a mat"], [["a cat on a mat"]], metrics=["spice"], tokenizer="ptb-java")
    assert same["spice"] == 1.0


def test_spice_raw_input_and_bad_options():
    from capeval.spice.metric import Spice

    import capeval

    result = capeval.score(["a dog"], [["a dog"]], metrics=["spice"], spice_input="raw", cleanup="none", tokenizer="ptb-java")
    assert result["spice"] == 1.0 and "tok:" not in result["signature"]
    with pytest.raises(ValueError, match="spice_input"):
        Spice(spice_input="words")
    with pytest.raises(ValueError, match="spice_workers"):
        Spice(spice_workers=0)


def test_check_available_names_the_fix():
    from capeval.spice.metric import Spice

    Spice.check_available()
    with pytest.raises(ImportError, match="pip install"):
        Spice.check_available("no_such_spacy_model_xyz")


def test_detailed_result_is_strict_json():
    import json

    import capeval

    out = capeval.score(["a dog"], [["a dog"]], metrics=["spice"], spice_detailed=True)
    json.dumps(out, allow_nan=False)  # no NaN anywhere: undefined categories are None
    assert out["spice_categories"]["color"]["f"] is None
