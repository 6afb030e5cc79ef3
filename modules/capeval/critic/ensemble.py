"""``critic_plus``: the critic combined with the sentence-embedding similarity of candidate and reference.

>>> from capeval.critic.ensemble import critic_plus_scores
>>> critic_plus_scores(["a dog runs on the grass"], [["a brown dog runs", "a dog in a field"]], images=["dog.jpg"])
array([0.91])

Per (candidate, reference) pair, with ``P`` the critic's P(human | image, reference) (:func:`critic_pairs`) and
``cos`` the cosine similarity of the two captions' sentence embeddings (all-MiniLM-L6-v2 by default,
:mod:`capeval.models.sentence_encoder`)::

    score(candidate, reference) = sigmoid(a * logit(P) + b * cos + c)

and a candidate's score is the mean over its references, as the critic's. ``logit(P)`` is read from the critic's
two logits (finite where ``P`` rounds to 0 or 1). No vision-language model is involved: the image only enters
through the critic.

The three weights are a logistic regression (:func:`~capeval.critic.combine.fit_logistic`: Newton's method, deterministic) of
human (1) vs. negative (0) on **Flickr8k dev** pairs built as the critic training's dev pairs
(:func:`capeval.critic.data.fixed_pairs` with ``mix="caption"``, its own seed): every dev caption as a human candidate and, with
the same context (a random other caption of the image), an RC negative (a human caption of another dev image, drawn
among the nearest images by feature, :class:`~capeval.critic.transforms.NearestImages`). Nothing is fitted on a
benchmark's judgments or images. :func:`fit_combiner` / ``capeval critic fit-plus`` write ``combiner.json``
(:class:`Combiner`: weights, base critic, sentence encoder, the fit data and its dev accuracy / log-loss) into a
folder; the shipped one is ``capeval/pretrained/critic-flickr8k-plus`` (base critic ``critic-flickr8k-caption``).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.catalog import DEFAULTS
from capeval.critic.combine import (check_feature_settings, fit_logistic, fit_report, read_tagged_json, sigmoid,
                                    write_tagged_json)
from capeval.critic.scoring import critic_folder, critic_pairs, load_critic, mean_per_candidate, member_folder
from capeval.models.sentence_encoder import DEFAULT_SENTENCE_ENCODER, load_sentence_encoder

COMBINER_FILE = "combiner.json"
FORMAT = "capeval-critic-plus"
#: The shipped combiner (``capeval/pretrained/critic-flickr8k-plus``).
SHIPPED_PLUS = DEFAULTS["critic_plus"]
FORMULA = "sigmoid(a * logit(P_critic) + b * cos_sentence + c), averaged over the references"


@dataclass
class Combiner:
    """The weights of ``sigmoid(a * logit(P) + b * cos + c)`` and what they combine (see the module docstring).

    ``critic``: a shipped critic's name or a folder (relative to the combiner's folder when it is one there);
    ``sentence_encoder``: a :func:`~capeval.models.sentence_encoder.load_sentence_encoder` name; ``fit``: how the
    weights were fitted (data, seed, dev accuracy and log-loss).
    """

    a: float
    b: float
    c: float
    critic: str
    sentence_encoder: str = DEFAULT_SENTENCE_ENCODER
    fit: dict[str, Any] = field(default_factory=dict)

    def log_odds(self, critic_log_odds: np.ndarray, cosine: np.ndarray) -> np.ndarray:
        return self.a * np.asarray(critic_log_odds, dtype=np.float64) + self.b * np.asarray(cosine, np.float64) + self.c

    def probability(self, critic_log_odds: np.ndarray, cosine: np.ndarray) -> np.ndarray:
        """The per-pair score ``sigmoid(a * critic_log_odds + b * cosine + c)`` (float64)."""
        return sigmoid(self.log_odds(critic_log_odds, cosine))

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": 1, "formula": FORMULA,
                "weights": {"a": self.a, "b": self.b, "c": self.c},
                "critic": self.critic, "sentence_encoder": self.sentence_encoder, "fit": self.fit}

    def save(self, folder: str | os.PathLike) -> Path:
        return write_tagged_json(folder, COMBINER_FILE, self.to_json())

    @classmethod
    def load(cls, folder: str | os.PathLike) -> Combiner:
        data = read_tagged_json(folder, COMBINER_FILE, FORMAT, "a critic_plus combiner", "`capeval critic fit-plus`")
        path = Path(folder) / COMBINER_FILE
        w = data["weights"]
        weights = [float(w[k]) for k in ("a", "b", "c")]
        if not np.isfinite(weights).all():
            raise ValueError(f"{path}: the weights must be finite numbers, got {w}.")
        return cls(*weights, critic=str(data["critic"]), sentence_encoder=str(data["sentence_encoder"]),
                   fit=dict(data.get("fit", {})))

    def critic_path(self, folder: str | os.PathLike | None = None) -> Path:
        """The base critic's folder: ``critic`` relative to ``folder`` when it names a folder there, else a shipped
        critic's name or a path as given."""
        return member_folder(self.critic, folder)


def plus_folder(path: str | os.PathLike | None = None) -> Path:
    """The folder of a combiner: ``path`` (a folder or a shipped name), default the shipped ``critic-flickr8k-plus``."""
    return critic_folder(SHIPPED_PLUS if path is None else path)


def load_critic_plus(path: str | os.PathLike | None = None, device: Any = None):
    """``(combiner, critic model, critic vocab, sentence encoder)`` of the combiner folder ``path`` (default the
    shipped one); the critic and the encoder are kept loaded per process (:func:`load_critic`,
    :func:`load_sentence_encoder`)."""
    folder = plus_folder(path)
    combiner = Combiner.load(folder)
    model, vocab = load_critic(combiner.critic_path(folder), device=device)
    encoder = load_sentence_encoder(combiner.sentence_encoder, device=device)
    return combiner, model, vocab, encoder


@dataclass(frozen=True)
class PairFeatures:
    """The combiner's inputs on each (candidate, reference) pair, candidate by candidate, references in order."""

    item: np.ndarray  # the candidate's index
    critic_log_odds: np.ndarray
    cosine: np.ndarray
    candidates: int

    def mean(self, values: np.ndarray) -> np.ndarray:
        """Per-pair ``values`` averaged per candidate (float64 ``[candidates]``)."""
        return mean_per_candidate(self.item, values, self.candidates)


def pair_features(candidates: Sequence[str], references: Sequence[Sequence[str]], *, model: Any, vocab: Any,
                  encoder: Any, images: Sequence[Any] | None = None, image_features: Any = None,
                  batch_size: int = 4096, progress_bar: bool | None = None) -> PairFeatures:
    """The critic's log-odds and the sentence cosine of every (candidate, reference) pair (one per reference; a
    critic that reads no reference gives the same log-odds to each of a candidate's pairs)."""
    n = len(candidates)
    if references is None or len(references) != n:
        raise ValueError(f"critic_plus needs references: one list per candidate ({n}).")
    for i, refs in enumerate(references):
        if not refs:
            raise ValueError(f"references[{i}] is empty: critic_plus needs at least one reference per candidate.")
    critic = critic_pairs(candidates, references, images=images, image_features=image_features, model=model,
                          vocab=vocab, batch_size=batch_size, progress_bar=progress_bar)
    item = np.concatenate([np.full(len(refs), i) for i, refs in enumerate(references)]) if n else \
        np.zeros(0, dtype=np.int64)
    log_odds = critic.log_odds if model.config.uses_reference else critic.log_odds[item]
    flat_refs = [r for refs in references for r in refs]
    cosine = encoder.similarity([candidates[i] for i in item], flat_refs, progress_bar=progress_bar) if n else \
        np.zeros(0)
    return PairFeatures(item, log_odds, cosine, n)


def critic_plus_scores(candidates: Sequence[str], references: Sequence[Sequence[str]], *,
                       images: Sequence[Any] | None = None, image_features: Any = None,
                       path: str | os.PathLike | None = None, combiner: Combiner | None = None, model: Any = None,
                       vocab: Any = None, encoder: Any = None, device: Any = None, batch_size: int = 4096,
                       progress_bar: bool | None = None) -> np.ndarray:
    """The ``critic_plus`` score of each candidate in [0, 1] (float64 ``[n]``; see the module docstring).

    ``path``: a combiner folder or shipped name (default ``critic-flickr8k-plus``), whose critic and sentence encoder
    are loaded; or give ``combiner``, ``model`` / ``vocab`` (the base critic) and ``encoder`` (anything with
    ``similarity(a, b) -> cosines``, e.g. a :class:`~capeval.models.sentence_encoder.SentenceEncoder`) yourself.
    Images as :func:`~capeval.critic.scoring.critic_scores`.
    """
    if combiner is None or model is None or encoder is None:
        loaded_combiner, loaded_model, loaded_vocab, loaded_encoder = load_critic_plus(path, device)
        combiner = loaded_combiner if combiner is None else combiner
        encoder = loaded_encoder if encoder is None else encoder
        if model is None:
            model, vocab = loaded_model, loaded_vocab
    if vocab is None:
        raise ValueError("give vocab= with model=.")
    feats = pair_features(candidates, references, model=model, vocab=vocab, encoder=encoder, images=images,
                          image_features=image_features, batch_size=batch_size, progress_bar=progress_bar)
    out = feats.mean(combiner.probability(feats.critic_log_odds, feats.cosine))
    if not np.isfinite(out).all():
        raise ValueError("critic_plus produced a non-finite score (a damaged model or combiner file?).")
    return out


# -- fitting ------------------------------------------------------------------------------------------------------


def fit_combiner(features, dev: Mapping[str, Sequence[str]], critic: str | os.PathLike, *,
                 sentence_encoder: str = DEFAULT_SENTENCE_ENCODER, seed: int = 0, device: Any = None,
                 batch_size: int = 4096, encoder: Any = None, progress_bar: bool | None = None,
                 description: str = "Flickr8k dev") -> Combiner:
    """Fit the combiner's weights on ``dev`` (``{image: [human captions]}``, Flickr8k dev for the shipped one) with
    ``features`` (a :class:`~capeval.models.feature_table.FeatureTable` holding the dev images; the critic's
    encoder) and the base ``critic`` (a shipped name or a folder, recorded as given); see the module docstring.

    ``seed`` draws the contexts and the RC negatives; ``encoder`` replaces the loaded sentence encoder (tests).
    """
    from capeval.critic.data import fixed_pairs

    model, vocab = load_critic(critic, device=device)
    features = features.pooled()
    names = sorted(dev)
    features.check(names)
    if model.config.uses_image:
        check_feature_settings(model, features)
    pairs = fixed_pairs(dev, features, mix="caption", seed=seed)
    if not pairs:
        raise ValueError("no dev pairs: the dev images need at least 2 captions each.")
    examples = [e for pair in pairs for e in pair]
    image_features = features.rows([e.image for e in examples]) if model.config.uses_image else None
    encoder = encoder if encoder is not None else load_sentence_encoder(sentence_encoder, device=device)
    feats = pair_features([e.candidate for e in examples], [[e.reference] for e in examples], model=model,
                          vocab=vocab, encoder=encoder, image_features=image_features, batch_size=batch_size,
                          progress_bar=progress_bar)
    y = np.array([e.label for e in examples], dtype=np.float64)
    x = np.stack([feats.critic_log_odds, feats.cosine], axis=1)
    a, b, c = (float(v) for v in fit_logistic(x, y))
    cos_w = fit_logistic(feats.cosine, y)
    sources = sorted({e.source for e in examples} - {"human"})
    fit = {
        "data": f"{description}: {len(names)} images, every caption once as a human candidate (label 1) and an RC "
                "negative (label 0: a human caption of another dev image, among the nearest by image feature, gamma "
                "uniform) with the same context, a random other caption of the image (capeval.critic.data.fixed_pairs, "
                f"mix 'caption', dev_seed {seed})",
        "images": len(names), "examples": len(examples), "negative_sources": sources, "seed": seed,
        "method": "logistic regression, Newton's method (capeval.critic.combine.fit_logistic, l2 1e-6)",
        "features": "critic log-odds (logit of P(human) from its two logits), cosine of the sentence embeddings",
        "critic_context": model.config.context,
        "dev": fit_report(x @ np.array([a, b]) + c, y),
        "dev_critic_alone": fit_report(feats.critic_log_odds, y),
        "dev_cosine_alone": {**fit_report(cos_w[0] * feats.cosine + cos_w[1], y),
                             "weights": [float(cos_w[0]), float(cos_w[1])]},
        "note": "the dev numbers are in-sample (3 weights fitted on these examples)",
    }
    return Combiner(a, b, c, critic=str(critic), sentence_encoder=getattr(encoder, "name", sentence_encoder), fit=fit)


__all__ = ["COMBINER_FILE", "Combiner", "PairFeatures", "SHIPPED_PLUS", "critic_plus_scores", "fit_combiner",
           "load_critic_plus", "pair_features", "plus_folder"]
