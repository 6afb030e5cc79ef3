"""Caption re-ranking for decoding, e.g. MMI (Wang et al., ECCV 2020, §5) (home reserved).

What goes here: re-ranking beam candidates by ``log P(s|I) - lambda * log P(s)`` with the caption
language models of :mod:`capeval.models` (``mmi``: scores, validation, JSONL and transformers ``generate``
inputs), the grid search of lambda / alpha on a dev split (``tune``), and the caption corpora the LMs
are trained and evaluated on (``corpora``: COCO train2014 minus every evaluation image, Flickr8k splits).
A decoding method, not a metric: it may use metrics to tune (through :func:`capeval.score`), and
nothing below it imports it. See ``docs/architecture.md``.
"""
