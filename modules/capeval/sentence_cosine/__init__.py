"""``sentence_cosine``: the cosine similarity of candidate and reference sentence embeddings, the baseline every
learned metric of capeval must beat.

What goes here, data flowing one way (cleaned text -> sentence vectors -> cosines -> scores):

* :mod:`.scores`: the functional core, :func:`sentence_cosine_scores` (per caption, in [-1, 1], mean or max over
  the references; each distinct text encoded once; a prediction without words scores 0; never NaN) and the
  encoder's label in signatures (:func:`encoder_label`);
* :mod:`.metric`: the ``sentence_cosine`` metric class registered in :mod:`capeval.registry` (options, signature,
  score-cache token, the per-item work split over processes).

Builds on :mod:`capeval.models.sentence_encoder` (all-MiniLM-L6-v2 offline, any transformers encoder); torch is
imported only when something is encoded, so ``import capeval.sentence_cosine`` works without it. Never imports the
learned metrics, ``api``, ``benchmarks``, ``hub`` or ``cli``. See ``docs/architecture.md``.
"""
from __future__ import annotations

from capeval.sentence_cosine.scores import REDUCTIONS, encoder_label, has_word, sentence_cosine_scores

__all__ = ["REDUCTIONS", "encoder_label", "has_word", "sentence_cosine_scores"]
