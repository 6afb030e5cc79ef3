"""Critic stacks: trained critics, and optionally a sentence-embedding cosine, combined per (candidate, reference)
pair by a logistic regression fitted on Flickr8k dev. One concept, two uses:

* ``critic_plus`` (one critic + the cosine, all-MiniLM-L6-v2 by default; the bundled ``critic-flickr8k-plus``)::

      score(candidate, reference) = sigmoid(a * logit(P) + b * cos + c)

* a critic ensemble (several critics, no cosine; ``capeval critic fit-ensemble``; the folder is then a
  ``critic_model`` like any critic)::

      score(candidate, reference) = sigmoid(w_1 * logit(P_1) + ... + w_K * logit(P_K) + c)

A candidate's score is the mean over its references, in [0, 1], as a single critic's. ``logit(P_k)`` is read from
critic ``k``'s two logits (finite where ``P`` rounds to 0 or 1); a member that reads no reference gives the same
log-odds to each of a candidate's pairs; the stack reads an image when any member does and a reference when any member
does or the cosine is used. No vision-language model is involved: the image only enters through the critics.

Weights (:func:`fit_stack`: Newton's method from zero, deterministic, :func:`fit_logistic`) are fitted on human (1)
vs negative (0) pairs of Flickr8k dev built as the critics' training dev pairs (:func:`capeval.critic.data.
fixed_pairs`): every dev caption once as a human candidate and one negative with the same context (a random other
caption of the image), from a negative mix (``caption`` = RC only for ``critic_plus``; RC 3 : WP 1 : RW 1 for the
ensembles). Nothing is fitted on a benchmark's judgments or images.

Stored forms (:meth:`CriticStack.save` / :meth:`CriticStack.load`): ``combiner.json`` (format ``capeval-critic-plus``:
weights ``a, b, c``, one critic, the sentence encoder) for a one-critic stack with the cosine, ``ensemble.json``
(format ``capeval-critic-ensemble``: critics, weights, intercept) otherwise. :func:`load_scorer` turns any
``critic_model`` (a critic folder, a stack folder, a catalog name) into one :class:`CriticScorer`, so the metrics never
branch on the storage form.

All numpy around the critics; log-odds in (-inf, inf), probabilities in [0, 1], losses in nats per example.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.critic.loading import critic_folder, load_critic, member_folder, model_label, weights_digest
from capeval.critic.scoring import critic_pairs, encode_images, mean_per_candidate

ENSEMBLE_FILE = "ensemble.json"
COMBINER_FILE = "combiner.json"
_FORMATS = {ENSEMBLE_FILE: "capeval-critic-ensemble", COMBINER_FILE: "capeval-critic-plus"}
FORMULA_ENSEMBLE = "sigmoid(sum_k w_k * logit(P_k) + c) per (candidate, reference) pair, averaged over the references"
FORMULA_PLUS = "sigmoid(a * logit(P_critic) + b * cos_sentence + c), averaged over the references"
#: The negatives an ensemble's weights are fitted on by default (those of the caption-level critics).
DEFAULT_ENSEMBLE_MIX = {"RC": 3.0, "WP": 1.0, "RW": 1.0}


# -- the logistic fit -------------------------------------------------------------------------------------------


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow, in [0, 1]."""
    return np.exp(-np.logaddexp(0.0, -z))


def log_loss(z: np.ndarray, y: np.ndarray) -> float:
    """Mean cross-entropy of labels ``y`` (0/1) under log-odds ``z`` (computed without overflow)."""
    z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(np.mean(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z)))


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-6, max_iter: int = 100,
                 tol: float = 1e-10) -> np.ndarray:
    """Logistic regression of ``y`` (0/1) on the columns of ``x`` plus an intercept, by Newton's method from zero
    (deterministic); ``l2`` (on the mean log-loss, intercept excluded) keeps separable data finite.
    Returns ``[w_1 .. w_k, intercept]``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"fit_logistic needs as many labels as rows (> 0), got {x.shape[0]} rows, {y.shape[0]} labels.")
    if not np.isin(y, (0.0, 1.0)).all() or len(np.unique(y)) < 2:
        raise ValueError("fit_logistic needs labels 0 and 1, both present.")
    if not np.isfinite(x).all():
        raise ValueError("fit_logistic: the features hold NaN or infinite values.")
    design = np.hstack([x, np.ones((x.shape[0], 1))])
    penalty = np.full(design.shape[1], float(l2))
    penalty[-1] = 0.0
    w = np.zeros(design.shape[1])
    m = design.shape[0]
    for _ in range(max_iter):
        p = sigmoid(design @ w)
        grad = design.T @ (p - y) / m + penalty * w
        hess = (design * (p * (1 - p))[:, None]).T @ design / m + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(w)), grad)
        w = w - step
        if np.max(np.abs(step)) < tol:
            break
    return w


def fit_report(z: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Accuracy (``z > 0`` = human), mean log-loss and pair accuracy of log-odds ``z`` on labels ``y``, stored as
    (human, negative) pairs one after the other (pair accuracy: the human caption scores higher; ties count half)."""
    z = np.asarray(z, dtype=np.float64)
    pos, neg = z[0::2], z[1::2]
    assert (y[0::2] == 1).all() and (y[1::2] == 0).all()
    return {"accuracy": float(((z > 0) == (y == 1)).mean()), "log_loss": log_loss(z, y),
            "pair_accuracy": float(np.mean((pos > neg) + 0.5 * (pos == neg)))}


def check_feature_settings(model: Any, features) -> None:
    """``ValueError`` when ``features`` (a feature table) were made with another image encoder or resolution than
    the one the critic ``model`` reads."""
    settings = features.encoder_settings()
    want = {"encoder": model.config.encoder, "encoder_resolution": model.config.encoder_resolution}
    clash = {k: (settings[k], v) for k, v in want.items() if k in settings and settings[k] != v}
    if clash:
        raise ValueError(f"the features were made with {clash} (features, critic): the critic reads other ones.")


# -- the weights and their files --------------------------------------------------------------------------------


@dataclass
class CriticStack:
    """``sigmoid(sum_k weights[k] * logit(P_k) + cosine_weight * cos + intercept)`` (module docstring).

    ``critics``: catalog names or folders (relative to the stack's folder when they name one there); ``weights``: one
    per critic; ``cosine_weight`` / ``sentence_encoder``: the cosine's weight and encoder (a
    :func:`~capeval.models.sentence_encoder.load_sentence_encoder` name), both ``None`` without a cosine; ``fit``:
    how the weights were fitted (data, seed, dev numbers).
    """

    critics: list[str]
    weights: list[float]
    intercept: float
    cosine_weight: float | None = None
    sentence_encoder: str | None = None
    fit: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.critics = [str(c) for c in self.critics]
        self.weights = [float(w) for w in self.weights]
        self.intercept = float(self.intercept)
        if not self.critics or len(self.critics) != len(self.weights):
            raise ValueError(f"a critic stack needs one weight per critic and at least one critic; got "
                             f"{len(self.critics)} critics, {len(self.weights)} weights.")
        if (self.cosine_weight is None) != (self.sentence_encoder is None):
            raise ValueError("give both cosine_weight and sentence_encoder, or neither.")
        if self.cosine_weight is not None:
            self.cosine_weight = float(self.cosine_weight)
        numbers = [*self.weights, self.intercept] + ([self.cosine_weight] if self.uses_cosine else [])
        if not np.isfinite(numbers).all():
            raise ValueError(f"the stack's weights must be finite numbers, got {numbers}.")

    @classmethod
    def plus(cls, a: float, b: float, c: float, *, critic: str, sentence_encoder: str | None = None,
             fit: dict[str, Any] | None = None) -> CriticStack:
        """The ``critic_plus`` form: ``sigmoid(a * logit(P) + b * cos + c)`` over one ``critic``."""
        from capeval.models.sentence_encoder import DEFAULT_SENTENCE_ENCODER

        return cls([critic], [a], c, cosine_weight=b, sentence_encoder=sentence_encoder or DEFAULT_SENTENCE_ENCODER,
                   fit=dict(fit or {}))

    @property
    def uses_cosine(self) -> bool:
        return self.cosine_weight is not None

    @property
    def file_name(self) -> str:
        """The file the stack is stored in: ``combiner.json`` for the critic_plus form, else ``ensemble.json``."""
        return COMBINER_FILE if self.uses_cosine and len(self.critics) == 1 else ENSEMBLE_FILE

    def log_odds(self, member_log_odds: np.ndarray, cosine: np.ndarray | None = None) -> np.ndarray:
        """``sum_k w_k x[:, k] (+ b cos) + c`` of the members' per-pair log-odds ``[pairs, K]`` (float64)."""
        x = np.asarray(member_log_odds, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.weights):
            raise ValueError(f"expected member log-odds of shape [pairs, {len(self.weights)}], got {x.shape}.")
        z = x @ np.asarray(self.weights) + self.intercept
        if self.uses_cosine:
            if cosine is None or len(cosine) != len(z):
                raise ValueError("this stack reads the sentence cosine of every pair: give cosine= ([pairs]).")
            z = z + self.cosine_weight * np.asarray(cosine, dtype=np.float64)
        return z

    def probability(self, member_log_odds: np.ndarray, cosine: np.ndarray | None = None) -> np.ndarray:
        """The per-pair score ``sigmoid(log_odds)`` in [0, 1] (float64)."""
        return sigmoid(self.log_odds(member_log_odds, cosine))

    def to_json(self) -> dict[str, Any]:
        if self.file_name == COMBINER_FILE:
            return {"format": _FORMATS[COMBINER_FILE], "version": 1, "formula": FORMULA_PLUS,
                    "weights": {"a": self.weights[0], "b": self.cosine_weight, "c": self.intercept},
                    "critic": self.critics[0], "sentence_encoder": self.sentence_encoder, "fit": self.fit}
        out = {"format": _FORMATS[ENSEMBLE_FILE], "version": 1, "formula": FORMULA_ENSEMBLE, "critics": self.critics,
               "weights": self.weights, "intercept": self.intercept, "fit": self.fit}
        if self.uses_cosine:
            out.update(cosine_weight=self.cosine_weight, sentence_encoder=self.sentence_encoder)
        return out

    def save(self, folder: str | os.PathLike) -> Path:
        """Write ``folder/combiner.json`` or ``folder/ensemble.json`` (:attr:`file_name`); return the path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.file_name
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike) -> CriticStack:
        """The stack of ``folder`` (either stored form). ``FileNotFoundError`` naming the commands that make one;
        ``ValueError`` for another kind of file or malformed weights."""
        folder = Path(folder)
        found = [name for name in (COMBINER_FILE, ENSEMBLE_FILE) if (folder / name).is_file()]
        if not found:
            raise FileNotFoundError(f"{folder} holds no {COMBINER_FILE} or {ENSEMBLE_FILE}; make one with "
                                    "`capeval critic fit-plus` or `capeval critic fit-ensemble`.")
        path = folder / found[0]
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != _FORMATS[found[0]]:
            got = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"{path} is not a critic stack (format {got!r}).")
        try:
            if found[0] == COMBINER_FILE:
                w = data["weights"]
                return cls.plus(w["a"], w["b"], w["c"], critic=str(data["critic"]),
                                sentence_encoder=str(data["sentence_encoder"]), fit=dict(data.get("fit", {})))
            return cls(list(data["critics"]), list(data["weights"]), data["intercept"],
                       cosine_weight=data.get("cosine_weight"), sentence_encoder=data.get("sentence_encoder"),
                       fit=dict(data.get("fit", {})))
        except (KeyError, TypeError) as err:
            raise ValueError(f"{path}: malformed critic stack ({err!r}).") from err
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None

    def member_paths(self, folder: str | os.PathLike | None = None) -> list[Path]:
        """The critics' folders: each name relative to ``folder`` when it names a folder there, else a catalog name
        or a path as given."""
        return [member_folder(name, folder) for name in self.critics]


def is_stack(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a critic stack (``combiner.json`` or ``ensemble.json``) rather than one critic."""
    return any((Path(folder) / name).is_file() for name in (COMBINER_FILE, ENSEMBLE_FILE))


def context_of(models: Sequence[Any]) -> str:
    """The context critics ``models`` read together: an image when any does, a reference when any does."""
    image = any(m.config.uses_image for m in models)
    reference = any(m.config.uses_reference for m in models)
    return "image+reference" if image and reference else "image" if image else "reference"


# -- features and scores ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StackFeatures:
    """A stack's inputs on each pair, candidate by candidate: ``item`` (the candidate's index), ``log_odds``
    (``[pairs, K]``, one column per critic) and ``cosine`` (``[pairs]``, ``None`` without the cosine)."""

    item: np.ndarray
    log_odds: np.ndarray
    cosine: np.ndarray | None
    candidates: int

    def mean(self, values: np.ndarray) -> np.ndarray:
        """Per-pair ``values`` averaged per candidate (float64 ``[candidates]``)."""
        return mean_per_candidate(self.item, values, self.candidates)


def stack_features(candidates: Sequence[str], references: Sequence[Sequence[str]] | None, *,
                   members: Sequence[tuple[Any, Any]], encoder: Any = None, images: Sequence[Any] | None = None,
                   image_features: Any = None, batch_size: int = 4096,
                   progress_bar: bool | None = None, oov: str = "unk") -> StackFeatures:
    """Every member's log-odds (and, with ``encoder``, the sentence cosine) on the stack's pairs: one pair per
    reference when the cosine is read or any member reads a reference, else one per candidate. Images (or
    ``image_features``, shared by the members that read an image: encoded once) as
    :func:`~capeval.critic.scoring.critic_pairs`."""
    n = len(candidates)
    models = [m for m, _ in members]
    per_reference = encoder is not None or any(m.config.uses_reference for m in models)
    if per_reference:
        if references is None or len(references) != n:
            raise ValueError(f"this critic stack reads references: give one list per candidate ({n}).")
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
            raise ValueError(f"this critic stack reads images: give one per candidate ({n}); got {len(images)}.")
        image_features = encode_images(readers[0], images, progress_bar=progress_bar)  # once for every reader
    columns = []
    for model, vocab in members:
        reads_image = model.config.uses_image
        pairs = critic_pairs(candidates, references if model.config.uses_reference else None,
                             images=images if reads_image else None,
                             image_features=image_features if reads_image else None, model=model, vocab=vocab,
                             batch_size=batch_size, progress_bar=progress_bar, oov=oov)
        columns.append(pairs.log_odds if model.config.uses_reference or not per_reference else pairs.log_odds[item])
    log_odds = np.stack(columns, axis=1) if n else np.zeros((0, len(members)))
    cosine = None
    if encoder is not None:
        flat_refs = [r for refs in references for r in refs]
        cosine = encoder.similarity([candidates[i] for i in item], flat_refs, progress_bar=progress_bar) if n else \
            np.zeros(0)
    return StackFeatures(item, log_odds, cosine, n)


@dataclass
class CriticScorer:
    """What a ``critic_model`` folder scores with: one critic (``stack is None``) or a stack, its loaded critics and
    sentence encoder. :meth:`scores` is the same call for both."""

    folder: Path
    stack: CriticStack | None
    members: list[tuple[Any, Any]]
    encoder: Any = None

    @property
    def models(self) -> list[Any]:
        return [m for m, _ in self.members]

    @property
    def context(self) -> str:
        """``image+reference``, ``reference`` or ``image``: what the critics read (a cosine reads references)."""
        context = context_of(self.models)
        if self.encoder is not None and context == "image":
            return "image+reference"
        return context

    @property
    def image_optional(self) -> bool:
        """A single critic trained with ``image_optional``: it scores without an image (its "no image" vector)."""
        return self.stack is None and bool(self.models[0].config.image_optional)

    def scores(self, candidates: Sequence[str], references: Sequence[Sequence[str]] | None, *,
               images: Sequence[Any] | None = None, image_features: Any = None, batch_size: int = 4096,
               progress_bar: bool | None = None, oov: str = "unk") -> np.ndarray:
        """Each candidate's score in [0, 1] (float64 ``[n]``): the critic's P(human), or the stack's formula.
        ``oov``: :mod:`capeval.critic.expansion`."""
        if self.stack is None:
            model, vocab = self.members[0]
            pairs = critic_pairs(candidates, references, images=images, image_features=image_features, model=model,
                                 vocab=vocab, batch_size=batch_size, progress_bar=progress_bar, oov=oov)
            return pairs.mean(pairs.probability)
        # a stack in steps of candidates, as critic_pairs scores one critic: its cosines and every member's pairs are
        # held for one step at a time (memory flat in the number of candidates)
        from capeval.critic import scoring

        n, step = len(candidates), scoring.STEP_CANDIDATES
        if n <= step:
            return _stack_scores(self.stack, self.members, self.encoder, candidates, references, images=images,
                                 image_features=image_features, batch_size=batch_size, progress_bar=progress_bar,
                                 oov=oov)

        def part(values, lo, hi):
            return None if values is None else [values[i] for i in range(lo, hi)]

        return np.concatenate([
            _stack_scores(self.stack, self.members, self.encoder, part(candidates, lo, min(n, lo + step)),
                          part(references, lo, min(n, lo + step)), images=part(images, lo, min(n, lo + step)),
                          image_features=None if image_features is None else image_features[lo:lo + step],
                          batch_size=batch_size, progress_bar=progress_bar, oov=oov)
            for lo in range(0, n, step)])

    def member_folders(self) -> list[Path]:
        return [] if self.stack is None else self.stack.member_paths(self.folder)

    def coverage(self, candidates: Sequence[str], references: Sequence[Sequence[str]] | None, oov: str = "unk"):
        """The vocabulary coverage of ``candidates`` (and ``references`` when given) for these critics: each
        critic's vocabulary over the tokens it reads (the first ``max_length`` of each text), the lowest of them
        (:mod:`capeval.coverage`); baselines from the critics' ``training.json``. With ``oov="glove-map"`` a word
        with a GloVe vector counts as known (:mod:`capeval.critic.expansion`)."""
        from capeval.coverage import lowest, measure
        from capeval.critic.vocab import critic_tokens

        folders = self.member_folders() or [self.folder]
        found = []
        for (model, vocab), folder in zip(self.members, folders):
            cut = vocab.max_length
            items = [[critic_tokens(c)[:cut], *([critic_tokens(r)[:cut] for r in refs] if references is not None
                                                 else [])]
                     for c, refs in zip(candidates, references if references is not None else [()] * len(candidates))]
            label = f"{model_label(folder)}'s vocabulary ({len(vocab) - 4:,} words)"
            if oov == "glove-map":
                from capeval.critic.expansion import expansion_for

                expansion = expansion_for(model, vocab)
                found.append(measure(items, expansion.known, baseline=training_coverage(folder),
                                     vocabulary=f"{label} and GloVe's, mapped", effect="they share one unknown vector"))
            else:
                found.append(measure(items, vocab.index, baseline=training_coverage(folder), vocabulary=label))
        return lowest(found)

    def digest(self) -> str:
        """The digest of every file that changes the scores (the stack's and its critics')."""
        return weights_digest(self.folder, *self.member_folders())

    def label(self) -> str:
        """How signatures name it: a catalog name, else ``<folder name>@<digest>``."""
        return model_label(self.folder, *self.member_folders())


def training_coverage(folder: str | os.PathLike) -> float | None:
    """The vocabulary coverage of a critic's training captions, as its ``training.json`` records it
    (``vocabulary_coverage.share``), or ``None``."""
    import json

    path = Path(folder) / "training.json"
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("vocabulary_coverage") or {}
    except (OSError, ValueError):
        return None
    share = value.get("share") if isinstance(value, dict) else None
    return float(share) if isinstance(share, (int, float)) else None


def load_scorer(path: str | os.PathLike | None = None, context: str = "image+reference", *, device: Any = None,
                default: str | None = None) -> CriticScorer:
    """The :class:`CriticScorer` of ``path`` (a critic or stack folder, or a catalog name; ``None``: ``default``, else
    the catalog's critic of ``context``). Critics and encoders stay loaded per process; a stack's sentence encoder
    keeps its vectors in capeval's sentence-vector cache (:mod:`capeval.models.sentence_cache`)."""
    folder = critic_folder(default if path is None and default is not None else path, context)
    if not is_stack(folder):
        return CriticScorer(folder, None, [load_critic(folder, context, device)])
    stack = CriticStack.load(folder)
    members = []
    for member in stack.member_paths(folder):
        if is_stack(member):
            raise ValueError(f"{folder}: member {member} is itself a critic stack; list its critics instead.")
        members.append(load_critic(member, device=device))
    encoder = None
    if stack.uses_cosine:
        from capeval.models.sentence_cache import cached_sentence_encoder

        encoder = cached_sentence_encoder(stack.sentence_encoder, device=device)
    return CriticScorer(folder, stack, members, encoder)


def stack_scores(candidates: Sequence[str], references: Sequence[Sequence[str]] | None = None, *,
                 images: Sequence[Any] | None = None, image_features: Any = None,
                 path: str | os.PathLike | None = None, stack: CriticStack | None = None,
                 members: Sequence[tuple[Any, Any]] | None = None, encoder: Any = None, device: Any = None,
                 batch_size: int = 4096, progress_bar: bool | None = None) -> np.ndarray:
    """A stack's score of each candidate in [0, 1] (float64 ``[n]``; see the module docstring).

    ``path``: a stack folder (or catalog name), whose critics and encoder are loaded; or give ``stack``, ``members``
    (``[(model, vocab), ...]`` in the stack's order) and, for a cosine, ``encoder`` (anything with ``similarity(a, b)
    -> cosines``) yourself.
    """
    if stack is None or members is None or (stack.uses_cosine and encoder is None):
        if path is None and stack is None:
            raise ValueError("give the folder of a critic stack (path=) or stack= and members=.")
        loaded = load_scorer(path, device=device) if path is not None else None
        if loaded is not None and loaded.stack is None:
            raise ValueError(f"{loaded.folder} is a single critic, not a stack: score it with critic_scores.")
        stack = stack if stack is not None else loaded.stack
        members = members if members is not None else loaded.members
        encoder = encoder if encoder is not None else (loaded.encoder if loaded is not None else None)
    if len(members) != len(stack.weights):
        raise ValueError(f"the stack has {len(stack.weights)} weights but {len(members)} critics were given.")
    if stack.uses_cosine and encoder is None:
        raise ValueError("this stack reads the sentence cosine: give encoder= (or path=).")
    return _stack_scores(stack, members, encoder if stack.uses_cosine else None, candidates, references,
                         images=images, image_features=image_features, batch_size=batch_size,
                         progress_bar=progress_bar)


def _stack_scores(stack: CriticStack, members, encoder, candidates, references, **kwargs) -> np.ndarray:
    """The stack's formula averaged per candidate (float64 ``[n]``); ``ValueError`` for a non-finite score."""
    feats = stack_features(candidates, references, members=members, encoder=encoder, **kwargs)
    out = feats.mean(stack.probability(feats.log_odds, feats.cosine))
    if not np.isfinite(out).all():
        raise ValueError("the critic stack produced a non-finite score (a damaged model or stack file?).")
    return out


# -- fitting ------------------------------------------------------------------------------------------------------


def fit_stack(features, dev: Mapping[str, Sequence[str]], critics: Sequence[str | os.PathLike], *,
              sentence_encoder: str | None = None, encoder: Any = None,
              mix: str | Mapping[str, float] = DEFAULT_ENSEMBLE_MIX, vocabulary: Sequence[str] = (), seed: int = 0,
              device: Any = None, batch_size: int = 4096, progress_bar: bool | None = None,
              description: str = "Flickr8k dev") -> CriticStack:
    """Fit a stack's weights on ``dev`` (``{image: [human captions]}``; Flickr8k dev for the shipped one) with
    ``features`` (a :class:`~capeval.models.feature_table.FeatureTable` holding the dev images, for RC neighbours and
    the critics that read an image) and ``critics`` (catalog names or folders, recorded as given).

    ``sentence_encoder`` (a name) or ``encoder`` (an object, tests) adds the cosine; ``mix``: the negatives
    (:func:`capeval.critic.data.resolve_mix`: ``"caption"`` for critic_plus, ``RC=3,WP=1,RW=1`` by default);
    ``vocabulary``: RW's replacement words (the critics' training words); ``seed`` draws contexts and negatives.
    """
    from capeval.critic.data import fixed_pairs, resolve_mix

    if len(critics) < 1:
        raise ValueError("a critic stack needs at least one critic.")
    members = [load_critic(c, device=device) for c in critics]
    features = features.pooled()
    names = sorted(dev)
    features.check(names)
    for model, _ in members:
        if model.config.uses_image:
            check_feature_settings(model, features)
    if "RW" in resolve_mix(mix) and not vocabulary:
        raise ValueError("the negative mix has RW: give vocabulary= (the critics' training words).")
    pairs = fixed_pairs(dev, features, mix=mix, seed=seed, vocabulary=vocabulary)
    if not pairs:
        raise ValueError("no dev pairs: the dev images need at least 2 captions each.")
    examples = [e for pair in pairs for e in pair]
    if encoder is None and sentence_encoder is not None:
        from capeval.models.sentence_encoder import load_sentence_encoder

        encoder = load_sentence_encoder(sentence_encoder, device=device)
    needs_image = any(m.config.uses_image for m, _ in members)
    image_features = features.rows([e.image for e in examples]) if needs_image else None
    feats = stack_features([e.candidate for e in examples], [[e.reference] for e in examples], members=members,
                           encoder=encoder, image_features=image_features, batch_size=batch_size,
                           progress_bar=progress_bar)
    y = np.array([e.label for e in examples], dtype=np.float64)
    columns = feats.log_odds if feats.cosine is None else np.hstack([feats.log_odds, feats.cosine[:, None]])
    w = fit_logistic(columns, y)
    k = len(members)
    stack = CriticStack([str(c) for c in critics], list(w[:k]), float(w[-1]),
                        cosine_weight=float(w[k]) if feats.cosine is not None else None,
                        sentence_encoder=getattr(encoder, "name", sentence_encoder) if encoder is not None else None)
    mix_text = mix if isinstance(mix, str) else ",".join(f"{key}={float(v):g}" for key, v in mix.items())
    report = {
        "data": f"{description}: {len(names)} images, every caption once as a human candidate (label 1) and one "
                f"negative (label 0) with the same context, a random other caption of the image "
                f"(capeval.critic.data.fixed_pairs, mix {mix_text}, seed {seed})",
        "images": len(names), "examples": len(examples), "mix": mix_text,
        "negative_sources": sorted({e.source for e in examples} - {"human"}), "seed": seed,
        "method": "logistic regression, Newton's method (capeval.critic.stack.fit_logistic, l2 1e-6)",
        "features": "each critic's log-odds (logit of P(human) from its two logits)"
                    + (", cosine of the sentence embeddings" if feats.cosine is not None else ""),
        "context": context_of([m for m, _ in members]),
        "dev": fit_report(stack.log_odds(feats.log_odds, feats.cosine), y),
        "dev_members_alone": {str(c): fit_report(feats.log_odds[:, j], y) for j, c in enumerate(critics)},
        "note": "the dev numbers are in-sample (the weights were fitted on these examples); a critic whose epoch "
                "was selected on the same dev split carries that selection too",
    }
    if feats.cosine is not None:
        cos_w = fit_logistic(feats.cosine, y)
        report["dev_cosine_alone"] = {**fit_report(cos_w[0] * feats.cosine + cos_w[1], y),
                                      "weights": [float(cos_w[0]), float(cos_w[1])]}
    stack.fit = report
    return stack


__all__ = ["COMBINER_FILE", "CriticScorer", "CriticStack", "DEFAULT_ENSEMBLE_MIX", "ENSEMBLE_FILE", "StackFeatures",
           "check_feature_settings", "context_of", "fit_logistic", "fit_report", "fit_stack", "is_stack",
           "load_scorer", "log_loss", "sigmoid", "stack_features", "stack_scores"]
