"""The data every metric consumes: clean captions and their normalised tokens, computed once."""
from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from capeval.progress import progress
from capeval.text import Tokenizer, clean_all, get_tokenizer


class CaptionBatch:
    """Predictions with their references, cleaned, and tokenised lazily (once, deduplicated).

    Attributes:
        predictions: cleaned prediction strings, one per item.
        references: cleaned reference strings, a non-empty list per item.
        cleanup: name of the clean-up applied (``thumb`` or ``none``).
        tokenizer: the tokenizer used for :attr:`prediction_tokens` / :attr:`reference_tokens`.
    """

    def __init__(
        self,
        predictions: Sequence[str],
        references: Sequence[Sequence[str]],
        *,
        cleanup: str | None = "thumb",
        tokenizer: str | Tokenizer = "ptb",
        progress: bool | None = None,
    ) -> None:
        self.cleanup = "none" if cleanup is None else cleanup
        self.raw_predictions = list(predictions)
        self.raw_references = [list(r) for r in references]
        self.predictions = clean_all(self.raw_predictions, self.cleanup)
        self.references = [clean_all(r, self.cleanup) for r in self.raw_references]
        self.tokenizer = get_tokenizer(tokenizer)
        self.progress = progress

    def __len__(self) -> int:
        return len(self.predictions)

    @cached_property
    def _token_table(self) -> dict[str, list[str]]:
        unique: dict[str, None] = dict.fromkeys(self.predictions)
        for refs in self.references:
            unique.update(dict.fromkeys(refs))
        texts = list(unique)
        chunk = 20_000  # ~0.15 s each with the pure-Python tokenizer: a bar only for very large corpora
        if len(texts) <= chunk:
            return dict(zip(texts, self.tokenizer.tokenize(texts)))
        tokens: list[list[str]] = []
        for start in progress(range(0, len(texts), chunk), total=-(-len(texts) // chunk), desc="tokenising",
                              enabled=self.progress):
            tokens.extend(self.tokenizer.tokenize(texts[start : start + chunk]))
        return dict(zip(texts, tokens))

    @cached_property
    def prediction_tokens(self) -> list[list[str]]:
        table = self._token_table
        return [table[p] for p in self.predictions]

    @cached_property
    def reference_tokens(self) -> list[list[list[str]]]:
        table = self._token_table
        return [[table[r] for r in refs] for refs in self.references]
