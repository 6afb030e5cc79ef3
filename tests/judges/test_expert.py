"""EXPERT against the reference procedure (hjkim811/EXPERT's ``expert.py`` scoring turn on the original LLaVA code
with LLaVA's LoRA loading: ``support/tiny_expert.py``) on the tiny LLaVA with a tiny LoRA adapter in LLaVA's layout,
in both templates, both checkpoint layouts and batch sizes."""
from __future__ import annotations

import math
import warnings

import pytest

import capeval
from capeval.judges.answers import JudgeFailureWarning

pytest.importorskip("peft")
torch = pytest.importorskip("torch")

TOL = 1e-5


def items():
    from capeval.io import example_images
    from capeval.judges.random_llava import CAPTIONS

    predictions, images = [], []
    for photo, captions in zip(example_images()[:3], CAPTIONS):
        for caption in captions:
            predictions.append(caption)
            images.append(photo)
    return predictions, [["a reference"]] * len(predictions), images


@pytest.fixture(scope="module", params=["llava_v0", "llava_v1"])
def adapter(request, tiny_llava, tmp_path_factory):
    from support.tiny_expert import write_tiny_expert_adapter

    folder = write_tiny_expert_adapter(tmp_path_factory.mktemp(f"expert-{request.param}"), tiny_llava, request.param)
    return request.param, folder


@pytest.fixture(scope="module")
def reference(adapter, tiny_llava, llava_code):
    from support.tiny_expert import expert_reference, load_expert_reference

    from capeval.models.images import read_item

    conversation, folder = adapter
    tokenizer, model, image_processor = load_expert_reference(folder, tiny_llava["original"], llava_code)
    predictions, _, images = items()
    return [expert_reference(tokenizer, model, image_processor, read_item(im, i).decode(), p, conversation)
            for i, (im, p) in enumerate(zip(images, predictions))]


def test_the_adapter_changes_the_answers_and_numbers_come_out(reference, tiny_llava):
    scored = [s for s, _, _ in reference if s is not None]
    assert len(scored) >= 5 and len(set(scored)) == len(scored)


@pytest.mark.parametrize("layout", ["hf", "original"])
@pytest.mark.parametrize("batch_size", [1, 4])
def test_expert_equals_the_reference(adapter, reference, tiny_llava, layout, batch_size):
    conversation, folder = adapter
    predictions, references, images = items()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        result = capeval.score(predictions, references, metrics="expert", images=images, progress=False,
                               expert_model=str(tiny_llava[layout]), expert_adapter=str(folder),
                               expert_conversation=conversation, expert_batch_size=batch_size)
    got = result["per_caption"]["expert"]
    for i, (want, answer, error) in enumerate(reference):
        if want is None:
            assert math.isnan(got[i]), (i, answer)
        else:
            assert abs(got[i] - want) <= TOL, (i, got[i], want, answer)
    assert f"conv={conversation}" in result["signature"] and "prompt=expert" in result["signature"]
    assert result["judges"]["expert"] == f"EXPERT prompt, judge {tiny_llava[layout]}+{folder} ({conversation})"


def test_the_base_model_alone_answers_differently(adapter, reference, tiny_llava):
    """The merge matters: without the adapter the same prompts score otherwise (here: FLEUR-trained answers)."""
    conversation, folder = adapter
    predictions, references, images = items()
    from capeval.judges import judge as J
    from capeval.judges.lora import merge_adapter

    plain = J.load_judge(str(tiny_llava["hf"]), device="cpu")
    merged = J.load_judge(str(tiny_llava["hf"]), device="cpu", adapter=str(folder))
    assert plain is not merged and plain.fingerprint != merged.fingerprint
    name = "model.language_model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(dict(plain.model.named_parameters())[name], dict(merged.model.named_parameters())[name])
    with pytest.raises(FileNotFoundError, match="holds no adapter_model.safetensors or adapter_model.bin"):
        merge_adapter(plain.model, tiny_llava["vision"])


def test_an_adapter_on_a_chat_judge_is_refused(tiny_llava, tmp_path, adapter):
    from capeval.judges.random_llava import write_tiny_chat_judge

    chat = write_tiny_chat_judge(tmp_path / "chat", tiny_llava, steps=1)
    with pytest.raises(ValueError, match="capeval merges LLaVA LoRA adapters into LLaVA-1.5 judges"):
        capeval.score(["a cat"], [["a cat"]], metrics="expert", images=items()[2][:1], expert_model=str(chat),
                      expert_adapter=str(adapter[1]))


def test_bad_conversation_is_refused():
    with pytest.raises(ValueError, match=r"expert_conversation must be one of 'llava_v1', 'llava_v0', got 'v2'"):
        capeval.score(["a cat"], [["a cat"]], metrics="expert", images=items()[2][:1], expert_conversation="v2")


def test_explanations_are_expert_py_second_turn(adapter, tiny_llava, llava_code):
    """``expert_explain=True``: the explanation turn of ``expert.py --explanation True``, said back with capeval's
    score (see test_fleur's explanation test for why), parsed as its ``parse_explanation``."""
    from support.tiny_expert import expert_reference, load_expert_reference

    from capeval.models.images import read_item

    conversation, folder = adapter
    predictions, references, images = items()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JudgeFailureWarning)
        result = capeval.score(predictions, references, metrics="expert", images=images, progress=False,
                               expert_model=str(tiny_llava["hf"]), expert_adapter=str(folder),
                               expert_conversation=conversation, expert_batch_size=1, expert_explain=True)
    tokenizer, model, image_processor = load_expert_reference(folder, tiny_llava["original"], llava_code)
    got = result["expert_explanations"]["expert"]
    checked = 0
    for i, (entry, score) in enumerate(zip(got, result["per_caption"]["expert"])):
        if math.isnan(score):
            assert entry is None
            continue
        want = expert_reference(tokenizer, model, image_processor, read_item(images[i], i).decode(), predictions[i],
                                conversation, explain_with=score)
        assert entry["text"] == want and set(entry) == {"fluency", "relevance", "descriptiveness", "text"}
        checked += 1
    assert checked >= 5
