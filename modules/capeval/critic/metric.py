"""The critic as capeval metrics: ``critic`` (image + reference), ``critic_ref`` (reference only), ``critic_img``
(image only). Each scores P(candidate is human-written | context) in [0, 1], averaged over the references
(:mod:`capeval.critic.scoring`); the corpus score is the mean over captions. ``critic_plus``: the critic combined
with the sentence-embedding cosine of candidate and reference (:mod:`capeval.critic.stack`), in [0, 1], averaged
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
punctuation / emoji) scores 0, as the n-gram metrics score it. Words outside the vocabulary: ``critic_oov``
(``"glove-map"`` by default: a word with a GloVe 6B vector gets the embedding the critic's fitted GloVe → embedding map
gives it, :mod:`capeval.critic.expansion`; ``"unk"``: every such word is ``<unk>``, the critic as trained); words
without a GloVe vector (other scripts, most misspellings) are ``<unk>`` either way and still get a probability. The
result reports the share of known tokens (``result["coverage"]``, :mod:`capeval.coverage`).

Scale: ``critic_scale`` (``"auto"``: the shipped default models' readable scale, else the raw probability;
``"readable"``; ``"raw"``; :mod:`capeval.scales`), applied to each caption's score; the corpus score is their mean.
The signature says which (``scale=``).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from capeval.advice import Setting, words
from capeval.batch import CaptionBatch
from capeval.catalog import DEFAULTS
from capeval.critic.expansion import OOV_MODES
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.validation import OptionError
from capeval.scales import DEFAULT_SCALE, SCALE_CHOICES, scale_field

#: The critics' default ``critic_oov``: unknown words mapped from GloVe (:mod:`capeval.critic.expansion`), chosen by
#: the vocabulary-shift criterion written in BENCHMARKS.md before its run ("Vocabulary shift", 2026-11-27).
DEFAULT_OOV = "glove-map"

#: The options the four critic metrics share, each declared once (one object in every class's ``options``).
CRITIC_BATCH_SIZE = Option(
    default=4096, kind="int", minimum=1,
    help="caption pairs per forward pass (default 4096; no effect on the scores beyond float rounding)")
CRITIC_DEVICE = Option(
    default=None, kind="device", help="device: cpu, cuda, cuda:1 ... (default: CUDA when available)")
CRITIC_OOV = Option(
    default=DEFAULT_OOV, kind="str", choices=(DEFAULT_OOV, *(mode for mode in OOV_MODES if mode != DEFAULT_OOV)),
    help="the critics' words outside their vocabulary: glove-map (default: mapped into the critic's embedding space "
         "from their GloVe vectors, by a map fitted on the critic's vocabulary) or unk (one unknown vector, the "
         "critic as trained); enters the signature; with a tenth of the words unseen, glove-map kept "
         "Flickr8k-Expert τ-c at .451 and PASCAL-50S at 81.6 %, against .381 and 75.3 % with unk")
CRITIC_SCALE = Option(
    default=DEFAULT_SCALE, kind="str", choices=SCALE_CHOICES,
    help="the score's scale: auto (default: the shipped default models' readable scale, the share of human captions "
         "a caption beats; other models raw), readable (an error for a model without a shipped map), or raw (the "
         "model's probability); enters the signature; the readable map is fixed and strictly increasing, so "
         "rankings and Kendall τ are unchanged, and 0.5 is the median human caption")


def _critic_model(what: str, default: str, more: str = "") -> Option:
    return Option(default=None, kind="model", metavar="DIR|NAME",
                  help=f"the {what} metric's model: a `capeval critic train` folder, a `capeval critic fit-ensemble` "
                       f"folder or a shipped critic's name (default: {default}){more}")


def _shared() -> dict[str, Option]:
    return {"critic_batch_size": CRITIC_BATCH_SIZE, "critic_device": CRITIC_DEVICE, "critic_oov": CRITIC_OOV,
            "critic_scale": CRITIC_SCALE}


class _CriticMetric(CaptionMetric):
    uses_tokens: ClassVar[bool] = False
    reports_coverage: ClassVar[bool] = True
    context: ClassVar[str] = "image+reference"
    model_option: ClassVar[str] = "critic_model"

    @classmethod
    def check_available(cls) -> None:
        from capeval.critic.loading import critic_folder
        from capeval.dependencies import require

        require("torch", "transformers", what=f"the {cls.name} metric")
        folder = critic_folder(None, cls.context)
        if not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(f"{folder}: the shipped {cls.name} weights are missing; reinstall capeval.")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        from capeval.critic.loading import critic_folder, weights_digest
        from capeval.critic.stack import CriticStack, is_stack

        folder = critic_folder(options.get(cls.model_option), cls.context)
        members = CriticStack.load(folder).member_paths(folder) if is_stack(folder) else []
        return weights_digest(folder, *members)

    def _readable(self):
        """The readable scale ``critic_scale`` selects for the configured critic, or ``None`` (raw)."""
        from capeval.critic.loading import critic_folder

        return _scale_of(self, critic_folder(self.config[self.model_option], self.context))

    def _scorer(self):
        """``(scorer, uses_image, uses_reference, signature)`` of the configured critic (loaded once per process)."""
        from capeval.critic.stack import load_scorer

        option = self.config[self.model_option]
        scorer = load_scorer(option, self.context, device=self.config["critic_device"])
        context = scorer.context
        # critic_ref may use an image_optional critic (critic-flickr8k-joint): its "no image" vector is the image
        no_image = self.context == "reference" and context == "image+reference" and scorer.image_optional
        if context != self.context and not no_image:
            hint = " (or an image + reference critic trained with image_optional)" if self.context == "reference" \
                else ""
            raise ValueError(f"{self.name} expects a critic with context {self.context!r}{hint}; {option} has "
                             f"{context!r}.")
        context_label = f"{self.context},image=none" if no_image else self.context
        return (scorer, "image" in context and not no_image, "reference" in context,
                f"model={scorer.label()},ctx={context_label},refs=mean{_oov_field(self.config)}"
                f"{scale_field(self._readable())}")

    def prepare(self, batch: CaptionBatch) -> list[float]:
        """Each caption's score (per caption, independent of the others: ``--processes N`` splits the captions and
        their images over the processes)."""
        scorer, uses_image, uses_reference, _ = self._scorer()
        images = batch.images if uses_image else None
        if uses_image and images is None:
            raise OptionError(words("images", f"{self.name} needs ", Setting(shown=""),
                                    " (one per prediction); critic_ref needs none."))
        preds = batch.raw_predictions
        scores = scorer.scores(preds, batch.raw_references if uses_reference else None, images=images,
                               batch_size=int(self.config["critic_batch_size"]), progress_bar=batch.progress,
                               oov=self.config["critic_oov"])
        return _zero_wordless(scores, preds)

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        scorer, _, uses_reference, signature = self._scorer()
        return _mean_output(self, batch, signature, scorer, uses_reference, self._readable())


def _scale_of(metric: CaptionMetric, folder) -> Any:
    """The readable scale (:mod:`capeval.scales`) ``critic_scale`` selects for ``metric`` scoring with the critic (or
    combiner) in ``folder``: a shipped map applies to the catalog model and weights it was fitted for."""
    from capeval.critic.loading import weights_digest
    from capeval.critic.stack import CriticStack, is_stack
    from capeval.model_store import catalog_name_of
    from capeval.scales import scale_for

    members = CriticStack.load(folder).member_paths(folder) if is_stack(folder) else []
    return scale_for(metric.name, metric.config["critic_scale"], option="critic_scale",
                     model=catalog_name_of(folder), weights=weights_digest(folder, *members))


def _mean_output(metric: CaptionMetric, batch: CaptionBatch, signature: str, scorer, uses_reference: bool,
                 scale=None) -> MetricOutput:
    """Per-caption scores (the gathered :meth:`prepare` entries when handed over, ``--processes N``, else
    :meth:`prepare` here) on the chosen scale (``scale``, a :class:`~capeval.scales.ReadableScale`, or ``None`` for
    raw), their mean as the corpus score, and the critics' vocabulary coverage (:mod:`capeval.coverage`:
    ``result["coverage"]``, an :class:`~capeval.coverage.OutOfVocabularyWarning` when low)."""
    from capeval.coverage import result_extra, warn_if_low

    prepared = metric._prepared
    if prepared is not None and len(prepared) != len(batch):
        raise ValueError(f"{metric.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
    per = [float(s) for s in (prepared if prepared is not None else metric.prepare(batch))]
    if scale is not None:
        per = [float(s) for s in scale(per)]
    coverage = scorer.coverage(batch.raw_predictions, batch.raw_references if uses_reference else None,
                               metric.config["critic_oov"])
    warn_if_low(metric.name, coverage)
    return MetricOutput(corpus={metric.name: float(np.mean(per)) if per else 0.0}, per_caption={metric.name: per},
                        signature=signature, extra=result_extra(metric.name, coverage), coverage=coverage)


def _oov_field(config: dict[str, Any]) -> str:
    """The signature's record of ``critic_oov`` (checked here): ``,oov=glove-map`` (the default since 2026-11-27) or
    ``,oov=unk`` (the critic as trained; signatures from before the option existed had no field and meant this)."""
    from capeval.critic.expansion import check_oov

    return f",oov={check_oov(config['critic_oov'])}"


def _zero_wordless(scores, preds) -> list[float]:
    """``scores`` as floats, 0 for a caption with no word token (empty, only punctuation / emoji)."""
    from capeval.critic.vocab import critic_tokens

    wordless = [i for i, p in enumerate(preds) if not any(ch.isalnum() for t in critic_tokens(p) for ch in t)]
    scores[wordless] = 0.0
    return [float(s) for s in scores]


class Critic(_CriticMetric):
    """The critic with image and reference as context (the paper's default)."""

    name = "critic"
    needs_images: ClassVar[bool] = True
    without_images: ClassVar[str | None] = "critic_ref"
    options: ClassVar[dict[str, Any]] = {"critic_model": _critic_model(
        "critic", DEFAULTS["critic"],
        "; other shipped names: critic-flickr8k-caption (the paper's caption-level critic, bundled), "
        "critic-flickr8k-coco and the paper's critic-flickr8k (reproductions, not recommended for ranking; fetched "
        "once with `capeval models fetch NAME`); `capeval models --metric critic` lists them"), **_shared()}


class CriticRef(_CriticMetric):
    """The critic with a reference as the only context (no image needed)."""

    name = "critic_ref"
    context = "reference"
    model_option = "critic_ref_model"
    needs_images: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = {
        "critic_ref_model": Option(
            default=None, kind="model", metavar="DIR|NAME",
            help="the critic_ref metric's model: a `capeval critic train` folder, a `capeval critic fit-ensemble` "
                 "folder or a shipped critic's name, also an image + reference critic trained with image_optional, "
                 f"which then scores with its learned no-image vector (default: {DEFAULTS['critic_ref']}); other "
                 "shipped names: critic-coco-ref and the paper's critic-flickr8k-ref (a reproduction, not "
                 "recommended for ranking)"),
        **_shared()}


#: Why ``critic_img`` has no default model (the selection rule's verdict in BENCHMARKS.md).
NO_IMAGE_ONLY_DEFAULT = (
    "critic_img has no default model: the only image-only critic capeval has, critic-flickr8k-img, is at chance on "
    "human judgments (Flickr8k-Expert τ-c .005; it judges machine style, not whether the caption fits the image; "
    "BENCHMARKS.md, 'critic_img'). Use clip_s or pac_s (the image, no reference), critic (image + reference) or "
    "critic_ref (reference only); or pass critic_img_model='critic-flickr8k-img' (or your own image-only critic) to "
    "score with it anyway.")


class CriticImg(_CriticMetric):
    """The critic with the image as the only context (no reference read). No default model: one must be named
    (:data:`NO_IMAGE_ONLY_DEFAULT` says why)."""

    reads_references = False

    name = "critic_img"
    context = "image"
    model_option = "critic_img_model"
    needs_images: ClassVar[bool] = True
    without_images: ClassVar[str | None] = "critic_ref"
    options: ClassVar[dict[str, Any]] = {
        "critic_img_model": Option(
            default=None, kind="model", metavar="DIR|NAME",
            help="the critic_img metric's model, required: an image-only `capeval critic train` folder or a shipped "
                 "name such as critic-flickr8k-img (no default: that critic is at chance on human judgments)"),
        **_shared()}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.config["critic_img_model"] is None:
            raise ValueError(NO_IMAGE_ONLY_DEFAULT)


class CriticPlus(CaptionMetric):
    """The critic and the sentence-embedding cosine of candidate and reference, combined per pair by weights fitted
    on Flickr8k dev (a critic stack with the cosine, :mod:`capeval.critic.stack`); averaged over the references."""

    name = "critic_plus"
    uses_tokens: ClassVar[bool] = False
    reports_coverage: ClassVar[bool] = True
    needs_images: ClassVar[bool] = True
    without_images: ClassVar[str | None] = "critic_ref"
    options: ClassVar[dict[str, Any]] = {
        "critic_plus_model": Option(
            default=DEFAULTS["critic_plus"], kind="model", none=True, metavar="DIR|NAME",
            help="the critic_plus metric's combiner: a `capeval critic fit-plus` folder or a shipped name "
                 f"(default: {DEFAULTS['critic_plus']}; None means the default)"),
        **_shared()}

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import require

        require("torch", "transformers", what=f"the {cls.name} metric")

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        from capeval.critic.loading import critic_folder, weights_digest
        from capeval.critic.stack import CriticStack

        folder = critic_folder(options.get("critic_plus_model") or cls.option_defaults()["critic_plus_model"])
        return weights_digest(folder, *CriticStack.load(folder).member_paths(folder))

    def _scorer(self):
        """``(scorer, signature)`` of the configured combiner (loaded once per process)."""
        from capeval.critic.loading import critic_folder, model_label
        from capeval.critic.stack import load_scorer

        folder = critic_folder(self.config["critic_plus_model"] or self.option_defaults()["critic_plus_model"])
        if not (folder / "combiner.json").is_file():
            raise FileNotFoundError(f"{folder} holds no combiner.json (a critic_plus combiner); make one with "
                                    "`capeval critic fit-plus`.")
        scorer = load_scorer(folder, device=self.config["critic_device"])
        if scorer.stack is None or not scorer.stack.uses_cosine or len(scorer.members) != 1:
            raise ValueError(f"critic_plus_model {folder} is not a critic_plus combiner (one critic and the sentence "
                             "cosine: combiner.json, `capeval critic fit-plus`).")
        critic = model_label(scorer.member_folders()[0])
        return scorer, (f"model={model_label(folder)},critic={critic},encoder={scorer.encoder.name},refs=mean"
                        f"{_oov_field(self.config)}{scale_field(self._readable())}")

    def _readable(self):
        """The readable scale ``critic_scale`` selects for the configured combiner, or ``None`` (raw)."""
        from capeval.critic.loading import critic_folder

        return _scale_of(self, critic_folder(self.config["critic_plus_model"] or self.option_defaults()["critic_plus_model"]))

    def prepare(self, batch: CaptionBatch) -> list[float]:
        """Each caption's score (independent of the others: ``--processes N`` splits them)."""
        scorer, _ = self._scorer()
        images = batch.images
        if "image" in scorer.context and images is None:
            raise OptionError(words("images", f"{self.name} needs ", Setting(shown=""), " (one per prediction)."))
        preds = batch.raw_predictions
        scores = scorer.scores(preds, batch.raw_references, images=images,
                               batch_size=int(self.config["critic_batch_size"]), progress_bar=batch.progress,
                               oov=self.config["critic_oov"])
        return _zero_wordless(scores, preds)

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        scorer, signature = self._scorer()
        return _mean_output(self, batch, signature, scorer, True, self._readable())
