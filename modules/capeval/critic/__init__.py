"""The learned critic of Cui et al. (CVPR 2018): P(caption is human-written | image and/or reference).

What goes here, data flowing one way (text -> tokens -> sentence vectors -> scores):

* :mod:`.vocab` (tokens, vocabulary, ``<eos>`` rule) and :mod:`.transforms` (the pathological RC / WP / RW
  transformations, also used by ``capeval robustness``);
* :mod:`.model` (the discriminator: GloVe-initialised embeddings, one shared LSTM, image projection, mlp / linear /
  compact bilinear (:mod:`.bilinear`) heads, three contexts) and :mod:`.data` (negatives in the paper's proportions);
* :mod:`.train` (``capeval critic train``, accelerate); :mod:`.loading` (a name or folder -> a folder -> a loaded
  critic kept per process; weight digests and labels); :mod:`.scoring` (one critic's scores, averaged over every
  reference); :mod:`.stack` (critics, and optionally a sentence cosine, combined per pair by a logistic fit on
  Flickr8k dev: ``critic_plus`` and the critic ensembles, their files and their fit; :func:`~.stack.load_scorer` turns
  any ``critic_model`` into one scorer); :mod:`.system_eval` (the paper's 2-fold per-system protocol,
  ``capeval critic evaluate-system``);
* :mod:`.metric`: the ``critic`` / ``critic_ref`` / ``critic_img`` / ``critic_plus`` metric classes registered in
  :mod:`capeval.registry` (the first three read a single critic or a critic stack).

Builds on :mod:`capeval.models` (image features, feature tables, word vectors, the sentence encoder); never the
reverse, and never on :mod:`capeval.captioning` (machine captions arrive as JSONL files). See ``docs/architecture.md``.
"""
