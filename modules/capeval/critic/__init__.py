"""The learned critic of Cui et al. (CVPR 2018) (home reserved; filled by the critic work).

What goes here: the discriminator (vocabulary, GloVe-initialised embeddings, shared LSTM, image
projection, heads), the negative samplers and pathological transforms (RC, WP, RW), training,
scoring, the ``critic`` / ``critic_ref`` / ``critic_img`` metric classes registered in
:mod:`capeval.registry`, and ``critic_plus`` (:mod:`.ensemble`: the critic combined with a sentence-embedding
cosine by weights fitted on Flickr8k dev). Builds on :mod:`capeval.models` (image features, captioner samples); never
the reverse. See ``docs/architecture.md``.
"""
