"""Reading a judge's answer and FLEUR's score smoothing, as Yebin46/FLEUR's ``fleur.py`` / ``reffleur.py`` do it
after ``model.generate`` (the ``try:`` block of their loop), step by step:

1. the answer text is the decoded new tokens, stripped, without its last 4 characters (``outputs[:-4]``: the
   ``</s>`` that ends LLaVA's answer); every character but digits and dots is removed, then leading and trailing
   dots, and the rest is read with ``float()`` (:func:`read_number`);
2. a number outside [0, 1] is skipped by the reference (its score list then no longer lines up with the items);
3. below 1.0, the first decimal digit ``d1`` of ``str(number)`` is found among the generated tokens (the token
   ``rate2token[d] = tokenizer.encode(str(d))[-1]``; when it occurs several times, the second occurrence for
   ``d1 = 0``, else the first) and the softmax of the logits at that step gives ``sum_d p(d) * d * 0.1``; when
   ``str(number)`` has a second decimal ``d2``, its step (the second occurrence when repeated) adds
   ``sum_d p(d) * d * 0.01``;
4. an answer of 1.0 gives ``0.9 * p("0") + p("1")`` at the step that generated its ``1``;
5. any error on the way (no number, a digit token not generated, a repeated ``1`` in a 1.0 answer) prints
   ``Error!`` and the reference appends the previous item's score again.

capeval follows 1, 3 and 4 exactly, in the judge's dtype (the reference's arithmetic runs on float16 tensors on the
GPU; :func:`smoothed_score` repeats its operations in that dtype). For 2 and 5 it gives no score: the item's score is
``NaN``, the failure is counted in ``result["judge_failures"]`` with the answer and the reason, and one warning names
the items (:class:`JudgeFailureWarning`). Scores are in [0, 1].
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: How many characters the reference drops from the end of the decoded answer (``outputs[:-4]``: LLaVA's ``</s>``).
DROPPED_TAIL = 4

#: Why an answer gave no score, in the words of ``result["judge_failures"]``.
NO_NUMBER = "no number in the answer"
OUT_OF_RANGE = "a number outside [0, 1]"
DIGIT_NOT_GENERATED = "the digit's token is not among the generated tokens"
REPEATED_ONE = "the answer 1.0 generated the token '1' more than once"
FLOAT_NOTATION = "the number's decimal digits are not written out (str() gives an exponent)"


class JudgeContextWarning(UserWarning):
    """A prompt with the longest answer does not fit the judge's context: scored as the reference scores it (the
    whole prompt, nothing cut), beyond the positions the model was trained on."""


class JudgeFailureWarning(UserWarning):
    """A judge's answer gave no score (no number, a number outside [0, 1], ...): the item's score is NaN."""


@dataclass(frozen=True)
class Reading:
    """What one answer gives: ``value`` the number read (``None`` if none), ``score`` the smoothed score in [0, 1]
    (``None`` on failure), ``failure`` the reason (one of this module's constants) or ``None``."""

    value: float | None
    score: float | None
    failure: str | None


def answer_text_for_parsing(decoded: str) -> str:
    """The text the reference reads the number from: the decoded answer (special tokens kept), stripped, without its
    last :data:`DROPPED_TAIL` characters."""
    return decoded.strip()[:-DROPPED_TAIL]


def read_number(text: str) -> float | None:
    """The number in ``text`` as the reference reads it: digits and dots kept, leading and trailing dots removed,
    ``float()``; ``None`` when that fails (no digit, or several dots left inside)."""
    digits_and_dots = re.sub(r"[^\d\.]", "", text)
    number = re.sub(r"\.+$", "", re.sub(r"^\.+", "", digits_and_dots))
    try:
        return float(number)
    except ValueError:
        return None


def _occurrences(generated: Sequence[int], token: int) -> list[int]:
    return [step for step, t in enumerate(generated) if t == token]


def smoothed_score(value: float | None, generated: Sequence[int], digit_tokens: Sequence[int], digit_probs: Any) -> Reading:
    """FLEUR's smoothed score of an answer whose number is ``value`` (:func:`read_number`).

    generated: the generated token ids, step by step (the stop token included), as the reference searches them.
    digit_tokens: the token id of each digit 0-9 (``rate2token``: :func:`digit_token_ids`).
    digit_probs: a ``(steps, 10)`` torch tensor in the judge's dtype: at each generation step, the softmax over the
        whole vocabulary of that step's logits, taken at ``digit_tokens``. The arithmetic below runs on these
        tensors, in their dtype, in the reference's order of operations.
    """
    if value is None:
        return Reading(None, None, NO_NUMBER)
    if value < 0 or value > 1:
        return Reading(value, None, OUT_OF_RANGE)
    if value < 1.0:
        text = str(value)
        if "." not in text or "e" in text:
            return Reading(value, None, FLOAT_NOTATION)
        first = int(text[text.index(".") + 1])
        steps = _occurrences(generated, digit_tokens[first])
        if not steps:
            return Reading(value, None, DIGIT_NOT_GENERATED)
        # a repeated digit: the second occurrence for 0 (the 0 before the point came first), else the first
        step = steps[0] if len(steps) == 1 else (steps[1] if first == 0 else steps[0])
        probs = digit_probs[step]
        score = 0.0
        for rate in range(10):
            score = score + probs[rate] * rate * 0.1
        if len(text) > 3:  # a second decimal
            second = int(text[text.index(".") + 2])
            steps2 = _occurrences(generated, digit_tokens[second])
            if not steps2:
                return Reading(value, None, DIGIT_NOT_GENERATED)
            step2 = steps2[0] if len(steps2) == 1 else steps2[1]
            probs2 = digit_probs[step2]
            for rate in range(10):
                score = score + probs2[rate] * rate * 0.01
    else:  # exactly 1.0
        steps = _occurrences(generated, digit_tokens[1])
        if not steps:
            return Reading(value, None, DIGIT_NOT_GENERATED)
        if len(steps) > 1:
            return Reading(value, None, REPEATED_ONE)
        probs = digit_probs[steps[0]]
        score = 0.9 * probs[0] + probs[1]
    return Reading(value, float(score), None)


def digit_token_ids(encode) -> list[int]:
    """``rate2token`` as the reference builds it: the last id of ``encode(str(d))`` for each digit ``d`` 0-9
    (``encode`` is the tokenizer's ``encode``, special tokens added as it adds them)."""
    return [encode(str(d))[-1] for d in range(10)]
