"""Input validation, clean-up, metric-name resolution and signatures."""
from __future__ import annotations

import math

import pytest

from capeval.registry import available_metrics, resolve
from capeval.signature import build_signature, nrefs_field, parse_signature
from capeval.text.cleanup import thumb_cleanup
from capeval.validation import normalize_inputs

# a handful of captions on purpose: CIDEr-D's SmallCorpusWarning is expected, not what these tests check
pytestmark = pytest.mark.filterwarnings("ignore::capeval.coco.cider.SmallCorpusWarning")


@pytest.mark.parametrize(
    "raw, clean",
    [
        ("  a dog runs  ", "A dog runs."),
        ("a dog runs .", "A dog runs."),
        ("A dog runs.", "A dog runs."),
        ("a dog runs   .  ", "A dog runs."),
        ("élan of a cat", "Élan of a cat."),
        ("3 cats", "3 cats."),
    ],
)
def test_thumb_cleanup(raw, clean):
    assert thumb_cleanup(raw) == clean


def test_references_accept_string_or_list():
    preds, refs = normalize_inputs(["a", "b"], ["x", ["y", "z"]])
    assert refs == [["x"], ["y", "z"]]


@pytest.mark.parametrize(
    "preds, refs, match",
    [
        (["a", "b"], [["x"]], "Length mismatch"),
        (["a", ""], [["x"], ["y"]], r"predictions\[1\] is empty"),
        (["a", None], [["x"], ["y"]], r"predictions\[1\] is None"),
        (["a", 3], [["x"], ["y"]], r"predictions\[1\] is a int"),
        (["a", math.nan], [["x"], ["y"]], r"predictions\[1\] is NaN"),
        (["a", "b"], [["x"], []], r"references\[1\] is an empty list"),
        (["a", "b"], [["x"], ["y", "  "]], r"references\[1\]\[1\] is empty"),
        (["a", "b"], [["x"], [None]], r"references\[1\]\[0\] is None"),
        ([], [], "No predictions"),
    ],
)
def test_bad_input_names_index(preds, refs, match):
    with pytest.raises(ValueError, match=match):
        normalize_inputs(preds, refs)


def test_single_string_predictions_rejected():
    with pytest.raises(TypeError, match="single string"):
        normalize_inputs("a dog", ["a dog"])


def test_resolve_metric_names():
    assert resolve("bleu,cider") == {"bleu": ["bleu_1", "bleu_2", "bleu_3", "bleu_4"], "cider_d": ["cider_d"]}
    assert resolve(["bleu_4", "bleu_1"]) == {"bleu": ["bleu_4", "bleu_1"]}
    assert "spice_u" in available_metrics()
    with pytest.raises(ValueError, match="Unknown metric 'blue'"):
        resolve(["blue"])


def test_signature_roundtrip():
    sig = build_signature({"nrefs": nrefs_field([["a"], ["b", "c"]]), "clean": "thumb"}, [("bleu", "closest")])
    fields = parse_signature(sig)
    assert fields["nrefs"] == "var" and fields["bleu"] == "closest" and "version" in fields


def test_the_garbage_collector_pauses_only_for_metrics_that_make_no_cycles(monkeypatch):
    """BLEU / ROUGE-L / CIDEr-D (and METEOR) pause the cyclic GC during the call and restore it, even on an error;
    a call that selects any other metric leaves it alone."""
    import gc

    import capeval

    import capeval.coco.bleu as bleu
    from capeval.metric import CaptionMetric

    seen = []
    real = bleu.Bleu.compute
    monkeypatch.setattr(bleu.Bleu, "compute", lambda self, batch: (seen.append(gc.isenabled()), real(self, batch))[1])
    capeval.score(["a dog runs"], [["a dog running"]], metrics=["bleu", "rouge_l", "cider_d"])
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ValueError):
        capeval.score(["a dog runs"], [[""]], metrics=["bleu"])
    assert gc.isenabled()
    assert not CaptionMetric.pauses_gc and bleu.Bleu.pauses_gc
    from capeval.registry import metric_class

    assert [n for n in ("bleu", "meteor", "rouge_l", "cider_d", "spice", "critic", "lceval")
            if metric_class(n).pauses_gc] == ["bleu", "meteor", "rouge_l", "cider_d"]


def test_warnings_point_at_the_line_that_called_score():
    """EmptyCaptionWarning, WordlessCaptionWarning and CIDEr-D's SmallCorpusWarning name the caller's file and line,
    not a line inside capeval, so that the printed location and the user's filters are about their own code."""
    import inspect
    import warnings

    import capeval
    from capeval.coco.cider import SmallCorpusWarning
    from capeval.validation import EmptyCaptionWarning, WordlessCaptionWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        capeval.score(["a dog", "", "..."], [["a dog runs"], ["a cat"], ["a bird"]], metrics="bleu,cider_d", empty="zero")
    assert {EmptyCaptionWarning, WordlessCaptionWarning, SmallCorpusWarning} <= {w.category for w in caught}
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)] * len(caught), \
        [(w.category.__name__, w.filename, w.lineno) for w in caught]
