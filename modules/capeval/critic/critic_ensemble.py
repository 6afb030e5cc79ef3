"""Critic ensembles: several trained critics combined per (candidate, reference) pair into one critic.

>>> from capeval.critic.critic_ensemble import ensemble_scores
>>> ensemble_scores(["a dog runs on the grass"], [["a brown dog runs", "a dog in a field"]], images=["dog.jpg"],
...                 path="out/critic-ensemble")
array([0.87])

Per (candidate, reference) pair, with ``P_k`` member ``k``'s P(human | its context) (:func:`critic_pairs`)::

    score(candidate, reference) = sigmoid(w_1 * logit(P_1) + ... + w_K * logit(P_K) + c)

and a candidate's score is the mean over its references, as a single critic's (in [0, 1]). A member that reads no
reference gives the same log-odds to each of a candidate's pairs; the ensemble reads an image when any member does
and a reference when any member does (its ``context``). No other model is involved: this is still a critic.

The weights are a logistic regression (:func:`~capeval.critic.combine.fit_logistic`: Newton's method,
deterministic) of human (1) vs. negative (0) on **Flickr8k dev** pairs built as the critics' training dev pairs
(:func:`capeval.critic.data.fixed_pairs`): every dev caption once as a human candidate and one negative with the same
context (a random other caption of the image), drawn from a negative mix (default RC 3 : WP 1 : RW 1, the mix the
shipped caption-level critics were trained on). Nothing is fitted on a benchmark's judgments or images.
:func:`fit_ensemble` / ``capeval critic fit-ensemble`` write ``ensemble.json`` (:class:`CriticEnsemble`); the
folder is then a critic for the ``critic`` / ``critic_ref`` / ``critic_img`` metrics (``critic_model=FOLDER``). The
ensemble once measured (``critic-flickr8k-ensemble``: ``critic-flickr8k-robust`` + ``critic-coco-ref``) is retired;
its numbers stay in docs/benchmarks/measurements.md.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.critic.combine import (check_feature_settings, fit_logistic, fit_report, read_tagged_json, sigmoid,
                                    write_tagged_json)
from capeval.critic.scoring import (critic_folder, critic_pairs, encode_images, load_critic, mean_per_candidate,
                                    member_folder)

ENSEMBLE_FILE = "ensemble.json"
FORMAT = "capeval-critic-ensemble"
FORMULA = "sigmoid(sum_k w_k * logit(P_k) + c) per (candidate, reference) pair, averaged over the references"
DEFAULT_FIT_MIX = {"RC": 3.0, "WP": 1.0, "RW": 1.0}


def is_ensemble(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a critic ensemble (an ``ensemble.json``) rather than one critic."""
    return (Path(folder) / ENSEMBLE_FILE).is_file()


def context_of(models: Sequence[Any]) -> str:
    """The context an ensemble of ``models`` reads: an image when any member does, a reference when any does."""
    image = any(m.config.uses_image for m in models)
    reference = any(m.config.uses_reference for m in models)
    return "image+reference" if image and reference else "image" if image else "reference"


@dataclass
class CriticEnsemble:
    """The weights of ``sigmoid(sum_k w_k logit(P_k) + c)`` and the critics they combine (module docstring).

    ``critics``: shipped critic names or folders (relative to the ensemble's folder when they name one there);
    ``weights``: one per critic; ``intercept``: ``c``; ``fit``: how the weights were fitted (data, seed, dev numbers).
    """

    critics: list[str]
    weights: list[float]
    intercept: float
    fit: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.critics = [str(c) for c in self.critics]
        self.weights = [float(w) for w in self.weights]
        self.intercept = float(self.intercept)
        if not self.critics or len(self.critics) != len(self.weights):
            raise ValueError(f"a critic ensemble needs one weight per critic and at least one critic; got "
                             f"{len(self.critics)} critics, {len(self.weights)} weights.")
        if not np.isfinite([*self.weights, self.intercept]).all():
            raise ValueError(f"the ensemble's weights must be finite numbers, got {self.weights}, {self.intercept}.")

    def log_odds(self, member_log_odds: np.ndarray) -> np.ndarray:
        """``sum_k w_k x[:, k] + c`` of the members' per-pair log-odds ``[pairs, K]`` (float64)."""
        x = np.asarray(member_log_odds, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.weights):
            raise ValueError(f"expected member log-odds of shape [pairs, {len(self.weights)}], got {x.shape}.")
        return x @ np.asarray(self.weights) + self.intercept

    def probability(self, member_log_odds: np.ndarray) -> np.ndarray:
        """The per-pair score ``sigmoid(log_odds)`` in [0, 1] (float64)."""
        return sigmoid(self.log_odds(member_log_odds))

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": 1, "formula": FORMULA, "critics": self.critics,
                "weights": self.weights, "intercept": self.intercept, "fit": self.fit}

    def save(self, folder: str | os.PathLike) -> Path:
        return write_tagged_json(folder, ENSEMBLE_FILE, self.to_json())

    @classmethod
    def load(cls, folder: str | os.PathLike) -> CriticEnsemble:
        data = read_tagged_json(folder, ENSEMBLE_FILE, FORMAT, "a critic ensemble", "`capeval critic fit-ensemble`")
        try:
            return cls(list(data["critics"]), list(data["weights"]), data["intercept"], fit=dict(data.get("fit", {})))
        except (KeyError, TypeError) as err:
            raise ValueError(f"{Path(folder) / ENSEMBLE_FILE}: malformed critic ensemble ({err!r}).") from err

    def critic_paths(self, folder: str | os.PathLike | None = None) -> list[Path]:
        """The members' folders: each name relative to ``folder`` when it names a folder there, else a shipped
        critic's name or a path as given."""
        return [member_folder(name, folder) for name in self.critics]


def ensemble_folder(path: str | os.PathLike | None) -> Path:
    """The folder of an ensemble (``ValueError`` when ``path`` is ``None``: no ensemble ships with capeval)."""
    if path is None:
        raise ValueError("no critic ensemble ships with capeval: give the folder of one (`capeval critic "
                         "fit-ensemble --out DIR`).")
    return critic_folder(path)


def load_ensemble(path: str | os.PathLike | None, device: Any = None):
    """``(ensemble, [(model, vocab), ...])`` of the ensemble folder ``path``; the member critics are kept loaded per
    process (:func:`~capeval.critic.scoring.load_critic`)."""
    folder = ensemble_folder(path)
    ensemble = CriticEnsemble.load(folder)
    members = []
    for member in ensemble.critic_paths(folder):
        if is_ensemble(member):
            raise ValueError(f"{folder}: member {member} is itself an ensemble; list its critics instead.")
        members.append(load_critic(member, device=device))
    return ensemble, members


@dataclass(frozen=True)
class MemberLogOdds:
    """Each member's log-odds on every (candidate, reference) pair (``[pairs, K]``), pairs candidate by candidate."""

    item: np.ndarray  # the candidate's index per pair
    log_odds: np.ndarray
    candidates: int

    def mean(self, values: np.ndarray) -> np.ndarray:
        """Per-pair ``values`` averaged per candidate (float64 ``[candidates]``)."""
        return mean_per_candidate(self.item, values, self.candidates)


def member_log_odds(candidates: Sequence[str], references: Sequence[Sequence[str]] | None, *,
                    members: Sequence[tuple[Any, Any]], images: Sequence[Any] | None = None,
                    image_features: Any = None, batch_size: int = 4096,
                    progress_bar: bool | None = None) -> MemberLogOdds:
    """The log-odds of every member critic on the ensemble's pairs: one pair per reference when any member reads a
    reference (a member that does not repeats its candidate's log-odds), else one per candidate. Images (or
    ``image_features``, shared by the members that read an image) as :func:`critic_pairs`."""
    n = len(candidates)
    models = [m for m, _ in members]
    uses_reference = any(m.config.uses_reference for m in models)
    if uses_reference:
        if references is None or len(references) != n:
            raise ValueError(f"this critic ensemble reads references: give one list per candidate ({n}).")
        for i, refs in enumerate(references):
            if not refs:
                raise ValueError(f"references[{i}] is empty: the critic needs at least one reference as context.")
        item = np.concatenate([np.full(len(refs), i) for i, refs in enumerate(references)]) if n else \
            np.zeros(0, dtype=np.int64)
    else:
        item = np.arange(n)
    readers = [m for m in models if m.config.uses_image]
    encoders = {(m.config.encoder, str(m.config.encoder_resolution), m.config.image_dim) for m in readers}
    if image_features is None and images is not None and len(readers) > 1 and len(encoders) == 1:
        if len(images) != n:
            raise ValueError(f"this critic ensemble reads images: give one per candidate ({n}); got {len(images)}.")
        image_features = encode_images(readers[0], images, progress_bar=progress_bar)  # once for every reader
    columns = []
    for model, vocab in members:
        reads_image = model.config.uses_image
        pairs = critic_pairs(candidates, references if model.config.uses_reference else None,
                             images=images if reads_image else None,
                             image_features=image_features if reads_image else None, model=model, vocab=vocab,
                             batch_size=batch_size, progress_bar=progress_bar)
        columns.append(pairs.log_odds if model.config.uses_reference or not uses_reference else pairs.log_odds[item])
    log_odds = np.stack(columns, axis=1) if n else np.zeros((0, len(members)))
    return MemberLogOdds(item, log_odds, n)


def ensemble_scores(candidates: Sequence[str], references: Sequence[Sequence[str]] | None = None, *,
                    images: Sequence[Any] | None = None, image_features: Any = None,
                    path: str | os.PathLike | None = None, ensemble: CriticEnsemble | None = None,
                    members: Sequence[tuple[Any, Any]] | None = None, device: Any = None, batch_size: int = 4096,
                    progress_bar: bool | None = None) -> np.ndarray:
    """The ensemble's score of each candidate in [0, 1] (float64 ``[n]``; see the module docstring).

    ``path``: an ensemble folder, whose critics are loaded;
    or give ``ensemble`` and ``members`` (``[(model, vocab), ...]`` in the ensemble's order) yourself.
    """
    if ensemble is None or members is None:
        loaded, loaded_members = load_ensemble(path, device)
        ensemble = loaded if ensemble is None else ensemble
        members = loaded_members if members is None else members
    if len(members) != len(ensemble.weights):
        raise ValueError(f"the ensemble has {len(ensemble.weights)} weights but {len(members)} critics were given.")
    odds = member_log_odds(candidates, references, members=members, images=images, image_features=image_features,
                           batch_size=batch_size, progress_bar=progress_bar)
    out = odds.mean(ensemble.probability(odds.log_odds))
    if not np.isfinite(out).all():
        raise ValueError("the critic ensemble produced a non-finite score (a damaged model or ensemble file?).")
    return out


# -- fitting ------------------------------------------------------------------------------------------------------


def fit_ensemble(features, dev: Mapping[str, Sequence[str]], critics: Sequence[str | os.PathLike], *,
                 mix: str | Mapping[str, float] = DEFAULT_FIT_MIX, vocabulary: Sequence[str] = (), seed: int = 0,
                 device: Any = None, batch_size: int = 4096, progress_bar: bool | None = None,
                 description: str = "Flickr8k dev") -> CriticEnsemble:
    """Fit the ensemble's weights on ``dev`` (``{image: [human captions]}``; Flickr8k dev for the shipped one) with
    ``features`` (a :class:`~capeval.models.feature_table.FeatureTable` holding the dev images, for RC neighbours and
    the members that read an image) and the member ``critics`` (shipped names or folders, recorded as given).

    ``mix``: the negatives (:func:`capeval.critic.data.resolve_mix`; no system / sample captions);
    ``vocabulary``: RW's replacement words (the members' training words); ``seed`` draws contexts and negatives.
    """
    from capeval.critic.data import fixed_pairs, resolve_mix

    if len(critics) < 1:
        raise ValueError("fit_ensemble needs at least one critic.")
    members = [load_critic(c, device=device) for c in critics]
    features = features.pooled()
    names = sorted(dev)
    features.check(names)
    for model, _ in members:
        if model.config.uses_image:
            check_feature_settings(model, features)
    weights_of_mix = resolve_mix(mix)
    if "RW" in weights_of_mix and not vocabulary:
        raise ValueError("the negative mix has RW: give vocabulary= (the members' training words).")
    pairs = fixed_pairs(dev, features, mix=mix, seed=seed, vocabulary=vocabulary)
    if not pairs:
        raise ValueError("no dev pairs: the dev images need at least 2 captions each.")
    examples = [e for pair in pairs for e in pair]
    needs_image = any(m.config.uses_image for m, _ in members)
    image_features = features.rows([e.image for e in examples]) if needs_image else None
    odds = member_log_odds([e.candidate for e in examples], [[e.reference] for e in examples], members=members,
                           image_features=image_features, batch_size=batch_size, progress_bar=progress_bar)
    y = np.array([e.label for e in examples], dtype=np.float64)
    w = fit_logistic(odds.log_odds, y)
    ensemble = CriticEnsemble([str(c) for c in critics], list(w[:-1]), float(w[-1]))
    sources = sorted({e.source for e in examples} - {"human"})
    mix_text = mix if isinstance(mix, str) else ",".join(f"{k}={float(v):g}" for k, v in mix.items())
    ensemble.fit = {
        "data": f"{description}: {len(names)} images, every caption once as a human candidate (label 1) and one "
                f"negative (label 0) with the same context, a random other caption of the image "
                f"(capeval.critic.data.fixed_pairs, mix {mix_text}, seed {seed})",
        "images": len(names), "examples": len(examples), "mix": mix_text, "negative_sources": sources, "seed": seed,
        "method": "logistic regression, Newton's method (capeval.critic.combine.fit_logistic, l2 1e-6)",
        "features": "each critic's log-odds (logit of P(human) from its two logits)",
        "context": context_of([m for m, _ in members]),
        "dev": fit_report(ensemble.log_odds(odds.log_odds), y),
        "dev_members_alone": {str(c): fit_report(odds.log_odds[:, k], y) for k, c in enumerate(critics)},
        "note": "the dev numbers are in-sample (the weights were fitted on these examples); a member whose epoch "
                "was selected on the same dev split carries that selection too",
    }
    return ensemble


__all__ = ["CriticEnsemble", "ENSEMBLE_FILE", "MemberLogOdds", "context_of", "ensemble_folder",
           "ensemble_scores", "fit_ensemble", "is_ensemble", "load_ensemble", "member_log_odds"]
