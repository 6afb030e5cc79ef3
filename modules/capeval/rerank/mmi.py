"""MMI re-ranking of beam candidates (Wang et al., ECCV 2020, §5).

``mmi_score = log P(s|I) - lambda * log P(s)``, both natural-log probabilities of the whole caption
(``<eos>`` included): ``log P(s|I)`` from the captioner (the candidate's ``logp``), ``log P(s)`` from a
caption language model of :mod:`capeval.models.caption_lm`. ``lambda = 0`` keeps the captioner's order;
larger values favour captions the language model finds rare (more specific, more "unique").

Items are dicts ``{"id": ..., "candidates": [{"caption": str, "logp": float, ...}, ...]}``; every other
field is kept. Bad input (no candidates, a NaN or infinite ``logp``, a caption that is not a string)
raises ``ValueError`` naming ``items[i].candidates[j]``.
"""
from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.models.caption_lm import CaptionLM


def mmi_scores(logp_given_image: Sequence[float], logp_lm: Sequence[float], lam: float) -> np.ndarray:
    """``log P(s|I) - lam * log P(s)`` element-wise (natural logs, per caption)."""
    _check_lambda(lam)
    a, b = np.asarray(logp_given_image, dtype=float), np.asarray(logp_lm, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"{a.shape[0] if a.ndim else a} captioner log-probs but {b.shape[0] if b.ndim else b} LM log-probs.")
    return a - lam * b


def _check_lambda(lam: float) -> None:
    if not isinstance(lam, (int, float)) or not math.isfinite(lam):
        raise ValueError(f"lambda must be a finite number, got {lam!r}.")


def validate_items(items: Any) -> list[dict]:
    """Check the shape of re-ranking items; ``ValueError`` names the first bad ``items[i]...``."""
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError("items must be a non-empty list of {id, candidates: [{caption, logp}]}.")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"items[{i}] must be an object with 'candidates', got {type(item).__name__}.")
        cands = item.get("candidates")
        if not isinstance(cands, list) or not cands:
            raise ValueError(f"items[{i}].candidates (id {item.get('id')!r}) must be a non-empty list.")
        for j, c in enumerate(cands):
            where = f"items[{i}].candidates[{j}] (id {item.get('id')!r})"
            if not isinstance(c, dict):
                raise ValueError(f"{where} must be an object with 'caption' and 'logp'.")
            if not isinstance(c.get("caption"), str):
                raise ValueError(f"{where}: 'caption' must be a string, got {type(c.get('caption')).__name__}.")
            logp = c.get("logp")
            if isinstance(logp, bool) or not isinstance(logp, (int, float)) or not math.isfinite(logp):
                raise ValueError(f"{where}: 'logp' must be a finite number (natural log P(s|I)), got {logp!r}.")
    return list(items)


def flat_captions(items: Sequence[dict]) -> list[str]:
    """Every candidate caption, item by item, in order."""
    return [c["caption"] for item in items for c in item["candidates"]]


def rerank_with_scores(items: Sequence[dict], logp_lm: Sequence[float], lam: float) -> list[dict]:
    """Re-rank with precomputed LM log-probs (one per candidate, in :func:`flat_captions` order).

    Returns deep copies: candidates sorted by ``mmi_score`` (descending; ties keep the input order),
    each with ``mmi_score`` and ``lm_logp`` added.
    """
    items = validate_items(items)
    logp_lm = np.asarray(logp_lm, dtype=float)
    if len(logp_lm) != sum(len(it["candidates"]) for it in items):
        raise ValueError("one LM log-prob per candidate is needed.")
    if not np.isfinite(logp_lm).all():
        raise ValueError("the caption LM returned a NaN or infinite log-prob.")
    out, k = [], 0
    for item in items:
        n = len(item["candidates"])
        scores = mmi_scores([c["logp"] for c in item["candidates"]], logp_lm[k:k + n], lam)
        cands = []
        for c, s, lm in zip(item["candidates"], scores, logp_lm[k:k + n]):
            cands.append({**copy.deepcopy(c), "mmi_score": float(s), "lm_logp": float(lm)})
        order = sorted(range(n), key=lambda j: -scores[j])  # sorted() is stable
        out.append({**copy.deepcopy(item), "candidates": [cands[j] for j in order]})
        k += n
    return out


def rerank(items: Sequence[dict], lm: CaptionLM, lam: float) -> list[dict]:
    """Re-rank every item's candidates by ``logp - lam * lm.log_prob(caption)`` (see the module docstring)."""
    _check_lambda(lam)
    items = validate_items(items)
    return rerank_with_scores(items, lm.log_prob(flat_captions(items)), lam)


def top1_indices(items: Sequence[dict], logp_lm: np.ndarray, lam: float) -> tuple[int, ...]:
    """Index (into each item's candidates) of the MMI-best candidate; ties go to the earlier one."""
    out, k = [], 0
    for item in items:
        n = len(item["candidates"])
        scores = np.array([c["logp"] for c in item["candidates"]], dtype=float) - lam * logp_lm[k:k + n]
        out.append(int(np.argmax(scores)))
        k += n
    return tuple(out)


# ----------------------------------------------------------------- input formats


def read_candidates_jsonl(path: str | Path) -> list[dict]:
    """Read JSON Lines ``{"id", "candidates": [{"caption", "logp"}]}`` (blank lines skipped), validated."""
    path = Path(path)
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not JSON ({err.msg}).") from None
    if not items:
        raise ValueError(f"{path}: no items.")
    return validate_items(items)


def from_generate_output(sequences: Any, sequences_scores: Any, tokenizer: Any, num_return_sequences: int,
                         ids: Sequence[Any] | None = None, skip_prefix: int = 0) -> list[dict]:
    """Items from a transformers ``generate(..., output_scores=True, return_dict_in_generate=True)`` output.

    ``sequences`` (``(batch * num_return_sequences, length)``) are decoded with ``tokenizer`` (special tokens
    skipped; the first ``skip_prefix`` tokens, e.g. a decoder-only prompt, dropped); ``sequences_scores``
    are taken as ``log P(s|I)``. Note: transformers' beam scores are the summed log-probs divided by
    ``length ** length_penalty``; generate with ``length_penalty=0.0`` to get plain sums.
    Consecutive groups of ``num_return_sequences`` rows form one item, with ids ``ids`` (default 0, 1, ...).
    """
    seqs = [list(map(int, s)) for s in (sequences.tolist() if hasattr(sequences, "tolist") else sequences)]
    scores = [float(s) for s in (sequences_scores.tolist() if hasattr(sequences_scores, "tolist") else sequences_scores)]
    k = int(num_return_sequences)
    if k < 1 or len(seqs) != len(scores) or len(seqs) % k:
        raise ValueError(f"{len(seqs)} sequences and {len(scores)} scores do not split into groups of "
                         f"num_return_sequences={k}.")
    texts = tokenizer.batch_decode([s[skip_prefix:] for s in seqs], skip_special_tokens=True)
    n_items = len(seqs) // k
    ids = list(ids) if ids is not None else list(range(n_items))
    if len(ids) != n_items:
        raise ValueError(f"{len(ids)} ids for {n_items} inputs.")
    items = [{"id": ids[i], "candidates": [{"caption": texts[i * k + j].strip(), "logp": scores[i * k + j]}
                                           for j in range(k)]} for i in range(n_items)]
    return validate_items(items)
