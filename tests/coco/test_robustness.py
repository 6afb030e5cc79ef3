"""Bad and unusual input through ``capeval.score`` with the COCO metrics: a ValueError naming the index,
or finite scores; never a hang, never NaN."""
from __future__ import annotations

import importlib.util
import math

import pytest

import capeval

COCO = ["bleu", "meteor", "rouge_l", "cider_d"]
FAST = ["bleu", "rouge_l", "cider_d"]
TOKENIZER = "ptb" if importlib.util.find_spec("capeval.text.ptb") else "ptb-java"

LONG = " ".join(["a dog runs across the green grass near a red ball"] * 46)  # 506 words


@pytest.mark.parametrize(
    "preds, refs, match",
    [
        (["a dog", "a cat"], [["a dog"]], "Length mismatch: 2 predictions but 1 reference"),
        (["a dog", ""], [["a dog"], ["a cat"]], r"predictions\[1\] is empty"),
        (["a dog", "   "], [["a dog"], ["a cat"]], r"predictions\[1\] is empty or whitespace"),
        (["a dog", "a cat"], [["a dog"], []], r"references\[1\] is an empty list"),
        (["a dog", None], [["a dog"], ["a cat"]], r"predictions\[1\] is None"),
        (["a dog", 7], [["a dog"], ["a cat"]], r"predictions\[1\] is a int"),
        (["a dog", "a cat"], [["a dog"], ["a cat", None]], r"references\[1\]\[1\] is None"),
        (["a dog", "a cat"], [["a dog"], [b"bytes"]], r"references\[1\]\[0\] is a bytes"),
        (["a dog", "a cat"], [["a dog"], 3], r"references\[1\] is a int"),
        (["a dog", float("nan")], [["a dog"], ["a cat"]], r"predictions\[1\] is NaN"),
    ],
)
@pytest.mark.parametrize("metrics", [COCO, ["cider_d"], ["meteor"]])
def test_bad_input_raises_naming_the_index(preds, refs, match, metrics):
    with pytest.raises(ValueError, match=match):
        capeval.score(preds, refs, metrics=metrics, tokenizer=TOKENIZER)


@pytest.mark.java
def test_unusual_captions_score_without_error():
    preds = [
        "...",  # all punctuation: empty token list
        "A dog runs on the grass.",
        "Un café à Paris, très animé.",
        "A 🐶 plays with a 🎾 in the 🌳.",
        LONG,
        "a dog\nruns ||| on\r\nthe\u2028grass",
        "A man riding a horse.",
        "? ! , ; : -- ... - '' ``",  # only COCO punctuation tokens (not brackets: -lrb- stays)
    ]
    refs = [
        ["A dog runs on the grass.", "A dog on a lawn."],
        ["A dog runs on the grass."] * 5,  # identical references
        ["Un café animé à Paris.", "Des gens dans un café."],
        ["A dog 🐶 plays with a ball 🎾 under a tree 🌳.", "A puppy and a tennis ball."],
        [LONG, "a dog runs"],
        ["a dog runs\non the grass", "|||", "a\x0bdog"],
        ["...", "A man rides a horse."],  # one reference is all punctuation
        ["A cat sleeps.", "A sleeping cat."],
    ]
    with pytest.warns(capeval.WordlessCaptionWarning, match=r"predictions\[0\], predictions\[7\], references\[6\]\[0\]"), \
            pytest.warns(capeval.NonEnglishWarning, match=r"predictions\[2\], references\[2\]\[0\], references\[2\]\[1\]"):
        result = capeval.score(preds, refs, metrics=COCO, tokenizer=TOKENIZER, meteor_timeout=120)
    for key, values in result["per_caption"].items():
        assert len(values) == len(preds)
        assert all(math.isfinite(v) for v in values), key
        assert math.isfinite(result[key])
    for key in ("bleu_1", "bleu_4", "meteor", "rouge_l", "cider_d"):
        assert result["per_caption"][key][0] == 0.0, key  # all punctuation -> 0, not NaN
        assert result["per_caption"][key][7] == 0.0, key
    assert result["per_caption"]["bleu_1"][1] == pytest.approx(1.0)
    assert result["per_caption"]["rouge_l"][1] == pytest.approx(1.0)
    assert result["per_caption"]["meteor"][4] > 0.99  # 506-word exact match
    assert result["per_caption"]["rouge_l"][4] == pytest.approx(1.0)
    # line breaks are spaces: the caption scores as its one-line version (and did not shift the others)
    flat = capeval.score(
        ["a dog runs ||| on the grass"], [["a dog runs on the grass", "|||", "a dog"]], metrics=COCO, tokenizer=TOKENIZER
    )
    for key in ("bleu_4", "rouge_l", "meteor"):
        assert result["per_caption"][key][5] == pytest.approx(flat[key], abs=1e-12), key
    assert result["per_caption"]["rouge_l"][3] > 0.3


def test_single_pair_and_string_reference():
    result = capeval.score(["A dog runs."], ["A dog runs."], metrics=FAST, tokenizer=TOKENIZER)
    assert result["bleu_1"] == pytest.approx(1.0) and result["rouge_l"] == pytest.approx(1.0)
    assert result["cider_d"] == 0.0  # df from one image's references: every n-gram has idf 0
    assert result["signature"].startswith("nrefs:1|clean:none|tok:")  # tokens never see the clean-up


def test_many_references_and_long_corpus_of_duplicates():
    preds = ["a dog runs on the grass"] * 300
    refs = [["a dog runs on grass", "the dog is running", "a cat"] * 10] * 300
    result = capeval.score(preds, refs, metrics=FAST, tokenizer=TOKENIZER)
    assert len(set(result["per_caption"]["cider_d"])) == 1
    assert result["signature"].startswith("nrefs:30|")
