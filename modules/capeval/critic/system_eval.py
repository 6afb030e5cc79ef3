"""System-level evaluation with the critic: the paper's 2-fold protocol (Cui et al. 2018 §3.5, App. E).

For one captioning system with a caption for every image of an evaluation split: split the images into two folds
(seeded); train a critic on fold A — human captions as positives, **this system's captions** as machine negatives
(plus the pathological transforms, and Monte-Carlo samples when given) — and score the system's captions of fold B;
swap; the system's score is the mean over all its captions of P(human), each averaged over the image's references.
A critic never scores an image it was trained on.

Each fold's critic starts from a trained critic (``init_from``; the CLI's default :data:`DEFAULT_INIT`, the shipped
``critic-flickr8k-coco``, trained on other images) and is fine-tuned for ``epochs``; ``init_from=None`` trains from scratch as the paper did
on COCO's much larger folds. ``average_last=K`` scores the fold with the critic of each of the last ``K`` epochs and
averages the K scores per caption (the reference code's README reports the mean of the last 10 of 30 epochs);
``K = 1`` (default) scores with the final epoch's critic.

``repeats=R`` runs the whole protocol R times, with other folds and training seeds (``seed + REPEAT_SEED_STEP * r``),
and averages the system's score over the runs. The fine-tuning is chaotic: float-level changes to the image features
moved single systems' scores by up to .009 and the τ-b of eight systems with CIDEr-D by .07 (docs/benchmarks/measurements.md, "Learned critic"), so a
ranking of systems whose scores lie within about .01 should rest on several repeats (their spread is returned).
"""
from __future__ import annotations

import random
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.models.feature_table import FeatureTable

#: The critic ``capeval critic evaluate-system`` fine-tunes by default: the caption-level ``critic-flickr8k-coco``.
#: Started from it (or from the retired ``critic-flickr8k-robust``), the per-system critics rank captioner checkpoints of
#: different quality as CIDEr-D, BLEU-4 and SPICE do; started from the general ``critic-flickr8k`` (the default until
#: 2026-11-25) they did not (docs/benchmarks/measurements.md, "Learned critic").
DEFAULT_INIT = "critic-flickr8k-coco"

#: Negatives of the per-system critics without samples: the system's captions 3/6, RC / WP / RW 1/6 each.
SYSTEM_MIX = {"system": 3, "RC": 1, "WP": 1, "RW": 1}
#: Repeat ``r`` of :func:`evaluate_system` uses seed ``seed + REPEAT_SEED_STEP * r`` (folds and training).
REPEAT_SEED_STEP = 1000


def two_folds(images: Sequence[str], seed: int = 0) -> tuple[list[str], list[str]]:
    """The images shuffled with ``seed`` and cut in two halves (sorted within each)."""
    order = sorted(images)
    random.Random(seed).shuffle(order)
    half = len(order) // 2
    return sorted(order[:half]), sorted(order[half:])


def evaluate_system(features: FeatureTable, references: Mapping[str, Sequence[str]], system: Mapping[str, str], *,
                    samples: Mapping[str, Sequence[str]] | None = None, init_from: str | Path | None = None,
                    epochs: int = 3, average_last: int = 1, seed: int = 0, repeats: int = 1,
                    work_dir: str | Path | None = None, progress_bar: bool | None = None,
                    **options: Any) -> dict[str, Any]:
    """Score ``system`` (``{image: caption}``) on the images of ``references`` with the 2-fold protocol.

    Returns ``{"score": mean P(human) of the system's captions (in [0, 1]; the mean over the repeats), "score_std": the
    standard deviation of the repeats' scores (0 for one), "repeats": [{"seed", "score"}, ...], "folds": [{"seed",
    "train_images", "scored_images", "score", "epochs_scored"}, ...] (two per repeat), "per_image": {image: score
    averaged over the repeats}}``; ``average_last``: how many final epochs' critics score each fold (their scores
    averaged, 1 to ``epochs``); ``repeats``: how many runs of the protocol, each with its own folds and seeds (see the
    module docstring). ``options`` go to :func:`capeval.critic.train.train_critic`.
    """
    images = sorted(references)
    missing = [i for i in images if not system.get(i)]
    if missing:
        raise ValueError(f"the system has no caption for {len(missing)} image(s), e.g. {missing[0]!r}.")
    if len(images) < 4:
        raise ValueError("the 2-fold protocol needs at least 4 images.")
    if not 1 <= average_last <= epochs:
        raise ValueError(f"average_last must be between 1 and epochs ({epochs}), got {average_last}.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}.")
    runs = [_two_fold_run(features, references, system, samples=samples, init_from=init_from, epochs=epochs,
                          average_last=average_last, seed=seed + REPEAT_SEED_STEP * r, work_dir=work_dir,
                          progress_bar=progress_bar, **options) for r in range(repeats)]
    per_image = {i: float(np.mean([run["per_image"][i] for run in runs])) for i in images}
    scores = [float(np.mean([run["per_image"][i] for i in images])) for run in runs]
    return {"score": float(np.mean(scores)), "score_std": float(np.std(scores)),
            "repeats": [{"seed": run["seed"], "score": sc} for run, sc in zip(runs, scores)],
            "folds": [fold for run in runs for fold in run["folds"]], "per_image": per_image}


def _two_fold_run(features: FeatureTable, references: Mapping[str, Sequence[str]], system: Mapping[str, str], *,
                  samples, init_from, epochs: int, average_last: int, seed: int, work_dir, progress_bar,
                  **options: Any) -> dict[str, Any]:
    """One run of the 2-fold protocol with ``seed``: ``{"seed", "folds", "per_image"}``."""
    from capeval.critic.model import CriticModel
    from capeval.critic.scoring import critic_scores
    from capeval.critic.train import train_critic
    from capeval.critic.vocab import CriticVocab

    images = sorted(references)
    fold_a, fold_b = two_folds(images, seed)
    pooled = features.pooled()
    mix = {**SYSTEM_MIX, "sample": 3} if samples else SYSTEM_MIX
    per_image: dict[str, float] = {}
    folds = []
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        for k, (train_images, scored) in enumerate(((fold_a, fold_b), (fold_b, fold_a))):
            train = {i: list(references[i]) for i in train_images}
            out = Path(tmp) / f"fold-{k}"
            train_critic(features, train, out, held_out={"scored fold": {i: None for i in scored}},
                         system={i: [system[i]] for i in train_images},
                         samples={i: list(samples[i]) for i in train_images} if samples else None,
                         init_from=init_from, epochs=epochs, seed=seed + k, mix=mix, progress_bar=progress_bar,
                         **options)  # no dev split: every epoch runs, each leaves a checkpoint
            last = [out / "checkpoints" / f"epoch-{e}" for e in range(epochs - average_last + 1, epochs + 1)]
            runs = []
            feats = pooled.rows(scored)  # every epoch's critic has the same architecture
            for folder in last:
                model, vocab = CriticModel.from_pretrained(folder).eval(), CriticVocab.load(folder)
                runs.append(critic_scores([system[i] for i in scored], [list(references[i]) for i in scored],
                                          image_features=feats if model.config.uses_image else None,
                                          model=model, vocab=vocab))
            scores = np.mean(runs, axis=0)
            per_image.update(zip(scored, map(float, scores)))
            folds.append({"seed": seed, "train_images": len(train_images), "scored_images": len(scored),
                          "score": float(scores.mean()),
                          "epochs_scored": [int(f.name.removeprefix("epoch-")) for f in last]})
    return {"seed": seed, "folds": folds, "per_image": per_image}
