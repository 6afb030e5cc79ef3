"""Captions from the captioner: beam candidates, Monte-Carlo samples, captions of image files.

Every function returns one dict per image, ``{"id": image name, "candidates": [{"caption", "logp"}, ...]}``
(the input format of :mod:`capeval.rerank.mmi` and of the critic), best first for beam search. ``logp`` is
log P(s|I) in natural log, summed over the caption's tokens and ``<eos>``: ``sequences_scores`` of
``transformers``' beam search with ``length_penalty=0`` (the captioner's default), and the teacher-forced
:meth:`~capeval.models.captioner.CaptionerForImageCaptioning.caption_log_probs` for greedy and sampled
captions (the same quantity; a test checks they agree).
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.models.feature_table import FeatureTable
from capeval.dependencies import require
from capeval.progress import progress


def _strip(seq: list[int], eos: int) -> list[int]:
    """Ids up to and including the first ``<eos>`` after ``<bos>`` (padding dropped)."""
    return seq[:seq.index(eos, 1) + 1] if eos in seq[1:] else seq


def _decode(tokenizer, seqs: list[list[int]]) -> list[str]:
    from capeval.models.caption_tokenizer import decode_ids

    return decode_ids(tokenizer, seqs)


def _check(num: int, what: str) -> None:
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ValueError(f"{what} must be an int >= 1, got {num!r}.")


def beam_candidates(model, tokenizer, features: FeatureTable, names: Sequence[str], *, num_beams: int = 3,
                    num_return_sequences: int = 1, batch_size: int = 50, max_new_tokens: int | None = None,
                    length_penalty: float = 0.0, progress_bar: bool | None = None) -> list[dict[str, Any]]:
    """Beam search (``num_beams=1``: greedy) for each image of ``names``; ``num_return_sequences`` per image."""
    torch = require("torch")
    _check(num_beams, "num_beams"), _check(num_return_sequences, "num_return_sequences"), _check(batch_size, "batch_size")
    if num_return_sequences > num_beams:
        raise ValueError(f"num_return_sequences ({num_return_sequences}) must be <= num_beams ({num_beams}).")
    model.eval()
    eos = model.config.eos_token_id
    out: list[dict[str, Any]] = []
    chunks = [list(names[i:i + batch_size]) for i in range(0, len(names), batch_size)]
    for chunk in progress(chunks, desc=f"beam-{num_beams} captions", enabled=progress_bar):
        feats = features.rows(chunk).to(model.device)
        with torch.no_grad():
            embeds = model.encode_images(feats)
            kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens} if max_new_tokens else {}
            kwargs.update(model.caption_constraints())
            if num_beams > 1:
                gen = model.generate(image_embeds=embeds, num_beams=num_beams, num_return_sequences=num_return_sequences,
                                     length_penalty=length_penalty, do_sample=False, output_scores=True,
                                     return_dict_in_generate=True, **kwargs)
                seqs = [_strip(s, eos) for s in gen.sequences.tolist()]
                logps = gen.sequences_scores.tolist()
            else:
                gen = model.generate(image_embeds=embeds, num_beams=1, do_sample=False, length_penalty=None,
                                     **kwargs)
                seqs = [_strip(s, eos) for s in gen.tolist()]
                logps = model.caption_log_probs(seqs, image_embeds=embeds).tolist()
        captions = _decode(tokenizer, seqs)
        k = num_return_sequences
        for j, name in enumerate(chunk):
            out.append({"id": name, "candidates": [{"caption": c, "logp": float(lp)} for c, lp in
                                                   zip(captions[j * k:(j + 1) * k], logps[j * k:(j + 1) * k])]})
    return out


def sample_captions(model, tokenizer, features: FeatureTable, names: Sequence[str], *, num_samples: int = 5,
                    temperature: float = 1.0, seed: int = 0, batch_size: int = 50, max_new_tokens: int | None = None,
                    progress_bar: bool | None = None) -> list[dict[str, Any]]:
    """``num_samples`` Monte-Carlo samples per image from P(s|I) (``temperature`` 1: the model's distribution;
    no top-k / top-p truncation), seeded: the same ``seed`` gives the same samples."""
    torch = require("torch")
    _check(num_samples, "num_samples"), _check(batch_size, "batch_size")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}.")
    model.eval()
    eos = model.config.eos_token_id
    out: list[dict[str, Any]] = []
    chunks = [list(names[i:i + batch_size]) for i in range(0, len(names), batch_size)]
    for n, chunk in enumerate(progress(chunks, desc="sampled captions", enabled=progress_bar)):
        torch.manual_seed(seed * 1_000_003 + n)
        feats = features.rows(chunk).to(model.device)
        with torch.no_grad():
            embeds = model.encode_images(feats)
            kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens} if max_new_tokens else {}
            kwargs.update(model.caption_constraints())
            gen = model.generate(image_embeds=embeds, do_sample=True, num_beams=1, length_penalty=None, top_k=0,
                                 top_p=1.0, temperature=temperature, num_return_sequences=num_samples, **kwargs)
            seqs = [_strip(s, eos) for s in gen.tolist()]
            logps = model.caption_log_probs(seqs, image_embeds=embeds.repeat_interleave(num_samples, 0)).tolist()
        captions = _decode(tokenizer, seqs)
        for j, name in enumerate(chunk):
            sl = slice(j * num_samples, (j + 1) * num_samples)
            out.append({"id": name, "candidates": [{"caption": c, "logp": float(lp)}
                                                   for c, lp in zip(captions[sl], logps[sl])]})
    return out


def write_jsonl(rows: Sequence[dict[str, Any]], path: str | os.PathLike, settings: dict[str, Any] | None = None) -> Path:
    """Write ``rows`` as JSON lines (atomically); ``settings`` go into every row under ``"settings"``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({**row, **({"settings": settings} if settings else {})}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path
