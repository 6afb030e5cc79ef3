"""A tiny EXPERT-style LoRA adapter for the tiny LLaVA (``tiny_llava``), in LLaVA's LoRA layout (what
``hjkim811/EXPERT-llava-13b-lora`` holds): ``adapter_config.json`` + ``adapter_model.safetensors`` from peft, with the
original LLaVA module names (``base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight``), the projector in
``non_lora_trainables.bin`` (``base_model.model.model.mm_projector.{0,2}.*``), and the base model's ``config.json``
beside them (LLaVA's builder reads the model's configuration from the adapter folder).

The adapter is trained briefly (peft on transformers' LLaVA, seeded) so that the tiny judge answers EXPERT's scoring
question with numbers in the chosen template (``llava_v0``: answers end with ``###``), then its keys are renamed to the
original layout's.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def write_tiny_expert_adapter(folder: Path, llava: dict, conversation: str = "llava_v0", steps: int = 50,
                              seed: int = 0) -> Path:
    import peft
    import transformers
    from safetensors.torch import save_file

    from capeval.judges.judge import _clip_pil_processor, _llava_judge, llava_batch, llava_pixels
    from capeval.judges.llava_layout import load_original
    from capeval.judges.prompts import expert_instruction, llava_prompt
    from capeval.judges.random_llava import _fit, _fleur_examples

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model, _ = load_original(llava["original"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(llava["original"]))
    judge = _llava_judge(model, tokenizer, _clip_pil_processor(llava["vision"]), base_vocab=tokenizer.vocab_size)
    judge.pad_id = 0
    examples = _fleur_examples()
    # different answers from the base model's (each shifted by one example), so the adapter visibly matters
    answers = [examples[(k + 1) % len(examples)][2] for k in range(len(examples))]
    tail = "###" if conversation == "llava_v0" else ""
    batch = llava_batch(judge, [llava_prompt(expert_instruction(c), conversation) for _, c, _ in examples],
                        [llava_pixels(judge, photo) for photo, _, _ in examples])
    targets = [tokenizer(a + tail).input_ids[1:] + [tokenizer.eos_token_id] for a in answers]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS, lora_dropout=0.0, bias="none")
        wrapped = peft.get_peft_model(model, config)
        for name, param in wrapped.named_parameters():  # the projector trains in full, as LLaVA's LoRA recipe does
            if "multi_modal_projector" in name:
                param.requires_grad_(True)
        _fit(wrapped, batch, targets, torch, steps)
    state = {}
    projector = {}
    for name, tensor in wrapped.state_dict().items():
        if "lora_" in name:
            original = name.replace("base_model.model.model.language_model.", "base_model.model.model.")
            state[original.replace(".default.", ".")] = tensor.detach().contiguous().clone()
        elif "multi_modal_projector" in name:
            key = name.replace("base_model.model.model.multi_modal_projector.linear_1", "base_model.model.model.mm_projector.0")
            key = key.replace("base_model.model.model.multi_modal_projector.linear_2", "base_model.model.model.mm_projector.2")
            projector[key.replace(".base_layer.", ".")] = tensor.detach().clone()
    save_file(state, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    torch.save(projector, folder / "non_lora_trainables.bin")
    (folder / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": TARGETS, "lora_dropout": 0.0, "bias": "none",
        "fan_in_fan_out": False, "use_rslora": False, "use_dora": False, "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(llava["original"])}, indent=2))
    shutil.copy(llava["original"] / "config.json", folder / "config.json")
    return folder


def load_expert_reference(adapter: Path, base: Path, llava):
    """``load_pretrained_model``'s LoRA branch (``llava/model/builder.py``: ``'lora' in model_name`` and a
    ``model_base``), in float32 on the CPU: the model built from the adapter folder's configuration with the base's
    weights, ``non_lora_trainables.bin`` loaded (prefixes stripped as the builder strips them), peft's
    ``PeftModel.from_pretrained`` and ``merge_and_unload``; the base's slow tokenizer."""
    import peft
    from llava.model.language_model.llava_llama import LlavaConfig
    from support.fleur_reference import SlowLlamaTokenizer, adapted_llava_class

    cls = adapted_llava_class()
    lora_cfg_pretrained = LlavaConfig.from_pretrained(str(adapter))
    model = cls.from_pretrained(str(base), config=lora_cfg_pretrained, dtype=torch.float32)
    non_lora_trainables = torch.load(adapter / "non_lora_trainables.bin", map_location="cpu")
    non_lora_trainables = {(k[11:] if k.startswith("base_model.") else k): v for k, v in non_lora_trainables.items()}
    if any(k.startswith("model.model.") for k in non_lora_trainables):
        non_lora_trainables = {(k[6:] if k.startswith("model.") else k): v for k, v in non_lora_trainables.items()}
    model.load_state_dict(non_lora_trainables, strict=False)
    model = peft.PeftModel.from_pretrained(model, str(adapter))
    model = model.merge_and_unload().eval()
    tower = model.get_vision_tower()
    if not tower.is_loaded:
        tower.load_model()
    from transformers import CLIPImageProcessorPil

    tower.image_processor = CLIPImageProcessorPil.from_pretrained(tower.vision_tower_name)
    return SlowLlamaTokenizer(str(base / "tokenizer.model")), model, tower.image_processor


def expert_reference(tokenizer, model, image_processor, image, caption, conversation="llava_v0", max_new_tokens=512,
                     explain_with=None):
    """One item of ``expert.py``'s loop (scoring turn): ``(score or None, answer, error)``; with ``explain_with`` (a
    score), the explanation turn's answer instead (``--explanation True``: the first answer replaced by
    ``str(score) + '</s>'``, then ``get_explanation_prompt``).

    ``expert.py`` reads the positions of the digits in ``output_ids[0, 1:]``: with LLaVA 1.2.2's pinned transformers
    4.37.2, ``generate`` from ``inputs_embeds`` returns ``<s>`` + the new tokens; transformers 5 returns the new tokens
    alone, so ``sequences[0]`` is the same row."""
    from llava.constants import DEFAULT_IMAGE_TOKEN, IMAGE_TOKEN_INDEX
    from support.fleur_reference import fleur_reading
    from llava.conversation import SeparatorStyle, conv_templates
    from llava.mm_utils import KeywordsStoppingCriteria, process_images, tokenizer_image_token

    class Args:
        image_aspect_ratio = "pad"

    caption = " ".join(caption.split())
    conv = conv_templates[conversation].copy()
    prompt = ("Evaluate the caption and assign a score on a scale of 0.0 to 1.0.\n\nCaption: " + caption +
              "\n\nScore (0.0~1.0):")
    image_tensor = process_images([image], image_processor, Args()).to(dtype=torch.float32)
    conv.append_message(conv.roles[0], DEFAULT_IMAGE_TOKEN + "\n" + prompt)
    conv.append_message(conv.roles[1], None)
    input_ids = tokenizer_image_token(conv.get_prompt(), tokenizer, IMAGE_TOKEN_INDEX, return_tensors="pt").unsqueeze(0)
    stop_str = conv.sep if conv.sep_style != SeparatorStyle.TWO else conv.sep2
    with torch.inference_mode():
        output_dict = model.generate(input_ids, images=image_tensor, do_sample=False, num_beams=1,
                                     max_new_tokens=max_new_tokens, use_cache=True,
                                     stopping_criteria=[KeywordsStoppingCriteria([stop_str], tokenizer, input_ids)],
                                     output_scores=True, return_dict_in_generate=True)
    generated = output_dict.sequences[0]
    outputs = tokenizer.batch_decode(output_dict.sequences, skip_special_tokens=True)[0].strip()
    if explain_with is not None:
        conv.messages[-1][-1] = str(explain_with) + "</s>"
        explanation = ("Provide a brief explanation for the score based on three criteria: Fluency, Relevance, and "
                       "Descriptiveness.\n\nCaption: " + caption + "\n\nEvaluation Criteria:\n- Fluency: Whether the "
                       "caption is fluent, natural, and grammatically correct.\n- Relevance: Whether the sentence "
                       "correctly describes the visual content and be closely relevant to the image.\n- "
                       "Descriptiveness: Whether the sentence is a precise, informative caption that describes important "
                       "details of the image.\n\nOutput Format:\nFluency: {Provide explanation here.}\nRelevance: "
                       "{Provide explanation here.}\nDescriptiveness: {Provide explanation here.}")
        conv.append_message(conv.roles[0], explanation)
        conv.append_message(conv.roles[1], None)
        input_ids = tokenizer_image_token(conv.get_prompt(), tokenizer, IMAGE_TOKEN_INDEX,
                                          return_tensors="pt").unsqueeze(0)
        with torch.inference_mode():
            second = model.generate(input_ids, images=image_tensor, do_sample=False, num_beams=1,
                                    max_new_tokens=max_new_tokens, use_cache=True,
                                    stopping_criteria=[KeywordsStoppingCriteria([stop_str], tokenizer, input_ids)],
                                    output_scores=True, return_dict_in_generate=True)
        return tokenizer.batch_decode(second.sequences, skip_special_tokens=True)[0].strip()
    # expert.py's parsing and smoothing are fleur.py's lines, read from this text (it has no exception handler: a
    # failure stops its run; here it is returned as the error)
    return fleur_reading(tokenizer, generated, output_dict.scores, outputs)
