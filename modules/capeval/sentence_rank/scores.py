"""The functional core of ``sentence_rank``: per caption, the mean over its references of σ(s(c, r)), in [0, 1].

s(c, r) is the trained model's logit on the frozen sentence vectors of the candidate and the reference
(:mod:`capeval.sentence_rank.model`); 1 = the model is sure the candidate describes what the reference describes, 0 =
sure it does not; about σ(a · cos + b) before training. Texts are handled as ``sentence_cosine`` handles them
(:mod:`capeval.sentence_cosine.scores`): every distinct text is encoded once; a prediction without a letter or digit
scores 0 and is not encoded; an encoder vector that is zero or not finite raises ``ValueError`` naming the caption;
every returned value is checked to be finite (never NaN).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.sentence_cosine.scores import check_caption_lists, embed_pairs, has_word, resolve_encoder, scored_steps
from capeval.sentence_rank.model import SentenceRankModel

__all__ = ["DEFAULT_BATCH_SIZE", "sentence_rank_scores"]

#: Texts per forward pass of the sentence encoder.
DEFAULT_BATCH_SIZE = 128


def sentence_rank_scores(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    model: SentenceRankModel | str | os.PathLike,
    encoder: Any = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    device: Any = None,
    progress_bar: bool | None = None,
    cache: bool = True,
) -> np.ndarray:
    """float64 ``[len(predictions)]`` scores in [0, 1]: per prediction, the mean over its references of
    σ(s(prediction, reference)); 0 for a prediction without a letter or digit.

    Args:
        model: a :class:`~capeval.sentence_rank.model.SentenceRankModel` or its folder.
        encoder: ``None`` (the encoder named in the model's config, loaded once per process and device) or an
            object with ``encode(texts, batch_size=, progress_bar=) -> [len(texts), dim]`` (tests use a fake).
        batch_size: texts per encoder forward pass (no effect on the scores beyond float rounding).
        device: where a loaded encoder runs (default CUDA when available); the model's MLP runs in numpy.
        progress_bar: the encoder's progress bar (``None``: on a terminal, after one second).
        cache: with ``encoder=None``, read and store the vectors in capeval's sentence-vector cache
            (:mod:`capeval.models.sentence_cache`; agrees with uncached vectors to float32 rounding).

    Raises:
        ValueError: mismatched lengths, an empty reference list, an encoder vector that is zero or not finite, or
            vectors of another size than the model's. TypeError: a caption that is not a string.
    """
    if not isinstance(model, SentenceRankModel):
        model = SentenceRankModel.from_pretrained(Path(model))
    check_caption_lists(predictions, references)
    out = np.zeros(len(predictions), dtype=np.float64)
    scored = [i for i, p in enumerate(predictions) if has_word(p)]
    if not scored:
        return out
    if encoder is None:
        encoder = resolve_encoder(model.config.encoder, device, model.config.encoder_max_length, cache)
    for step in scored_steps(scored):  # memory flat in the number of captions
        pairs = embed_pairs(predictions, references, step, lambda texts: encoder.encode(
            texts, batch_size=batch_size, progress_bar=progress_bar), dim=model.config.dim)
        out[step] = pairs.reduce(pairs.per_pair(model.probabilities))
    if not np.isfinite(out).all():
        raise ValueError("sentence_rank produced a non-finite score; this is a capeval bug, please report it.")
    return np.clip(out, 0.0, 1.0, out=out)
