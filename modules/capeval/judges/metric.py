"""The ``fleur``, ``ref_fleur`` and ``expert`` metrics: a vision-language model asked FLEUR's (or EXPERT's) question
about each (image, caption), its answer read and smoothed as Yebin46/FLEUR does (:mod:`capeval.judges.answers`).

EXPERT (Kim et al. 2025, hjkim811/EXPERT ``expert.py``) is the same procedure with its own instruction
(:data:`~capeval.judges.prompts.EXPERT_INSTRUCTION`), LLaVA-1.5-13B with its LoRA adapter merged
(:mod:`capeval.judges.lora`), and two differences in reading the answer: the whole answer decoded without special
tokens is read (no last 4 characters dropped), and the released script asks in LLaVA's ``llava_v0`` template
(``expert.py`` infers the template from the model's name, ``EXPERT-llava-13b-lora``, which holds no ``v1``; its
``--conv-mode llava_v1`` default only prints a warning): ``expert_conversation="llava_v0"`` (default) is the
released behaviour, ``"llava_v1"`` the template the adapter was most likely trained in. Options ``expert_*``
mirror ``fleur_*``; ``expert_explain=True`` asks ``expert.py``'s explanation turn and keeps
``{"fluency", "relevance", "descriptiveness", "text"}`` per item (the three ``None`` when the answer does not follow
the output format, as its ``parse_explanation`` returns ``None``) in ``result["expert_explanations"]["expert"]``.

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
import weakref
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.judges.answers import JudgeContextWarning, JudgeFailureWarning
from capeval.metric import CaptionMetric, MetricOutput
from capeval.validation import warn_at_caller

#: Items named in the failure and context warnings.
WARN_FIRST = 10
#: Per batch: ``{image key: decoded RGB image}``, so that the judge metrics of one call decode each image once.
_DECODED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: FLEUR's follow-up question (``fleur_exp.py``'s second input).
EXPLAIN_QUESTION = "Why? Tell me the reason."
#: The signature's name of the image preparation: LLaVA's square padding then CLIP's processor (``pad-square``), or
#: the judge's own processor (``processor``).
IMAGE_PREP = {"llava-1.5": "pad-square", "chat": "processor"}


def _options(family: str = "fleur") -> dict[str, Any]:
    from capeval.judges.judge import DEFAULT_JUDGE, MAX_NEW_TOKENS

    options = {"model": DEFAULT_JUDGE, "device": None, "dtype": "auto", "batch_size": 8,
               "max_new_tokens": MAX_NEW_TOKENS, "device_map": None, "force_cpu": False, "vision_tower": None}
    options["explain"] = False
    if family == "expert":
        from capeval.judges.lora import EXPERT_ADAPTER

        options.update(adapter=EXPERT_ADAPTER, conversation="llava_v0")
    return {f"{family}_{k}": v for k, v in options.items()}


class _JudgeMetric(CaptionMetric):
    """A question to a judge about each (image, caption); subclasses say which (the ``fleur`` family's options
    ``fleur_*``, the ``expert`` family's ``expert_*``)."""

    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    unscored_items: ClassVar[bool] = True
    with_references: ClassVar[bool] = False
    family: ClassVar[str] = "fleur"
    options: ClassVar[dict[str, Any]] = _options()

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        from capeval.judges.judge import DTYPE_NAMES
        from capeval.judges.prompts import CONVERSATIONS
        from capeval.sentence_cosine.metric import positive_int_option

        c, f = self.config, self.family
        c[f"{f}_batch_size"] = positive_int_option(c[f"{f}_batch_size"], f"{f}_batch_size")
        c[f"{f}_max_new_tokens"] = positive_int_option(c[f"{f}_max_new_tokens"], f"{f}_max_new_tokens")
        for name in ("model", "adapter"):
            value = c.get(f"{f}_{name}", "-")
            if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
                raise ValueError(f"{f}_{name} must be a Hub model id or a folder, got {value!r:.60}.")
        if c[f"{f}_dtype"] not in DTYPE_NAMES:
            raise ValueError(f"{f}_dtype must be one of {list(DTYPE_NAMES)}, got {c[f'{f}_dtype']!r:.60}.")
        if c.get(f"{f}_conversation", "llava_v1") not in CONVERSATIONS:
            raise ValueError(f"{f}_conversation must be one of {list(CONVERSATIONS)}, got "
                             f"{c[f'{f}_conversation']!r:.60}.")
        for flag in (f"{f}_explain", f"{f}_force_cpu"):
            if flag in c and not isinstance(c[flag], bool):
                raise ValueError(f"{flag} must be True or False, got {c[flag]!r:.60}.")

    def option(self, name: str) -> Any:
        """The value of this family's option ``name`` (``batch_size`` → ``fleur_batch_size`` / ``expert_...``)."""
        return self.config.get(f"{self.family}_{name}")

    def instruction(self, prediction: str, references: list[str]) -> str:
        from capeval.judges.prompts import fleur_instruction

        return fleur_instruction(prediction, references if self.with_references else None)

    def conversation(self) -> str:
        return self.option("conversation") or "llava_v1"

    def stop_strings(self, judge) -> tuple[str, ...]:
        """LLaVA's keyword stop for the ``llava_v0`` template (``###``, as ids: see
        :func:`capeval.judges.judge.generate`); ``</s>`` is the end-of-sequence token."""
        from capeval.judges.prompts import LLAVA_V0_SEPARATOR

        return (LLAVA_V0_SEPARATOR,) if judge.kind == "llava-1.5" and self.conversation() == "llava_v0" else ()

    def answer_text(self, judge, ids: list[int]) -> str:
        """The text the number is read from: FLEUR's (special tokens kept, the last 4 characters dropped)."""
        from capeval.judges.answers import answer_text_for_parsing
        from capeval.judges.judge import decode

        return answer_text_for_parsing(decode(judge, ids, special=True))

    @classmethod
    def check_available(cls) -> None:
        from capeval.models._deps import require

        require("torch", "transformers", "PIL", what=f"the {cls.name} metric")

    def _judge(self):
        from capeval.judges.judge import load_judge

        o = self.option
        return load_judge(o("model"), device=o("device"), dtype=o("dtype"), device_map=o("device_map"),
                          force_cpu=o("force_cpu"), vision_tower=o("vision_tower"), adapter=o("adapter"),
                          option=f"{self.family}_model")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """The judge's fingerprint (the judge is loaded once per process to compute it)."""
        return cls(**options)._judge().fingerprint

    def describe(self, judge) -> str:
        """What judged, in the words results use."""
        if self.is_paper(judge):
            return "FLEUR (LLaVA-1.5-13B)" if not self.with_references else "RefFLEUR (LLaVA-1.5-13B)"
        prompt = "RefFLEUR" if self.with_references else "FLEUR"
        return f"{prompt} prompt, judge {judge.label}"

    def is_paper(self, judge) -> bool:
        return judge.paper

    def signature_value(self, judge) -> str:
        o = self.option
        prompt = self.name.replace("_", "-")
        template = f",conv={self.conversation()}" if judge.kind == "llava-1.5" else ""
        return (f"judge={judge.label}#{judge.fingerprint[:8]},paper={'yes' if self.is_paper(judge) else 'no'},"
                f"prompt={prompt}{template},dtype={judge.dtype_name},batch={o('batch_size')},"
                f"max_new={o('max_new_tokens')},img={IMAGE_PREP[judge.kind]}")

    def prepare(self, batch: CaptionBatch) -> list[dict]:
        """Each item's reading: ``{"score", "value", "answer", "failure", "explanation"}`` (independent items:
        ``--processes N`` splits them)."""
        from capeval.judges.answers import read_number, smoothed_score
        from capeval.judges.judge import batch_inputs, decode, generate, prompt_for
        from capeval.judges.prompts import IMAGE_PLACEHOLDER
        from capeval.models.images import read_item

        if batch.images is None:
            raise ValueError(f"{self.name} needs images= (one per prediction).")
        judge = self._judge()
        instructions = [self.instruction(p, r) for p, r in zip(batch.raw_predictions, batch.raw_references)]
        if judge.kind == "llava-1.5":
            bad = [i for i, text in enumerate(instructions) if IMAGE_PLACEHOLDER in text]
            if bad:
                raise ValueError(f"{self.name}: item {bad[0]}'s caption or references contain '{IMAGE_PLACEHOLDER}', "
                                 "LLaVA's image placeholder; remove it (the judge would read a second image there).")
        decoded: dict[str, Any] = _DECODED.setdefault(batch, {})
        keys = []
        for i, item in enumerate(batch.images):
            read = read_item(item, i)
            keys.append(read.key)
            if read.key not in decoded:
                decoded[read.key] = read.decode()
        size, longest, stops = self.option("batch_size"), self.option("max_new_tokens"), self.stop_strings(judge)
        progress = _bar(batch, len(batch), f"{self.name} judging")
        prompts = [prompt_for(judge, text, self.conversation()) for text in instructions]
        self._warn_context(judge, prompts, longest)
        if judge.kind == "llava-1.5" and size > 1:  # each image's shared prompt prefix computed once
            from capeval.judges.judge import generate_shared, llava_pixels

            generations = generate_shared(judge, prompts, keys, lambda key: llava_pixels(judge, decoded[key]), size,
                                          longest, progress, stops)
        else:  # one prompt per generate (the reference's procedure) or a chat judge's batches
            generations = []
            for start in range(0, len(batch), size):
                part = range(start, min(start + size, len(batch)))
                inputs = batch_inputs(judge, [prompts[i] for i in part], [decoded[keys[i]] for i in part])
                generations += generate(judge, inputs, longest, stops)
                if progress is not None:
                    progress.update(len(part))
        entries: list[dict] = []
        for generated in generations:
            value = read_number(self.answer_text(judge, generated.ids))
            reading = smoothed_score(value, generated.ids, judge.digit_tokens, generated.digit_probs)
            entries.append({"score": reading.score, "value": reading.value, "failure": reading.failure,
                            "answer": decode(judge, generated.ids, special=False).strip(), "explanation": None})
        if progress is not None:
            progress.close()
        if self.option("explain"):
            self._explain(judge, instructions, [decoded[k] for k in keys], entries, batch.raw_predictions)
        return entries

    def _warn_context(self, judge, prompts: list, longest: int) -> None:
        """One :class:`JudgeContextWarning` naming the prompts that, with the longest answer, exceed the judge's
        context (its language model's ``max_position_embeddings``; LLaVA-1.5's is 4,096 tokens). The reference feeds
        them whole, and so does capeval."""
        from capeval.judges.judge import llava_input_ids

        text = getattr(judge.model.config, "text_config", judge.model.config)
        context = getattr(text, "max_position_embeddings", None)
        if not context or judge.kind != "llava-1.5":
            return
        over = [i for i, p in enumerate(prompts) if len(llava_input_ids(judge, p)) + longest > context]
        if over:
            shown = ", ".join(str(i) for i in over[:WARN_FIRST]) + (f" and {len(over) - WARN_FIRST} more"
                                                                     if len(over) > WARN_FIRST else "")
            warn_at_caller(f"{self.name}: {len(over)} prompt(s) with up to {longest} answer tokens exceed the judge's "
                           f"{context}-token context (items {shown}); they are scored whole, as the reference scores "
                           "them, beyond the positions the model was trained on.", JudgeContextWarning)

    def follow_up(self, prediction: str) -> str:
        """The second turn's question (FLEUR's: :data:`EXPLAIN_QUESTION`, ``fleur_exp.py``'s second input)."""
        return EXPLAIN_QUESTION

    def explanation(self, text: str) -> Any:
        """What the result keeps of the second turn's answer (FLEUR: the text)."""
        return text

    def _explain(self, judge, instructions: list[str], images: list, entries: list[dict],
                 predictions: list[str]) -> None:
        """The follow-up turn (``fleur_exp.py``; ``expert.py --explanation True``): the conversation continues with
        the smoothed score as the judge's answer, ``str(score) + '</s>'`` (the template's separator then follows it
        again, as ``get_prompt`` writes every finished turn), and :meth:`follow_up`'s question."""
        from capeval.judges.judge import batch_inputs, decode, generate
        from capeval.judges.prompts import chat_messages, llava_follow_up

        todo = [i for i, e in enumerate(entries) if e["score"] is not None]
        size = self.option("batch_size")
        for start in range(0, len(todo), size):
            part = todo[start:start + size]
            prompts = []
            for i in part:
                said = str(entries[i]["score"])  # fleur_exp.py / expert.py: str(score.item())
                question = self.follow_up(predictions[i])
                if judge.kind == "llava-1.5":
                    prompts.append(llava_follow_up(instructions[i], said, question, self.conversation()))
                else:
                    prompts.append(chat_messages(instructions[i]) + [
                        {"role": "assistant", "content": [{"type": "text", "text": said}]},
                        {"role": "user", "content": [{"type": "text", "text": question}]}])
            generated = generate(judge, batch_inputs(judge, prompts, [images[i] for i in part]),
                                 self.option("max_new_tokens"), self.stop_strings(judge))
            for i, g in zip(part, generated):
                entries[i]["explanation"] = self.explanation(decode(judge, g.ids, special=False).strip())

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
        if self.option("explain"):
            extra[f"{self.family}_explanations"] = {self.name: [e["explanation"] for e in entries]}
        corpus = sum(scored) / len(scored) if scored else math.nan
        return MetricOutput(corpus={self.name: corpus}, per_caption={self.name: per},
                            signature=self.signature_value(judge), extra=extra)


def _bar(batch: CaptionBatch, total: int, desc: str):
    if not getattr(batch, "progress", False) or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="caption", leave=False)


class Fleur(_JudgeMetric):
    """FLEUR (Lee et al., ACL 2024): LLaVA-1.5-13B rates the caption against the image, 0.0 to 1.0, the answer's
    decimals smoothed over the digit tokens' probabilities; reference-free."""

    name = "fleur"


class RefFleur(_JudgeMetric):
    """RefFLEUR: FLEUR's question with the references in the prompt."""

    name = "ref_fleur"
    with_references = True


class Expert(_JudgeMetric):
    """EXPERT (Kim et al. 2025): LLaVA-1.5-13B with the authors' LoRA adapter asked its own scoring question; the
    answer read and smoothed as FLEUR's (see the module docstring for the two reading differences)."""

    name = "expert"
    family = "expert"
    options: ClassVar[dict[str, Any]] = _options("expert")

    def instruction(self, prediction: str, references: list[str]) -> str:
        from capeval.judges.prompts import expert_instruction

        return expert_instruction(prediction)

    def answer_text(self, judge, ids: list[int]) -> str:
        """``expert.py``: ``batch_decode(output_ids, skip_special_tokens=True)[0].strip()``, nothing dropped."""
        from capeval.judges.judge import decode

        return decode(judge, ids, special=False).strip()

    def is_paper(self, judge) -> bool:
        from capeval.judges.lora import EXPERT_ADAPTER

        return judge.paper and self.option("adapter") == EXPERT_ADAPTER and self.conversation() == "llava_v0"

    def follow_up(self, prediction: str) -> str:
        from capeval.judges.prompts import EXPERT_EXPLANATION, normalize_candidate

        return EXPERT_EXPLANATION.format(candidate=normalize_candidate(prediction))

    def explanation(self, text: str) -> dict:
        """``expert.py``'s ``parse_explanation``: the three criteria's texts (``None`` each when the answer does not
        follow the output format), with the whole answer under ``"text"``."""
        import re

        match = re.search(r"Fluency:\s*(.*?)\nRelevance:\s*(.*?)\nDescriptiveness:\s*(.*)", text, re.DOTALL)
        parts = [g.strip() for g in match.groups()] if match else [None, None, None]
        return {"fluency": parts[0], "relevance": parts[1], "descriptiveness": parts[2], "text": text}

    def describe(self, judge) -> str:
        if self.is_paper(judge):
            return "EXPERT (LLaVA-1.5-13B + hjkim811/EXPERT-llava-13b-lora)"
        return f"EXPERT prompt, judge {judge.label} ({self.conversation()})" if judge.kind == "llava-1.5" else \
            f"EXPERT prompt, judge {judge.label}"
