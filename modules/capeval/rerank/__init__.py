"""Caption re-ranking for decoding, e.g. MMI (Wang et al., ECCV 2020, §5) (home reserved).

What goes here: re-ranking beam candidates by ``log P(s|I) - lambda * log P(s)`` with the caption
language models of :mod:`capeval.models`, and the grid search of lambda / alpha on a dev split.
A decoding method, not a metric: it may use metrics to tune (through :func:`capeval.score`), and
nothing below it imports it. See ``docs/architecture.md``.
"""
