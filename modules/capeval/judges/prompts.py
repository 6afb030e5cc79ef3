"""The judges' prompts: FLEUR's instructions as Yebin46/FLEUR writes them, EXPERT's as hjkim811/EXPERT writes it,
and how they reach the model.

The texts are transcribed verbatim from the reference scripts (the ``inp = f'...'`` assignment in the loop of
``fleur.py`` and of ``reffleur.py``); RefFLEUR joins an image's references with newlines (``reffleur.py``,
``gt_list.append('\\n'.join(v['ground_truth']))``). The candidate is whitespace-normalised before it enters the prompt, as both
scripts normalise it when they read the annotation file (``' '.join(human_judgement['caption'].split())``); the
references are used as given.

LLaVA-1.5 (the paper's judge) reads the prompt of LLaVA's ``llava_v1`` conversation (``llava/conversation.py``,
``conv_llava_v1``: system text, roles ``USER`` / ``ASSISTANT``, separator style ``TWO`` with ``" "`` and ``"</s>"``),
the image placeholder ``<image>`` and a newline before the instruction (``fleur.py``'s ``if model.config.mm_use_im_start_end`` block, without
``mm_use_im_start_end`` as LLaVA-1.5's configuration sets it). Any other judge reads the same instruction through
its own chat template (one user turn: the image, then the text).
"""
from __future__ import annotations

from collections.abc import Sequence

#: FLEUR's instruction (``fleur.py``); ``{candidate}`` is the caption.
FLEUR_INSTRUCTION = (
    "Your task is to evaluate and rate the caption on a scale of 0.0 to 1.0 based on the given Grading Criteria. "
    "(Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not describe the image at all.\n"
    "1.0: The caption accurately and clearly describes the image.\n\nCaption: {candidate}\n\n"
    "Score(Choose a rating from 0.0 to 1.0):")

#: RefFLEUR's instruction (``reffleur.py``); ``{references}`` is the references joined by newlines.
REF_FLEUR_INSTRUCTION = (
    "Your task is to evaluate and rate the candidate caption on a scale of 0.0 to 1.0 based on the given Grading "
    "Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not describe the image at "
    "all.\n1.0: The caption accurately and clearly describes the image.\n\nReference Captions: {references}\n\n"
    "Candidate Caption: {candidate}\n\nScore(Choose a rating from 0.0 to 1.0):")

#: EXPERT's scoring instruction (hjkim811/EXPERT ``expert.py``, ``get_scoring_prompt``); ``{candidate}`` is the caption.
EXPERT_INSTRUCTION = "Evaluate the caption and assign a score on a scale of 0.0 to 1.0.\n\nCaption: {candidate}\n\nScore (0.0~1.0):"

#: LLaVA's image placeholder (``llava/constants.py``, ``DEFAULT_IMAGE_TOKEN``).
IMAGE_PLACEHOLDER = "<image>"

#: ``conv_llava_v1``'s system text, roles and separators (``llava/conversation.py``).
LLAVA_V1_SYSTEM = ("A chat between a curious human and an artificial intelligence assistant. "
                   "The assistant gives helpful, detailed, and polite answers to the human's questions.")
LLAVA_V1_ROLES = ("USER", "ASSISTANT")
LLAVA_V1_SEPARATORS = (" ", "</s>")


#: ``conv_llava_v0``'s roles and separator (``llava/conversation.py``: ``SeparatorStyle.SINGLE``, ``"###"``; the same
#: system text as ``conv_llava_v1``).
LLAVA_V0_ROLES = ("Human", "Assistant")
LLAVA_V0_SEPARATOR = "###"
#: The conversation templates a LLaVA judge can be asked in.
CONVERSATIONS = ("llava_v1", "llava_v0")


def normalize_candidate(caption: str) -> str:
    """The caption as the reference scripts put it in the prompt: runs of whitespace as one space, no ends."""
    return " ".join(caption.split())


def fleur_instruction(candidate: str, references: Sequence[str] | None = None) -> str:
    """FLEUR's instruction for ``candidate`` (``references=None``), or RefFLEUR's with the references."""
    if references is None:
        return FLEUR_INSTRUCTION.format(candidate=normalize_candidate(candidate))
    return REF_FLEUR_INSTRUCTION.format(candidate=normalize_candidate(candidate), references="\n".join(references))


def llava_v1_prompt(instruction: str) -> str:
    """The whole prompt LLaVA-1.5 reads: ``conv_llava_v1`` with the user turn ``<image>\\n`` + ``instruction`` and an
    empty assistant turn (``Conversation.get_prompt`` for ``SeparatorStyle.TWO``: the system text and the first
    separator, then ``ROLE: message`` + the separators in turn, and ``ASSISTANT:`` for the empty turn)."""
    user, assistant = LLAVA_V1_ROLES
    return (f"{LLAVA_V1_SYSTEM}{LLAVA_V1_SEPARATORS[0]}{user}: {IMAGE_PLACEHOLDER}\n{instruction}"
            f"{LLAVA_V1_SEPARATORS[0]}{assistant}:")


def llava_v0_prompt(instruction: str) -> str:
    """The prompt in ``conv_llava_v0`` (``SeparatorStyle.SINGLE``: the system text, ``###``, then ``ROLE: message###``
    for each turn and ``Assistant:`` for the empty one), the user turn ``<image>\n`` + ``instruction``."""
    user, assistant = LLAVA_V0_ROLES
    sep = LLAVA_V0_SEPARATOR
    return f"{LLAVA_V1_SYSTEM}{sep}{user}: {IMAGE_PLACEHOLDER}\n{instruction}{sep}{assistant}:"


def llava_follow_up(instruction: str, said: str, question: str, conversation: str = "llava_v1") -> str:
    """The prompt of a second turn in LLaVA's ``conversation`` template: the first user turn (``<image>\n`` +
    ``instruction``), the judge's first answer replaced by ``said + "</s>"`` (``fleur_exp.py`` and ``expert.py`` both
    write ``str(score) + '</s>'`` there; ``get_prompt`` then adds the template's separator after it as after every
    finished turn), ``question``, and the empty assistant turn."""
    first = llava_prompt(instruction, conversation)
    if conversation == "llava_v1":
        user, assistant = LLAVA_V1_ROLES
        sep, sep2 = LLAVA_V1_SEPARATORS
        return f"{first} {said}</s>{sep2}{user}: {question}{sep}{assistant}:"
    user, assistant = LLAVA_V0_ROLES
    sep = LLAVA_V0_SEPARATOR
    return f"{first} {said}</s>{sep}{user}: {question}{sep}{assistant}:"


#: EXPERT's explanation instruction (``expert.py``, ``get_explanation_prompt``); ``{candidate}`` is the caption.
EXPERT_EXPLANATION = (
    "Provide a brief explanation for the score based on three criteria: Fluency, Relevance, and Descriptiveness.\n\n"
    "Caption: {candidate}\n\nEvaluation Criteria:\n- Fluency: Whether the caption is fluent, natural, and grammatically "
    "correct.\n- Relevance: Whether the sentence correctly describes the visual content and be closely relevant to the "
    "image.\n- Descriptiveness: Whether the sentence is a precise, informative caption that describes important "
    "details of the image.\n\nOutput Format:\nFluency: {{Provide explanation here.}}\nRelevance: {{Provide explanation "
    "here.}}\nDescriptiveness: {{Provide explanation here.}}")


def expert_instruction(candidate: str) -> str:
    """EXPERT's scoring instruction for ``candidate`` (whitespace-normalised, as ``expert.py`` reads Flickr8k and
    COMPOSITE captions)."""
    return EXPERT_INSTRUCTION.format(candidate=normalize_candidate(candidate))


def llava_prompt(instruction: str, conversation: str = "llava_v1") -> str:
    """The instruction in LLaVA's ``conversation`` template (:data:`CONVERSATIONS`)."""
    if conversation == "llava_v1":
        return llava_v1_prompt(instruction)
    if conversation == "llava_v0":
        return llava_v0_prompt(instruction)
    raise ValueError(f"conversation must be one of {list(CONVERSATIONS)}, got {conversation!r:.60}.")


def chat_messages(instruction: str) -> list[dict]:
    """One user turn for a judge's own chat template (``processor.apply_chat_template``): the image, then the text."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": instruction}]}]
