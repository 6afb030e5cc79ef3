"""Scoring with a trained critic: P(candidate is human-written | context), averaged over every reference.

>>> from capeval.critic.scoring import critic_scores
>>> critic_scores(["a dog runs on the grass"], [["a brown dog runs", "a dog in a field"]], images=["dog.jpg"])
array([0.83])

* The score of a candidate is the mean, over each of its references used as the context (with the image), of the
  critic's P(human) (supplementary §2.4; the released code used one random reference). No randomness: the model
  runs in evaluation mode, so the same inputs give the same scores.
* ``images``: one per candidate — paths, PIL images, numpy arrays or ``datasets.Image`` values (``{"path",
  "bytes"}``); their pooled features come from the encoder recorded in the critic's config (EfficientNet-Lite0 at
  224² for the shipped critics) through :mod:`capeval.models.image_encoder`, cached on disk per image content.
  ``image_features`` (``[n, image_dim]``) may be given instead. A critic trained with ``image_optional`` (``capeval
  critic train --text-corpus``) also scores without images: its learned "no image" vector is then the image context.
* Every distinct caption goes through the LSTM once and every distinct image through the projection once, so
  the cost is dominated by the distinct captions; pairs are classified in batches of ``batch_size``.
* Critics by name: every critic of the catalog (``capeval models --metric critic``; :mod:`capeval.catalog` says what
  each was trained on and whether it is bundled or fetched from the Hub, :mod:`capeval.model_store` finds its folder).
  The defaults of :data:`SHIPPED` are the catalog's (:data:`capeval.catalog.DEFAULTS`). Weights are stored as float16
  and loaded as float32.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from capeval.critic.loading import load_critic
from capeval.critic.vocab import CriticVocab
from capeval.dependencies import require
from capeval.models.inference import ieee_float32
from capeval.progress import progress



def encode_images(model, images: Sequence[Any], *, progress_bar: bool | None = None, cache: bool = True):
    """Pooled features ``[n, image_dim]`` of ``images`` with the critic's encoder; the same path is encoded once."""
    from capeval.models.image_encoder import load_image_encoder

    cfg = model.config
    keys = [str(Path(im).resolve()) if isinstance(im, (str, os.PathLike)) else None for im in images]
    first: dict[str, int] = {}
    unique, slot = [], []
    for im, key in zip(images, keys):
        if key is not None and key in first:
            slot.append(first[key])
            continue
        if key is not None:
            first[key] = len(unique)
        slot.append(len(unique))
        unique.append(im)
    key = (cfg.encoder, str(cfg.encoder_resolution), cache, str(model.device))
    from capeval.loaded_models import load_once

    # kept, like the critics: building the encoder costs seconds per call otherwise; on the critic's device
    # (``critic_device="cpu"`` keeps the whole metric off a GPU)
    encoder = load_once("image_encoder", key, lambda: load_image_encoder(cfg.encoder, cfg.encoder_resolution,
                                                                          cache=cache, device=model.device))
    feats = encoder.encode(unique, kind="pooled", progress=progress_bar)
    if feats.shape[1] != cfg.image_dim:
        raise ValueError(f"the critic reads {cfg.image_dim}-d image features but {cfg.encoder} gives {feats.shape[1]}.")
    return feats[require("torch").as_tensor(slot)]


def _encode_texts(model, vocab: CriticVocab, texts: list[str], batch_size: int, progress_bar, oov: str = "unk"):
    torch = require("torch")
    out = []
    chunks = range(0, len(texts), batch_size)
    expansion = None
    if oov == "glove-map":
        from capeval.critic.expansion import expansion_for

        expansion = expansion_for(model, vocab)
    for start in progress(chunks, total=len(chunks), desc="critic: captions", enabled=progress_bar):
        if expansion is None:
            ids, lengths = vocab.encode(texts[start:start + batch_size])
            extra = None
        else:
            ids, lengths = expansion.encode(texts[start:start + batch_size])
            extra = torch.as_tensor(expansion.extra, device=model.device)
        out.append(model.encode_captions(torch.as_tensor(ids, device=model.device),
                                         torch.as_tensor(lengths, device=model.device), extra))
    return torch.cat(out) if out else torch.zeros((0, model.config.hidden_size), device=model.device)


#: Candidates scored together (:func:`critic_pairs`): their images encoded, their distinct captions through the
#: LSTM, their pairs classified; then the next step. The memory a call holds (image features, caption vectors) is
#: that of one step, whatever the number of candidates; a pair's score does not depend on the step size beyond
#: float32 rounding (a CPU's BLAS may sum a batch of 2 and one of 3 in different orders: about 1e-8 apart).
STEP_CANDIDATES = 8192


def critic_pairs(candidates: Sequence[str], references: Sequence[Sequence[str]] | None = None, *,
                 images: Sequence[Any] | None = None, image_features: Any = None, model: Any = None,
                 vocab: CriticVocab | None = None, path: str | os.PathLike | None = None,
                 context: str = "image+reference", batch_size: int = 4096,
                 progress_bar: bool | None = None, oov: str = "unk") -> CriticPairs:
    """The critic's output on every (candidate, reference) pair: what :func:`critic_scores` averages.

    Pairs come candidate by candidate, each candidate's references in order (one pair per candidate for a critic
    that reads no reference). Arguments as :func:`critic_scores`. Candidates are scored in steps of
    :data:`STEP_CANDIDATES`. ``oov``: ``"unk"`` (words outside the vocabulary are ``<unk>``: the critic as trained,
    this function's default, which training and its dev evaluations use) or ``"glove-map"`` (mapped from their GloVe
    vectors, :mod:`capeval.critic.expansion`: the default of the ``critic*`` metrics of :func:`capeval.score`).
    """
    torch = require("torch", what="the critic")
    if model is None:
        model, vocab = load_critic(path, context)
    elif vocab is None:
        raise ValueError("give vocab= with model=.")
    cfg = model.config
    n = len(candidates)
    if cfg.uses_reference:
        if references is None or len(references) != n:
            raise ValueError(f"this critic ({cfg.context}) needs references: one list per candidate ({n}).")
        for i, refs in enumerate(references):
            if not refs:
                raise ValueError(f"references[{i}] is empty: the critic needs at least one reference as context.")
    imageless = False
    if cfg.uses_image and images is None and image_features is None and cfg.image_optional:
        imageless = True  # an image_optional critic: its learned "no image" vector is the image context
    elif cfg.uses_image:
        if image_features is None:
            if images is None or len(images) != n:
                raise ValueError(f"this critic ({cfg.context}) needs one image per candidate ({n}); "
                                 f"got {'none' if images is None else len(images)}.")
        else:
            image_features = torch.as_tensor(image_features, dtype=torch.float32)
            if image_features.shape != (n, cfg.image_dim):
                raise ValueError(f"image_features must be [{n}, {cfg.image_dim}], got {tuple(image_features.shape)}.")
    if n == 0:
        return CriticPairs(np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), n)
    items, probs, odds = [], [], []
    for lo in range(0, n, STEP_CANDIDATES):
        hi = min(n, lo + STEP_CANDIDATES)
        feats = None
        if cfg.uses_image and not imageless:
            feats = (image_features[lo:hi] if image_features is not None else
                     encode_images(model, [images[i] for i in range(lo, hi)], progress_bar=progress_bar))
        item, p, log_odds = _step_pairs(model, vocab, [candidates[i] for i in range(lo, hi)],
                                        [references[i] for i in range(lo, hi)] if cfg.uses_reference else None,
                                        feats, imageless, batch_size, progress_bar, oov)
        items.append(item + lo)
        probs.append(p)
        odds.append(log_odds)
    p, log_odds = np.concatenate(probs), np.concatenate(odds)
    if not (np.isfinite(p).all() and np.isfinite(log_odds).all()):
        raise ValueError("the critic produced a non-finite score (a damaged model file?).")
    return CriticPairs(np.concatenate(items), p, log_odds, n)


def _step_pairs(model, vocab: CriticVocab, candidates: Sequence[str], references: Sequence[Sequence[str]] | None,
                feats, imageless: bool, batch_size: int, progress_bar,
                oov: str = "unk") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(item, P(human), log-odds)`` of the pairs of one step's candidates (``item`` counted from 0)."""
    torch = require("torch")
    n = len(candidates)
    texts = list(dict.fromkeys([*candidates, *(r for refs in references for r in refs)]
                               if references is not None else candidates))
    where = {t: i for i, t in enumerate(texts)}
    cand_idx = np.array([where[c] for c in candidates])
    if references is not None:
        item = np.concatenate([np.full(len(refs), i) for i, refs in enumerate(references)])
        ref_idx = np.array([where[r] for refs in references for r in refs])
    else:
        item, ref_idx = np.arange(n), None
    with torch.no_grad(), ieee_float32():
        vectors = _encode_texts(model, vocab, texts, 2048, progress_bar, oov)
        projected = model.project_images(feats.to(model.device)) if feats is not None else None
        if imageless:
            projected = model.missing_image_vectors(n).float()
        probs, odds = [], []
        for start in range(0, len(item), batch_size):
            it = torch.as_tensor(item[start:start + batch_size], device=model.device)
            cand = vectors[torch.as_tensor(cand_idx, device=model.device)[it]]
            ref = vectors[torch.as_tensor(ref_idx[start:start + batch_size], device=model.device)] \
                if ref_idx is not None else None
            img = projected[it] if projected is not None else None
            logits = model.classify(cand, ref, img).float()
            probs.append(torch.softmax(logits, -1)[:, 1].cpu())
            odds.append((logits[:, 1] - logits[:, 0]).cpu())
    return item, torch.cat(probs).double().numpy(), torch.cat(odds).double().numpy()


def critic_scores(candidates: Sequence[str], references: Sequence[Sequence[str]] | None = None, *,
                  images: Sequence[Any] | None = None, image_features: Any = None, model: Any = None,
                  vocab: CriticVocab | None = None, path: str | os.PathLike | None = None,
                  context: str = "image+reference", batch_size: int = 4096,
                  progress_bar: bool | None = None, oov: str = "unk") -> np.ndarray:
    """P(human) of each candidate in [0, 1] (float64 ``[n]``), averaged over its references (see module docstring).

    ``model``/``vocab`` (or ``path``, or the shipped critic of ``context``) choose the critic; its config decides
    whether references and/or images are read. The per-pair probabilities are :func:`critic_pairs`'.
    """
    pairs = critic_pairs(candidates, references, images=images, image_features=image_features, model=model,
                         vocab=vocab, path=path, context=context, batch_size=batch_size, progress_bar=progress_bar,
                         oov=oov)
    return pairs.mean(pairs.probability)


def mean_per_candidate(item: np.ndarray, values: np.ndarray, candidates: int) -> np.ndarray:
    """Per-pair ``values`` averaged over the pairs of each candidate (``item``: the candidate's index per pair)."""
    if candidates == 0:
        return np.zeros(0)
    return np.bincount(item, weights=values, minlength=candidates) / np.bincount(item, minlength=candidates)


@dataclass(frozen=True)
class CriticPairs:
    """The critic on each (candidate, reference) pair: ``item`` (the candidate's index), ``probability``
    (P(human), float64) and ``log_odds`` (logit of P(human), from the logits: finite where P rounds to 0 or 1)."""

    item: np.ndarray
    probability: np.ndarray
    log_odds: np.ndarray
    candidates: int

    def mean(self, values: np.ndarray) -> np.ndarray:
        """Per-pair ``values`` averaged per candidate (float64 ``[candidates]``)."""
        return mean_per_candidate(self.item, values, self.candidates)
