"""CIDEr-D's document frequencies over a whole dataset in a compact table: 24 bytes per n-gram instead of a dict entry.

:func:`capeval.score_dataset` counts the document frequency of every 1- to 4-gram of every row's references before
it scores (CIDEr-D's ``cider_df="references"`` over the whole data). As a Python ``dict`` of n-gram strings that table
took about 200 bytes per n-gram, so memory grew with the dataset. Here each n-gram is its 16-byte BLAKE2b digest of
its UTF-8 text (``'S16'``), kept sorted with an ``int64`` count: :class:`DocumentFrequencyCounter` adds chunks' counts
(merged in sorted runs), :class:`CompactDocumentFrequency` looks counts up by binary search and is a
:class:`~capeval.coco.document_frequency.DocumentFrequency` for :class:`~capeval.coco.cider.CiderD`.

Exactness: two distinct n-grams would share a count only if their 128-bit digests collided; with ``N`` distinct
n-grams the chance is below ``N² / 2¹²⁹`` (1e-19 for ten billion n-grams).
"""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from capeval.coco.document_frequency import DocumentFrequency

__all__ = ["CompactDocumentFrequency", "DocumentFrequencyCounter", "gram_keys", "keys_from_words", "keys_to_words"]

#: Digest bytes per n-gram.
KEY_BYTES = 16


def gram_keys(grams: Sequence[str]) -> np.ndarray:
    """The 16-byte BLAKE2b digest of each gram's UTF-8 text, as an ``'S16'`` array (byte-wise order)."""
    blake2b = hashlib.blake2b
    return np.array([blake2b(g.encode("utf-8"), digest_size=KEY_BYTES).digest() for g in grams], dtype=f"S{KEY_BYTES}")


def keys_to_words(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``'S16'`` keys as two ``uint64`` columns (high, low: big-endian halves, so their order is the keys' order)."""
    halves = np.ascontiguousarray(keys).view(">u8").reshape(-1, 2).astype(np.uint64)
    return halves[:, 0], halves[:, 1]


def keys_from_words(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The inverse of :func:`keys_to_words` (one new array of 16 bytes per key)."""
    keys = np.empty(len(high), dtype=[("high", ">u8"), ("low", ">u8")])
    keys["high"], keys["low"] = high, low
    return keys.view(f"S{KEY_BYTES}")


def _merge(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys with the counts of equal keys added."""
    if not len(keys):
        return keys, counts.astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(counts.astype(np.int64), starts)


def _merge_sorted(keys: np.ndarray, counts: np.ndarray, more: np.ndarray, more_counts: np.ndarray):
    """Two sorted tables without repeated keys merged into one: counts of shared keys added in place, the other keys
    inserted at their places (one new array the size of the result, no sort of the whole table)."""
    if not len(keys):
        return more, more_counts
    at = np.searchsorted(keys, more)
    shared = keys[np.minimum(at, len(keys) - 1)] == more
    np.add.at(counts, at[shared], more_counts[shared])
    new = ~shared
    return np.insert(keys, at[new], more[new]), np.insert(counts, at[new], more_counts[new])


class DocumentFrequencyCounter:
    """Adds ``(grams, counts)`` of chunk after chunk; :meth:`table` gives the sorted keys and their total counts.

    Unmerged chunks are merged into the sorted table once they hold ``merge_every`` entries, so memory stays about 24
    bytes per distinct n-gram plus ``merge_every`` entries."""

    def __init__(self, merge_every: int = 2_000_000):
        self.merge_every = int(merge_every)
        if self.merge_every < 1:
            raise ValueError("merge_every must be positive.")
        #: Documents the added chunks counted over (as :meth:`add` was told).
        self.documents = 0
        self._keys = np.zeros(0, dtype=f"S{KEY_BYTES}")
        self._counts = np.zeros(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_size = 0

    def add(self, grams: Sequence[str], counts: Sequence[int] | np.ndarray, documents: int = 0) -> None:
        """Add one chunk: its distinct grams, each one's document count, and its number of documents."""
        counts = np.asarray(counts, dtype=np.int64)
        if len(grams) != len(counts):
            raise ValueError(f"{len(grams)} grams but {len(counts)} counts.")
        self.documents += int(documents)
        keep = counts > 0
        if not keep.any():
            return
        self._pending.append(_merge(gram_keys([g for g, k in zip(grams, keep) if k]), counts[keep]))
        self._pending_size += int(keep.sum())
        if self._pending_size >= self.merge_every:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            keys, counts = _merge(np.concatenate([k for k, _ in self._pending]),
                                  np.concatenate([c for _, c in self._pending]))
            self._pending, self._pending_size = [], 0
            self._keys, self._counts = _merge_sorted(self._keys, self._counts, keys, counts)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sorted 'S16' keys, int64 counts)``."""
        self._flush()
        return self._keys, self._counts


@dataclass
class CompactDocumentFrequency(DocumentFrequency):
    """A :class:`DocumentFrequency` held as sorted digests (``keys``) and counts (``counts``); ``df`` stays empty."""

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=f"S{KEY_BYTES}"))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def lookup(self, grams: list[str]) -> np.ndarray:
        """Document frequency of each gram (0 when unseen), as float64."""
        if not len(self.keys) or not len(grams):
            return np.zeros(len(grams), dtype=np.float64)
        wanted = gram_keys(grams)
        at = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        return np.where(self.keys[at] == wanted, self.counts[at], 0).astype(np.float64)
