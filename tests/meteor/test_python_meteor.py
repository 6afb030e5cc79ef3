"""The pure-Python METEOR 1.5 (capeval.meteor): its parts, and parity with the jar (tests marked ``java``).

The full measurement (all 20,000 Karpathy-test candidates, Flickr8k-Expert, PASCAL-50S) is
``benchmarks/meteor_parity.py``; here a slice of it, hand-made hostile inputs and a seeded random fuzz are
compared line by line with the jar's statistics.
"""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import capeval
from support.meteor_cases import HOSTILE, random_caption as _random_caption
from capeval.meteor import paraphrase as paraphrase_module
from capeval.meteor.align import java_hash
from capeval.meteor.normalize import normalize_line
from capeval.meteor.paraphrase import ParaphraseCacheWarning, ParaphraseTable
from capeval.meteor.scorer import PythonMeteorScorer, prepare_text
from capeval.meteor.stats import STAT_FIELDS, aggregate, format_stats, parse_stats, score


@pytest.fixture(scope="module")
def py_scorer() -> PythonMeteorScorer:
    return PythonMeteorScorer()


@pytest.fixture(scope="module")
def jar_scorer(java):
    from capeval.meteor.jar import MeteorScorer

    with MeteorScorer(timeout=180) as scorer:
        yield scorer


# -- parts ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    # expected outputs printed by the jar's own Normalizer.normalizeLine(line, en, true)
    ("U.S.-based Mr. Smith's dogs, 1990's ... \"hi\"", "US based Mr. Smith 's dogs , 1990 's ... \" hi \""),
    ("a dog  runs", "a dog runs"),
    ("", ""),
    ("3,000 dogs, cats", "3,000 dogs , cats"),
    ("It ends here.", "It ends here ."),
    ("e.g. this", "eg this"),
    ("a \u201cquoted\u201d \u2018word\u2019 \u2013 dash", "a \" quoted \" ' word ' - dash"),
])
def test_normaliser_outputs(line, expected):
    assert normalize_line(line) == expected


def test_java_string_hash():
    assert java_hash("hello") == 99162322
    assert java_hash("") == 0
    assert java_hash("a\U0001F600") == (31 * (31 * 97 + 0xD83D) + 0xDE00) & 0xFFFFFFFF  # UTF-16 surrogates
    assert java_hash("a\u00ff") == java_hash("b\u00e0")  # two lower-case words with one hash


def test_hash_collision_matches_exactly_as_in_the_jar(py_scorer):
    """The jar compares words by String.hashCode: 'aÿ' and 'bà' are an exact match for it, and for us."""
    stats = parse_stats(py_scorer.statistics(["a\u00ff"], [["b\u00e0"]])[0])
    assert stats[4] == 1 and stats[5] == 1  # one exact content match on each side


def test_score_and_aggregate():
    zero = [0.0] * STAT_FIELDS
    assert score(zero) == 0.0  # 0/0 everywhere: NaN -> 0 as in the jar
    perfect = [2, 2, 0, 0, 2, 2, 0, 0] + [0] * 12 + [1, 2, 2]
    assert score(perfect) == pytest.approx(1.0)  # no fragmentation penalty for a perfect match
    partial = [4, 6, 2, 3, 1, 1, 1, 1] + [0] * 12 + [2, 2, 2]
    value = score(partial)
    assert 0 < value < 1
    total = aggregate([perfect, partial, perfect])
    assert total[0] == 8 and total[20] == 2  # chunks of perfect matches are not added (MeteorStats.addStats)
    assert parse_stats(format_stats(partial)) == [float(x) for x in partial]
    assert format_stats(partial).split()[0] == "4.0"
    with pytest.raises(ValueError, match="23 fields"):
        parse_stats("1.0 2.0")


def test_statistics_lines_aggregated_at_once_give_the_loops_sums_bit_for_bit():
    import math
    import random

    from capeval.meteor.stats import aggregate_lines

    rng = random.Random(7)
    perfect = [2, 2, 0, 0, 2, 2, 0, 0] + [0] * 12 + [1, 2, 2]
    for trial in range(300):
        rows = []
        for _ in range(rng.randint(0, 60)):
            kind = rng.random()
            if kind < 0.3:
                rows.append([float(v) for v in perfect])  # its chunks left out of the sum
            elif kind < 0.9:
                rows.append([float(rng.randint(0, 14)) for _ in range(STAT_FIELDS)])
            else:  # what a damaged shard could hold: fractions, huge and tiny values, inf, nan
                rows.append([rng.choice([rng.uniform(-1e6, 1e6), 1e-300, 1e300, math.inf, math.nan, 0.1, -0.0])
                             for _ in range(STAT_FIELDS)])
        start = None if trial % 3 else [rng.uniform(0, 1e9) for _ in range(STAT_FIELDS)]
        lines = [format_stats(row) for row in rows]
        want, got = aggregate([parse_stats(line) for line in lines], start=start), aggregate_lines(lines, start=start)
        assert [repr(v) for v in got] == [repr(v) for v in want]
    assert aggregate_lines([format_stats(perfect)] * 3)[20] == 0.0
    with pytest.raises(ValueError, match="23 fields, got 2: '1.0 2.0'"):
        aggregate_lines([format_stats(perfect), "1.0 2.0"])
    with pytest.raises(ValueError, match="could not convert string to float: 'x'"):
        aggregate_lines([" ".join(["x"] * STAT_FIELDS)])


def test_snowball_3_is_refused(monkeypatch):
    import snowballstemmer

    from capeval.meteor.scorer import snowball_english

    monkeypatch.setattr(snowballstemmer, "__version__", "3.0.1", raising=False)
    with pytest.raises(ImportError, match=r"snowballstemmer>=2,<3"):
        snowball_english()


def _tiny_lines() -> list[str]:
    # probability, phrase, paraphrase: 'big dog' has two paraphrases, one listed twice; one line needs splitting
    return ["0.5", "big dog", "large dog", "0.1", "big dog", "huge  hound", "0.2", "big dog", "large dog",
            "0.3", "sofa", "couch"]


def test_paraphrase_table_ranks_duplicates_and_cache(tmp_path):
    table = ParaphraseTable.from_lines(_tiny_lines())
    assert len(table) == 4
    big = table.phrase_id("big dog")
    large, huge = table.phrase_id("large dog"), table.phrase_id("huge hound")  # tokens re-joined by one space
    assert table.phrase_id("huge  hound") is None and table.phrase_id("cat") is None
    assert table.group(big) == {large: (0, 2), huge: (1,)}  # file order; an entry listed twice matches twice
    phrases, paraphrases = table.sentence_phrases("a big dog on a sofa".split())
    assert phrases == [(1, 2, big), (5, 1, table.phrase_id("sofa"))]
    assert paraphrases == []
    table.save(tmp_path / "t.npz")
    again = ParaphraseTable.load(tmp_path / "t.npz")
    assert again.group(big) == table.group(big) and again.vocabulary == table.vocabulary
    with pytest.raises(ValueError, match="3 lines per entry"):
        ParaphraseTable.from_lines(["0.1", "a"])


def test_paraphrase_cache_faults(tmp_path, monkeypatch):
    """A corrupt cache file is moved aside and rebuilt; an unwritable cache keeps the table in memory, with a warning."""
    source = tmp_path / "paraphrase-en.gz"
    import gzip

    with gzip.open(source, "wt", encoding="utf-8") as f:
        f.write("\n".join(_tiny_lines()) + "\n")
    monkeypatch.setattr(paraphrase_module, "paraphrase_file", lambda: source)
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    table = paraphrase_module.default_table()
    cached = list((tmp_path / "cache" / "meteor").glob("*.npz"))
    assert len(cached) == 1 and len(table) == 4
    cached[0].write_bytes(b"not a zip file")
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    with pytest.warns(UserWarning, match="could not be read"):
        assert len(paraphrase_module.default_table()) == 4
    assert ParaphraseTable.load(cached[0]).phrase_id("sofa") is not None  # rebuilt in place
    locked = tmp_path / "locked"
    locked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(locked))
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    with pytest.warns(ParaphraseCacheWarning, match="kept in memory"):
        assert len(paraphrase_module.default_table()) == 4


def test_the_one_time_table_build_has_its_own_line_before_the_meteor_bar(tmp_path, monkeypatch, capsys):
    """Building the paraphrase table (about 5 s, once per installed file) shows a line of its own that says so, with no
    rate or ETA, and it happens before METEOR's bar over the captions opens, so that bar's rate is the captions'."""
    import gzip

    import capeval.coco.meteor as meteor_metric

    source = tmp_path / "paraphrase-en.gz"
    with gzip.open(source, "wt", encoding="utf-8") as f:
        f.write("\n".join(_tiny_lines()) + "\n")
    monkeypatch.setattr(paraphrase_module, "paraphrase_file", lambda: source)
    monkeypatch.setattr(paraphrase_module, "_DEFAULT", None)
    monkeypatch.setattr(meteor_metric, "_SHARED_PYTHON", None)  # a scorer that has not loaded its data yet
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    capsys.readouterr()
    capeval.score(["a big dog on a sofa", "two cats"], [["a large dog on a couch"], ["two cats"]], metrics="meteor",
                  progress=True)
    err = capsys.readouterr().err
    assert paraphrase_module.BUILD_DESC in err and "once" in paraphrase_module.BUILD_DESC
    assert err.index(paraphrase_module.BUILD_DESC) < err.index("METEOR:"), err
    build_line = err[err.index(paraphrase_module.BUILD_DESC):].split("\r")[0]
    assert "it/s" not in build_line and "<" not in build_line  # no rate, no ETA
    capsys.readouterr()
    paraphrase_module.default_table(progress=True)  # built: nothing to say
    assert paraphrase_module.BUILD_DESC not in capsys.readouterr().err


# -- behaviour -------------------------------------------------------------------------------------------------


def test_scores_in_range_and_identical_requests_once(py_scorer):
    hyps = ["a dog runs on the grass", "a dog runs on the grass", "", "two cats"]
    refs = [["a dog running on a lawn", "dogs play"], ["a dog running on a lawn", "dogs play"], ["a cat"], ["two cats"]]
    before = py_scorer.computed
    corpus, per = py_scorer.score(hyps, refs)
    assert py_scorer.computed - before == 3
    assert per[0] == per[1] and per[2] == 0.0 and 0.9 < per[3] <= 1.0
    assert 0 < corpus < 1
    py_scorer.score(hyps, refs)
    assert py_scorer.computed - before == 3  # answered from the statistics cache


def test_steps_and_cache_clearing_leave_the_statistics_unchanged(py_scorer, monkeypatch):
    """Pairs are looked up and aligned in steps, and the sentence and word caches empty when full (memory flat in the
    number of captions): tiny steps and tiny caches give the same lines as one step."""
    import capeval.meteor.scorer as scorer_module

    rng = random.Random(30)
    hyps = [_random_caption(rng) for _ in range(60)] + ["a dog runs on the grass"] * 3
    refs = [[_random_caption(rng) for _ in range(rng.randint(1, 4))] for _ in hyps[:60]] + [["a dog on a lawn"]] * 3
    expected = PythonMeteorScorer().statistics(hyps, refs)
    monkeypatch.setattr(scorer_module, "_STEP_PAIRS", 7)
    monkeypatch.setattr(scorer_module, "_SENTENCE_CACHE_SIZE", 5)
    monkeypatch.setattr(scorer_module, "_WORD_CACHE_SIZE", 3)
    small = PythonMeteorScorer()
    sizes = []  # the sentence cache's size at each caption's alignments
    align = scorer_module.best_stats
    monkeypatch.setattr(scorer_module, "best_stats", lambda *a: sizes.append(len(small._sentences)) or align(*a))
    assert small.statistics(hyps, refs) == expected
    assert max(sizes) <= 7 * 5 and len(small._prepared) <= 5 and len(small._words) <= 3
    assert small.computed == 61  # the repeated pair is aligned once, across steps


def _sentences(scorer: PythonMeteorScorer, hypothesis: str, references: list[str]):
    """The aligner's sentences of one pair and the paraphrase groups they need (as a call builds them)."""
    scorer.load()
    scorer._add_sentences([hypothesis, *references])
    return (scorer._sentences[prepare_text(hypothesis)], [scorer._sentences[prepare_text(r)] for r in references],
            scorer._groups)


def test_the_score_bound_is_never_below_the_score():
    """:func:`capeval.meteor.align.score_bound` bounds the score of the alignment the search picks, for random
    captions of every stage (stems, synonyms, paraphrases, function words) and empty lines; it is reached by
    identical lines and is 0 where nothing can match."""
    from capeval.meteor.align import align_stats, candidates, hypothesis_index, score_bound

    scorer = PythonMeteorScorer()
    rng = random.Random(31)
    pairs = [(_random_caption(rng), _random_caption(rng)) for _ in range(300)]
    pairs += [("a man riding a bicycle on the road", "a man rides a bike on the street"),
              ("the dog plays on the lawn", "the dog plays on the lawn"), ("a dog", "two cats")]
    tight = 0
    for hypothesis, reference in pairs:
        s1, (s2,), groups = _sentences(scorer, hypothesis, [reference])
        found = candidates(s1, s2, groups, hypothesis_index(s1))
        value = score(align_stats(s1, s2, groups))
        bound = score_bound(s1, s2, found)
        assert value <= bound, (hypothesis, reference, value, bound)
        tight += bound == value
    s1, (s2,), groups = _sentences(scorer, "the dog plays on the lawn", ["the dog plays on the lawn"])
    assert score_bound(s1, s2, candidates(s1, s2, groups)) == score(align_stats(s1, s2, groups)) > 0.99
    s1, (s2,), groups = _sentences(scorer, "a dog", ["two cats"])
    assert score_bound(s1, s2, candidates(s1, s2, groups)) == 0.0
    assert tight > 10


def test_best_reference_equals_aligning_every_reference(monkeypatch):
    """:func:`capeval.meteor.align.best_stats` gives the statistics of the first reference with the highest score,
    as aligning each in order does (ties: the first; repeated references; one reference), while aligning fewer."""
    import capeval.meteor.align as align_module

    scorer = PythonMeteorScorer()
    rng = random.Random(32)
    cases = [(_random_caption(rng), [_random_caption(rng) for _ in range(rng.randint(1, 5))]) for _ in range(200)]
    cases += [("a dog runs", ["two cats", "a dog runs", "a dog runs", "a dog"]),  # a tie: the first of the two
              ("a dog runs", ["a dog", "a dog", "a dog"]), ("", ["a dog", ""]), ("a dog", ["a dog"])]
    aligned = []
    stats_of = align_module.stats_of
    monkeypatch.setattr(align_module, "stats_of", lambda *a: aligned.append(1) or stats_of(*a))
    for hypothesis, references in cases:
        s1, s2s, groups = _sentences(scorer, hypothesis, references)
        every = [align_module.align_stats(s1, s2, groups) for s2 in s2s]
        scores = [score(st) for st in every]
        expected = every[scores.index(max(scores))]
        aligned.clear()
        assert align_module.best_stats(s1, s2s, groups) == expected
        assert len(aligned) <= len(references)
        if hypothesis == "a dog runs" and len(references) == 4:
            assert len(aligned) == 2  # the tied pair; "two cats" and "a dog" are bounded below their score
    total = sum(len(r) for _, r in cases)
    aligned.clear()
    for hypothesis, references in cases:
        s1, s2s, groups = _sentences(scorer, hypothesis, references)
        align_module.best_stats(s1, s2s, groups)
    assert len(aligned) < 0.9 * total


def _tracked_state(scorer: PythonMeteorScorer) -> int:
    """How many objects the garbage collector tracks among those the scorer's caches hold (the scorer's own
    attributes, its caches and what they reach; not the language data loaded once)."""
    import gc

    seen: set[int] = set()
    todo = [scorer._words, scorer._sentences, scorer._stats, scorer._prepared]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or not gc.is_tracked(obj):
            continue
        seen.add(id(obj))
        todo.extend(gc.get_referents(obj))
    return len(seen)


def test_what_a_call_leaves_behind_does_not_grow_with_its_captions():
    """After a call the scorer keeps no sentence, and the objects the garbage collector tracks in what it keeps
    (statistics lines, prepared texts, words) do not grow with the number of captions: the collector's next pass,
    which once made a one-caption call after a 20,000-caption one take 0.44 s, has nothing new to scan."""
    import gc

    rng = random.Random(7)
    vocabulary = [_random_caption(rng).split() for _ in range(20)]
    words = sorted({w for caption in vocabulary for w in caption})

    def captions(n: int) -> tuple[list[str], list[list[str]]]:
        hyps = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(n)]
        return hyps, [[" ".join(rng.choice(words) for _ in range(9)) for _ in range(3)] for _ in range(n)]

    small, large = PythonMeteorScorer(), PythonMeteorScorer()
    small.statistics(*captions(50))
    large.statistics(*captions(500))
    assert not small._sentences and not large._sentences
    assert len(large._stats) == 500 and not gc.is_tracked(large._stats) and not gc.is_tracked(large._prepared)
    assert _tracked_state(large) <= _tracked_state(small) + 3 * len(words)


def test_long_hypothesis_finishes(py_scorer):
    long = " ".join(["a dog on the grass with a ball"] * 2500)  # 75,000 characters, 20,000 words
    corpus, per = py_scorer.score([long], [["a dog plays with a ball on the grass"]])
    assert 0 <= per[0] < 0.2 and math.isfinite(corpus)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80), st.lists(st.text(max_size=80), min_size=1, max_size=3))
def test_any_text_scores_in_range(py_scorer, hypothesis_text, references):
    corpus, per = py_scorer.score([hypothesis_text], [references])
    assert math.isfinite(corpus) and 0.0 <= per[0] <= 1.0


def test_meteor_and_lceval_align_each_caption_once():
    from support import needs_weights

    needs_weights("lceval")
    from capeval.coco.meteor import python_scorer

    preds = ["a brown dog jumps over a fence", "three people ride bikes on a trail"]
    refs = [["a dog leaps over a wooden fence"], ["people cycling on a dirt path", "three cyclists"]]
    scorer = python_scorer()
    before = scorer.computed
    out = capeval.score(preds, refs, metrics=["meteor", "lceval"])
    assert scorer.computed - before == 2
    assert 0 < out["meteor"] < 1


def test_every_metric_but_the_java_backends_runs_without_java(tmp_path):
    """``capeval score --example`` and METEOR on a machine without Java (no java on PATH, no JAVA_HOME)."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PATH")}
    env["PATH"] = str(tmp_path)  # an empty folder: no java, nothing else either
    out = subprocess.run([sys.executable, "-m", "capeval", "score", "--example", "--json", "-"], capture_output=True,
                         text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert 0 < result["meteor"] < 1
    code = ("import capeval\n"
            "for options in ({'meteor_backend': 'java'}, {'tokenizer': 'ptb-java'}):\n"
            "    try:\n        capeval.score(['a dog'], [['a dog']], metrics='meteor', **options)\n"
            "    except Exception as err:\n        print(type(err).__name__, err)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("JavaNotFoundError") for line in lines), out.stdout + out.stderr
    assert "meteor_backend='java'" in lines[0] and "tokenizer='ptb-java'" in lines[1]


# -- parity with the jar ----------------------------------------------------------------------------------------

def _compare(jar_scorer, py_scorer, hyps, refs):
    theirs = jar_scorer.statistics(hyps, refs)
    ours = py_scorer.statistics(hyps, refs)
    differing = [(i, hyps[i], ours[i], theirs[i]) for i in range(len(hyps)) if ours[i] != theirs[i]]
    assert not differing, differing[:5]
    (our_corpus, our_segments), (their_corpus, their_segments) = py_scorer.evaluate(ours), jar_scorer.evaluate(theirs)
    assert our_corpus == pytest.approx(their_corpus, abs=1e-12)  # pytest 9.2's approx refuses nested structures
    assert our_segments == pytest.approx(their_segments, abs=1e-12)


@pytest.mark.java
def test_hostile_inputs_match_the_jar(jar_scorer, py_scorer):
    _compare(jar_scorer, py_scorer, [h for h, _ in HOSTILE], [r for _, r in HOSTILE])


@pytest.mark.java
def test_random_captions_match_the_jar(jar_scorer, py_scorer):
    rng = random.Random(29)
    hyps = [_random_caption(rng) for _ in range(400)]
    refs = [[_random_caption(rng) for _ in range(rng.randint(1, 4))] for _ in hyps]
    _compare(jar_scorer, py_scorer, hyps, refs)


@pytest.mark.java
def test_karpathy_slice_matches_the_jar(jar_scorer, py_scorer, shared_data):
    from capeval.text import get_tokenizer

    rows = json.load(open(shared_data / "coco_karpathy_test" / "karpathy_cand.json"))[::20]  # 1,000 of 20,000
    refmap: dict[str, list[str]] = {}
    for r in json.load(open(shared_data / "coco_karpathy_test" / "karpathy_ref.json")):
        refmap.setdefault(r["image_id"], []).append(r["caption"])
    tokenizer = get_tokenizer("ptb")
    hyps = [" ".join(t) for t in tokenizer.tokenize([r["caption"] for r in rows])]
    refs = [[" ".join(t) for t in tokenizer.tokenize(refmap[r["image_id"]])] for r in rows]
    _compare(jar_scorer, py_scorer, hyps, refs)
    raw = [r["caption"] for r in rows[:200]]  # untokenised text exercises the normaliser
    _compare(jar_scorer, py_scorer, raw, [refmap[r["image_id"]] for r in rows[:200]])


def test_prepare_text_is_what_the_jar_aligns():
    assert prepare_text("  A Dog|||\nRuns.  ") == "a dog runs ."
    assert prepare_text("\u00c9T\u00c9") == "\u00e9t\u00e9"


def test_table_arrays_are_consistent(py_scorer):
    py_scorer.statistics(["a dog"], [["a dog"]])
    table = py_scorer._table
    assert len(table) == 5_274_084 and len(table.hashes) == 2_616_378
    assert bool(np.all(table.keys[1:] >= table.keys[:-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert table.phrase_id("a man") is not None and table.phrase_id("zzzq unknownword") is None
