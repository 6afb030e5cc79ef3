"""Property / fuzz tests of the scoring API (hypothesis), sized for CI on 2 cores (about 2 minutes).

Properties, on generated captions (words, punctuation, abbreviations, Unicode, emoji, zero-width and
control characters):

* a clean-up never creates a token: whatever ``cleanup``, the tokens every metric sees are the PTB
  tokens of the caption as written (pycocoevalcap's);
* bad input or a bad argument raises only ``ValueError``/``TypeError``, and the message names the
  item (``predictions[2]``, ``references[1][0]``) or the argument; nothing hangs (pytest-timeout);
* scores are finite and in range (BLEU, ROUGE-L, METEOR in [0, 1]; CIDEr-D in [0, 10]);
* the order of an item's references does not matter;
* BLEU, ROUGE-L and METEOR of a caption do not depend on the rest of the batch (batch = one by one);
  CIDEr-D does by design (document frequencies), so for it: permuting the items permutes the scores.

Thousands of examples for the pure-Python metrics, a few dozen for METEOR (one JVM for all of them).
"""
from __future__ import annotations

import math
import re
import string
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import capeval
from capeval.batch import CaptionBatch
from capeval.text.cleanup import CLEANUPS, thumb_cleanup
from capeval.text.ptb import _PERIOD_WORDS, PTBTokenizer
from capeval.validation import WordlessCaptionWarning

# tiny corpora on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = [pytest.mark.timeout(600), pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning"),
              pytest.mark.filterwarnings("ignore::capeval.NonEnglishWarning")]  # fuzzed text is not English by design

FAST = "bleu,rouge_l,cider_d"
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TOK = PTBTokenizer(line_context=False)

WORDS = ["a", "dog", "man", "the", "on", "top", "of", "grass", "red", "bus", "two", "cats", "riding", "A",
         "Dog", "St", "etc", "Mr", "t.v", "U.S", "I", "x", "can't", "cannot", "gonna", "2", "1/2", "(", ")", "-",
         "'s", "\"", "...", "café", "naïve", "Σ", "日本"]
ODD = ["", " ", "  ", ".", ",", "!", "?", "'", '"', "-", "--", "…", "🙂", "\u200b", "\u00a0", "\t", "\n", "\u2028",
       "\x00", "\x1f", "|||", "\\", "&amp;", "<b>", "a.", "A.", "ca."]
#: every character a caption could end in (printable ASCII, Latin-1, general punctuation, symbols,
#: zero-width and control characters, an emoji) and abbreviation-like words
LAST_CHARS = [chr(c) for c in range(0x20, 0x7F)] + list("éßΣσ日ー’“”«»–—…€£¥°±×÷§¶†") + [
    "\u00a0", "\u200b", "\u200d", "\ufeff", "\u2028", "\x07", "\x85", "🙂", "𝔸"]
ABBREVIATIONS = sorted({w for base in _PERIOD_WORDS for w in (base, base.capitalize(), base.upper())}) + [
    "t.v", "u.s", "U.S", "a.m", "p.m", "e.g", "i.e", "T.V.V", "s.u.v", "w", "Q", "k"]


def _caption(draw_words):
    return " ".join(draw_words)


words = st.lists(st.one_of(st.sampled_from(WORDS), st.sampled_from(ODD), st.text(min_size=1, max_size=6)),
                 min_size=1, max_size=8).map(_caption)
good_caption = st.lists(st.sampled_from(WORDS[:24]), min_size=1, max_size=10).map(" ".join)
caption = st.one_of(good_caption, words)


# -- clean-up never creates a token ---------------------------------------------------------------------


def _tokens_under(cleanup: str, captions: list[str], tokenizer: str = "ptb") -> list[list[str]]:
    batch = CaptionBatch(captions, [["a reference"]] * len(captions), cleanup=cleanup, tokenizer=tokenizer)
    return batch.prediction_tokens


@pytest.mark.parametrize("last", LAST_CHARS + ABBREVIATIONS, ids=lambda s: repr(s))
def test_no_cleanup_creates_a_token_whatever_the_last_character_or_word(last):
    captions = [f"a dog on top of {last}", f"on top of a {last}", f"{last}", f"A man {last} .", f"a cat {last}  "]
    captions = [c for c in captions if c.strip()]
    as_written = TOK.tokenize(captions)
    for name in CLEANUPS:
        got = _tokens_under(name, captions)
        for text, mine, theirs in zip(captions, got, as_written):
            assert set(mine) <= set(theirs), (name, text, mine, theirs)
            assert mine == theirs, (name, text)


def test_the_thumb_text_itself_would_have_created_tokens():
    """Why tokens come from the caption as written: tokenising the THumB text glues its period."""
    assert TOK.tokenize(["on top of a"]) == [["on", "top", "of", "a"]]
    assert TOK.tokenize([thumb_cleanup("on top of a")]) == [["on", "top", "of", "a."]]
    assert _tokens_under("thumb", ["on top of a"]) == [["on", "top", "of", "a"]]


@settings(max_examples=1500, **SETTINGS)
@given(st.lists(caption, min_size=1, max_size=4), st.sampled_from(["ptb", "ptb-ctx"]))
def test_cleanup_never_changes_tokens(captions, tokenizer):
    assume(all(c.strip() for c in captions))
    none = _tokens_under("none", captions, tokenizer)
    thumb = _tokens_under("thumb", captions, tokenizer)
    assert thumb == none
    if tokenizer == "ptb":
        assert none == TOK.tokenize(captions)


# -- bad input: ValueError/TypeError naming the item -------------------------------------------------------

ITEM = re.compile(r"(predictions|references)(\[\d+\])+|predictions|references|Length mismatch|No predictions")
junk = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.just(float("nan")), st.binary(max_size=3),
                 st.just(""), st.just("   \t\n"), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))


@settings(max_examples=2000, **SETTINGS)
@given(st.data())
def test_bad_inputs_raise_value_or_type_error_naming_the_item(data):
    n = data.draw(st.integers(0, 4))
    preds = data.draw(st.lists(st.one_of(good_caption, junk), min_size=n, max_size=n))
    refs = data.draw(st.lists(st.one_of(good_caption, junk, st.lists(st.one_of(good_caption, junk), max_size=3)),
                              min_size=max(n + data.draw(st.integers(-1, 1)), 0), max_size=max(n + 1, 0)))
    container = data.draw(st.sampled_from([list, tuple, "str", "none"]))
    if container == "str":
        preds = "a dog"
    elif container == "none":
        refs = None
    else:
        preds, refs = container(preds), container(refs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WordlessCaptionWarning)
            result = capeval.score(preds, refs, metrics=FAST)
    except (ValueError, TypeError) as err:
        assert ITEM.search(str(err)), str(err)
        return
    # accepted: then it was valid input, and the scores obey their ranges
    _check_ranges(result, len(preds))


# -- bad arguments ----------------------------------------------------------------------------------------

ARGUMENTS = {
    "metrics": st.one_of(st.none(), st.integers(), st.just([None]), st.just(["bleu", 5]), st.just({"bleu"}),
                         st.just(""), st.just("blue"), st.just([]), st.text(max_size=5), st.just(b"bleu")),
    "tokenizer": st.one_of(st.none(), st.integers(), st.just(object()), st.text(max_size=5), st.just(["ptb"])),
    "cleanup": st.one_of(st.integers(), st.just(object()), st.text(max_size=5), st.just(["thumb"])),
    "progress": st.one_of(st.integers(), st.text(max_size=3), st.just([True])),
    "max_caption_chars": st.one_of(st.integers(-3, 0), st.floats(), st.text(max_size=3), st.just(True)),
    "cider_df": st.one_of(st.none(), st.integers(), st.just([]), st.just({}), st.text(max_size=5)),
    "meteor_jvms": st.one_of(st.none(), st.integers(-2, 0), st.floats(), st.text(max_size=3)),
    "meteor_timeout": st.one_of(st.none(), st.integers(-2, 0), st.just(float("nan")), st.text(max_size=3)),
    "spice_workers": st.one_of(st.integers(-2, 0), st.text(max_size=3), st.just(True)),
    "spice_input": st.one_of(st.integers(), st.just([]), st.text(max_size=3)),
    "not_an_option": st.integers(),
}


@settings(max_examples=600, **SETTINGS)
@given(st.sampled_from(sorted(ARGUMENTS)).flatmap(lambda name: st.tuples(st.just(name), ARGUMENTS[name])))
def test_bad_arguments_raise_value_or_type_error_naming_the_argument(arg):
    name, value = arg
    kwargs = {name: value}
    if name.startswith(("meteor", "spice")):
        kwargs["metrics"] = name.split("_")[0]  # select the metric the option belongs to
    try:
        capeval.score(["a dog runs"], [["a dog", "a cat"]], **kwargs)
    except (ValueError, TypeError) as err:
        label = {"not_an_option": "Unknown option", "metrics": "metric"}.get(name, name)
        assert label.lower() in str(err).lower(), (name, value, str(err))
        return
    except (ImportError, OSError):  # spaCy model or Java missing: nothing to check here
        return
    # accepted values must be valid ones
    assert name in ("metrics", "tokenizer", "cleanup") and isinstance(value, str | type(None)), (name, value)


# -- ranges, reference order, batch = one by one ----------------------------------------------------------


def _check_ranges(result: dict, n: int) -> None:
    for key in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d", "meteor"):
        if key not in result:
            continue
        top = 10.0 if key == "cider_d" else 1.0
        values = [result[key], *result["per_caption"][key]]
        assert len(result["per_caption"][key]) == n
        assert all(math.isfinite(v) and -1e-12 <= v <= top + 1e-9 for v in values), (key, values)


items = st.lists(st.tuples(caption, st.lists(caption, min_size=1, max_size=4)), min_size=1, max_size=4)


def _valid(pairs) -> bool:
    return all(p.strip() and all(r.strip() for r in rs) for p, rs in pairs)


def _score(preds, refs, metrics=FAST):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WordlessCaptionWarning)
        return capeval.score(preds, refs, metrics=metrics)


@settings(max_examples=1000, **SETTINGS)
@given(items, st.randoms(use_true_random=False))
def test_scores_in_range_order_free_and_batch_independent(pairs, rnd):
    assume(_valid(pairs))
    preds = [p for p, _ in pairs]
    refs = [list(rs) for _, rs in pairs]
    result = _score(preds, refs)
    _check_ranges(result, len(preds))

    shuffled = [rnd.sample(rs, len(rs)) for rs in refs]
    again = _score(preds, shuffled)
    for key in ("bleu_1", "bleu_4", "rouge_l", "cider_d"):
        assert np.allclose(again["per_caption"][key], result["per_caption"][key], rtol=0, atol=1e-12), key

    order = rnd.sample(range(len(preds)), len(preds))
    permuted = _score([preds[i] for i in order], [refs[i] for i in order])
    for key in ("bleu_4", "rouge_l", "cider_d"):
        assert np.allclose(permuted["per_caption"][key], [result["per_caption"][key][i] for i in order],
                           rtol=0, atol=1e-12), key

    i = rnd.randrange(len(preds))
    alone = _score([preds[i]], [refs[i]], "bleu,rouge_l")
    for key in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l"):
        assert abs(alone["per_caption"][key][0] - result["per_caption"][key][i]) <= 1e-12, key


def test_identical_caption_scores_one():
    refs = [["a dog runs on the grass", "a dog"], ["two men ride horses on a beach"], ["a red bus"]]
    result = capeval.score([r[0] for r in refs], refs, metrics=FAST)
    assert result["per_caption"]["bleu_4"][:2] == pytest.approx([1.0, 1.0])
    assert result["per_caption"]["rouge_l"] == pytest.approx([1.0, 1.0, 1.0])


# -- captions without a word, and the length limit -----------------------------------------------------------


@pytest.mark.parametrize("text", ["...", "🙂🙂", "\u200b", "-- ; :", "\x00"])
def test_captions_without_a_word_are_scored_zero_with_a_warning(text):
    with pytest.warns(WordlessCaptionWarning, match=r"predictions\[1\]"):
        result = capeval.score(["a dog runs", text], [["a dog runs", "a dog"], ["a cat"]], metrics=FAST)
    assert [result["per_caption"][k][1] for k in ("bleu_1", "rouge_l", "cider_d")] == [0.0, 0.0, 0.0]
    with pytest.warns(WordlessCaptionWarning, match=r"references\[0\]\[1\]"):
        capeval.score(["a dog runs"], [["a dog", text]], metrics="bleu")


def test_no_warning_for_ordinary_captions():
    with warnings.catch_warnings():
        warnings.simplefilter("error", WordlessCaptionWarning)
        capeval.score(["a dog runs"], [["a dog"]], metrics=FAST)


@pytest.mark.parametrize("metrics", ["meteor", "spice", "spice_u", "bleu,meteor"])
def test_length_limit_names_the_item_before_expensive_metrics_start(metrics, monkeypatch):
    from capeval.coco.meteor import MeteorScorer

    monkeypatch.setattr(MeteorScorer, "_jvm", lambda *a: pytest.fail("a JVM was started"))
    long = "a dog " * 1000  # 6,000 characters
    with pytest.raises(ValueError, match=r"predictions\[1\] has 6,000 characters; .* at most 5,000 \(max_caption_chars"):
        capeval.score(["a cat", long], [["a"], ["b"]], metrics=metrics)
    with pytest.raises(ValueError, match=r"references\[0\]\[2\] has 6,000 characters.* at most 100 "):
        capeval.score(["a cat"], [["a", "b", long]], metrics=metrics, max_caption_chars=100)


def test_length_limit_does_not_apply_to_the_cheap_metrics():
    long = "a dog runs on the grass " * 5000  # 120,000 characters
    result = capeval.score([long, "a cat"], [["a dog runs", "a dog"], ["a cat"]], metrics=FAST)
    assert 0 < result["per_caption"]["bleu_1"][0] < 1


# -- METEOR (one JVM for all examples) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def meteor_metric(java):
    from capeval.coco.meteor import Meteor

    metric = Meteor(meteor_timeout=120)
    yield metric
    metric.close()


@pytest.mark.java
@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)
@given(items, st.randoms(use_true_random=False))
def test_meteor_in_range_order_free_and_batch_independent(meteor_metric, pairs, rnd):
    assume(_valid(pairs))
    preds = [p for p, _ in pairs]
    refs = [list(rs) for _, rs in pairs]

    def meteor(p, r):
        return meteor_metric.compute(CaptionBatch(p, r, progress=False))

    out = meteor(preds, refs)
    values = [out.corpus["meteor"], *out.per_caption["meteor"]]
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in values), values
    shuffled = meteor(preds, [rnd.sample(rs, len(rs)) for rs in refs])
    assert shuffled.per_caption["meteor"] == pytest.approx(out.per_caption["meteor"], abs=1e-9)
    i = rnd.randrange(len(preds))
    assert meteor([preds[i]], [refs[i]]).per_caption["meteor"][0] == pytest.approx(out.per_caption["meteor"][i], abs=1e-9)


def test_meteor_request_lines_are_always_one_line():
    """Whatever the caption, a METEOR request is one line with one field per reference (no hang)."""
    from capeval.coco.meteor import score_line

    @settings(max_examples=2000, **SETTINGS)
    @given(st.text(), st.lists(st.text(), min_size=1, max_size=4))
    def check(hyp, refs):
        line = score_line(hyp, refs)
        assert "\n" not in line and "\r" not in line and "\u2028" not in line
        assert line.count("|||") == len(refs) + 1

    check()


# keep the printable-ASCII list honest: every character really is covered
def test_last_characters_cover_printable_ascii():
    assert set(string.printable.strip()) <= set(LAST_CHARS) | set(string.whitespace)
