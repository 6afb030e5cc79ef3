"""Robustness of a caption metric to pathological transformations (Cui et al. 2018, §3.4, Fig. 6).

``capeval robustness`` runs this. The data ``D`` is the Flickr8k test split (1,000 images × 5 human captions,
images in the order of ``Flickr_8k.testImages.txt``; ``images_limit`` keeps the first N). Every human caption
``c`` of image ``i`` is a candidate, scored against the image's *other* captions as references (leave-one-out:
4 references on Flickr8k). For a transformation ``T`` (:mod:`capeval.critic.transforms`: RC, WP, RW) and a
strength ``γ`` every candidate is replaced by ``T(c, γ)`` (``γ = 0``: unchanged) and the metric scores all
candidates in one ``capeval.score`` call (so CIDEr-D's document frequencies come from the same references at
every point). Then

* ``s(Θ, T(D, γ))`` = mean per-caption score of the metric's result key, divided by the mean at ``γ = 0``
  (the untransformed human captions score 1);
* ``R(Θ, T)`` = the area under that normalised curve over the gammas (trapezoid rule; the default gammas
  0, 0.1, ..., 1 cover [0, 1]). Lower = the metric punishes the transformation more = more robust.

**Normalised score, not 1 − score.** The paper's §3.4 defines ``s`` for a learned critic whose output is
P(human): a human caption contributes ``score`` and a generated one ``1 − score``, and it calls transformed
captions "generated". Its Fig. 6 nevertheless plots, for every metric, the mean score of the transformed
captions normalised so that the human captions score 1 (curves start at 1 and fall; "the lower the score the
more robust"), which is the only reading that works for rule-based metrics without a P(human) scale. That is
what is computed here: the normalised mean score, transformed captions taken as they are.

Transformations (their strength rules are in :mod:`capeval.critic.transforms`):

* **RC**: the candidate is replaced by a human caption of an image among the ``γ`` fraction of ``D``'s other
  images nearest to its own image (:class:`~capeval.critic.transforms.NearestImages` on pooled image features:
  by default EfficientNet-Lite0 at 224² from :func:`capeval.models.image_encoder.load_image_encoder`,
  disk-cached; or given features);
* **WP**: ``round(γ n)`` (≥ 2) of the candidate's whitespace words permuted;
* **RW**: ``round(γ n)`` (≥ 2, the paper's "from 2 to all words"; ≥ 1 before 2026-11-25) words replaced by
  words drawn uniformly from a vocabulary: the distinct
  lower-cased whitespace tokens of the Flickr8k *train* captions that hold a letter or digit (punctuation
  tokens such as ``.`` are not words), never the test captions.

Seeding: the candidates of one point ``(T, γ)`` are drawn with ``random.Random(seed + k)``,
``k = 10,000 × index of T in ("RC", "WP", "RW") + round(1,000 γ)``, going through the candidates in order;
so every point can be reproduced alone, whatever other gammas or transformations a run asks for.

Metrics are any registered capeval metric's result key (``bleu_4``, ``cider_d``, ``meteor``, ``spice`` ...);
a metric whose class has ``needs_images = True`` also gets ``images=`` (one image path per candidate). Scores
go through the benchmark score cache (:mod:`capeval.meta_evaluation.score_cache`), so a re-run or a run adding
a metric recomputes nothing else.

The rooms: :mod:`.data` (the data ``D``), :mod:`.settings` (gammas, transformations, metrics, seeds, the
AUC), :mod:`.transforming` (RC's features, the transformed candidates), :mod:`.scoring` (one point, cached),
:mod:`.running` (:func:`run_robustness`) and :mod:`.rendering` (the table, the text, the figure).

>>> from capeval.meta_evaluation.robustness import run_robustness, plot_robustness   # doctest: +SKIP
>>> result = run_robustness(["bleu_4", "cider_d"], images_limit=100)
>>> result.auc["bleu_4"]["WP"]
"""
from __future__ import annotations

from capeval.meta_evaluation.robustness.data import (SPLITS, RobustnessData, flickr8k_split_data, flickr8k_test_data,
                                                train_vocabulary)
from capeval.meta_evaluation.robustness.rendering import auc_table, plot_robustness, render
from capeval.meta_evaluation.robustness.running import RobustnessResult, run_robustness
from capeval.meta_evaluation.robustness.settings import (GAMMAS, SCORE_DEFINITION, TRANSFORM_NAMES, check_gammas,
                                                    check_transforms, metric_key, parse_gammas, point_seed,
                                                    trapezoid_auc)
from capeval.meta_evaluation.robustness.transforming import transform_captions
from capeval.critic.transforms import TRANSFORMS

__all__ = [
    "GAMMAS", "SCORE_DEFINITION", "SPLITS", "TRANSFORMS", "TRANSFORM_NAMES", "RobustnessData", "RobustnessResult",
    "auc_table", "check_gammas", "check_transforms", "flickr8k_split_data", "flickr8k_test_data", "metric_key",
    "parse_gammas", "plot_robustness", "point_seed", "render", "run_robustness", "train_vocabulary",
    "transform_captions", "trapezoid_auc",
]
