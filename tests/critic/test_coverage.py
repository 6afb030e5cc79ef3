"""Vocabulary coverage in the learned metrics' results (capeval.coverage): the shipped critics and LCEval on photo
captions (no warning) and on captions of another domain (names, words a Flickr8k vocabulary lacks: a warning naming
them), several metrics in one call, the command line."""
from __future__ import annotations

import json
import warnings

import pytest

import capeval
from capeval.coverage import OutOfVocabularyWarning

pytest.importorskip("torch")

PHOTO = (["a dog runs on the grass", "two men ride bikes down a street"],
         [["a brown dog running on grass"], ["two people riding bicycles"]])
#: Clip-art-scene style captions: a character's name and words outside a 10,000-word Flickr8k vocabulary.
CARTOON = (["jenny is frightened by the thunderstorm", "mike sits in the sandbox near the campfire"],
           [["jenny is scared of the thunderstorm"], ["mike plays in the sandbox by the campfire"]])


def test_critic_ref_reports_coverage_and_stays_quiet_on_photo_captions():
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfVocabularyWarning)
        result = capeval.score(*PHOTO, metrics="critic_ref")
    assert result["coverage"] == {"critic_ref": 1.0}
    assert result["coverage_per_caption"] == {"critic_ref": [1.0, 1.0]}
    assert result["reference_coverage"] == {"critic_ref": 1.0}


def test_critic_ref_warns_on_words_its_vocabulary_lacks():
    with pytest.warns(OutOfVocabularyWarning) as caught:
        result = capeval.score(*CARTOON, metrics="critic_ref", critic_oov="unk")
    share = result["coverage"]["critic_ref"]
    assert share < 0.9
    per = result["coverage_per_caption"]["critic_ref"]
    assert len(per) == 2 and min(per) < 1 and share == pytest.approx(
        sum(per[i] * n for i, n in enumerate((12, 18))) / 30, abs=0.2)  # shares of tokens, not of captions
    message = str(caught[0].message)
    assert "critic_ref:" in message and "critic-flickr8k-joint" in message and "'thunderstorm'" in message
    assert "98.8%" in message  # the baseline recorded in the shipped critic's training.json


def test_with_the_default_glove_map_those_words_are_known_and_words_without_a_vector_still_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutOfVocabularyWarning)
        result = capeval.score(*CARTOON, metrics="critic_ref")
    assert result["coverage"] == {"critic_ref": 1.0} and "oov=glove-map" in result["signature"]
    with pytest.warns(OutOfVocabularyWarning, match="'zqxvbn'"):
        result = capeval.score(["zqxvbn wxqpz qqzzvv", "a dog"], [["zqxvbn is wxqpz"], ["a dog runs"]],
                               metrics="critic_ref")
    assert result["coverage_per_caption"]["critic_ref"][1] == 1.0

def test_lceval_reports_glove_coverage_and_several_metrics_merge():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OutOfVocabularyWarning)
        result = capeval.score(["a dog runs on the grass", "a zqxvbn wxqpz on the grass"],
                               [["a brown dog running on grass"], ["a dog on grass"]],
                               metrics=["lceval", "critic_ref"], cider_df="coco-val2014")
    assert set(result["coverage"]) == {"lceval", "critic_ref"}
    assert result["coverage_per_caption"]["lceval"][0] == 1.0 > result["coverage_per_caption"]["lceval"][1]


def test_the_command_line_prints_the_coverage(tmp_path, capsys):
    from capeval.cli import main

    preds = tmp_path / "p.json"
    preds.write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(CARTOON[0])]))
    refs = tmp_path / "r.json"
    refs.write_text(json.dumps({str(i): r for i, r in enumerate(CARTOON[1])}))
    assert main(["score", "--predictions", str(preds), "--references", str(refs), "--metrics", "critic_ref",
                 "--critic-oov", "unk"]) == 0
    printed = capsys.readouterr()
    share = printed.out.split("vocabulary coverage: critic_ref ")[1].split("%")[0]
    assert float(share) < 90
    assert "capeval score: warning: critic_ref: 1 prediction(s) with many words unknown to it: predictions[0]" \
        in printed.err and f"over the call {share}% of the" in printed.err and "'sandbox'" in printed.err
    assert "of the predictions' tokens" in printed.out


#: Good photo captions, every word known to the shipped critic.
GOOD = ["a dog runs on the grass", "two men ride bikes down a street", "a woman sits on a bench in the park",
        "a child plays with a red ball", "a man in a blue shirt walks his dog", "people walk down a busy street"] * 5
GOOD_REFS = [["a brown dog running on grass"], ["two people riding bicycles"], ["a lady on a park bench"],
             ["a little kid with a ball"], ["a man walking a dog"], ["a crowd on a city street"]] * 5
CHINESE = "一只狗在草地上跑"


def _oov_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, OutOfVocabularyWarning)]


def _score(preds, refs, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = capeval.score(preds, refs, metrics="critic_ref", **options)
    return result, _oov_warnings(caught)


def test_a_chinese_prediction_has_no_coverage_and_is_named_whatever_the_references():
    result, messages = _score([CHINESE], [["a dog running on the grass in a park"]])
    assert result["coverage"]["critic_ref"] == 0.0  # the references no longer lift it (they did to .929)
    assert result["coverage_per_caption"]["critic_ref"] == [0.0]
    assert result["reference_coverage"]["critic_ref"] == 1.0
    assert len(messages) == 1 and "predictions[0] (0%)" in messages[0] and repr(CHINESE) in messages[0]


@pytest.mark.parametrize("caption, low", [(CHINESE, True), ("a dog runs on the zqxvbn grass", False),
                                          ("zqxvbn wxqpz on the qqzzvv grass", True)])
def test_the_same_caption_gets_the_same_verdict_alone_and_among_good_captions(caption, low):
    ref = ["a dog running on the grass"]
    _, alone = _score([caption], [ref], critic_oov="unk")
    at = 7
    batch = GOOD[:at] + [caption] + GOOD[at:]
    result, among = _score(batch, GOOD_REFS[:at] + [ref] + GOOD_REFS[at:], critic_oov="unk")
    assert bool(alone) == bool(among) == low
    if low:
        assert "predictions[0]" in alone[0] and f"predictions[{at}]" in among[0]
        assert among[0].count("predictions[") == 1  # only it: the good captions are not named
    assert result["coverage"]["critic_ref"] > 0.9  # the call's share hides it; the verdict does not


def test_an_empty_prediction_has_no_coverage():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = capeval.score(["a dog runs on the grass", ""], [["a dog on grass"], ["two cats"]],
                               metrics=["critic_ref", "lceval"], empty="zero", cider_df="coco-val2014")
    for name in ("critic_ref", "lceval"):
        assert result["coverage_per_caption"][name][1] is None
        assert result["coverage"][name] == 1.0  # the other prediction's tokens only (an empty one was 1.0 before)
        assert 0 < result["reference_coverage"][name] <= 1
