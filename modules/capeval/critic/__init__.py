"""The learned critic of Cui et al. (CVPR 2018) (home reserved; filled by the critic work).

What goes here: the discriminator (vocabulary, GloVe-initialised embeddings, shared LSTM, image
projection, heads), the negative samplers and pathological transforms (RC, WP, RW), training,
scoring, and the ``critic`` / ``critic_ref`` / ``critic_img`` metric classes registered in
:mod:`capeval.registry`. Builds on :mod:`capeval.models` (image features, captioner samples); never
the reverse. See ``docs/architecture.md``.
"""
