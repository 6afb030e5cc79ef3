"""LCEval (Sharif et al., 2019): a learned composite of lexical, semantic and syntactic features (home reserved).

What goes here: the 16 features in the released order (each a small function over capeval's COCO
metrics, SPICE, the spaCy parse and word vectors), batched and cached feature extraction, the
released 16->2 layer and retrained networks, and the ``lceval`` / ``lceval_released`` metric
classes registered in :mod:`capeval.registry`. May import :mod:`capeval.coco`, :mod:`capeval.spice`
and :mod:`capeval.models`; never ``benchmarks``, ``hub`` or ``cli``. See ``docs/architecture.md``.
"""
