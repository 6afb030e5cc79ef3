"""BLEU, ROUGE-L, CIDEr-D and METEOR against pycocoevalcap 1.2 itself, corpus and per caption, to 1e-9.

Two data sets: pycocoevalcap's example (1,000 candidates, COCO val2014 references) and the 20,000
Karpathy-test candidates of SMURF's release (references from karpathy_ref.json). Scorer level: the
same token strings go to pycocoevalcap's scorers and to capeval's metrics. End to end:
``capeval.score(..., cleanup="none", tokenizer=...)`` against pycocoevalcap's PTBTokenizer + scorers,
for every tokenizer that reproduces pycocoevalcap's (``ptb-java``; ``ptb`` once it is installed).
Default path: ``capeval.score`` with no options, ``capeval score`` and ``evaluate.load("metrics/coco_caption")``
with their defaults, on all 20,000 Karpathy candidates (each against its image's references).
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import capeval
from capeval.coco.bleu import Bleu
from capeval.coco.cider import CiderD
from capeval.coco.rouge import RougeL

from support import ROOT, require_data
from support.coco_parity import (
    assert_same,
    java_token_strings,
    load_example,
    load_karpathy,
    pretokenized_batch,
    pycoco_end_to_end,
    pycoco_scores,
)

pytestmark = [pytest.mark.data, pytest.mark.java]

FAST = ("bleu", "rouge_l", "cider_d")

TOKENIZERS = [
    "ptb-java",
    pytest.param(
        "ptb",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("capeval.text.ptb") is None, reason="pure-Python PTB tokenizer not installed yet"
        ),
    ),
]


def _ours(hyps, refs, metrics=FAST, **options) -> dict:
    """capeval's metric classes on pre-tokenised strings, merged like capeval.score merges them."""
    batch = pretokenized_batch(hyps, refs)
    out: dict = {"per_caption": {}}
    classes = {"bleu": Bleu, "rouge_l": RougeL, "cider_d": CiderD}
    if "meteor" in metrics:
        from capeval.coco.meteor import Meteor

        classes["meteor"] = Meteor
    for name in metrics:
        metric = classes[name](**{k: v for k, v in options.items() if k in classes[name].options})
        try:
            result = metric.compute(batch)
        finally:
            metric.close()
        out.update(result.corpus)
        out["per_caption"].update(result.per_caption)
    return out


@pytest.fixture(scope="module")
def example():
    return load_example(require_data("pycocoevalcap_example").parent)


@pytest.fixture(scope="module")
def example_tokens(example):
    return java_token_strings(*example)


@pytest.fixture(scope="module")
def karpathy():
    return load_karpathy(require_data("coco_karpathy_test").parent)


@pytest.fixture(scope="module")
def karpathy_tokens(karpathy):
    return java_token_strings(*karpathy)


# -- pycocoevalcap's example ----------------------------------------------------------------------------


def test_example_scorer_level_bleu_rouge_cider(example_tokens):
    hyps, refs = example_tokens
    theirs = pycoco_scores(hyps, refs, FAST)
    ours = _ours(hyps, refs)
    assert_same(ours, theirs)
    # the published numbers of pycocoevalcap's example
    assert [round(ours[f"bleu_{k}"], 3) for k in (1, 2, 3, 4)] == [0.579, 0.404, 0.279, 0.191]
    assert round(ours["rouge_l"], 3) == 0.396
    assert round(ours["cider_d"], 3) == 0.600


def test_example_scorer_level_meteor_two_jvms(example_tokens):
    """SCORE requests split over 2 JVMs, their stats sent in one EVAL: still pycocoevalcap's numbers
    (its corpus score is the jar's aggregate of all statistics, not a mean of segment scores)."""
    hyps, refs = example_tokens
    theirs = pycoco_scores(hyps, refs, ("meteor",))
    ours = _ours(hyps, refs, ("meteor",), meteor_jvms=2)
    assert_same(ours, theirs)
    assert round(ours["meteor"], 3) == 0.195
    assert abs(np.mean(ours["per_caption"]["meteor"]) - ours["meteor"]) > 1e-4


@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_example_end_to_end(example, tokenizer):
    """capeval.score on raw captions vs pycocoevalcap's PTBTokenizer + Bleu, Meteor, Rouge, Cider."""
    preds, refs = example
    theirs = pycoco_end_to_end(preds, refs, FAST + ("meteor",))
    ours = capeval.score(preds, refs, metrics=["bleu", "meteor", "rouge_l", "cider_d"], cleanup="none", tokenizer=tokenizer)
    assert_same(ours, theirs)
    assert ours["signature"].startswith("nrefs:var|clean:none|tok:")
    assert "cider_d:df=refs,sigma=6" in ours["signature"]
    assert [round(ours[k], 3) for k in ("bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d")] == [
        0.579, 0.191, 0.195, 0.396, 0.600
    ]


# -- Karpathy test, 20,000 candidates --------------------------------------------------------------------


@pytest.mark.slow
def test_karpathy_scorer_level_bleu_rouge_cider(karpathy_tokens):
    hyps, refs = karpathy_tokens
    assert len(hyps) == 20000
    assert_same(_ours(hyps, refs), pycoco_scores(hyps, refs, FAST))


@pytest.mark.slow
def test_karpathy_scorer_level_meteor(karpathy_tokens):
    hyps, refs = karpathy_tokens
    assert_same(_ours(hyps, refs, ("meteor",)), pycoco_scores(hyps, refs, ("meteor",)))


@pytest.fixture(scope="module")
def karpathy_pycoco(karpathy):
    """pycocoevalcap 1.2 end to end (its PTBTokenizer, Bleu, Meteor, Rouge, Cider) on the 20,000 candidates."""
    return pycoco_end_to_end(*karpathy, FAST + ("meteor",))


def _fast(theirs: dict) -> dict:
    return {k: v for k, v in theirs.items() if k != "meteor"}


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_karpathy_end_to_end(karpathy, karpathy_pycoco, tokenizer):
    preds, refs = karpathy
    ours = capeval.score(preds, refs, metrics=list(FAST), cleanup="none", tokenizer=tokenizer)
    assert_same(ours, _fast(karpathy_pycoco))


@pytest.mark.slow
def test_karpathy_default_path_is_pycocoevalcap(karpathy, karpathy_pycoco):
    """capeval.score with every default (THumB clean-up, ptb tokenizer, default metrics) = pycocoevalcap.

    Before tokens were computed from the captions as written, the appended period made ``... on a``
    a token ``a.``: 1,241 of the 3,918 distinct captions of the second captioner changed, and CIDEr-D
    on the first 8,000 candidates was 0.9918 instead of 1.0207.
    """
    preds, refs = karpathy
    ours = capeval.score(preds, refs)
    assert_same(ours, _fast(karpathy_pycoco))
    corpus, per = karpathy_pycoco["meteor"]
    assert abs(ours["meteor"] - corpus) <= 1e-4
    assert np.abs(np.asarray(ours["per_caption"]["meteor"]) - per).max() <= 1e-4
    assert ours["signature"].startswith("nrefs:var|clean:none|tok:ptb-py.1|")
    first = capeval.score(preds[:8000], refs[:8000], metrics="cider_d")
    assert round(first["cider_d"], 4) == 1.0207  # the pycocoevalcap number


@pytest.mark.slow
def test_karpathy_default_path_cli_and_evaluate_module(karpathy, karpathy_pycoco, tmp_path, monkeypatch, capsys):
    import json

    from capeval.cli import main

    preds, refs = karpathy
    (tmp_path / "p.json").write_text(json.dumps(preds), encoding="utf-8")
    (tmp_path / "r.json").write_text(json.dumps(refs), encoding="utf-8")
    rc = main(["score", "--predictions", str(tmp_path / "p.json"), "--references", str(tmp_path / "r.json"),
               "--metrics", ",".join(FAST), "--json", str(tmp_path / "out.json")])
    assert rc == 0, capsys.readouterr().err
    assert_same(json.loads((tmp_path / "out.json").read_text()), _fast(karpathy_pycoco))

    evaluate = pytest.importorskip("evaluate")
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    module = evaluate.load(str(ROOT / "metrics" / "coco_caption"))
    assert_same(module.compute(predictions=preds, references=refs, metrics=list(FAST)), _fast(karpathy_pycoco))
