"""``capeval.score(..., empty="zero")``: an empty prediction scores 0 on every metric, with a warning naming it;
the default stays a ``ValueError`` naming the item."""
from __future__ import annotations

import inspect
import warnings

import pytest

import capeval
from capeval.api import SCORE_KEYWORDS, option_names
from capeval.coco.cider import SmallCorpusWarning
from capeval.validation import EmptyCaptionWarning, WordlessCaptionWarning

# a handful of captions on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")

PREDS = ["a dog runs on the grass", "", "a man rides a horse on a beach", " \t\n"]
REFS = [["a dog running on a lawn", "a dog on the grass"], ["two cats on a red couch"],
        ["a man riding a horse", "a rider on a beach"], ["a bird in the sky", "a flying bird"]]
FAST = "bleu,rouge_l,cider_d"


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


def _zero(metrics, **kwargs):
    with pytest.warns(EmptyCaptionWarning, match=r"2 empty prediction\(s\) scored 0 .*predictions\[1\], predictions\[3\]"):
        return capeval.score(PREDS, REFS, metrics=metrics, empty="zero", **kwargs)


def test_default_is_an_error_naming_the_item_and_the_option():
    with pytest.raises(ValueError, match=r'predictions\[1\] is empty or whitespace only.*empty="zero"'):
        capeval.score(PREDS, REFS, metrics=FAST)


@pytest.mark.parametrize("metrics", [FAST, "meteor", "spice", "spice_u"])
def test_every_metric_scores_an_empty_prediction_zero(metrics, request):
    if metrics == "meteor":
        request.getfixturevalue("java")
    if metrics.startswith("spice"):
        pytest.importorskip("spacy")
    result = _zero(metrics)
    for key, values in result["per_caption"].items():
        if key == "uniqueness":  # SPICE-U's component: an empty caption names no common concept
            continue
        assert values[1] == 0.0 and values[3] == 0.0, key
        assert values[0] > 0.0 and values[2] > 0.0, key


def test_empty_predictions_stay_in_the_corpus():
    """A caption without words: the mean-based scores count it, BLEU's brevity penalty sees its length 0."""
    result = _zero(FAST)
    kept = capeval.score([PREDS[0], PREDS[2]], [REFS[0], REFS[2]], metrics="rouge_l")
    assert result["rouge_l"] == pytest.approx(sum(kept["per_caption"]["rouge_l"]) / 4)
    assert result["bleu_1"] < capeval.score([PREDS[0], PREDS[2]], [REFS[0], REFS[2]], metrics="bleu_1")["bleu_1"]
    # the same as a caption that has no word at all (pycocoevalcap's 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WordlessCaptionWarning)
        wordless = capeval.score([PREDS[0], "...", PREDS[2], "..."], REFS, metrics=FAST)
    for key in ("bleu_4", "rouge_l", "cider_d"):
        assert result[key] == wordless[key], key


def test_only_the_empty_warning_names_empty_predictions():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capeval.score(PREDS, REFS, metrics=FAST, empty="zero")
    # CIDEr-D's SmallCorpusWarning (a handful of predictions) is about the corpus size, not about empty captions
    kinds = [type(w.message) for w in caught if not issubclass(w.category, SmallCorpusWarning)]
    assert kinds == [EmptyCaptionWarning], [str(w.message) for w in caught]


def test_references_must_never_be_empty():
    with pytest.raises(ValueError, match=r"references\[1\]\[0\] is empty"):
        capeval.score(["a dog", "a cat"], [["a dog"], [" "]], metrics=FAST, empty="zero")


@pytest.mark.parametrize("value", ["skip", None, 0, True])
def test_bad_empty_values_name_the_argument(value):
    with pytest.raises(ValueError, match=r"empty must be one of \['error', 'zero'\]"):
        capeval.score(["a dog"], [["a dog"]], metrics=FAST, empty=value)


def test_option_names_cover_score_keywords_and_every_metric_option():
    keywords = [p.name for p in inspect.signature(capeval.score).parameters.values()
                if p.name not in ("predictions", "references") and p.kind is not p.VAR_KEYWORD]
    assert tuple(keywords) == SCORE_KEYWORDS
    names = option_names()
    assert {"empty", "cider_df", "meteor_jvms", "metrics"} <= names
    assert "cider_dff" not in names
