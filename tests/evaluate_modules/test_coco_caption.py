"""metrics/coco_caption: evaluate.load offline, same numbers as capeval.score, doctests, the Space app."""
from __future__ import annotations

import pytest

evaluate = pytest.importorskip("evaluate")

import capeval  # noqa: E402
import capeval.text  # noqa: E402
from support import ROOT

MODULE_DIR = ROOT / "metrics" / "coco_caption"

PREDICTIONS = ["A dog runs across the grass.", "Two men ride horses on a beach.", "a red bus ..."]
REFERENCES = [
    ["A brown dog running on a lawn.", "A dog runs through a grassy field."],
    ["Two people riding horses along the shore.", "Men on horseback at the beach.", "Horses on sand."],
    ["A red double-decker bus on a street."],
]


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(MODULE_DIR))


def test_features_accept_a_list_or_one_reference(module):
    assert isinstance(module.features, list) and len(module.features) == 2
    assert [sorted(f) for f in module.features] == [["predictions", "references"]] * 2
    kinds = {type(f["references"]).__name__ for f in module.features}
    assert kinds == {"Sequence", "Value"} or kinds == {"List", "Value"}


@pytest.mark.java
@pytest.mark.parametrize("metrics", [["bleu", "rouge_l", "cider_d"], None])
def test_compute_equals_capeval_score(module, metrics):
    ours = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=metrics, tokenizer="ptb-java")
    direct = capeval.score(PREDICTIONS, REFERENCES, metrics=metrics, tokenizer="ptb-java")
    assert ours == direct
    if metrics is None:
        assert {"bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"} <= set(ours)


def test_one_reference_string_per_prediction(module):
    ours = module.compute(predictions=PREDICTIONS[:2], references=["A dog runs.", "Men ride horses."], metrics="bleu,rouge_l", tokenizer="ptb-java")
    direct = capeval.score(PREDICTIONS[:2], [["A dog runs."], ["Men ride horses."]], metrics="bleu,rouge_l", tokenizer="ptb-java")
    assert ours == direct and ours["signature"].startswith("nrefs:1|")


def test_add_batch_then_compute(module):
    module.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    module.add_batch(predictions=PREDICTIONS[2:], references=REFERENCES[2:])
    ours = module.compute(metrics=["cider_d"], tokenizer="ptb-java", cleanup="none")
    assert ours == capeval.score(PREDICTIONS, REFERENCES, metrics=["cider_d"], tokenizer="ptb-java", cleanup="none")


def test_compute_with_the_captions_skips_the_arrow_table_and_gives_the_same_result(module, monkeypatch):
    """compute(predictions=..., references=...) with nothing added hands them to _compute directly (evaluate would
    write them to an Arrow table and read them back); the result is the add_batch route's, and add_batch before a
    compute still goes through evaluate."""
    import evaluate

    written = []
    original = evaluate.EvaluationModule.add_batch
    monkeypatch.setattr(evaluate.EvaluationModule, "add_batch",
                        lambda self, **kw: written.append(len(kw["predictions"])) or original(self, **kw))
    direct = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["bleu", "cider_d"],
                            tokenizer="ptb-java")
    assert written == []
    module.add_batch(predictions=PREDICTIONS, references=REFERENCES)
    batched = module.compute(metrics=["bleu", "cider_d"], tokenizer="ptb-java")
    assert written == [len(PREDICTIONS)] and direct == batched
    # references given as one string per prediction are read as lists on both routes
    one = module.compute(predictions=PREDICTIONS[:2], references=["A dog runs.", "Men ride horses."], metrics="bleu")
    assert written == [len(PREDICTIONS)] and one["signature"].startswith("nrefs:1|")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(predictions=["a dog", ""], references=["a", "b"]), r"predictions\[1\] is empty"),
        (dict(predictions=["a dog", "a cat"], references=[["a"], []]), r"references\[1\] is an empty list"),
        (dict(predictions=["a dog"], references=["a"], metrics="cider_d", cider_df="imagenet"),
         r"cider_df must be .*got 'imagenet'"),
        (dict(predictions=["a dog"], references=["a"], metrics="blue"), r"Unknown metric 'blue'"),
    ],
)
def test_module_errors_name_the_problem(module, kwargs, match):
    with pytest.raises(ValueError, match=match):
        module.compute(tokenizer="ptb-java", **kwargs)


def test_meteor_backend_reaches_capeval(module):
    """The script declares meteor_backend (an undeclared option would be passed over, not used)."""
    with pytest.raises(ValueError, match=r"meteor_backend must be one of"):
        module.compute(predictions=["a dog"], references=["a dog runs"], metrics="meteor", meteor_backend="jvm")


@pytest.mark.java
def test_meteor_backends_agree_through_the_module(module, java, monkeypatch):
    import capeval.meteor.jar as jar

    started = []
    real_init = jar.MeteorScorer.__init__

    def init(self, *args, **kwargs):
        started.append(kwargs)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(jar.MeteorScorer, "__init__", init)
    python = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="meteor")
    assert not started
    jar_result = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="meteor", meteor_backend="java")
    assert len(started) == 1 and python == jar_result


def test_spider_through_the_module(module):
    """SPIDEr on request (not in the default set): (CIDEr-D + SPICE) / 2 from the same call, as capeval.score; SPICE
    options reach it."""
    pytest.importorskip("spacy")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", capeval.coco.cider.SmallCorpusWarning)
        ours = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=["cider_d", "spider"])
        direct = capeval.score(PREDICTIONS, REFERENCES, metrics=["cider_d", "spider"])
        spice = capeval.score(PREDICTIONS, REFERENCES, metrics=["spice"])
        plain = module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="spider", spice_synonyms=False)
    assert ours == direct
    assert ours["spider"] == (ours["cider_d"] + spice["spice"]) / 2
    assert ours["per_caption"]["spider"] == [(c + s) / 2 for c, s in zip(ours["per_caption"]["cider_d"],
                                                                         spice["per_caption"]["spice"])]
    assert "syn=none" in plain["signature"] and "syn=none" not in ours["signature"]


@pytest.mark.parametrize("metrics", [["spice"], "spice_precision", "spice_recall,spice_u"])
def test_spice_alone_is_refused_in_one_line_naming_the_spice_module(module, monkeypatch, metrics):
    """This module runs SPICE only inside SPIDEr: asked for SPICE and none of its own metrics, it does not return {}
    silently but says which module computes SPICE, before any parsing."""
    import sys

    script = sys.modules[type(module).__module__]
    monkeypatch.setattr(script, "capeval_score", lambda *a, **k: pytest.fail("it scored"))
    with pytest.raises(ValueError) as info:
        module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics=metrics)
    message = str(info.value)
    assert "\n" not in message and "capeval/spice" in message and "inside spider" in message
    assert message.startswith(f"metrics={metrics!r}: ")


def test_another_modules_metric_still_returns_nothing_with_a_warning(module):
    with pytest.warns(UserWarning, match="selects none of this module's metrics"):
        assert module.compute(predictions=PREDICTIONS, references=REFERENCES, metrics="spice_u") == {}


def test_default_metrics_leave_spider_out(module, monkeypatch):
    """metrics=None computes BLEU, METEOR, ROUGE-L and CIDEr-D (SPIDEr needs SPICE's parser, capeval[spice])."""
    import sys

    script = sys.modules[type(module).__module__]
    asked = {}
    monkeypatch.setattr(script, "capeval_score", lambda *a, metrics, **k: asked.setdefault("metrics", metrics))
    module.compute(predictions=PREDICTIONS, references=REFERENCES)
    assert asked["metrics"] == ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l", "cider_d"]
