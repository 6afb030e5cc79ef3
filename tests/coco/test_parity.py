"""BLEU, ROUGE-L, CIDEr-D and METEOR against pycocoevalcap 1.2 itself, corpus and per caption, to 1e-9.

Two data sets: pycocoevalcap's example (1,000 candidates, COCO val2014 references) and the 20,000
Karpathy-test candidates of SMURF's release (references from karpathy_ref.json). Scorer level: the
same token strings go to pycocoevalcap's scorers and to capeval's metrics. End to end:
``capeval.score(..., cleanup="none", tokenizer=...)`` against pycocoevalcap's PTBTokenizer + scorers,
for every tokenizer that reproduces pycocoevalcap's (``ptb-java``; ``ptb`` once it is installed).
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import capeval
from capeval.coco.bleu import Bleu
from capeval.coco.cider import CiderD
from capeval.coco.rouge import RougeL

from support import require_data
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


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", TOKENIZERS)
def test_karpathy_end_to_end(karpathy, tokenizer):
    preds, refs = karpathy
    theirs = pycoco_end_to_end(preds, refs, FAST)
    ours = capeval.score(preds, refs, metrics=list(FAST), cleanup="none", tokenizer=tokenizer)
    assert_same(ours, theirs)
