"""Vocabulary expansion for the critics: words outside a critic's vocabulary mapped into its trained embedding space
from their GloVe vectors, instead of all falling to one ``<unk>`` embedding (the vocabulary expansion of Kiros et al.
2015, "Skip-thought vectors" §3.3).

A critic's embeddings started from GloVe 6B 50-d and moved in training. :class:`VocabularyExpansion` fits one affine
map ``e ≈ g·W + b`` from the GloVe vector ``g`` to the trained embedding ``e`` of every vocabulary word that has a
GloVe vector (ridge least squares, :data:`RIDGE`, in float64: defined for any number of words; the shipped
``critic-flickr8k-joint`` fits it on 9,699 words with R² .965), then gives any other word with a GloVe vector (400,000
words) the embedding ``g·W + b``. Words without a GloVe vector stay ``<unk>``. The map is a fixed function of the
critic's weights and GloVe: a word gets the same embedding in every call, whatever else is scored.

Option ``critic_oov`` of the critic metrics: ``"unk"`` (the critic as trained) or ``"glove-map"`` (this expansion);
it enters the signature (``oov=glove-map``), and the vocabulary coverage then counts the mapped words as known.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.advice import Setting, with_words, words
from capeval.critic.vocab import EOS, UNK, CriticVocab, critic_tokens

OOV_MODES = ("unk", "glove-map")
#: Ridge penalty of the map (on the 50 GloVe dimensions and the bias), relative to the number of words fitted.
RIDGE = 1e-3


def check_oov(value: Any, option: str = "critic_oov") -> str:
    if value not in OOV_MODES:
        raise ValueError(f"{option} must be one of {list(OOV_MODES)}, got {value!r:.60}.")
    return value


def fit_map(glove_rows: np.ndarray, trained_rows: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """``[dim_g + 1, dim_e]`` float64: the affine map (last row: the bias) minimising
    ``|[G 1]·M − E|² + ridge·n·|M|²``."""
    x = np.hstack([np.asarray(glove_rows, dtype=np.float64), np.ones((len(glove_rows), 1))])
    y = np.asarray(trained_rows, dtype=np.float64)
    gram = x.T @ x + ridge * len(x) * np.eye(x.shape[1])
    return np.linalg.solve(gram, x.T @ y)


class VocabularyExpansion:
    """A critic's vocabulary plus every GloVe word, the latter embedded by the fitted map (module docstring).

    :meth:`encode` works as :meth:`CriticVocab.encode` but gives a GloVe word outside the vocabulary an id
    ``len(vocab) + k``; :attr:`extra` holds their embeddings (row ``k``), grown as new words appear (the array is
    rebuilt once per call that met new words, not once per word).
    """

    def __init__(self, vocab: CriticVocab, embeddings: np.ndarray, vectors):
        self.vocab, self.vectors = vocab, vectors
        fitted = [(i, vectors.index[w]) for i, w in enumerate(vocab.words) if i > EOS and w in vectors.index]
        if not fitted:  # (the ridge makes the map defined for any other number of words)
            raise with_words(ValueError, words("critic_oov", "no vocabulary word has a GloVe vector: the map cannot be "
                                               "fitted; use ", Setting("unk"), "."))
        glove = np.asarray(vectors.vectors[np.asarray([r for _, r in fitted])], dtype=np.float64)
        trained = np.asarray(embeddings, dtype=np.float64)[[i for i, _ in fitted]]
        self.map = fit_map(glove, trained)
        self.fitted_words = len(fitted)
        pred = np.hstack([glove, np.ones((len(glove), 1))]) @ self.map
        self.r2 = float(1 - ((pred - trained) ** 2).sum() / ((trained - trained.mean(0)) ** 2).sum())
        self.ids: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self._extra = np.zeros((0, self.map.shape[1]), dtype=np.float32)

    @property
    def extra(self) -> np.ndarray:
        """``[k, embed_dim]`` float32: the embeddings of the mapped words, row ``k`` for id ``len(vocab) + k``."""
        if len(self._extra) != len(self._rows):
            self._extra = np.asarray(self._rows, dtype=np.float32).reshape(len(self._rows), self.map.shape[1])
        return self._extra

    def known(self, word: str) -> bool:
        """Whether ``word`` has an embedding: in the vocabulary, or mapped from its GloVe vector."""
        return word in self.vocab.index or word in self.vectors.index

    def _id(self, token: str) -> int:
        i = self.vocab.index.get(token)
        if i is not None:
            return i
        i = self.ids.get(token)
        if i is not None:
            return i
        row = self.vectors.index.get(token)
        if row is None:
            return UNK
        vector = np.append(np.asarray(self.vectors.vectors[row], dtype=np.float64), 1.0) @ self.map
        self._rows.append(vector.astype(np.float32))
        self.ids[token] = i = len(self.vocab) + len(self.ids)
        return i

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids [n, max_length], lengths [n])`` as :meth:`CriticVocab.encode`, mapped words included."""
        width = self.vocab.max_length
        out = np.zeros((len(texts), width), dtype=np.int64)
        lengths = np.zeros(len(texts), dtype=np.int64)
        for k, text in enumerate(texts):
            ids = [self._id(t) for t in critic_tokens(text)][:width]
            ids = ids + [EOS] if len(ids) < width else ids
            out[k, :len(ids)] = ids
            lengths[k] = len(ids)
        return out, lengths


def expansion_for(model, vocab: CriticVocab) -> VocabularyExpansion:
    """The :class:`VocabularyExpansion` of a loaded critic (fitted once per model and process, kept with the loaded
    models: :mod:`capeval.loaded_models`)."""
    from capeval.loaded_models import load_once

    def fit() -> tuple[Any, VocabularyExpansion]:
        from capeval.models.word_vectors import load_word_vectors

        vectors = load_word_vectors(getattr(model.config, "word_vectors", None) or "glove-6b-50d")
        weights = model.embed.weight.detach().float().cpu().numpy()
        return model, VocabularyExpansion(vocab, weights, vectors)

    held = load_once("critic_expansion", (id(model), id(vocab)), fit)
    if held[0] is not model or held[1].vocab is not vocab:  # an id reused by another model after a clear
        from capeval.loaded_models import forget

        forget("critic_expansion")
        held = load_once("critic_expansion", (id(model), id(vocab)), fit)
    return held[1]


__all__ = ["OOV_MODES", "RIDGE", "VocabularyExpansion", "check_oov", "expansion_for", "fit_map"]
