"""Pairwise caption judging with a vision-language model, CapArena's protocol (Cheng et al. 2025, njucckevin/CapArena
``vlm_as_a_judge.py``), each pair judged in both orders.

:func:`judge_pairs` asks the judge, for each (image, caption a, caption b), CapArena's question
(:mod:`capeval.judges.arena_prompts`: its system prompt, with the reference-caption paragraph when references are
given, and its user message, the image then ``Caption 1:\\n...\\nCaption 2:\\n...``) **twice**: once with a shown as
caption 1 (order ``ab``), once with b shown as caption 1 (order ``ba``). Each answer's ``Judgment:`` line gives
``"1"``, ``"2"`` or ``"tie"`` in its own order's numbering (or no verdict: a failure). The pair's verdict, to cancel
the judge's position bias:

* ``"a"`` when both orders favour a (``ab`` says 1 and ``ba`` says 2);
* ``"b"`` when both orders favour b (``ab`` says 2 and ``ba`` says 1);
* ``"tie"`` otherwise: both answers tie, one ties, or the two orders disagree (each favours the caption shown
  first, or each the one shown second);
* ``None`` (a failed pair) when either answer gives no verdict; failed pairs are counted, listed in
  :attr:`ArenaResult.failures` with their answers, and named in one :class:`JudgeFailureWarning`.

CapArena's released script asks GPT-4o once per pair in the annotation file's order, sampling (temperature 0.5,
``top_p`` 0.9, up to 1,500 tokens, up to 5 tries until the answer has ``Reason:`` and ``Judgment:``); capeval asks a
local transformers judge with greedy decoding (deterministic: the same pairs give the same answers), once per
order, without retries. How the judge reads the prompts: a LLaVA-1.5 judge reads LLaVA's ``llava_v1`` conversation
with CapArena's system prompt in place of LLaVA's system text (``{system} USER: <image>\\n{message} ASSISTANT:``);
any other judge reads the two turns (system, then user: image and text) through its own chat template.

Batches: ``batch_size`` prompts are generated together (a LLaVA-1.5 judge computes each image's shared prompt
prefix once and batches prompts of equal length without padding; other judges left-pad); the answers equal those
of one prompt per ``generate`` up to the last bits of the logits, which greedy decoding only turns into a different
token where two candidates tie to those bits.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from capeval.judges.answers import JudgeFailureWarning
from capeval.judges.arena_prompts import compare_prompt, read_judgment, system_prompt
from capeval.judges.judge import DEFAULT_JUDGE, MAX_NEW_TOKENS
from capeval.validation import warn_at_caller

#: The two orders each pair is asked in: a shown as caption 1, then b shown as caption 1.
ORDERS = ("ab", "ba")
#: Pairs named in the failure warning.
WARN_FIRST = 10
#: The pair verdicts.
PAIR_VERDICTS = ("a", "b", "tie")
#: Prompts generated together by default.
BATCH_SIZE = 8


def combine_orders(ab: str | None, ba: str | None) -> str | None:
    """The pair's verdict from its two answers' verdicts (``ab``: a shown first; ``ba``: b shown first; each
    ``"1"``, ``"2"``, ``"tie"`` or ``None``): ``"a"`` / ``"b"`` when both orders favour that caption, ``None`` when
    either is ``None``, ``"tie"`` otherwise (see the module docstring)."""
    if ab is None or ba is None:
        return None
    if ab == "1" and ba == "2":
        return "a"
    if ab == "2" and ba == "1":
        return "b"
    return "tie"


@dataclass
class ArenaResult:
    """What :func:`judge_pairs` returns.

    ``verdicts``: per pair ``"a"``, ``"b"``, ``"tie"`` or ``None`` (failed); ``order_verdicts``: per pair the two
    answers' verdicts ``(ab, ba)``, each ``"1"`` / ``"2"`` / ``"tie"`` / ``None`` in its own order's numbering;
    ``answers``: per pair the two raw answers ``(ab, ba)`` (decoded text); ``judgments``: the text of each answer's
    ``Judgment:`` line, ``None`` when it has none; ``failures``: ``{"index", "order", "answer", "judgment"}`` per
    answer without a verdict; ``sources``: per pair ``(system a, system b)`` when known; ``judge``: what judged.
    """

    verdicts: list[str | None]
    order_verdicts: list[tuple[str | None, str | None]]
    answers: list[tuple[str, str]]
    judgments: list[tuple[str | None, str | None]]
    failures: list[dict] = field(default_factory=list)
    sources: list[tuple[str, str]] | None = None
    judge: str = ""
    with_references: bool = False

    def __len__(self) -> int:
        return len(self.verdicts)

    @property
    def failed_pairs(self) -> list[int]:
        """Indices of the pairs without a verdict."""
        return [i for i, v in enumerate(self.verdicts) if v is None]

    def counts(self) -> dict[str, int]:
        """``{"a", "b", "tie", "failed"}``: how many pairs got each verdict (summing to the number of pairs)."""
        out = {v: 0 for v in PAIR_VERDICTS}
        out["failed"] = 0
        for v in self.verdicts:
            out["failed" if v is None else v] += 1
        return out

    def win_rates(self) -> dict[str, float]:
        """``{"a", "b", "tie", "failed"}``: the share of all pairs with each verdict, each in [0, 1], summing to 1
        (``NaN`` each for no pairs)."""
        n = len(self.verdicts)
        return {k: (c / n if n else float("nan")) for k, c in self.counts().items()}

    def battles(self) -> list[tuple[str, str, str]]:
        """The judged pairs as battles ``(system a, system b, winner)`` (``winner`` a system's name or ``"tie"``;
        failed pairs left out), for :func:`capeval.judges.elo.rank_systems`. Needs ``sources``."""
        if self.sources is None:
            raise ValueError("the pairs have no system names (sources); battles need them.")
        out = []
        for (sa, sb), verdict in zip(self.sources, self.verdicts):
            if verdict is not None:
                out.append((sa, sb, sa if verdict == "a" else sb if verdict == "b" else "tie"))
        return out

    def ranking(self, *, rounds: int | None = None, seed: int | None = None) -> list:
        """The systems ranked by median bootstrap Elo with 95 % intervals and win rates
        (:func:`capeval.judges.elo.rank_systems`; its defaults: 1,000 rounds, seed 42)."""
        from capeval.judges.elo import BOOTSTRAP_ROUNDS, SEED, rank_systems

        return rank_systems(self.battles(), rounds=BOOTSTRAP_ROUNDS if rounds is None else rounds,
                            seed=SEED if seed is None else seed)

    def pairs_json(self) -> list[dict]:
        """Per pair: ``{"index", "verdict", "ab", "ba"}`` (``ab`` / ``ba``: ``{"verdict", "judgment", "answer"}``),
        with ``source_a`` / ``source_b`` when known."""
        out = []
        for i, verdict in enumerate(self.verdicts):
            row: dict[str, Any] = {"index": i, "verdict": verdict}
            if self.sources is not None:
                row["source_a"], row["source_b"] = self.sources[i]
            for k, order in enumerate(ORDERS):
                row[order] = {"verdict": self.order_verdicts[i][k], "judgment": self.judgments[i][k],
                              "answer": self.answers[i][k]}
            out.append(row)
        return out

    def to_json(self, *, ranking: bool = True) -> dict:
        """``{"judge", "with_references", "pairs", "counts", "win_rates", "failures"}`` and, when ``ranking`` and
        the pairs have sources, ``"ranking"`` (:meth:`ranking`'s rows)."""
        out: dict[str, Any] = {"judge": self.judge, "with_references": self.with_references,
                               "pairs": self.pairs_json(), "counts": self.counts(), "win_rates": self.win_rates(),
                               "failures": self.failures}
        if ranking and self.sources is not None:
            out["ranking"] = [r.to_json() for r in self.ranking()]
        return out


def arena_prompt(judge, system: str, message: str):
    """What :func:`capeval.judges.judge.batch_inputs` needs for one question: LLaVA's ``llava_v1`` prompt with
    ``system`` as its system text, or a system turn and a user turn (image, text) for a chat judge."""
    from capeval.judges.prompts import IMAGE_PLACEHOLDER, LLAVA_V1_ROLES, LLAVA_V1_SEPARATORS

    if judge.kind == "llava-1.5":
        user, assistant = LLAVA_V1_ROLES
        sep = LLAVA_V1_SEPARATORS[0]
        return f"{system}{sep}{user}: {IMAGE_PLACEHOLDER}\n{message}{sep}{assistant}:"
    return [{"role": "system", "content": [{"type": "text", "text": system}]},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": message}]}]


def _texts(values, name: str, n: int | None) -> list[str]:
    values = list(values)
    if n is not None and len(values) != n:
        raise ValueError(f"{name}: {len(values)} values for {n} pairs.")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise TypeError(f"{name}[{i}]: expected a caption string, got {type(v).__name__}.")
    return values


def judge_pairs(images: Sequence[Any], captions_a: Sequence[str], captions_b: Sequence[str],
                references: Sequence[str] | None = None, *, judge_model: str | None = None, device: Any = None,
                dtype: str = "auto", batch_size: int = BATCH_SIZE, max_new_tokens: int = MAX_NEW_TOKENS,
                sources: Sequence[tuple[str, str]] | None = None, progress: bool = False,
                force_cpu: bool = False) -> ArenaResult:
    """Judge each pair (``images[i]``, ``captions_a[i]``, ``captions_b[i]``) in both orders (see the module
    docstring for the protocol and the both-orders rule).

    images: one per pair: a path, bytes, a ``PIL`` image, an array or a ``datasets`` image dict.
    references: one reference caption per pair (CapArena's prompt with a reference), or ``None`` (without).
    judge_model: a Hub id or folder of a transformers vision-language model, or an original-layout LLaVA-1.5
        folder (default: :data:`capeval.judges.judge.DEFAULT_JUDGE`); loaded once per process.
    device / dtype / force_cpu: as :func:`capeval.judges.judge.load_judge`.
    batch_size: prompts generated together (at least 1; 1 is one prompt per ``generate``).
    max_new_tokens: the longest answer, in tokens (default 512).
    sources: per pair ``(system a, system b)``, kept for :meth:`ArenaResult.ranking`.
    progress: show a progress bar (prompts judged).
    """
    from capeval.judges.judge import batch_inputs, decode, generate, load_judge
    from capeval.judges.prompts import IMAGE_PLACEHOLDER
    from capeval.models.images import read_item

    captions_a = _texts(captions_a, "captions_a", None)
    n = len(captions_a)
    captions_b = _texts(captions_b, "captions_b", n)
    refs = None if references is None else _texts(references, "references", n)
    images = list(images)
    if len(images) != n:
        raise ValueError(f"images: {len(images)} values for {n} pairs.")
    if sources is not None:
        sources = [tuple(s) for s in sources]
        if len(sources) != n or any(len(s) != 2 for s in sources):
            raise ValueError(f"sources: expected {n} (system a, system b) pairs.")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r:.40}.")
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r:.40}.")
    judge = load_judge(judge_model if judge_model is not None else DEFAULT_JUDGE, device=device, dtype=dtype,
                       force_cpu=force_cpu, option="judge_model", force_option="force_cpu")
    system = system_prompt(refs is not None)
    messages, keys = [], []
    for i in range(n):
        ref = None if refs is None else refs[i]
        messages.append(compare_prompt(captions_a[i], captions_b[i], ref))
        messages.append(compare_prompt(captions_b[i], captions_a[i], ref))
        if judge.kind == "llava-1.5" and IMAGE_PLACEHOLDER in messages[-1]:
            raise ValueError(f"pairs[{i}]: a caption or the reference contains '{IMAGE_PLACEHOLDER}', LLaVA's image "
                             "placeholder; remove it (the judge would read a second image there).")
    decoded: dict[str, Any] = {}
    for i, item in enumerate(images):
        read = read_item(item, i)
        keys += [read.key, read.key]
        if read.key not in decoded:
            decoded[read.key] = read.decode()
    prompts = [arena_prompt(judge, system, m) for m in messages]
    _warn_context(judge, prompts, max_new_tokens)
    bar = None
    if progress and prompts:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(prompts), desc="arena judging", unit="prompt", leave=False)
    if judge.kind == "llava-1.5" and batch_size > 1:
        from capeval.judges.judge import generate_shared, llava_pixels

        generations = generate_shared(judge, prompts, keys, lambda key: llava_pixels(judge, decoded[key]),
                                      batch_size, max_new_tokens, bar)
    else:
        generations = []
        for start in range(0, len(prompts), batch_size):
            part = range(start, min(start + batch_size, len(prompts)))
            inputs = batch_inputs(judge, [prompts[k] for k in part], [decoded[keys[k]] for k in part])
            generations += generate(judge, inputs, max_new_tokens)
            if bar is not None:
                bar.update(len(part))
    if bar is not None:
        bar.close()
    answers = [decode(judge, g.ids, special=False).strip() for g in generations]
    return collect(answers, sources=sources, judge=judge.label, with_references=refs is not None)


def _warn_context(judge, prompts: list, longest: int) -> None:
    """One :class:`JudgeContextWarning` naming the pairs whose prompt, with the longest answer, exceeds a LLaVA-1.5
    judge's context (its language model's ``max_position_embeddings``); they are judged whole."""
    from capeval.judges.answers import JudgeContextWarning
    from capeval.judges.judge import llava_input_ids

    text = getattr(judge.model.config, "text_config", judge.model.config)
    context = getattr(text, "max_position_embeddings", None)
    if not context or judge.kind != "llava-1.5":
        return
    over = sorted({k // 2 for k, p in enumerate(prompts) if len(llava_input_ids(judge, p)) + longest > context})
    if over:
        shown = ", ".join(f"pairs[{i}]" for i in over[:WARN_FIRST]) + (
            f" and {len(over) - WARN_FIRST} more" if len(over) > WARN_FIRST else "")
        warn_at_caller(f"arena: the prompts of {len(over)} pair(s) with up to {longest} answer tokens exceed the "
                       f"judge's {context}-token context ({shown}); they are judged whole, beyond the positions the "
                       "model was trained on.", JudgeContextWarning)


def collect(answers: Sequence[str], *, sources: Sequence[tuple[str, str]] | None = None, judge: str = "",
            with_references: bool = False, warn: bool = True) -> ArenaResult:
    """The :class:`ArenaResult` of raw answers, two per pair in :data:`ORDERS` order (``answers[2 * i]``: pair
    ``i`` with a shown first; ``answers[2 * i + 1]``: b shown first); with ``warn``, one
    :class:`JudgeFailureWarning` names the pairs whose answers give no verdict."""
    if len(answers) % 2:
        raise ValueError(f"answers: {len(answers)} answers; expected two per pair (a first, then b first).")
    verdicts, order_verdicts, pairs, judgments, failures = [], [], [], [], []
    for i in range(len(answers) // 2):
        ab, ba = answers[2 * i], answers[2 * i + 1]
        (vab, jab), (vba, jba) = read_judgment(ab), read_judgment(ba)
        for order, answer, verdict, judgment in (("ab", ab, vab, jab), ("ba", ba, vba, jba)):
            if verdict is None:
                failures.append({"index": i, "order": order, "answer": answer, "judgment": judgment})
        verdicts.append(combine_orders(vab, vba))
        order_verdicts.append((vab, vba))
        pairs.append((ab, ba))
        judgments.append((jab, jba))
    result = ArenaResult(verdicts, order_verdicts, pairs, judgments, failures,
                         None if sources is None else [tuple(s) for s in sources], judge, with_references)
    failed = result.failed_pairs
    if warn and failed:
        shown = ", ".join(f"pairs[{i}]" for i in failed[:WARN_FIRST])
        more = f" and {len(failed) - WARN_FIRST} more" if len(failed) > WARN_FIRST else ""
        warn_at_caller(f"arena: {len(failed)} of {len(result)} pair(s) got no verdict ({len(failures)} answer(s) "
                       f"without an accepted 'Judgment:' line): {shown}{more}; they count as failed, and "
                       "ArenaResult.failures lists their answers.", JudgeFailureWarning)
    return result
