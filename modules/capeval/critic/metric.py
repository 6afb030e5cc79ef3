"""The critic as capeval metrics: ``critic`` (image + reference), ``critic_ref`` (reference only), ``critic_img``
(image only). Each scores P(candidate is human-written | context) in [0, 1], averaged over the references
(:mod:`capeval.critic.scoring`); the corpus score is the mean over captions. ``critic_plus``: the critic combined
with the sentence-embedding cosine of candidate and reference (:mod:`capeval.critic.ensemble`), in [0, 1], averaged
over the references the same way.

Options (routed by name, as every metric option): ``critic_model`` / ``critic_ref_model`` / ``critic_img_model``
(a ``capeval critic train`` folder, a ``capeval critic fit-ensemble`` folder of several critics combined, or a
catalog name such as ``critic-flickr8k-caption`` (``capeval models --metric critic``); default the catalog's default of
that context; ``critic_ref_model``
may also name an image + reference critic trained with ``image_optional``, e.g. ``critic-flickr8k-joint``, which then
scores with its learned "no image" vector, ``image=none`` in the signature), ``critic_batch_size``
(pairs per forward pass, 4,096), ``critic_device`` (default CUDA when available); ``critic_plus_model`` (a
``capeval critic fit-plus`` folder or a shipped name, default ``critic-flickr8k-plus``) with the same
``critic_batch_size`` / ``critic_device``.

Text handling, documented: the critic reads the captions as given (lower-cased, its own word tokens, the first 15
kept: a 100,000-character caption costs no more than a short one); a caption with no word token (empty, or only
punctuation / emoji) scores 0, as the n-gram metrics score it; words outside the vocabulary (other languages,
misspellings) are ``<unk>`` and still get a probability.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.catalog import DEFAULTS
from capeval.critic.scoring import weights_digest
from capeval.metric import CaptionMetric, MetricOutput


class _CriticMetric(CaptionMetric):
    uses_tokens: ClassVar[bool] = False
    context: ClassVar[str] = "image+reference"
    model_option: ClassVar[str] = "critic_model"

    @classmethod
    def check_available(cls) -> None:
        from capeval.models._deps import require

        require("torch", "transformers", what=f"the {cls.name} metric")
        from capeval.critic.scoring import critic_folder

        folder = critic_folder(None, cls.context)
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(f"{folder}: the shipped {cls.name} weights are missing; reinstall capeval.")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        from capeval.critic.scoring import critic_folder

        return weights_digest(*_weight_folders(critic_folder(options.get(cls.model_option), cls.context)))

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        from capeval.critic.critic_ensemble import context_of, ensemble_scores, is_ensemble, load_ensemble
        from capeval.critic.scoring import critic_folder, critic_scores, load_critic

        option, device = self.config[self.model_option], self.config["critic_device"]
        folder = critic_folder(option, self.context)
        if is_ensemble(folder):  # several critics combined into one (capeval critic fit-ensemble)
            ensemble, members = load_ensemble(folder, device)
            models = [m for m, _ in members]
        else:
            ensemble, members = None, [load_critic(option, self.context, device)]
            models = [members[0][0]]
        context = context_of(models)
        # critic_ref may use an image_optional critic (critic-flickr8k-joint): its "no image" vector is the image
        no_image = self.context == "reference" and ensemble is None and context == "image+reference" and \
            models[0].config.image_optional
        if context != self.context and not no_image:
            hint = " (or an image + reference critic trained with image_optional)" if self.context == "reference" \
                else ""
            raise ValueError(f"{self.name} expects a critic with context {self.context!r}{hint}; {option} has "
                             f"{context!r}.")
        uses_image, uses_reference = any(m.config.uses_image for m in models) and not no_image, \
            any(m.config.uses_reference for m in models)
        images = batch.images if uses_image else None
        if uses_image and images is None:
            raise ValueError(f"{self.name} needs images= (one per prediction); critic_ref needs none.")
        preds = batch.raw_predictions
        refs = batch.raw_references if uses_reference else None
        size = int(self.config["critic_batch_size"])
        if ensemble is not None:
            scores = ensemble_scores(preds, refs, images=images, ensemble=ensemble, members=members,
                                     batch_size=size, progress_bar=batch.progress)
        else:
            model, vocab = members[0]
            scores = critic_scores(preds, refs, images=images, model=model, vocab=vocab, batch_size=size,
                                   progress_bar=batch.progress)
        per = _zero_wordless(scores, preds)
        context_label = f"{self.context},image=none" if no_image else self.context
        return MetricOutput(corpus={self.name: float(np.mean(per))}, per_caption={self.name: per},
                            signature=f"model={_model_label(folder)},ctx={context_label},refs=mean")


def _zero_wordless(scores, preds) -> list[float]:
    """``scores`` as floats, 0 for a caption with no word token (empty, only punctuation / emoji)."""
    from capeval.critic.vocab import critic_tokens

    wordless = [i for i, p in enumerate(preds) if not any(ch.isalnum() for t in critic_tokens(p) for ch in t)]
    scores[wordless] = 0.0
    return [float(s) for s in scores]


def _weight_folders(folder) -> list:
    """``folder`` and, for a critic ensemble, its member critics' folders: every file that changes its scores."""
    from capeval.critic.critic_ensemble import CriticEnsemble, is_ensemble

    return [folder, *CriticEnsemble.load(folder).critic_paths(folder)] if is_ensemble(folder) else [folder]


def _model_label(folder) -> str:
    """``critic-flickr8k`` for a shipped critic (or combiner, or ensemble), else ``<folder name>@<hash of its files>``
    (an ensemble's hash covers its member critics' files)."""
    from capeval.model_store import catalog_name_of

    return catalog_name_of(folder) or f"{folder.name}@{weights_digest(*_weight_folders(folder))[:10]}"


class Critic(_CriticMetric):
    """The critic with image and reference as context (the paper's default)."""

    name = "critic"
    needs_images: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {"critic_model": None, "critic_batch_size": 4096, "critic_device": None}


class CriticRef(_CriticMetric):
    """The critic with a reference as the only context (no image needed)."""

    name = "critic_ref"
    context = "reference"
    model_option = "critic_ref_model"
    needs_images: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {"critic_ref_model": None, "critic_batch_size": 4096, "critic_device": None}


class CriticImg(_CriticMetric):
    """The critic with the image as the only context (no reference read)."""

    name = "critic_img"
    context = "image"
    model_option = "critic_img_model"
    needs_images: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {"critic_img_model": None, "critic_batch_size": 4096, "critic_device": None}


class CriticPlus(CaptionMetric):
    """The critic and the sentence-embedding cosine of candidate and reference, combined per pair by weights fitted
    on Flickr8k dev (:mod:`capeval.critic.ensemble`); averaged over the references."""

    name = "critic_plus"
    uses_tokens: ClassVar[bool] = False
    needs_images: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {"critic_plus_model": DEFAULTS["critic_plus"], "critic_batch_size": 4096,
                                         "critic_device": None}

    @classmethod
    def check_available(cls) -> None:
        from capeval.models._deps import require

        require("torch", "transformers", what=f"the {cls.name} metric")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        from capeval.critic.ensemble import Combiner, plus_folder

        folder = plus_folder(options.get("critic_plus_model", cls.options["critic_plus_model"]))
        return weights_digest(folder, Combiner.load(folder).critic_path(folder))

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        from capeval.critic.ensemble import critic_plus_scores, load_critic_plus, plus_folder

        option = self.config["critic_plus_model"]
        folder = plus_folder(option)
        combiner, model, vocab, encoder = load_critic_plus(folder, self.config["critic_device"])
        images = batch.images
        if model.config.uses_image and images is None:
            raise ValueError(f"{self.name} needs images= (one per prediction).")
        preds = batch.raw_predictions
        scores = critic_plus_scores(preds, batch.raw_references, images=images, combiner=combiner, model=model,
                                    vocab=vocab, encoder=encoder, batch_size=int(self.config["critic_batch_size"]),
                                    progress_bar=batch.progress)
        per = _zero_wordless(scores, preds)
        critic = _model_label(combiner.critic_path(folder))
        return MetricOutput(corpus={self.name: float(np.mean(per))}, per_caption={self.name: per},
                            signature=f"model={_model_label(folder)},critic={critic},"
                                      f"encoder={encoder.name},refs=mean")


__all__ = ["Critic", "CriticImg", "CriticPlus", "CriticRef"]
