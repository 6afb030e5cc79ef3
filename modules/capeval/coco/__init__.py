"""The COCO caption metrics, exactly as pycocoevalcap 1.2 computes them.

Modules, in data-flow order (normalised tokens in, scores out):

* :mod:`~capeval.coco.ngrams` — n-gram count matrices of a :class:`~capeval.batch.CaptionBatch`;
* :mod:`~capeval.coco.bleu` — BLEU-1..4 (``closest`` reference length);
* :mod:`~capeval.coco.rouge` — ROUGE-L (LCS F-measure, beta = 1.2);
* :mod:`~capeval.coco.document_frequency` — CIDEr-D document frequencies (scored references, or COCO
  val2014, cached);
* :mod:`~capeval.coco.cider` — CIDEr-D (sigma = 6, clipped, x10);
* :mod:`~capeval.coco.meteor` — METEOR 1.5: :mod:`capeval.meteor` in Python (default, no Java) or the
  original jar through persistent JVMs (``meteor_backend="java"``);
* :mod:`~capeval.coco.captions` — the COCO 2014 captions shipped inside pycocoevalcap's SPICE jar
  (used for document frequencies, uniqueness tables and language models).

``capeval.coco`` was a module holding only the jar's captions before 0.2; its names stay importable
from here.
"""
from capeval.coco.captions import SPLITS, coco_captions, load_coco_annotations

__all__ = ["SPLITS", "coco_captions", "load_coco_annotations"]
