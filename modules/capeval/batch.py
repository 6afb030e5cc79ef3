"""The data every metric consumes: clean captions and their normalised tokens, computed once.

Tokens are computed from the captions as given, never from the cleaned text (see
:mod:`capeval.text.cleanup`): token-based metrics see exactly pycocoevalcap's input whatever the clean-up.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from capeval.progress import progress
from capeval.text import Tokenizer, check_tokenizer, clean_all, get_cleanup, get_tokenizer


class CaptionBatch:
    """Predictions with their references, cleaned, and tokenised lazily (once, deduplicated).

    Attributes:
        raw_predictions, raw_references: the captions as given; these are what get tokenised.
        predictions: cleaned prediction strings, one per item (for metrics that read text).
        references: cleaned reference strings, a non-empty list per item.
        cleanup: name of the clean-up applied to :attr:`predictions` / :attr:`references`
            (``thumb`` or ``none``); it never changes :attr:`prediction_tokens` / :attr:`reference_tokens`.
        tokenizer: the tokenizer used for :attr:`prediction_tokens` / :attr:`reference_tokens`.
        images: one image per prediction (path, bytes, ``datasets.Image`` dict, PIL image or array, as given
            to :func:`capeval.score`; see :class:`~capeval.metric.CaptionMetric`), or ``None`` when none were
            given. Only metrics with ``needs_images`` read them.
        metrics: the call's metric instances by name (set by :func:`capeval.score`; empty otherwise), so that a
            metric built on others (``spider`` on ``cider_d`` and ``spice``) uses the call's own when it has them
            and each is computed once (:meth:`computed`).
    """

    #: See the class docstring; :func:`capeval.score` replaces it with the call's instances.
    metrics: dict[str, Any] = {}

    def __init__(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        *,
        cleanup: str | None = "thumb",
        tokenizer: str | Tokenizer = "ptb",
        progress: bool | None = None,
        images: Sequence[Any] | None = None,
    ) -> None:
        get_cleanup(cleanup)  # validates the name
        if images is not None and len(images) != len(predictions):
            raise ValueError(f"Length mismatch: {len(predictions)} predictions but {len(images)} images; "
                             "give exactly one image per prediction.")
        self.cleanup = "none" if cleanup is None else cleanup.lower()
        self.raw_predictions = list(predictions)
        self.raw_references = [list(r) for r in references]
        self._tokenizer_spec = check_tokenizer(tokenizer)  # built on first use: metrics without tokens never import it
        self.progress = progress
        self.images: list[Any] | None = None if images is None else list(images)

    def __len__(self) -> int:
        return len(self.raw_predictions)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer of :attr:`prediction_tokens` / :attr:`reference_tokens` (its name checked at construction,
        the tokenizer itself built when first read)."""
        return get_tokenizer(self._tokenizer_spec)

    @cached_property
    def predictions(self) -> list[str]:
        """Cleaned prediction strings (cleaned on first use: token-based metrics never read them)."""
        return clean_all(self.raw_predictions, self.cleanup)

    @cached_property
    def references(self) -> list[list[str]]:
        """Cleaned reference strings, a list per item (cleaned on first use)."""
        return [clean_all(r, self.cleanup) for r in self.raw_references]

    def subset(self, indices: Sequence[int]) -> CaptionBatch:
        """The items at ``indices`` as a batch of their own, sharing this batch's clean text and tokens.

        What one process of a multi-process run works on (:mod:`capeval.parallel`): nothing is cleaned
        or tokenised again, so each item's text and tokens are exactly the full batch's; :attr:`images`
        (when given) are subset alike.
        """
        sub = object.__new__(CaptionBatch)
        sub.cleanup, sub._tokenizer_spec, sub.progress = self.cleanup, self._tokenizer_spec, self.progress
        if "tokenizer" in self.__dict__:
            sub.__dict__["tokenizer"] = self.tokenizer
        sub.images = None if self.images is None else [self.images[i] for i in indices]
        sub.metrics = self.metrics
        sub.raw_predictions = [self.raw_predictions[i] for i in indices]
        sub.raw_references = [self.raw_references[i] for i in indices]
        if "predictions" in self.__dict__:
            sub.__dict__["predictions"] = [self.predictions[i] for i in indices]
        if "references" in self.__dict__:
            sub.__dict__["references"] = [self.references[i] for i in indices]
        sub.__dict__["prediction_tokens"] = [self.prediction_tokens[i] for i in indices]
        sub.__dict__["reference_tokens"] = [self.reference_tokens[i] for i in indices]
        return sub

    def computed(self, metric: Any) -> Any:
        """``metric.compute(self)`` (a :class:`~capeval.metric.MetricOutput`), computed once per metric instance
        and batch: the second request (a composite metric reading a metric the call also reports) gets the same
        output."""
        outputs = self.__dict__.setdefault("_outputs", {})
        key = id(metric)
        if key not in outputs:
            outputs[key] = (metric, metric.compute(self))  # the instance kept, so that its id is not reused
        return outputs[key][1]

    @cached_property
    def _token_table(self) -> dict[str, list[str]]:
        unique: dict[str, None] = dict.fromkeys(self.raw_predictions)
        for refs in self.raw_references:
            unique.update(dict.fromkeys(refs))
        texts = list(unique)
        chunk = 20_000  # ~0.15 s each with the pure-Python tokenizer: a bar only for very large corpora
        if len(texts) <= chunk:
            tokens = self._tokenize(texts)
        else:
            tokens = []
            for start in progress(range(0, len(texts), chunk), total=-(-len(texts) // chunk), desc="tokenising",
                                  enabled=self.progress):
                tokens.extend(self._tokenize(texts[start : start + chunk]))
        return dict(zip(texts, tokens))

    def _tokenize(self, texts: list[str]) -> list[list[str]]:
        tokens = self.tokenizer.tokenize(texts)
        if type(self.tokenizer).__module__.startswith("capeval.text.") and isinstance(tokens, list) and len(tokens) == len(texts):
            return tokens  # capeval's own tokenizers return lists of str (tested); a user's tokenizer is checked
        if not isinstance(tokens, list) or len(tokens) != len(texts) or not all(
            isinstance(t, list) and all(isinstance(w, str) for w in t) for t in tokens
        ):
            raise TypeError(
                f"tokenizer {self.tokenizer.name!r} must return one list of str tokens per text "
                f"({len(texts)} texts), got {type(tokens).__name__} of length {len(tokens) if hasattr(tokens, '__len__') else '?'}."
            )
        return tokens

    @cached_property
    def prediction_tokens(self) -> list[list[str]]:
        table = self._token_table
        return [table[p] for p in self.raw_predictions]

    @cached_property
    def reference_tokens(self) -> list[list[list[str]]]:
        table = self._token_table
        return [[table[r] for r in refs] for refs in self.raw_references]
