"""The learned critic of Cui et al. (CVPR 2018): P(caption is human-written | image and/or reference).

What goes here, data flowing one way (text -> tokens -> sentence vectors -> scores):

* :mod:`.vocab` (tokens, vocabulary, ``<eos>`` rule) and :mod:`.transforms` (the pathological RC / WP / RW
  transformations, also used by ``capeval robustness``);
* :mod:`.model` (the discriminator: GloVe-initialised embeddings, one shared LSTM, image projection, mlp / linear /
  compact bilinear (:mod:`.bilinear`) heads, three contexts) and :mod:`.data` (negatives in the paper's proportions);
* :mod:`.train` (``capeval critic train``, accelerate) and :mod:`.scoring` (scores averaged over every reference,
  shipped critics); :mod:`.system_eval` (the paper's 2-fold per-system protocol, ``capeval critic evaluate-system``)
  and :mod:`.ensemble` (``critic_plus``: the critic combined with a sentence-embedding cosine by weights fitted on
  Flickr8k dev); :mod:`.critic_ensemble` (several critics combined into one critic, ``capeval critic fit-ensemble``;
  an ensemble folder is a ``critic_model``), both fitted and stored with :mod:`.combine` (the logistic fit, its
  report, tagged JSON files);
* :mod:`.metric`: the ``critic`` / ``critic_ref`` / ``critic_img`` / ``critic_plus`` metric classes registered in
  :mod:`capeval.registry` (the first three read a single critic or a critic ensemble).

Builds on :mod:`capeval.models` (image features, feature tables, word vectors, the sentence encoder); never the
reverse, and never on :mod:`capeval.captioning` (machine captions arrive as JSONL files). See ``docs/architecture.md``.
"""
