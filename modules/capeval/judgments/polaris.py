"""Polaris (Wada, Kaneda, Saito & Sugiura, CVPR 2024, "Polos: Multimodal Metric Learning from Human Feedback for
Image Captioning"): 131K human judgments in [0, 1] from 550 evaluators of human and ten models' captions.
BSD-3-Clause-Clear.

Splits (judgments): train 78,630, validation 26,268, test 26,122. Files under ``<data dir>/polaris/``, in this
order of lookup (:mod:`capeval.judgments.judgment_sets`):

* ``polaris_test.json``: a test file in EXPERT's annotation format (a JSON list of ``{"imgid", "mt", "refs",
  "score"}``); images ``images/<imgid>.jpg``;
* ``polaris_{train,val,test}.csv``: the Polos release's CSV (``mt``, ``refs``, ``score``, ``imgid``);
* the Hub dataset ``yuwd/Polaris`` (parquet ``data/{train,validation,test}-*.parquet``; columns as its card
  documents them: ``refs`` (list of strings), ``cand`` (the candidate), ``img`` (image), ``human_score``
  (float32)), locally, in the hub cache, or (offline) in the ``datasets`` cache. The Hub rows carry no image id:
  the image value's file name stands for it.

Statistic: Kendall tau-c between metric and human score over all items.
"""
from __future__ import annotations

from capeval.judgments.judgment_sets import SPLITS, Columns, JudgmentSet, loader

#: The Hub's split names (the same three), the released sizes and the card's columns (candidate ``cand``; no image
#: id column: the ``img`` value's file name stands for it).
POLARIS = JudgmentSet("polaris", "yuwd/Polaris", dict(zip(SPLITS, SPLITS)), {"train": 78_630, "validation": 26_268,
                      "test": 26_122}, Columns("cand", "refs", "human_score", image_id=None, image="img"))
#: ``load_polaris(root=None, *, split="test", image_dir=None) -> Benchmark``
load_polaris = loader(POLARIS)
