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
import weakref
from typing import Any, ClassVar

from capeval.advice import Setting, words
from capeval.batch import CaptionBatch
from capeval.judges.answers import JudgeContextWarning, JudgeFailureWarning
from capeval.judges.judge import DEFAULT_JUDGE
from capeval.judges.lora import EXPERT_ADAPTER
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.validation import OptionError, warn_at_caller

#: Items named in the failure and context warnings.
WARN_FIRST = 10
#: Per batch: ``{image key: decoded RGB image}``, so that the judge metrics of one call decode each image once.
_DECODED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: FLEUR's follow-up question (``fleur_exp.py``'s second input).
EXPLAIN_QUESTION = "Why? Tell me the reason."
#: The signature's name of the image preparation: LLaVA's square padding then CLIP's processor (``pad-square``), or
#: the judge's own processor (``processor``).
IMAGE_PREP = {"llava-1.5": "pad-square", "chat": "processor"}


#: Each family's options, built once (:func:`_options`): the metrics of a family share the same objects.
_FAMILY_OPTIONS: dict[str, dict[str, Option]] = {}


def _options(family: str = "fleur") -> dict[str, Option]:
    """The options of the judge family ``family`` (``fleur``: fleur and ref_fleur; ``expert``), declared once; the
    options the two families share are worded alike."""
    if family in _FAMILY_OPTIONS:
        return _FAMILY_OPTIONS[family]
    from capeval.judges.judge import CPU_PARAMETER_LIMIT, DEFAULT_JUDGE, DTYPE_NAMES, MAX_NEW_TOKENS

    options = {
        "model": Option(
            default=DEFAULT_JUDGE, kind="model", metavar="ID|DIR",
            help="the judge: a Hub id or folder of a transformers vision-language model (read from the Hugging Face "
                 "cache, HF_HUB_OFFLINE honoured; any image-text-to-text model with a chat template works), or an "
                 "original-layout "
                 f"LLaVA-1.5 folder (default: {DEFAULT_JUDGE}, the paper's LLaVA-1.5-13B); enters the signature with "
                 "a hash of its files"),
        "device": Option(
            default=None, kind="device",
            help=f"device: cpu, cuda, cuda:1 ... (default: CUDA when available); ignored with {family}_device_map"),
        "dtype": Option(
            default="auto", kind="str", choices=DTYPE_NAMES,
            help="arithmetic: auto (default: float16 on a GPU as the reference, float32 on the CPU), float32, float16 "
                 "or bfloat16; enters the signature"),
        "batch_size": Option(
            default=8, kind="int", minimum=1,
            help="prompts generated together (default 8; 1 is the reference's one prompt per generate; a LLaVA-1.5 "
                 "judge computes each image's shared prompt prefix once and batches equal-length prompts without "
                 "padding, other judges left-pad; either can change the last bits of the probabilities against one "
                 "prompt at a time); enters the signature"),
        "max_new_tokens": Option(
            default=MAX_NEW_TOKENS, kind="int", minimum=1,
            help=f"the longest answer, in tokens (default {MAX_NEW_TOKENS}, the reference's); enters the signature"),
        "device_map": Option(
            default=None, kind="str", metavar="MAP",
            help=f"transformers' device_map, e.g. auto to spread a judge over several GPUs (default: none, the whole "
                 f"judge on {family}_device)"),
        "force_cpu": Option(
            default=False, kind="bool",
            help=f"run a judge over {CPU_PARAMETER_LIMIT / 1e9:g} billion parameters on the CPU anyway (default: off, "
                 "such a judge is refused there: tens of GB, minutes per caption; the 13B judge needs about 52 GB of "
                 "memory there)"),
        "vision_tower": Option(
            default=None, kind="model", metavar="ID|DIR",
            help="for a judge in LLaVA's original layout: its CLIP vision model, a Hub id or folder (default: the "
                 "folder's mm_vision_tower)"),
    }
    if family == "expert":
        from capeval.judges.lora import EXPERT_ADAPTER
        from capeval.judges.prompts import CONVERSATIONS

        options["explain"] = Option(
            default=False, kind="bool",
            help="also ask EXPERT's explanation turn and keep its fluency, relevance and descriptiveness texts in the "
                 "result's expert_explanations (default: off; a second generation per scored caption)")
        options["adapter"] = Option(
            default=EXPERT_ADAPTER, kind="model", metavar="ID|DIR",
            help=f"the LLaVA LoRA adapter merged into the judge, a Hub id or folder (default: {EXPERT_ADAPTER})")
        options["conversation"] = Option(
            default="llava_v0", kind="str", choices=CONVERSATIONS,
            help="LLaVA's template: llava_v0 (default, what EXPERT's released expert.py runs) or llava_v1 (what its "
                 "--conv-mode default names); enters the signature")
    else:
        options["explain"] = Option(
            default=False, kind="bool",
            help="also ask FLEUR's follow-up question (\"Why? Tell me the reason.\") after the score and keep the "
                 "answers in the "
                 "result's fleur_explanations (default: off; a second generation per scored caption)")
    _FAMILY_OPTIONS[family] = {f"{family}_{k}": v for k, v in options.items()}
    return _FAMILY_OPTIONS[family]


class _JudgeMetric(CaptionMetric):
    """A question to a judge about each (image, caption); subclasses say which (the ``fleur`` family's options
    ``fleur_*``, the ``expert`` family's ``expert_*``)."""

    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    unscored_items: ClassVar[bool] = True
    external_weights: ClassVar[bool] = True
    judge_models: ClassVar[tuple[str, ...]] = (DEFAULT_JUDGE,)
    with_references: ClassVar[bool] = False
    family: ClassVar[str] = "fleur"
    options: ClassVar[dict[str, Any]] = _options()

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
        from capeval.dependencies import require

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
            raise OptionError(words("images", f"{self.name} needs ", Setting(shown=""), " (one per prediction)."))
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

    reads_references = False

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
    judge_models = (DEFAULT_JUDGE, EXPERT_ADAPTER)
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
