"""The base class every capeval metric family implements (functional cores live in each family's package)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.registry import result_keys


@dataclass
class MetricOutput:
    """What one metric returns for a batch.

    corpus: corpus-level floats by result key (e.g. ``{"bleu_4": 0.19}``).
    per_caption: one float per prediction by result key.
    signature: this metric's signature field value (e.g. ``"closest"``).
    extra: additional result entries (e.g. ``{"spice_details": [...]}``), merged into the result.
    state: for a metric whose corpus value is not the mean of its per-caption values (BLEU's summed counts, METEOR's
        aggregate of statistics lines), what the corpus value is computed from, JSON-able and mergeable over batches
        by the class's :meth:`CaptionMetric.merge_state` / :meth:`CaptionMetric.corpus_from_merged` (or
        :meth:`CaptionMetric.corpus_from_states`; :func:`capeval.score_dataset` scores a dataset in chunks and merges
        them one at a time); ``None`` when the corpus value is the mean of the per-caption values.
    coverage: for a metric that reads a fixed vocabulary, the :class:`capeval.coverage.Coverage` behind
        ``result["coverage"]`` (its token counts are what :func:`capeval.score_dataset` adds up over chunks).
    """

    corpus: dict[str, float]
    per_caption: dict[str, list[float]]
    signature: str
    extra: dict[str, Any] = field(default_factory=dict)
    state: Any = None
    coverage: Any = None


class CaptionMetric(ABC):
    """One metric family (e.g. BLEU gives ``bleu_1`` ... ``bleu_4``).

    Subclasses set ``name`` (used in ``metrics=`` and on the CLI; its result keys are declared once,
    in :mod:`capeval.registry`, and read back as ``keys``), ``uses_tokens`` (whether it consumes
    normalised tokens, so the tokenizer enters the signature), ``reads_text`` (whether it reads the
    cleaned caption text, so the clean-up enters the signature), ``limits_length`` (whether captions
    longer than ``max_caption_chars`` are refused before it runs: the metrics whose time or memory grow
    badly with caption length), ``needs_images`` (whether :meth:`compute` / :meth:`prepare` read
    ``batch.images``: one image per prediction, see below) and ``options`` (keyword options with defaults,
    all prefixed by the metric name).

    Image-reading metrics (``needs_images = True``): :func:`capeval.score` refuses to run them without
    ``images=`` (``ValueError`` naming the metric) or with a ``None`` entry (naming the item), so
    ``batch.images`` is then a list with one entry per prediction, in prediction order, as the caller gave
    it: a path (``str`` / ``os.PathLike``), encoded ``bytes``, a ``datasets.Image`` value (a dict with
    ``"bytes"`` and/or ``"path"``), a ``PIL.Image.Image`` or a numpy array. Only the container and the entry
    types are checked beforehand (:func:`capeval.validation.check_images`); read the entries with
    :func:`capeval.models.images.read_item` (missing and unreadable files, colour, size rules). Such a metric
    adds what identifies its image inputs (encoder, resolution...) to its own signature field.
    """

    name: ClassVar[str]
    uses_tokens: ClassVar[bool] = True
    reads_text: ClassVar[bool] = False
    limits_length: ClassVar[bool] = False
    needs_images: ClassVar[bool] = False
    #: Whether it reads a fixed vocabulary and reports its coverage (``result["coverage"]``, :mod:`capeval.coverage`).
    reports_coverage: ClassVar[bool] = False
    #: The metric makes only acyclic Python objects (n-gram tuples, counts): :func:`capeval.score` pauses the cyclic
    #: garbage collector while a call selects only such metrics (its repeated scans of the many short-lived objects
    #: cost a quarter of BLEU + ROUGE-L + CIDEr-D's time on 8,000 Karpathy-test candidates, measured).
    pauses_gc: ClassVar[bool] = False
    #: The metric may leave items without a score (a judge whose answer holds no usable number): their per-caption
    #: value is ``NaN``, the metric counts and lists them in its extras and warns, and its corpus value is the mean of
    #: the others (``NaN`` only when no item has a score). Infinite values are still a bug.
    unscored_items: ClassVar[bool] = False
    #: Keyword options by name, each a :class:`capeval.options.Option` (its default, help, kind, choices, range),
    #: all prefixed by the metric's family name. A bare value is taken as an ``Option`` with that default.
    options: ClassVar[dict[str, Any]] = {}
    #: What the runners need to know, stated by the metric (none of them knows a metric by name):
    #: ``whole_set_only``: why the metric cannot be scored chunk by chunk (its value is a property of the whole set of
    #: captions), or ``None``: :func:`capeval.score_dataset` refuses it, ``capeval score`` keeps it in memory.
    whole_set_only: ClassVar[str | None] = None
    #: ``chunk_multiple_of``: an option whose value a chunk size must be a multiple of (a score depends slightly on
    #: the other items of its batch), or ``None``.
    chunk_multiple_of: ClassVar[str | None] = None
    #: ``document_frequency_option``: the option naming the document frequencies the metric reads; when it is
    #: ``"references"`` (its default), :func:`capeval.score_dataset` counts them over every row's references in a
    #: first pass and hands the table over, so chunks score as the whole set would. ``None``: no such pass.
    document_frequency_option: ClassVar[str | None] = None
    #: ``without_images``: for a metric that reads images, a metric that reads none to suggest when no image is
    #: given (``critic`` → ``critic_ref``), or ``None``.
    without_images: ClassVar[str | None] = None
    #: ``external_weights``: the metric's default weights do not come with capeval: the user fetches them (CLIP,
    #: PAC-S, Polos, the LLaVA judges), so a check such as ``capeval verify`` looks for them first.
    external_weights: ClassVar[bool] = False
    #: ``judge_models``: for a multimodal-LLM judge, the Hugging Face Hub repositories its default model is built from
    #: (the model, then any adapter); ``()`` for a metric that is no such judge.
    judge_models: ClassVar[tuple[str, ...]] = ()
    #: ``trained_on_nothing``: a rule-based metric (BLEU, CIDEr-D, SPICE ...: nothing of it was fitted to data), so
    #: no benchmark can be in its training data; a metric reading a trained model leaves it ``False`` and names the
    #: model in the catalog (:mod:`capeval.catalog`), whose training data decide contamination.
    trained_on_nothing: ClassVar[bool] = False
    #: ``reads_references``: whether the references enter the scores (``False`` for a reference-free metric such as
    #: CLIP-S: any reference setting then measures the same numbers).
    reads_references: ClassVar[bool] = True
    #: ``code_packages``: other capeval packages whose code decides this metric's scores besides its own package and
    #: the text pipeline (SPIDEr: CIDEr-D's and SPICE's; METEOR: ``capeval.meteor``), for caches keyed on code.
    code_packages: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def weights_hint(cls) -> str | None:
        """For a metric whose default weights are the authors' own file, on no Hugging Face repo (PAC-S, Polos): how a
        user gets them and where they go, in the command line's words (one clause, no final period); ``None``
        for every other metric."""
        return None

    @classmethod
    def missing_weights(cls) -> tuple[str, str, str] | None:
        """For a metric that reads models or data the user fetches and that is none of the vision-language or judge
        families ``capeval verify`` knows (CAPTURE): ``(why, what is missing, the command that fetches it)`` when its
        defaults are not here, never downloading; ``None`` when they are (the default: nothing to fetch)."""
        return None

    def __init__(self, **options: Any) -> None:
        from capeval.options import declared
        from capeval.suggest import did_you_mean

        declarations = declared(self.options)
        unknown = sorted(set(options) - set(declarations))
        if unknown:
            hint = did_you_mean(unknown[0], declarations) if len(unknown) == 1 else ""
            raise ValueError(f"{self.name}: unknown option(s) {unknown}{hint or ''}; valid: {sorted(declarations)}.")
        self.config = {name: option.default for name, option in declarations.items()}
        for name, value in options.items():  # the checks of each option's one declaration
            self.config[name] = declarations[name].check(name, value)
        self._prepared: list[Any] | None = None

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """``{option: default}`` of this metric's :attr:`options`."""
        from capeval.options import declared

        return {name: option.default for name, option in declared(cls.options).items()}

    @property
    def keys(self) -> tuple[str, ...]:
        """Result keys of this metric family, from :data:`capeval.registry.REGISTRY`."""
        return result_keys(self.name)

    @classmethod
    def corpus_from_states(cls, states: Iterable[Any]) -> dict[str, float]:
        """The corpus values of the batches whose :attr:`MetricOutput.state` are ``states`` (in batch order), as one
        call on all their items would give them, reading ``states`` once (it may be a generator, so that merging a
        million batches holds one at a time): :meth:`merge_state` over them, then :meth:`corpus_from_merged`."""
        merged = None
        for state in states:
            merged = cls.merge_state(merged, state)
        if merged is None:
            raise ValueError(f"{cls.name}: no batch state to merge.")
        return cls.corpus_from_merged(merged)

    @classmethod
    def merge_state(cls, merged: Any, state: Any) -> Any:
        """``merged`` (``None`` before the first batch) with the next batch's ``state`` added, in batch order; its
        size does not grow with the number of batches. Only metrics that set ``state`` implement it."""
        raise NotImplementedError(f"{cls.name} has no mergeable corpus state.")

    @classmethod
    def corpus_from_merged(cls, merged: Any) -> dict[str, float]:
        """The corpus values from what :meth:`merge_state` accumulated."""
        raise NotImplementedError(f"{cls.name} has no mergeable corpus state.")

    @classmethod
    def check_available(cls) -> None:
        """Raise ``ImportError``/``OSError`` naming the fix if a dependency is missing."""

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """What besides the code and the options decides this metric's scores (e.g. a hash of learned weights), for
        the benchmark score cache (:mod:`capeval.meta_evaluation.scorers`): a retrained model must not hit old scores.
        ``options``: the options given (unset ones take :attr:`options`' defaults). Default: nothing."""
        return ""

    @abstractmethod
    def compute(self, batch: CaptionBatch) -> MetricOutput:
        """Score ``batch``; must raise ``ValueError`` rather than return NaN."""

    def prepare(self, batch: CaptionBatch) -> list[Any] | None:
        """The per-item heavy work for ``batch``: one picklable entry per item, or ``None`` (the default).

        Metrics whose per-item work dominates (SPICE parsing, METEOR statistics) return it here, so that
        several processes can each prepare a share of the items (:mod:`capeval.parallel`); the gathered list
        is handed back with :meth:`use_prepared` and :meth:`compute` then computes the corpus statistics
        from it, exactly as from one process. Metrics without such work (BLEU, ROUGE-L, CIDEr-D: their
        corpus statistics are the cheap part) keep the default and compute everything in :meth:`compute`.
        """
        return None

    def use_prepared(self, prepared: list[Any] | None) -> None:
        """Make the next :meth:`compute` use ``prepared`` (the gathered :meth:`prepare` entries, item order)."""
        self._prepared = prepared

    def close(self) -> None:
        """Release external resources (JVMs, pools). Safe to call twice."""
