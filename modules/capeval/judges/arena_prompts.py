"""CapArena's pairwise judging prompts and the reading of the judge's answer (Cheng et al. 2025, njucckevin/CapArena
``vlm_as_a_judge.py``).

The texts are transcribed verbatim from the reference script: its two system prompts (``system_prompt_with_ref`` /
``system_prompt_without_ref``, each beginning and ending with a newline as the script's triple-quoted strings do)
and its user message ``compare_prompt`` (the image first, then ``Caption 1:\\n...\\nCaption 2:\\n...`` and, with a
reference, ``Caption Reference:\\n...``, then the instruction). The captions enter the message as given (the
reference does not normalise them).

The answer is read as the reference reads it: the first ``Judgment:`` in the answer and the rest of its line,
stripped (``re.search(r"Judgment:\\s*(.+)", response)``), and only the six judgments the reference's
``cal_agreement`` accepts count: ``Caption 1 is better`` / ``Caption 2 is better`` / ``Tie``, each with or without
a final full stop. Anything else is no verdict (the reference prints "GPT judgment not 1 or 2" and skips the pair);
capeval counts it as a failure.
"""
from __future__ import annotations

import re

#: The parts of CapArena's two system prompts (``vlm_as_a_judge.py``), verbatim: the task, with or without the
#: reference; the guidelines they share; the reference's paragraph; the response format they share.
_TASK_WITHOUT_REF = '\nYou are a highly capable multimodal AI assistant tasked with evaluating image captions.\n\nGiven an image and two candidate captions, you are require to determine which of the two captions is better.\n'
_TASK_WITH_REF = '\nYou are a highly capable multimodal AI assistant tasked with evaluating image captions.\n\nGiven an image, two candidate captions and one reference caption annotated by human expert, you are require to determine which of the two captions is better.\n'
_GUIDELINES = """
Below are some guidelines for your reference:

1. **Precision**: The caption should accurately correspond to the content of the image, providing precise information about it. Common examples of imprecision include errors in color, quantity, spatial relationships, or the posture of people.

2. **Informativeness**: Salient information in the image should be reflected in the caption. Since it is impossible to include every detail, you will need to subjectively judge which aspects of the image are important. For instance, describing an otter as "a small animal" is precise, but it is less informative than specifying "an otter".

3. **Hallucination**: Captions that include descriptions of objects or elements that are clearly absent from the image should be significantly penalized.

4. **Attention to detail**: Annotators should pay close attention to the details in the image to distinguish the quality of the descriptions.

5. **Assistive description**: Imagine a visually impaired person asking you to describe the image for them. How would you convey the image to them?

6. **Reverse thinking**: What image does the caption lead us to imagine? Does the caption effectively lead you to imagine the intended image?

7. **Ties are acceptable**: If you find it genuinely difficult to determine which caption is better (e.g., both captions are excellent), marking a tie is acceptable.

While the above guidelines provide a framework, they cannot cover all possible cases. Therefore, we encourage you to make **subjective judgments** based on the specific circumstances and your own reasoning about which caption is better.
"""
_REFERENCE_PARAGRAPH = "\n**Reference caption**: The reference caption is annotated by a human expert. When you're uncertain about which description is better (e.g., when unsure about specific details in the image), you can use the reference caption to assist your judgment. The content in the reference caption can be considered correct; however, it is not perfect, and descriptions not included in the reference caption can still be reasonable.\n"
_RESPONSE_FORMAT = """
### Response Format:
Format your response into two lines as shown below:
Reason: <your thoughts and reasoning process for the judgment>
Judgment: <Caption 1 is better>/<Caption 2 is better>/<Tie>
"""

#: ``system_prompt_without_ref`` (``vlm_as_a_judge.py``).
SYSTEM_PROMPT_WITHOUT_REF = _TASK_WITHOUT_REF + _GUIDELINES + _RESPONSE_FORMAT
#: ``system_prompt_with_ref`` (``vlm_as_a_judge.py``).
SYSTEM_PROMPT_WITH_REF = _TASK_WITH_REF + _GUIDELINES + _REFERENCE_PARAGRAPH + _RESPONSE_FORMAT

#: The instruction after the captions, without a reference (``compare_prompt``'s last sentence).
COMPARE_INSTRUCTION_WITHOUT_REF = (
    "Determine which is better and answer with the given format. Only mark a tie if there is no discernible "
    "difference in quality, informativeness, and precision after careful evaluation.")
#: The instruction after the captions and the reference.
COMPARE_INSTRUCTION_WITH_REF = (
    "Determine which is better and answer with the given format. Only mark a tie if it is truly difficult to decide "
    "which caption is better based on their quality, informativeness, and precision.")

#: The judgments the reference accepts (``cal_agreement``), by verdict: ``"1"``, ``"2"``, ``"tie"``.
ACCEPTED_JUDGMENTS = {
    "Caption 1 is better.": "1", "Caption 1 is better": "1",
    "Caption 2 is better.": "2", "Caption 2 is better": "2",
    "Tie": "tie", "Tie.": "tie",
}
#: The verdicts of one answer: caption 1 (the one shown first) better, caption 2 better, a tie.
VERDICTS = ("1", "2", "tie")

_JUDGMENT = re.compile(r"Judgment:\s*(.+)")


def system_prompt(with_reference: bool) -> str:
    """CapArena's system prompt: the one with the reference-caption paragraph when ``with_reference``."""
    return SYSTEM_PROMPT_WITH_REF if with_reference else SYSTEM_PROMPT_WITHOUT_REF


def compare_prompt(caption_1: str, caption_2: str, reference: str | None = None) -> str:
    """CapArena's user message (its text; the image comes before it): the two captions in the order shown, the
    reference when given (``None``: the message without a reference)."""
    if reference is None:
        return f"Caption 1:\n{caption_1}\nCaption 2:\n{caption_2}\n{COMPARE_INSTRUCTION_WITHOUT_REF}"
    return (f"Caption 1:\n{caption_1}\nCaption 2:\n{caption_2}\nCaption Reference:\n{reference}\n"
            f"{COMPARE_INSTRUCTION_WITH_REF}")


def read_judgment(answer: str) -> tuple[str | None, str | None]:
    """``(verdict, judgment)`` of an answer: ``judgment`` the text after the first ``Judgment:`` up to the end of
    its line, stripped (``None`` when there is no ``Judgment:``), and ``verdict`` ``"1"`` / ``"2"`` / ``"tie"`` when
    that text is one of :data:`ACCEPTED_JUDGMENTS`, else ``None`` (a failure)."""
    found = _JUDGMENT.search(answer)
    if found is None:
        return None, None
    judgment = found.group(1).strip()
    return ACCEPTED_JUDGMENTS.get(judgment), judgment
