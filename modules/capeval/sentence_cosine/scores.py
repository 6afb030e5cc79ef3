"""The functional core of ``sentence_cosine``: the cosine similarity of a candidate caption's sentence embedding with
each of its references' embeddings, reduced over the references.

>>> from capeval.sentence_cosine import sentence_cosine_scores
>>> scores = sentence_cosine_scores(["a dog runs on the grass", "🙂"],
...                                 [["a dog running on a lawn", "two cats on a sofa"], ["a cat"]], reduce="max")
>>> scores.shape, bool(0.5 < scores[0] <= 1), float(scores[1])  # the caption without words scores 0
((2,), True, 0.0)

Units and ranges: a caption's score is a cosine similarity, in [-1, 1] (1 = the same direction, i.e. the same
sentence for the encoder; unrelated English captions score about 0 to 0.3 with all-MiniLM-L6-v2, paraphrases about
0.6 to 0.95); ``reduce="mean"`` (default) averages the cosines over the caption's references, ``reduce="max"`` keeps
the best one. The corpus score of :class:`~capeval.sentence_cosine.metric.SentenceCosine` is the mean of these
per-caption values, also in [-1, 1].

Texts, documented:

* Every distinct text (predictions and references together) is encoded once: a reference shared by many
  predictions costs one forward pass. With ``cache=True`` (default) once per encoder settings: vectors are kept in
  capeval's sentence-vector cache (:mod:`capeval.models.sentence_cache`), so the references of an evaluation
  repeated after each training epoch are read, not encoded. Vectors are renormalised in float64 and the cosines
  clipped to [-1, 1] (float32 rounding gives 1.0000002 for identical texts).
* A prediction without any letter or digit (empty with ``empty="zero"``, only whitespace, punctuation, emoji or
  zero-width characters) scores 0 and is not encoded, as capeval's other metrics score a caption without words.
  References are encoded whatever they hold: an emoji is the encoder's ``[UNK]`` word piece, a zero-width or control
  character is dropped by its tokenizer (the text then encodes like the empty sentence); their cosines are finite.
* Long captions: the encoder reads the first ``max_length`` word pieces (256 for all-MiniLM-L6-v2, about 180 English
  words) and ignores the rest; a 100,000-character caption costs one tokenizer pass (about 0.1 s) and one truncated
  forward pass. A single "word" longer than 100 characters is one ``[UNK]`` word piece (BERT's word-piece rule).
* Other languages: all-MiniLM-L6-v2 was trained on English; text in other scripts is split into word pieces or
  ``[UNK]`` and gets finite but less meaningful cosines.
* Never NaN: an encoder vector that is zero or not finite (no direction, so no cosine) raises ``ValueError`` naming
  the first caption that produced it; every returned value is checked to be finite.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from capeval.models.sentence_encoder import DEFAULT_SENTENCE_ENCODER, folder_digest, is_default_encoder

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_MAX_LENGTH", "EmbeddedPairs", "REDUCTIONS", "check_caption_lists",
           "embed_pairs", "encoder_label", "has_word", "resolve_encoder", "sentence_cosine_scores"]

#: How the per-reference cosines of one caption become its score.
REDUCTIONS = ("mean", "max")
#: Word pieces the encoder reads per caption (sentence-transformers' setting for all-MiniLM-L6-v2).
DEFAULT_MAX_LENGTH = 256
#: Texts per forward pass.
DEFAULT_BATCH_SIZE = 128
#: (candidate, reference) pairs whose vectors are gathered at once (bounds memory for large corpora).
_PAIR_CHUNK = 16_384
#: Predictions scored together (:func:`scored_steps`): their distinct texts encoded, their pairs scored.
STEP_PREDICTIONS = 8192
#: Norms below this mean "no direction" (the encoder's vectors are unit vectors).
_MIN_NORM = 1e-6


def has_word(text: str) -> bool:
    """Whether ``text`` has a letter or digit (any script): a prediction without one scores 0."""
    return any(ch.isalnum() for ch in text)


def encoder_label(name: str | os.PathLike | None) -> str:
    """The encoder as the signature names it: ``all-minilm-l6-v2`` for the offline default (also for
    ``sentence-transformers/all-MiniLM-L6-v2``), ``<folder name>@<hash of its files>`` for a local folder, else the
    name as given (a Hub id). ``|`` and ``,`` (the signature's separators) become ``_``."""
    if is_default_encoder(name):
        return DEFAULT_SENTENCE_ENCODER
    path = Path(os.fspath(name))
    label = f"{path.resolve().name}@{folder_digest(path)[:10]}" if path.is_dir() else str(os.fspath(name))
    return label.replace("|", "_").replace(",", "_")


def resolve_encoder(encoder: Any, device: Any, max_length: int, cache: bool = False):
    """The object whose ``encode(texts, batch_size=, progress_bar=)`` gives the vectors: ``encoder`` itself when it
    has one, else the encoder named (``None``: the offline default), loaded once per process, reading the
    sentence-vector cache with ``cache=True`` (:func:`~capeval.models.sentence_cache.cached_sentence_encoder`)."""
    if encoder is None or isinstance(encoder, (str, os.PathLike)):
        name = DEFAULT_SENTENCE_ENCODER if encoder is None else encoder
        if cache:
            from capeval.models.sentence_cache import cached_sentence_encoder

            return cached_sentence_encoder(name, device=device, max_length=max_length)
        from capeval.models.sentence_encoder import load_sentence_encoder

        return load_sentence_encoder(name, device=device, max_length=max_length)
    if not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must be a name, a folder or an object with encode(texts), got "
                        f"{type(encoder).__name__}.")
    return encoder


def check_caption_lists(predictions: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    """``TypeError`` / ``ValueError`` naming the item for anything but a list of strings and, per item, a non-empty
    list of strings (shared by the metrics built on sentence embeddings)."""
    if isinstance(predictions, str) or isinstance(references, str):
        raise TypeError("predictions and references must be lists (one entry per caption), not a single string.")
    if len(predictions) != len(references):
        raise ValueError(f"Length mismatch: {len(predictions)} predictions but {len(references)} reference lists.")
    for i, p in enumerate(predictions):
        if not isinstance(p, str):
            raise TypeError(f"predictions[{i}] is a {type(p).__name__}, not a string.")
    for i, refs in enumerate(references):
        if isinstance(refs, str) or not len(refs):
            raise ValueError(f"references[{i}] must be a non-empty list of strings.")
        for j, r in enumerate(refs):
            if not isinstance(r, str):
                raise TypeError(f"references[{i}][{j}] is a {type(r).__name__}, not a string.")


@dataclass(frozen=True)
class EmbeddedPairs:
    """Unit sentence vectors of every distinct text, and each (prediction, reference) pair as two rows of them.

    ``owner[k]`` / ``target[k]``: the rows of pair k's prediction and reference, pairs grouped by prediction in
    ``scored`` order; ``counts``: references per scored prediction.
    """

    unit: np.ndarray
    owner: np.ndarray
    target: np.ndarray
    counts: np.ndarray

    def per_pair(self, score: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """``score(prediction vectors, reference vectors)`` for every pair, in chunks of :data:`_PAIR_CHUNK` pairs
        (memory stays flat in the number of pairs); float64 ``[n_pairs]``."""
        values = np.empty(len(self.target), dtype=np.float64)
        for start in range(0, len(self.target), _PAIR_CHUNK):
            part = slice(start, start + _PAIR_CHUNK)
            values[part] = score(self.unit[self.owner[part]], self.unit[self.target[part]])
        return values

    def reduce(self, values: np.ndarray, how: str = "mean") -> np.ndarray:
        """Per scored prediction, the mean (or ``"max"``) of its pairs' ``values``."""
        offsets = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        if how == "mean":
            return np.add.reduceat(values, offsets) / self.counts
        return np.maximum.reduceat(values, offsets)


def scored_steps(scored: Sequence[int]) -> list[Sequence[int]]:
    """``scored`` in steps of :data:`STEP_PREDICTIONS`: each step's texts are encoded and scored before the next, so
    the vectors held at once are one step's (memory flat in the number of captions). A text shared by two steps (a
    reference of candidates far apart, e.g. captions ordered by system) is encoded once with the sentence-vector
    cache (the later step reads it back), in each step without it; vectors depend on the batch they are encoded in
    only at float32 rounding level."""
    return [scored[lo:lo + STEP_PREDICTIONS] for lo in range(0, len(scored), STEP_PREDICTIONS)]


def embed_pairs(predictions: Sequence[str], references: Sequence[Sequence[str]], scored: Sequence[int],
                encode: Callable[[list[str]], Any], dim: int | None = None) -> EmbeddedPairs:
    """Encode each distinct text of the ``scored`` predictions and their references once (``encode(texts) ->
    [len(texts), dim]``), check the vectors (``ValueError`` naming the first caption of a zero or non-finite
    vector, or a wrong shape; ``dim`` the width the caller reads) and pair them up (:class:`EmbeddedPairs`)."""
    rows: dict[str, int] = {}  # each distinct text once, in first-seen order
    where: list[str] = []  # the first caption holding each text (for errors)
    for i in scored:
        for text, label in ((predictions[i], f"predictions[{i}]"),
                            *((r, f"references[{i}][{j}]") for j, r in enumerate(references[i]))):
            if text not in rows:
                rows[text] = len(rows)
                where.append(label)
    vectors = np.asarray(encode(list(rows)), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(rows) or (dim is not None and vectors.shape[1] != dim):
        raise ValueError(f"the encoder returned an array of shape {vectors.shape} for {len(rows)} texts; expected "
                         f"({len(rows)}, {dim or 'dim'}).")
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.linalg.norm(vectors, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (norms < _MIN_NORM))
    if len(bad):
        k = int(bad[0])
        raise ValueError(f"the sentence encoder gave {where[k]} ({list(rows)[k]!r:.60}) a vector of norm {norms[k]}: "
                         f"it has no direction, so its cosine is undefined ({len(bad)} text(s) affected).")
    counts = np.array([len(references[i]) for i in scored])
    owner = np.repeat([rows[predictions[i]] for i in scored], counts)
    target = np.array([rows[r] for i in scored for r in references[i]])
    return EmbeddedPairs(vectors / norms[:, None], owner, target, counts)


def sentence_cosine_scores(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    encoder: Any = None,
    reduce: str = "mean",
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
    device: Any = None,
    progress_bar: bool | None = None,
    cache: bool = True,
) -> np.ndarray:
    """Per prediction, the cosine of its sentence embedding with its references' embeddings, reduced over them.

    Args:
        predictions: one caption per item.
        references: per item a non-empty list of reference captions.
        encoder: ``None`` (the offline all-MiniLM-L6-v2), a
            :func:`~capeval.models.sentence_encoder.load_sentence_encoder` name or folder (loaded once per process,
            name, device and ``max_length``), or an object with
            ``encode(texts, batch_size=, progress_bar=) -> [len(texts), dim]`` (e.g. a loaded
            :class:`~capeval.models.sentence_encoder.SentenceEncoder`; its vectors need not be unit vectors).
        reduce: ``"mean"`` (default) or ``"max"`` over the references.
        batch_size: texts per forward pass.
        max_length: word pieces read per text when ``encoder`` is loaded here (the rest is ignored).
        device: where a loaded encoder runs (default CUDA when available).
        progress_bar: the encoder's progress bar (``None``: on a terminal, after one second).
        cache: when ``encoder`` is a name or folder (or ``None``), read and store the vectors in capeval's
            sentence-vector cache (:mod:`capeval.models.sentence_cache`): a text is encoded once per encoder and
            ``max_length``; scores agree with uncached ones to float32 rounding. An encoder object is never cached.

    Returns:
        float64 ``[len(predictions)]``, each in [-1, 1]; 0 for a prediction without a letter or digit.

    Raises:
        ValueError: an unknown ``reduce``, mismatched lengths, an empty reference list, or an encoder vector that is
            zero or not finite (naming the first caption with that text). TypeError: a caption that is not a string.
        ImportError: naming ``pip install "capeval[learned]"`` when torch / transformers are missing.
    """
    if reduce not in REDUCTIONS:
        raise ValueError(f"reduce must be one of {list(REDUCTIONS)}, got {reduce!r:.60}.")
    check_caption_lists(predictions, references)
    out = np.zeros(len(predictions), dtype=np.float64)
    scored = [i for i, p in enumerate(predictions) if has_word(p)]
    if not scored:
        return out
    model = resolve_encoder(encoder, device, max_length, cache)
    for step in scored_steps(scored):
        pairs = embed_pairs(predictions, references, step, lambda texts: model.encode(
            texts, batch_size=batch_size, progress_bar=progress_bar))
        cosines = np.clip(pairs.per_pair(lambda u, v: np.einsum("ij,ij->i", u, v)), -1.0, 1.0)
        out[step] = pairs.reduce(cosines, reduce)
    if not np.isfinite(out).all():  # cannot happen after the norm check; never hand out a NaN
        raise ValueError("sentence_cosine produced a non-finite score; this is a capeval bug, please report it.")
    return np.clip(out, -1.0, 1.0, out=out)
