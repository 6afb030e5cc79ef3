"""The ``fleur`` and ``ref_fleur`` metrics: a vision-language model asked FLEUR's question about each (image,
caption), its answer read and smoothed as Yebin46/FLEUR does (:mod:`capeval.judges.answers`).

Results: ``result["fleur"]`` the mean over the items that got a score, ``result["per_caption"]["fleur"]`` each item's
score in [0, 1] (``NaN`` for an answer without a usable number), ``result["judge_failures"]["fleur"]`` the items
without a score (index, the judge's answer, the reason; one :class:`~capeval.judges.answers.JudgeFailureWarning`
names the first 10), ``result["judges"]["fleur"]`` what judged: ``"FLEUR (LLaVA-1.5-13B)"`` for the paper's model,
``"FLEUR prompt, judge <id>"`` for any other; with ``fleur_explain=True``, ``result["fleur_explanations"]["fleur"]``
the judge's answer to FLEUR's follow-up question (``fleur_exp.py``: "Why? Tell me the reason.", asked after the
score with the smoothed score as the judge's first answer), ``None`` where there is no score.

Where capeval departs from the reference scripts, deliberately (each counted or documented, never silent):
``fleur.py`` scores every third Flickr8k-Expert row and reuses the score for the next two (the file repeats each
pair once per expert): capeval scores every item it is given. An answer without a number, or whose digits cannot
be found among the generated tokens, made the script reuse the previous item's score; a number outside [0, 1] made
it skip the item (its score list then no longer lines up with the judgments): capeval gives ``NaN`` and counts the
item in ``judge_failures``.
"""
from __future__ import annotations

import math
import os
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.judges.answers import JudgeFailureWarning
from capeval.metric import CaptionMetric, MetricOutput
from capeval.validation import warn_at_caller

#: Items named in the failure warning.
WARN_FIRST = 10
#: FLEUR's follow-up question (``fleur_exp.py``'s second input).
EXPLAIN_QUESTION = "Why? Tell me the reason."
#: The signature's name of the image preparation: LLaVA's square padding then CLIP's processor (``pad-square``), or
#: the judge's own processor (``processor``).
IMAGE_PREP = {"llava-1.5": "pad-square", "chat": "processor"}


def _options() -> dict[str, Any]:
    from capeval.judges.judge import DEFAULT_JUDGE, MAX_NEW_TOKENS

    return {"fleur_model": DEFAULT_JUDGE, "fleur_device": None, "fleur_dtype": "auto", "fleur_batch_size": 8,
            "fleur_max_new_tokens": MAX_NEW_TOKENS, "fleur_explain": False, "fleur_device_map": None,
            "fleur_force_cpu": False, "fleur_vision_tower": None}


class _FleurMetric(CaptionMetric):
    """FLEUR's question to a judge, without (``fleur``) or with (``ref_fleur``) the references in the prompt."""

    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    unscored_items: ClassVar[bool] = True
    with_references: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = _options()

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        from capeval.judges.judge import DTYPE_NAMES
        from capeval.sentence_cosine.metric import positive_int_option

        c = self.config
        c["fleur_batch_size"] = positive_int_option(c["fleur_batch_size"], "fleur_batch_size")
        c["fleur_max_new_tokens"] = positive_int_option(c["fleur_max_new_tokens"], "fleur_max_new_tokens")
        model = c["fleur_model"]
        if not isinstance(model, (str, os.PathLike)) or not str(model).strip():
            raise ValueError(f"fleur_model must be a Hub model id or a folder, got {model!r:.60}.")
        if c["fleur_dtype"] not in DTYPE_NAMES:
            raise ValueError(f"fleur_dtype must be one of {list(DTYPE_NAMES)}, got {c['fleur_dtype']!r:.60}.")
        for flag in ("fleur_explain", "fleur_force_cpu"):
            if not isinstance(c[flag], bool):
                raise ValueError(f"{flag} must be True or False, got {c[flag]!r:.60}.")

    @classmethod
    def check_available(cls) -> None:
        from capeval.models._deps import require

        require("torch", "transformers", "PIL", what=f"the {cls.name} metric")

    def _judge(self):
        from capeval.judges.judge import load_judge

        c = self.config
        return load_judge(c["fleur_model"], device=c["fleur_device"], dtype=c["fleur_dtype"],
                          device_map=c["fleur_device_map"], force_cpu=c["fleur_force_cpu"],
                          vision_tower=c["fleur_vision_tower"])

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """The judge's fingerprint (the judge is loaded once per process to compute it)."""
        return cls({**cls.options, **options})._judge().fingerprint

    def describe(self, judge) -> str:
        """What judged, in the words results use."""
        if judge.paper:
            return "FLEUR (LLaVA-1.5-13B)" if not self.with_references else "RefFLEUR (LLaVA-1.5-13B)"
        prompt = "RefFLEUR" if self.with_references else "FLEUR"
        return f"{prompt} prompt, judge {judge.label}"

    def signature_value(self, judge) -> str:
        c = self.config
        prompt = "ref-fleur" if self.with_references else "fleur"
        return (f"judge={judge.label}#{judge.fingerprint[:8]},paper={'yes' if judge.paper else 'no'},prompt={prompt},"
                f"dtype={judge.dtype_name},batch={c['fleur_batch_size']},max_new={c['fleur_max_new_tokens']},"
                f"img={IMAGE_PREP[judge.kind]}")

    def prepare(self, batch: CaptionBatch) -> list[dict]:
        """Each item's reading: ``{"score", "value", "answer", "failure", "explanation"}`` (independent items:
        ``--processes N`` splits them)."""
        from capeval.judges.answers import answer_text_for_parsing, read_number, smoothed_score
        from capeval.judges.judge import batch_inputs, decode, generate, prompt_for
        from capeval.judges.prompts import IMAGE_PLACEHOLDER, fleur_instruction
        from capeval.models.images import read_item

        if batch.images is None:
            raise ValueError(f"{self.name} needs images= (one per prediction).")
        judge = self._judge()
        c = self.config
        references = batch.raw_references if self.with_references else [None] * len(batch)
        instructions = [fleur_instruction(p, r) for p, r in zip(batch.raw_predictions, references)]
        if judge.kind == "llava-1.5":
            bad = [i for i, text in enumerate(instructions) if IMAGE_PLACEHOLDER in text]
            if bad:
                raise ValueError(f"{self.name}: item {bad[0]}'s caption or references contain '{IMAGE_PLACEHOLDER}', "
                                 "LLaVA's image placeholder; remove it (the judge would read a second image there).")
        decoded: dict[str, Any] = {}
        keys = []
        for i, item in enumerate(batch.images):
            read = read_item(item, i)
            keys.append(read.key)
            if read.key not in decoded:
                decoded[read.key] = read.decode()
        size = c["fleur_batch_size"]
        progress = _bar(batch, len(batch), f"{self.name} judging")
        prompts = [prompt_for(judge, text) for text in instructions]
        if judge.kind == "llava-1.5" and size > 1:  # each image's shared prompt prefix computed once
            from capeval.judges.judge import generate_shared, llava_pixels

            generations = generate_shared(judge, prompts, keys, lambda key: llava_pixels(judge, decoded[key]), size,
                                          c["fleur_max_new_tokens"], progress)
        else:  # one prompt per generate (the reference's procedure) or a chat judge's batches
            generations = []
            for start in range(0, len(batch), size):
                part = range(start, min(start + size, len(batch)))
                inputs = batch_inputs(judge, [prompts[i] for i in part], [decoded[keys[i]] for i in part])
                generations += generate(judge, inputs, c["fleur_max_new_tokens"])
                if progress is not None:
                    progress.update(len(part))
        entries: list[dict] = []
        for generated in generations:
            answer = decode(judge, generated.ids, special=True)
            value = read_number(answer_text_for_parsing(answer))
            reading = smoothed_score(value, generated.ids, judge.digit_tokens, generated.digit_probs)
            entries.append({"score": reading.score, "value": reading.value, "failure": reading.failure,
                            "answer": decode(judge, generated.ids, special=False).strip(), "explanation": None})
        if progress is not None:
            progress.close()
        if c["fleur_explain"]:
            self._explain(judge, instructions, [decoded[k] for k in keys], entries)
        return entries

    def _explain(self, judge, instructions: list[str], images: list, entries: list[dict]) -> None:
        """FLEUR's follow-up (``fleur_exp.py``): the conversation continues with the smoothed score as the judge's
        answer, ``str(score) + '</s>'`` (LLaVA's separator then follows it again, as ``get_prompt`` writes every
        finished turn), and the question :data:`EXPLAIN_QUESTION`."""
        from capeval.judges.judge import batch_inputs, decode, generate
        from capeval.judges.prompts import LLAVA_V1_ROLES, LLAVA_V1_SEPARATORS, llava_v1_prompt

        todo = [i for i, e in enumerate(entries) if e["score"] is not None]
        size = self.config["fleur_batch_size"]
        for start in range(0, len(todo), size):
            part = todo[start:start + size]
            prompts = []
            for i in part:
                said = str(entries[i]["score"])  # fleur_exp.py: str(score.item())
                if judge.kind == "llava-1.5":
                    user, assistant = LLAVA_V1_ROLES
                    first = llava_v1_prompt(instructions[i])
                    prompts.append(f"{first} {said}</s>{LLAVA_V1_SEPARATORS[1]}{user}: {EXPLAIN_QUESTION}"
                                   f"{LLAVA_V1_SEPARATORS[0]}{assistant}:")
                else:
                    from capeval.judges.prompts import chat_messages

                    prompts.append(chat_messages(instructions[i]) + [
                        {"role": "assistant", "content": [{"type": "text", "text": said}]},
                        {"role": "user", "content": [{"type": "text", "text": EXPLAIN_QUESTION}]}])
            generated = generate(judge, batch_inputs(judge, prompts, [images[i] for i in part]),
                                 self.config["fleur_max_new_tokens"])
            for i, g in zip(part, generated):
                entries[i]["explanation"] = decode(judge, g.ids, special=False).strip()

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        judge = self._judge()
        prepared = self._prepared
        if prepared is not None and len(prepared) != len(batch):
            raise ValueError(f"{self.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
        entries = prepared if prepared is not None else self.prepare(batch)
        per = [e["score"] if e["score"] is not None else math.nan for e in entries]
        failures = [{"index": i, "answer": e["answer"], "reason": e["failure"]}
                    for i, e in enumerate(entries) if e["failure"] is not None]
        scored = [s for s in per if not math.isnan(s)]
        if failures:
            shown = ", ".join(f"{f['index']} ({f['reason']})" for f in failures[:WARN_FIRST])
            more = f" and {len(failures) - WARN_FIRST} more" if len(failures) > WARN_FIRST else ""
            warn_at_caller(f"{self.name}: the judge's answer gave no score for {len(failures)} of {len(entries)} "
                          f"item(s): {shown}{more}. Their per-caption scores are NaN and the corpus score is the mean "
                          f"of the other {len(scored)}; judge_failures lists their answers.",
                          JudgeFailureWarning)
        extra: dict[str, Any] = {"judge_failures": {self.name: failures}, "judges": {self.name: self.describe(judge)}}
        if self.config["fleur_explain"]:
            extra["fleur_explanations"] = {self.name: [e["explanation"] for e in entries]}
        corpus = sum(scored) / len(scored) if scored else math.nan
        return MetricOutput(corpus={self.name: corpus}, per_caption={self.name: per},
                            signature=self.signature_value(judge), extra=extra)


def _bar(batch: CaptionBatch, total: int, desc: str):
    if not getattr(batch, "progress", False) or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="caption", leave=False)


class Fleur(_FleurMetric):
    """FLEUR (Lee et al., ACL 2024): LLaVA-1.5-13B rates the caption against the image, 0.0 to 1.0, the answer's
    decimals smoothed over the digit tokens' probabilities; reference-free."""

    name = "fleur"


class RefFleur(_FleurMetric):
    """RefFLEUR: FLEUR's question with the references in the prompt."""

    name = "ref_fleur"
    with_references = True
