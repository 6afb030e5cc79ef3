"""Nebula (Matsuda, Wada & Sugiura, ACCV 2024, "DENEB: A Hallucination-Robust Automatic Evaluation Metric for Image
Captioning"): 32,978 images with candidate captions, references and human scores in [0, 1] from 805 annotators.

Splits (items): train 26,382, validation 3,298 (the Hub's ``valid``), test 3,298. Files under
``<data dir>/nebula/``, in this order of lookup (:mod:`capeval.benchmarks.judgment_sets`):

* ``nebula_test.json``: EXPERT's annotation file (hjkim811/EXPERT ``annotations/nebula_test.json``), a JSON list of
  ``{"imgid", "mt", "refs", "score"}``; images ``images/<imgid>.jpg``;
* ``nebula_test.csv``: DENEB's CSV (``mt``, ``refs``, ``score``, ``imgid``);
* the Hub dataset ``Ka2ukiMatsuda/Nebula`` (parquet ``data/{train,valid,test}-*.parquet``; columns as its card
  documents them: ``file_name`` (string), ``image`` (image), ``refs`` (list of strings), ``mt`` (the candidate),
  ``human_score`` (float64)), locally, in the hub cache, or (offline) in the ``datasets`` cache.

Caveat: CaptionEvalKit (by Polos's first author) replaces the Hub test split's ``human_score`` by the mean score of
the same (image, caption) in the Spica files before it correlates; capeval reads the scores as each file distributes
them (``settings["source"]`` says which file was read).

Statistic: Kendall tau-c between metric and human score over all items.
"""
from __future__ import annotations

from capeval.benchmarks.judgment_sets import Columns, JudgmentSet, loader

#: The Hub's split names, the released sizes and the card's columns (candidate ``mt``, image named by ``file_name``).
NEBULA = JudgmentSet("nebula", "Ka2ukiMatsuda/Nebula", {"train": "train", "validation": "valid", "test": "test"},
                     {"train": 26_382, "validation": 3_298, "test": 3_298},
                     Columns("mt", "refs", "human_score", image_id="file_name", image="image"))
#: ``load_nebula(root=None, *, split="test", image_dir=None) -> Benchmark``
load_nebula = loader(NEBULA)
