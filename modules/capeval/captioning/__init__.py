"""The Flickr8k captioner's workflows: features + captions in, training, beam/sampled captions, evaluation.

What goes here: everything that *runs* :mod:`capeval.models.captioner` on a dataset (the model itself and
its tokenizer live in :mod:`capeval.models`):

* ``data``: image features (an extracted safetensors file, :mod:`capeval.models.extract_features`, or the
  feature cache) joined to the Flickr8k captions of a split; the split check (no test image in training);
* ``train``: seeded training with ``accelerate`` (checkpoints, resume, progress, early stopping on the dev
  split's CIDEr-D);
* ``generate``: beam candidates with log P(s|I) and Monte-Carlo samples for any split, as JSONL (the
  critic's and MMI re-ranking's input); captions of image files (``capeval caption``);
* ``evaluate``: beam-3 captions of a split scored with capeval's metrics (``capeval captioner evaluate``);
* ``distractors``: Wang et al. 2020 §3.1 — how often a frequent training caption out-scores a human caption.

Room: api (it scores through :func:`capeval.score`); nothing below it imports it. See ``docs/architecture.md``.
"""
