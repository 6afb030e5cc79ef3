"""FLEUR and RefFLEUR against the reference procedure (Yebin46/FLEUR's loop on the original LLaVA code, see
``support/fleur_reference.py``) on the same tiny LLaVA-1.5, through ``capeval.score`` in both checkpoint layouts and
batch sizes; the answer reading and smoothing rules one by one; the errors."""
from __future__ import annotations

import math
import warnings

import pytest

import capeval
from capeval.judges.answers import (DIGIT_NOT_GENERATED, FLOAT_NOTATION, NO_NUMBER, OUT_OF_RANGE, REPEATED_ONE,
                                    JudgeFailureWarning, answer_text_for_parsing, read_number, smoothed_score)

torch = pytest.importorskip("torch")

TOL = 1e-5


def items():
    """The tiny model's captions of the bundled photos, each with its photo's references (9 items)."""
    from capeval.io import example_images
    from capeval.judges.random_llava import CAPTIONS, REFERENCES

    predictions, references, images = [], [], []
    for photo, captions, refs in zip(example_images()[:3], CAPTIONS, REFERENCES):
        for caption in captions:
            predictions.append(caption)
            references.append(list(refs))
            images.append(photo)
    return predictions, references, images


@pytest.fixture(scope="module")
def reference(tiny_llava, llava_code):
    """Per metric, per item: (score or None, answer, error) from the reference procedure."""
    from support import fleur_reference as ref

    from capeval.models.images import read_item

    tokenizer, model, image_processor = ref.load_reference(tiny_llava["original"], llava_code)
    predictions, references, images = items()
    photos = [read_item(p, i).decode() for i, p in enumerate(images)]
    fleur = [ref.fleur_reference(tokenizer, model, image_processor, im, p) for im, p in zip(photos, predictions)]

    def explain(i, score):
        """fleur_exp.py's second turn for item ``i``, saying ``score`` back."""
        return ref.fleur_explanation_reference(tokenizer, model, fleur[i][3], score)

    return {
        "fleur": [run[:3] for run in fleur],
        "ref_fleur": [ref.fleur_reference(tokenizer, model, image_processor, im, p, r)[:3]
                      for im, p, r in zip(photos, predictions, references)],
        "explain": explain,
    }


def test_the_tiny_model_exercises_every_branch(reference):
    """The comparison below means something: two decimals, one, 1.0, a first decimal 0, a repeated digit and a
    failure all occur among the reference's answers."""
    answers = [a for _, a, _ in reference["fleur"]]
    numbers = [read_number(answer_text_for_parsing(a)) for a in answers]
    texts = {str(n) for n in numbers if n is not None}
    assert any(len(t) > 3 for t in texts) and any(len(t) == 3 and t != "1.0" for t in texts), texts
    assert "1.0" in texts and any(t.startswith("0.0") for t in texts) and "0.66" in texts, texts
    assert any(err is not None for _, _, err in reference["fleur"])
    scored = [s for s, _, _ in reference["fleur"] if s is not None]
    assert len(set(scored)) == len(scored) >= 5 and all(0 < s < 1 for s in scored)


@pytest.mark.parametrize("layout", ["hf", "original"])
@pytest.mark.parametrize("batch_size", [1, 4])
def test_fleur_and_ref_fleur_equal_the_reference(tiny_llava, reference, layout, batch_size):
    predictions, references, images = items()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = capeval.score(predictions, references, metrics=["fleur", "ref_fleur"], images=images,
                               fleur_model=str(tiny_llava[layout]), fleur_batch_size=batch_size, progress=False)
    for name in ("fleur", "ref_fleur"):
        got = result["per_caption"][name]
        failed = {f["index"] for f in result["judge_failures"][name]}
        for i, (want, answer, error) in enumerate(reference[name]):
            if want is None:
                assert math.isnan(got[i]) and i in failed, (name, i, answer)
            else:
                assert abs(got[i] - want) <= TOL, (name, i, got[i], want, answer)
                assert i not in failed
        scored = [s for s, _, _ in reference[name] if s is not None]
        assert result[name] == pytest.approx(sum(scored) / len(scored), abs=TOL)
    assert result["judges"] == {"fleur": f"FLEUR prompt, judge {tiny_llava[layout]}",
                                "ref_fleur": f"RefFLEUR prompt, judge {tiny_llava[layout]}"}
    if result["judge_failures"]["fleur"]:
        messages = [str(w.message) for w in caught if issubclass(w.category, JudgeFailureWarning)]
        assert len(messages) >= 1 and "NaN" in messages[0]
    assert "fleur:judge=" in result["signature"] and f"batch={batch_size}" in result["signature"]
    assert "paper=no" in result["signature"] and "img=pad-square" in result["signature"]


def test_the_answers_are_the_reference_answers(tiny_llava, reference):
    predictions, references, images = items()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        result = capeval.score(predictions, references, metrics="fleur", images=images, progress=False,
                               fleur_model=str(tiny_llava["hf"]))
    for failure in result["judge_failures"]["fleur"]:
        _, answer, _ = reference["fleur"][failure["index"]]
        assert failure["answer"] == answer.replace("</s>", "").strip() and failure["reason"] == NO_NUMBER


def test_explanations_are_fleur_exp_answers(tiny_llava, reference):
    """``fleur_explain=True``: the second turn of ``fleur_exp.py`` (the score said back, "Why? Tell me the reason.").
    The score is said back as ``str(score)``, all its digits: capeval's and the reference's first-turn scores agree to
    1e-7, not to the last bit, so the reference's second turn is run with the score capeval said."""
    predictions, references, images = items()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        result = capeval.score(predictions, references, metrics="fleur", images=images, progress=False,
                               fleur_model=str(tiny_llava["hf"]), fleur_explain=True, fleur_batch_size=1)
    got = result["fleur_explanations"]["fleur"]
    for i, (mine, score) in enumerate(zip(got, result["per_caption"]["fleur"])):
        if math.isnan(score):
            assert mine is None
        else:
            assert mine == reference["explain"](i, score).replace("</s>", "").strip()
    assert sum(e is not None for e in got) >= 5


@pytest.fixture(scope="module")
def tiny_chat(tiny_llava, tmp_path_factory):
    from capeval.judges.random_llava import write_tiny_chat_judge

    return write_tiny_chat_judge(tmp_path_factory.mktemp("tiny-chat"), tiny_llava)


def test_any_vlm_reads_fleurs_prompt_through_its_chat_template(tiny_chat):
    """A judge that is not LLaVA-1.5 (here a Mistral LLaVA with a ChatML template): the instruction as one user turn
    through its processor; scores equal one-prompt-per-generate runs read as fleur.py reads them."""
    import transformers
    from support import fleur_reference as ref

    from capeval.judges.prompts import fleur_instruction
    from capeval.models.images import read_item

    model = transformers.LlavaForConditionalGeneration.from_pretrained(str(tiny_chat)).eval()
    processor = transformers.AutoProcessor.from_pretrained(str(tiny_chat))
    predictions, references, images = items()
    want = [ref.chat_reference(model, processor, read_item(im, i).decode(), fleur_instruction(p))
            for i, (im, p) in enumerate(zip(images, predictions))]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = capeval.score(predictions, references, metrics="fleur", images=images, progress=False,
                               fleur_model=str(tiny_chat), fleur_batch_size=3)
    got = result["per_caption"]["fleur"]
    for i, (score, answer, error) in enumerate(want):
        assert (math.isnan(got[i]) if score is None else abs(got[i] - score) <= TOL), (i, got[i], score, answer)
    assert sum(s is not None for s, _, _ in want) >= 5
    assert result["judges"]["fleur"] == f"FLEUR prompt, judge {tiny_chat}"
    assert "img=processor" in result["signature"] and "paper=no" in result["signature"]


def test_a_model_that_is_not_a_vlm_is_named_in_one_line(tiny_llava):
    with pytest.raises(ValueError, match=r"^fleur_model: .* is a clip_vision_model \(CLIPVisionModel\), not a "
                                         r"vision-language model") as err:
        capeval.score(["a cat"], [["a cat"]], metrics="fleur", images=items()[2][:1],
                      fleur_model=str(tiny_llava["vision"]))
    assert "\n" not in str(err.value)


def test_a_big_judge_is_refused_on_the_cpu_unless_forced(tiny_llava, monkeypatch):
    from capeval.judges import judge

    from capeval.loaded_models import forget

    monkeypatch.setattr(judge, "CPU_PARAMETER_LIMIT", 1000)
    forget("judge")  # the limit is checked when a judge is loaded
    args = (["a tabby cat looking at the camera"], [["a cat"]])
    with pytest.raises(RuntimeError, match=r"billion parameters; on the CPU .* fleur_force_cpu=True"):
        capeval.score(*args, metrics="fleur", images=items()[2][:1], fleur_model=str(tiny_llava["hf"]),
                      fleur_device="cpu")
    result = capeval.score(*args, metrics="fleur", images=items()[2][:1], fleur_model=str(tiny_llava["hf"]),
                           fleur_device="cpu", fleur_force_cpu=True)
    assert 0 <= result["fleur"] <= 1


def test_a_caption_holding_the_image_placeholder_is_refused(tiny_llava):
    with pytest.raises(ValueError, match=r"item 0's caption or references contain '<image>'"):
        capeval.score(["a <image> of a cat"], [["a cat"]], metrics="fleur", images=items()[2][:1],
                      fleur_model=str(tiny_llava["hf"]))


@pytest.mark.parametrize("option, value, message", [
    ("fleur_batch_size", 0, "fleur_batch_size must be an integer >= 1, got 0"),
    ("fleur_dtype", "half", "fleur_dtype must be one of"),
    ("fleur_explain", "yes", "fleur_explain must be True or False"),
    ("fleur_model", "", "fleur_model must be a model name, Hub id or folder"),
])
def test_bad_options_are_refused_before_loading(option, value, message):
    with pytest.raises(ValueError, match=message):
        capeval.score(["a cat"], [["a cat"]], metrics="fleur", images=items()[2][:1], **{option: value})


def test_a_missing_folder_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither a folder nor a Hub model id"):
        capeval.score(["a cat"], [["a cat"]], metrics="fleur", images=items()[2][:1],
                      fleur_model=str(tmp_path / "nope"))


# -- the reading rules, one by one (the reference's branches) ------------------------------------------------------

DIGITS = list(range(100, 110))  # token ids of "0".."9" in these unit tests


def probs(rows):
    """A (steps, 10) float32 tensor: each row a distribution over the digits."""
    return torch.tensor(rows, dtype=torch.float32)


def one_hot(d, p=1.0):
    row = [(1 - p) / 9] * 10
    row[d] = p
    return row


@pytest.mark.parametrize("text, number", [
    ("0.75</s>", 0.75), ("Score: 0.8.</s>", 0.8), ("..0.5..</s>", 0.5), ("none</s>", None), ("0.7.5</s>", None),
    ("1</s>", 1.0), ("0.7", None),  # the last 4 characters are dropped even without </s>
    ("0.12</s>", 0.12),
])
def test_read_number_follows_the_reference(text, number):
    assert read_number(answer_text_for_parsing(text)) == number


def test_two_decimals_use_both_steps():
    generated = [7, 100, 50, 107, 105, 2]  # "▁ 0 . 7 5 </s>"
    rows = [one_hot(0)] * 6
    rows[3] = one_hot(7, 0.5)
    rows[4] = one_hot(5, 0.25)
    got = smoothed_score(0.75, generated, DIGITS, probs(rows)).score
    first = sum(d * p for d, p in enumerate(one_hot(7, 0.5))) * 0.1
    second = sum(d * p for d, p in enumerate(one_hot(5, 0.25))) * 0.01
    assert got == pytest.approx(first + second, abs=1e-6)


def test_a_first_decimal_zero_takes_the_second_zero_and_a_repeated_digit_the_first():
    generated = [100, 50, 100, 103, 2]  # "0 . 0 3"
    rows = [one_hot(9)] * 5
    rows[2] = one_hot(0, 0.6)
    rows[3] = one_hot(3, 0.7)
    want = sum(d * p for d, p in enumerate(one_hot(0, 0.6))) * 0.1 + sum(d * p for d, p in enumerate(one_hot(3, 0.7))) * 0.01
    assert smoothed_score(0.03, generated, DIGITS, probs(rows)).score == pytest.approx(want, abs=1e-6)
    generated = [100, 50, 106, 106, 2]  # "0 . 6 6": the first 6 for the first decimal, the second for the second
    rows = [one_hot(0)] * 5
    rows[2] = one_hot(6, 0.9)
    rows[3] = one_hot(6, 0.4)
    want = sum(d * p for d, p in enumerate(one_hot(6, 0.9))) * 0.1 + sum(d * p for d, p in enumerate(one_hot(6, 0.4))) * 0.01
    assert smoothed_score(0.66, generated, DIGITS, probs(rows)).score == pytest.approx(want, abs=1e-6)


def test_one_point_zero_and_its_failures():
    rows = [one_hot(1, 0.7)] * 4
    generated = [101, 50, 100, 2]
    p = one_hot(1, 0.7)
    assert smoothed_score(1.0, generated, DIGITS, probs(rows)).score == pytest.approx(0.9 * p[0] + p[1], abs=1e-6)
    assert smoothed_score(1.0, [101, 50, 101, 2], DIGITS, probs(rows)).failure == REPEATED_ONE
    assert smoothed_score(1.0, [50, 100, 2], DIGITS, probs(rows[:3])).failure == DIGIT_NOT_GENERATED


def test_failures_give_no_score():
    rows = probs([one_hot(0)] * 3)
    assert smoothed_score(None, [2], DIGITS, rows).failure == NO_NUMBER
    assert smoothed_score(5.0, [105, 2], DIGITS, rows).failure == OUT_OF_RANGE
    assert smoothed_score(0.5, [100, 50, 2], DIGITS, rows).failure == DIGIT_NOT_GENERATED
    assert smoothed_score(1e-05, [100, 2], DIGITS, rows).failure == FLOAT_NOTATION


def test_float16_arithmetic_is_the_references():
    """On a GPU the reference smooths float16 tensors: each product and sum rounds to float16."""
    rows = torch.tensor([one_hot(7, 0.3)] * 3, dtype=torch.float16)
    generated = [100, 50, 107]
    got = smoothed_score(0.7, generated, DIGITS, rows).score
    score = 0.
    for rate in range(10):
        score += rows[2][rate] * rate * 0.1  # fleur.py's loop on a float16 tensor
    assert got == float(score) and score.dtype == torch.float16
    assert got != pytest.approx(sum(d * float(p) for d, p in enumerate(rows[2])) * 0.1, abs=1e-9)


@pytest.mark.parametrize("metric", ["fleur", "ref_fleur", "expert"])
def test_every_benchmark_cell_is_unknown_for_the_judges(metric):
    """LLaVA-1.5's training data is undisclosed: no benchmark cell of a judge may be claimed clean."""
    from capeval.meta_evaluation.contamination import contamination
    from capeval.registry import BENCHMARKS

    for benchmark, judged in BENCHMARKS.items():
        if judged:
            marks = contamination(metric, benchmark)
            assert marks and all(m.startswith("unknown:") for m in marks), (metric, benchmark, marks)
