"""Vectorised n-gram counts of a batch, shared by BLEU and CIDEr-D.

Every caption (predictions first, then all references flattened in order) becomes a row of a sparse
count matrix whose columns are the distinct 1..n-grams of the batch. N-gram ids are assigned with
numpy (an order-k gram is the pair (order-(k-1) gram id, last token id)), so no Python tuple is
built per n-gram occurrence.

Tokens are re-split on whitespace (``" ".join(tokens).split()``) before counting: pycocoevalcap's
BLEU and CIDEr split the tokenizer's space-joined output with ``str.split()``, so a token holding a
Unicode space (or an empty token) must be counted the way they count it.
"""
from __future__ import annotations

import weakref
from itertools import chain
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

__all__ = ["BatchNgrams", "NgramTable", "batch_ngrams", "count_ngrams", "ngrams_of", "whitespace_split"]


def whitespace_split(tokens: Sequence[str]) -> list[str]:
    """The tokens exactly as pycocoevalcap's ``precook`` sees them (``" ".join(tokens).split()``)."""
    return " ".join(tokens).split()


@dataclass
class NgramTable:
    """1..n-gram counts of a list of captions.

    Attributes:
        n: highest n-gram order.
        counts: ``(captions x grams)`` CSR matrix of n-gram counts (float64, canonical format).
        order: for each gram column, its order minus one (0 = unigram ... n-1).
        lengths: number of tokens of each caption.
        token_ids: per caption, its tokens as ids into ``vocabulary``.
        vocabulary: token strings by id.
        first_position: for each gram column, ``(caption, start)`` of one occurrence (to spell it).
        tokens_as_given: the captions' tokens were counted as given (no token was empty or held whitespace,
            so nothing was re-split): ``token_ids`` then spell exactly the input token lists.
        gram_keys / key_width: per order from 2, the sorted keys of its grams (``prefix * key_width + last``: the
            column of the gram of its tokens but the last, counted within its order, and its last token's id), what
            :meth:`gram_strings` spells them from; the gram columns of an order are its keys' ranks.
        distinct_counts / distinct_row: when captions were repeated (:func:`count_ngrams`), the counts of the
            distinct captions and the row of each caption among them (``counts`` = ``distinct_counts[distinct_row]``),
            so that work per caption can be done once per distinct caption; else ``None``.
    """

    n: int
    counts: sp.csr_matrix
    order: np.ndarray
    lengths: np.ndarray
    token_ids: np.ndarray
    token_row: np.ndarray
    vocabulary: list[str]
    first_position: np.ndarray
    tokens_as_given: bool = False
    distinct_counts: sp.csr_matrix | None = None
    distinct_row: np.ndarray | None = None
    gram_keys: list[np.ndarray] = field(default_factory=list)
    key_width: int = 1

    def distinct(self) -> tuple[sp.csr_matrix, np.ndarray]:
        """``(counts of the distinct captions, each caption's row among them)`` (every caption its own row when
        none was repeated)."""
        if self.distinct_counts is None:
            return self.counts, np.arange(self.counts.shape[0], dtype=np.int64)
        return self.distinct_counts, self.distinct_row

    def gram_strings(self) -> list[str]:
        """Each gram column spelled as its tokens joined by single spaces: an order-k gram as the string of its first
        k-1 tokens' gram, a space and its last token (no token holds a space: tokens are split on whitespace)."""
        vocab = self.vocabulary
        spelled = list(vocab)  # the unigrams' columns are the token ids
        previous = 0  # the first column of the order below
        for keys in self.gram_keys:  # orders 2..n: key = prefix column (in its order) * width + last token
            prefixes, lasts = divmod(keys, self.key_width)
            start = len(spelled)
            spelled.extend(f"{spelled[previous + p]} {vocab[t]}" for p, t in zip(prefixes.tolist(), lasts.tolist()))
            previous = start
        return spelled


def count_ngrams(captions: Sequence[Sequence[str]], n: int = 4) -> NgramTable:
    """Count the 1..n-grams of every caption (a list of tokens).

    A caption given several times as the same list object (a batch's repeated references: the tokens of one text
    are one list) is counted once and its row repeated: the table is the one counting every copy would give (the
    same vocabulary and gram ids, since a word's first occurrence is in its caption's first copy)."""
    distinct, rows_of = _distinct(captions)
    if len(distinct) == len(captions):
        return _count_distinct(captions, n)
    return _repeated(_count_distinct(distinct, n), rows_of)


def _distinct(captions: Sequence[Sequence[str]]) -> tuple[list, np.ndarray]:
    """``(captions without repeated objects, in first-seen order; the row of each caption among them)``."""
    keys = list(map(id, captions))
    first = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    if len(first) == len(keys):
        return list(captions), np.arange(len(keys), dtype=np.int64)
    rows_of = np.fromiter(map(first.__getitem__, keys), dtype=np.int64, count=len(keys))
    seen = np.zeros(len(first), dtype=np.int64)
    seen[rows_of[::-1]] = np.arange(len(keys) - 1, -1, -1, dtype=np.int64)  # each distinct caption's first place
    return [captions[i] for i in seen.tolist()], rows_of


def _offsets(lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def _repeated(table: NgramTable, rows_of: np.ndarray) -> NgramTable:
    """The table of the captions ``table``'s rows ``rows_of`` (rows repeated; tokens and gram positions with them)."""
    lengths = table.lengths[rows_of]
    starts, distinct_starts = _offsets(lengths), _offsets(table.lengths)
    source = np.repeat(distinct_starts[rows_of] - starts, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
    first_copy = np.zeros(len(table.lengths), dtype=np.int64)
    first_copy[rows_of[::-1]] = np.arange(len(rows_of) - 1, -1, -1, dtype=np.int64)
    caption = table.token_row[table.first_position]
    return NgramTable(
        n=table.n, counts=table.counts[rows_of], order=table.order, lengths=lengths,
        token_ids=table.token_ids[source], token_row=np.repeat(np.arange(len(rows_of), dtype=np.int64), lengths),
        vocabulary=table.vocabulary,
        first_position=starts[first_copy[caption]] + (table.first_position - distinct_starts[caption]),
        tokens_as_given=table.tokens_as_given, distinct_counts=table.counts, distinct_row=rows_of,
        gram_keys=table.gram_keys, key_width=table.key_width)


def _count_distinct(captions: Sequence[Sequence[str]], n: int) -> NgramTable:
    words = list(chain.from_iterable(captions))
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    # no distinct token is empty or holds whitespace (what " ".join(words).split() == words says, checked once per
    # distinct token): nothing to re-split
    as_given = all(len(p) == 1 and p[0] == w for w, p in zip(vocab, map(str.split, vocab)))
    if as_given:
        lengths = np.fromiter(map(len, captions), dtype=np.int64, count=len(captions))
    else:
        split = [whitespace_split(tokens) for tokens in captions]
        lengths = np.fromiter(map(len, split), dtype=np.int64, count=len(split))
        words = list(chain.from_iterable(split))
        vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    tok = np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))
    n_tokens = tok.size
    row = np.repeat(np.arange(len(captions), dtype=np.int64), lengths)
    starts = np.zeros(len(captions), dtype=np.int64)
    if len(captions) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    pos = np.arange(n_tokens, dtype=np.int64) - starts[row]  # position of each token in its caption
    remaining = lengths[row] - pos  # tokens from here to the end of the caption (>= 1)

    gram_cols: list[np.ndarray] = []
    gram_rows: list[np.ndarray] = []
    orders: list[np.ndarray] = []
    first_positions: list[np.ndarray] = []
    gram_keys: list[np.ndarray] = []
    offset = 0
    prev_ids = tok  # ids of the order-(k-1) gram starting at each token (valid where remaining >= k-1)
    for k in range(1, n + 1):
        valid = np.flatnonzero(remaining >= k)
        if k == 1:
            n_types = len(vocab)
            first = np.empty(n_types, dtype=np.int64)
            first[tok[::-1]] = np.arange(n_tokens - 1, -1, -1, dtype=np.int64)  # one occurrence of each id (to spell it)
            gram_ids = tok
        else:
            width = np.int64(max(len(vocab), 1))
            key = prev_ids[valid] * width + tok[valid + k - 1]
            uniq, inverse = np.unique(key, return_inverse=True)  # no return_index: a quicksort, not a mergesort
            n_types = uniq.size
            gram_keys.append(uniq)
            gram_ids = inverse.astype(np.int64).reshape(-1)
            first = np.empty(n_types, dtype=np.int64)
            first[gram_ids[::-1]] = valid[::-1]  # one occurrence of each gram, to spell it
            # ids of order-k grams indexed by start token, for the next order
            next_ids = np.zeros(n_tokens, dtype=np.int64)
            next_ids[valid] = gram_ids
            prev_ids = next_ids
        gram_cols.append(gram_ids + offset)
        gram_rows.append(row[valid])
        orders.append(np.full(n_types, k - 1, dtype=np.int8))
        first_positions.append(first)
        offset += n_types
    cols = np.concatenate(gram_cols) if gram_cols else np.zeros(0, dtype=np.int64)
    rows = np.concatenate(gram_rows) if gram_rows else np.zeros(0, dtype=np.int64)
    counts = sp.csr_matrix(
        (np.ones(cols.size, dtype=np.float64), (rows, cols)), shape=(len(captions), offset)
    )
    counts.sum_duplicates()
    counts.sort_indices()
    return NgramTable(
        n=n,
        counts=counts,
        order=np.concatenate(orders) if orders else np.zeros(0, dtype=np.int8),
        lengths=lengths,
        token_ids=tok,
        token_row=row,
        vocabulary=list(vocab),
        first_position=np.concatenate(first_positions) if first_positions else np.zeros(0, dtype=np.int64),
        tokens_as_given=as_given,
        gram_keys=gram_keys,
        key_width=max(len(vocab), 1),
    )


@dataclass
class BatchNgrams:
    """N-gram counts of a batch: prediction rows, reference rows and which item each reference serves."""

    table: NgramTable
    n_predictions: int
    ref_item: np.ndarray  # item index of each reference row
    ref_start: np.ndarray  # first reference row of each item

    @cached_property
    def hyp(self) -> sp.csr_matrix:
        """The predictions' rows of the counts (sliced once: BLEU, CIDEr-D and the document frequencies read them)."""
        return self.table.counts[: self.n_predictions]

    @cached_property
    def refs(self) -> sp.csr_matrix:
        """The references' rows of the counts (sliced once)."""
        return self.table.counts[self.n_predictions :]

    @property
    def hyp_lengths(self) -> np.ndarray:
        return self.table.lengths[: self.n_predictions]

    @property
    def ref_lengths(self) -> np.ndarray:
        return self.table.lengths[self.n_predictions :]


_CACHE: "weakref.WeakKeyDictionary[object, dict[int, BatchNgrams]]" = weakref.WeakKeyDictionary()


def ngrams_of(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]], n: int = 4) -> BatchNgrams:
    """Count the n-grams of tokenised predictions and their references."""
    captions: list[Sequence[str]] = list(predictions)
    n_refs = np.fromiter((len(r) for r in references), dtype=np.int64, count=len(references))
    for refs in references:
        captions.extend(refs)
    ref_start = np.zeros(len(references), dtype=np.int64)
    if len(references) > 1:
        np.cumsum(n_refs[:-1], out=ref_start[1:])
    return BatchNgrams(
        table=count_ngrams(captions, n),
        n_predictions=len(predictions),
        ref_item=np.repeat(np.arange(len(references), dtype=np.int64), n_refs),
        ref_start=ref_start,
    )


def cached_batch_ngrams(batch, n: int = 4) -> BatchNgrams | None:
    """The batch's n-gram counts if a metric has already computed them, else ``None`` (nothing is counted)."""
    return _CACHE.get(batch, {}).get(n)


def batch_ngrams(batch, n: int = 4) -> BatchNgrams:
    """:func:`ngrams_of` for a :class:`~capeval.batch.CaptionBatch`, computed once per batch and ``n``."""
    per_batch = _CACHE.setdefault(batch, {})
    if n not in per_batch:
        per_batch[n] = ngrams_of(batch.prediction_tokens, batch.reference_tokens, n)
    return per_batch[n]
