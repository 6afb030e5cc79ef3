"""LCEval (Sharif et al., 2019): a learned composite of lexical, semantic and syntactic features.

What goes here, data flowing one way: captions -> PTB tokens -> the 16 features in the released order (:mod:`~capeval.lceval.features`: n-gram
precisions and ROUGE-1 recall in :mod:`~capeval.lceval.lexical`, COCO ROUGE-L / METEOR / CIDEr-D, capeval's SPICE,
WMD and MOWE in :mod:`~capeval.lceval.embedding`, head-word chains in :mod:`~capeval.lceval.hwcm` over the spaCy
parses of :mod:`~capeval.lceval.parse`; cached per candidate and references by :mod:`~capeval.lceval.cache`)
-> a small network (:mod:`~capeval.lceval.model`, numpy) -> P(human-written). LCEval+'s three extra features
(sentence embeddings, the reference-only critic) are in :mod:`~capeval.lceval.extra`.

* :func:`lceval_features`: the ``(n, 16)`` feature matrix;
* metrics ``lceval`` (capeval's retrained network, :mod:`~capeval.lceval.train`), ``lceval_released`` (the
  authors' released layer, :mod:`~capeval.lceval.released`) and ``lceval_plus`` (:mod:`~capeval.lceval.metric`),
  registered in :mod:`capeval.registry`.

May import :mod:`capeval.coco`, :mod:`capeval.spice`, :mod:`capeval.models` and (LCEval+ only)
:mod:`capeval.critic`; never ``benchmarks``, ``hub`` or
``cli`` (the training pairs and the ablation, which read benchmark files, are in
:mod:`capeval.corpora.lceval_pairs` and :mod:`capeval.meta_evaluation.lceval_ablation`).
"""
from capeval.lceval.features import FEATURE_NAMES, GROUPS, lceval_features

__all__ = ["FEATURE_NAMES", "GROUPS", "lceval_features"]
