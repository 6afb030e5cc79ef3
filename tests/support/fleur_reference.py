"""The reference procedure for FLEUR / RefFLEUR on one (image, caption): Yebin46/FLEUR's ``fleur.py`` /
``reffleur.py`` loop body, run with the original LLaVA code (``llava-torch``, read by path from its wheel).

What is LLaVA's own code here: ``conv_templates["llava_v1"]`` and ``Conversation.get_prompt``,
``mm_utils.tokenizer_image_token``, ``mm_utils.process_images`` (``expand2square`` + the image processor),
``mm_utils.KeywordsStoppingCriteria``, ``LlavaLlamaForCausalLM`` (``prepare_inputs_labels_for_multimodal``,
``generate``), ``CLIPVisionTower`` and the ``mlp2x_gelu`` projector. What is transcribed from FLEUR's scripts
(cited in place): the instructions, the generate arguments, the parsing and the score smoothing, written
independently of capeval's implementation.

Adapted to the installed transformers (5.x), each said where it happens:
* LLaVA's tokenizer is transformers 4.36's slow ``LlamaTokenizer`` (``use_fast=False``), which transformers 5 no
  longer has: :class:`SlowLlamaTokenizer` transcribes what it does with SentencePiece, with ``legacy=False`` as
  LLaVA-1.5's ``tokenizer_config.json`` (Vicuna v1.5's) sets it;
* its CLIP image processor is 4.36's ``CLIPImageProcessor``, PIL-based: transformers 5 names it
  ``CLIPImageProcessorPil`` (its default class is a torchvision port);
* transformers 5's ``generate`` hands the key-value cache to ``forward`` as ``cache=``, LLaVA's ``forward`` takes
  ``past_key_values=``: :func:`load_reference` renames that one keyword;
* LLaVA 1.2's ``generate`` passes ``inputs_embeds`` only, and transformers 5 then returns just the new tokens:
  FLEUR's ``output_ids[0, input_ids.shape[1]:]`` was written for LLaVA <= 1.1.3, whose ``generate`` returned the
  prompt too; both are "the generated tokens", taken here as ``sequences[0]``.
"""
from __future__ import annotations

import re

import torch

FLEUR_TEXT = ("Your task is to evaluate and rate the caption on a scale of 0.0 to 1.0 based on the given Grading "
              "Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not describe the "
              "image at all.\n1.0: The caption accurately and clearly describes the image.\n\nCaption: {}\n\n"
              "Score(Choose a rating from 0.0 to 1.0):")
REF_FLEUR_TEXT = ("Your task is to evaluate and rate the candidate caption on a scale of 0.0 to 1.0 based on the given "
                  "Grading Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not "
                  "describe the image at all.\n1.0: The caption accurately and clearly describes the image.\n\n"
                  "Reference Captions: {}\n\nCandidate Caption: {}\n\nScore(Choose a rating from 0.0 to 1.0):")


class SlowLlamaTokenizer:
    """transformers 4.36's slow ``LlamaTokenizer`` with ``legacy=False`` (Vicuna v1.5's and LLaVA-1.5's
    ``tokenizer_config.json``), as far as LLaVA uses it: ``tokenize`` puts ``▁`` before the whole text, splits it at
    special tokens, and ``_tokenize`` encodes each piece with SentencePiece's dummy prefix turned off (a piece that
    starts with ``▁`` is encoded behind ``<unk>``, whose pieces are then dropped); ``<s>`` first. So a text after a
    special token gets no ``▁`` (``"</s>USER"`` → ``USER``, not ``▁USER``)."""

    def __init__(self, model_file: str):
        import sentencepiece as spm
        from sentencepiece import sentencepiece_model_pb2

        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(open(model_file, "rb").read())
        proto.normalizer_spec.add_dummy_prefix = False  # LlamaTokenizer.get_spm_processor(from_slow=False)
        self.sp = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        self.bos_token_id, self.eos_token_id, self.unk_token_id = 1, 2, 0
        self.special = {"<s>": 1, "</s>": 2, "<unk>": 0}
        self.unk_length = len(self.sp.encode("<unk>"))

    def _piece(self, text: str) -> list[int]:
        if not text.startswith(("\u2581", " ")):
            return self.sp.encode(text)
        return self.sp.encode("<unk>" + text)[self.unk_length:]

    def _ids(self, text: str) -> list[int]:
        text = "\u2581" + text.replace("\u2581", " ")
        ids: list[int] = []
        for chunk in re.split("(<s>|</s>|<unk>)", text):
            if chunk in self.special:
                ids.append(self.special[chunk])
            elif chunk:
                ids.extend(self._piece(chunk))
        if len(ids) > 1 and self.sp.id_to_piece(ids[0]) == "\u2581" and ids[1] in self.special.values():
            ids = ids[1:]
        return ids

    def __call__(self, text: str):
        class Encoding:
            input_ids = [self.bos_token_id] + self._ids(text)
        return Encoding()

    def encode(self, text: str) -> list[int]:
        return self(text).input_ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """``convert_tokens_to_string`` with ``legacy=False``: the first piece's ``▁`` dropped, special tokens
        written as they are (no space before them)."""
        names = {v: k for k, v in self.special.items()}
        tokens = [names.get(int(t)) or self.sp.id_to_piece(int(t)) for t in ids
                  if not (skip_special_tokens and int(t) in names)]
        if tokens and tokens[0].startswith("\u2581"):
            tokens[0] = tokens[0][1:]
        out, pieces = "", []
        for token in tokens:
            if token in self.special:
                out += self.sp.decode_pieces(pieces) + token
                pieces = []
            else:
                pieces.append(token)
        return out + self.sp.decode_pieces(pieces)

    def batch_decode(self, rows, skip_special_tokens: bool = False):
        return [self.decode(r, skip_special_tokens) for r in rows]


def adapted_llava_class():
    """LLaVA's ``LlavaLlamaForCausalLM`` with the one keyword transformers 5 renamed (see the module docstring)."""
    from llava.model.language_model.llava_llama import LlavaLlamaForCausalLM

    class Adapted(LlavaLlamaForCausalLM):
        """transformers 5's ``generate`` passes the key-value cache as ``cache=``; LLaVA's ``forward`` names it
        ``past_key_values`` (the one renamed keyword)."""

        def forward(self, *args, cache=None, **kwargs):
            if cache is not None:
                kwargs["past_key_values"] = cache
            return super().forward(*args, **kwargs)

    return Adapted


def load_reference(original_folder, llava):
    """``load_pretrained_model``'s steps for a non-LoRA LLaVA (``llava/model/builder.py``), in float32 on the CPU."""
    from transformers import CLIPImageProcessorPil

    Adapted = adapted_llava_class()
    tokenizer = SlowLlamaTokenizer(str(original_folder / "tokenizer.model"))
    model = Adapted.from_pretrained(str(original_folder), dtype=torch.float32).eval()
    tower = model.get_vision_tower()
    if not tower.is_loaded:
        tower.load_model()
    tower.image_processor = CLIPImageProcessorPil.from_pretrained(tower.vision_tower_name)
    return tokenizer, model, tower.image_processor


class Args:
    image_aspect_ratio = "pad"  # fleur.py's --image-aspect-ratio default


def fleur_reference(tokenizer, model, image_processor, image, candidate, references=None, max_new_tokens=512):
    """One item of ``fleur.py``'s loop (``reffleur.py``'s with ``references``): ``(score or None, answer, error,
    state)``, ``state`` the conversation and image for :func:`fleur_explanation_reference`."""
    from llava.constants import DEFAULT_IMAGE_TOKEN, IMAGE_TOKEN_INDEX
    from llava.conversation import SeparatorStyle, conv_templates
    from llava.mm_utils import KeywordsStoppingCriteria, process_images, tokenizer_image_token

    candidate = " ".join(candidate.split())  # txt_list.append(' '.join(human_judgement['caption'].split()))
    conv = conv_templates["llava_v1"].copy()
    if references is None:
        inp = FLEUR_TEXT.format(candidate)
    else:
        inp = REF_FLEUR_TEXT.format("\n".join(references), candidate)
    image_tensor = process_images([image], image_processor, Args()).to(model.device, dtype=torch.float32)
    inp = DEFAULT_IMAGE_TOKEN + "\n" + inp  # mm_use_im_start_end is False for LLaVA-1.5
    conv.append_message(conv.roles[0], inp)
    conv.append_message(conv.roles[1], None)
    prompt = conv.get_prompt()
    input_ids = tokenizer_image_token(prompt, tokenizer, IMAGE_TOKEN_INDEX, return_tensors="pt").unsqueeze(0)
    stop_str = conv.sep if conv.sep_style != SeparatorStyle.TWO else conv.sep2
    stopping_criteria = KeywordsStoppingCriteria([stop_str], tokenizer, input_ids)
    with torch.inference_mode():
        output_dict = model.generate(input_ids, images=image_tensor, do_sample=False, num_beams=1,
                                     max_new_tokens=max_new_tokens, use_cache=True,
                                     stopping_criteria=[stopping_criteria], output_scores=True,
                                     return_dict_in_generate=True)
    generated = output_dict.sequences[0]  # see the module docstring: the new tokens
    score, outputs, error = fleur_reading(tokenizer, generated, output_dict.scores)
    return score, outputs, error, (conv, image_tensor)


def fleur_reading(tokenizer, generated, scores, outputs=None):
    """``fleur.py``'s reading of one generation (the ``try:`` block): ``(score or None, answer text, error)``.
    ``outputs``: the answer text to read instead of ``decode(generated).strip()`` with its last 4 characters dropped
    (``expert.py`` reads its whole ``batch_decode(..., skip_special_tokens=True)``; the rest is the same code)."""
    rate2token = {s: tokenizer.encode(str(s))[-1] for s in range(10)}
    text = outputs if outputs is not None else tokenizer.decode(generated).strip()[:-4]
    outputs = outputs if outputs is not None else tokenizer.decode(generated).strip()
    try:
        dotsnumbersdots = re.sub(r"[^\d\.]", "", text)
        numbersdots = re.sub(r"^\.+", "", dotsnumbersdots)
        numbers = re.sub(r"\.+$", "", numbersdots)
        score_check = float(numbers)
        if 0 > score_check or 1 < score_check:
            return None, outputs, "out of range"  # fleur.py: `continue`
        if score_check < 1.0:
            num_index_in_score = str(score_check).index(".") + 1
            find_num = int(str(score_check)[num_index_in_score])
            num_index_in_token = (generated == rate2token[find_num]).nonzero().squeeze()
            if len(num_index_in_token.shape) > 0:
                num_index_in_token = num_index_in_token[1] if find_num == 0 else num_index_in_token[0]
            probs = torch.nn.functional.softmax(scores[num_index_in_token], dim=-1)[0]
            score = 0.
            for rate, token in rate2token.items():
                score += probs[token] * rate * 0.1
            if len(str(score_check)) > 3:
                num2_index_in_score = str(score_check).index(".") + 2
                find_num2 = int(str(score_check)[num2_index_in_score])
                num2_index_in_token = (generated == rate2token[find_num2]).nonzero().squeeze()
                if len(num2_index_in_token.shape) > 0:
                    num2_index_in_token = num2_index_in_token[1]
                probs2 = torch.nn.functional.softmax(scores[num2_index_in_token], dim=-1)[0]
                for rate, token in rate2token.items():
                    score += probs2[token] * rate * 0.01
        else:
            num_index_in_token = (generated == rate2token[1]).nonzero().squeeze()
            probs = torch.nn.functional.softmax(scores[num_index_in_token], dim=-1)[0]
            score = 0.9 * probs[rate2token[0]] + probs[rate2token[1]]
    except Exception as err:  # fleur.py: print("Error!") and reuse the previous score
        return None, outputs, type(err).__name__
    return float(score), outputs, None


def fleur_explanation_reference(tokenizer, model, state, score, max_new_tokens=512):
    """``fleur_exp.py``'s second turn after a scored first turn: the judge's answer replaced by
    ``str(score.item()) + '</s>'``, then "Why? Tell me the reason." (no image placeholder in later messages)."""
    from llava.constants import IMAGE_TOKEN_INDEX
    from llava.conversation import SeparatorStyle
    from llava.mm_utils import KeywordsStoppingCriteria, tokenizer_image_token

    conv, image_tensor = state
    conv.messages[-1][-1] = str(score) + "</s>"
    conv.append_message(conv.roles[0], "Why? Tell me the reason.")
    conv.append_message(conv.roles[1], None)
    input_ids = tokenizer_image_token(conv.get_prompt(), tokenizer, IMAGE_TOKEN_INDEX, return_tensors="pt").unsqueeze(0)
    stop_str = conv.sep if conv.sep_style != SeparatorStyle.TWO else conv.sep2
    with torch.inference_mode():
        output_dict = model.generate(input_ids, images=image_tensor, do_sample=False, num_beams=1,
                                     max_new_tokens=max_new_tokens, use_cache=True,
                                     stopping_criteria=[KeywordsStoppingCriteria([stop_str], tokenizer, input_ids)],
                                     output_scores=True, return_dict_in_generate=True)
    return tokenizer.decode(output_dict.sequences[0]).strip()


def chat_reference(model, processor, image, instruction, max_new_tokens=512):
    """FLEUR's procedure with a transformers VLM and its chat template, one prompt per ``generate`` (no padding):
    the user turn (image, then the instruction) through ``apply_chat_template``, greedy decoding, then
    :func:`fleur_reading` with the model's tokenizer."""
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": instruction}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    with torch.inference_mode():
        out = model.generate(**inputs, do_sample=False, num_beams=1, max_new_tokens=max_new_tokens,
                             output_scores=True, return_dict_in_generate=True)
    generated = out.sequences[0, inputs["input_ids"].shape[1]:]
    return fleur_reading(processor.tokenizer, generated, out.scores)
