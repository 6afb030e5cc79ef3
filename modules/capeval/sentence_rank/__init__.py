"""``sentence_rank`` (experimental): a learned ranker on frozen all-MiniLM-L6-v2 sentence embeddings, trained on
COCO train2014's human captions alone (docs/benchmarks/measurements.md, "Beyond the papers: a learned ranker on sentence embeddings": the plan, fixed
before training, and the results).

What goes here, data flowing one way (captions -> sentence vectors -> pairs -> trained model -> scores):

* :mod:`.embeddings`: the corpus's sentence vectors, cached as float16 safetensors parts (a rerun does not
  re-encode);
* :mod:`.data`: the training pairs (positive, references, a hard / random / WP / RW negative in equal parts; exact
  nearest captions by blocked matrix products) and the fixed dev pairs;
* :mod:`.model`: s(c, r) = a · cos(u, v) + b + MLP([u, v, |u − v|, u ⊙ v]), numpy for scoring, torch for training;
  ``config.json`` + ``model.safetensors``;
* :mod:`.train`: ``capeval sentence-rank train`` (Adam, pairwise logistic loss, accelerate, seeded, safetensors +
  JSON checkpoints, resume, epoch selection on dev pairwise accuracy);
* :mod:`.scores` and :mod:`.metric`: per caption the mean over its references of σ(s(c, r)), in [0, 1]; the
  ``sentence_rank`` metric class registered in :mod:`capeval.registry`.

Builds on :mod:`capeval.models` (the sentence encoder), :mod:`capeval.sentence_cosine` (text handling, encoder
identity) and :mod:`capeval.critic` (the WP / RW transforms); torch is imported only to encode and to train, so
``import capeval.sentence_rank`` works without it. Never imports ``api``, ``benchmarks``, ``hub`` or ``cli`` (the
benchmark images to leave out are handed in by the command). See ``docs/architecture.md``.
"""
from __future__ import annotations

from capeval.sentence_rank.model import SentenceRankConfig, SentenceRankModel
from capeval.sentence_rank.scores import sentence_rank_scores

__all__ = ["SentenceRankConfig", "SentenceRankModel", "sentence_rank_scores"]
