"""The critic's tokens and vocabulary (Cui et al. 2018; the reference code's rules).

* :func:`critic_tokens`: lower-case, split into words (letters/digits, with inner apostrophes kept) and
  punctuation, and drop single-character punctuation tokens.
* :class:`CriticVocab`: ``<pad>`` = 0, ``<unk>`` = 1, ``<sos>`` = 2, ``<eos>`` = 3, then the ``max_words``
  (10,000) most frequent training tokens (ties broken alphabetically, so the vocabulary is deterministic).
  :meth:`CriticVocab.encode` keeps at most ``max_length`` (15) tokens and appends ``<eos>`` only when the caption
  is shorter; its ``lengths`` count the ``<eos>``, so position ``length - 1`` is the ``<eos>`` for short captions
  and the last real token for long ones (the sentence vector is read there; the reference code read an all-zero
  vector for captions of 15+ tokens, a defect not copied).
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

PAD, UNK, SOS, EOS = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<sos>", "<eos>")
MAX_LENGTH = 15
MAX_WORDS = 10_000
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|[^\w\s]+|_+")


def critic_tokens(text: str) -> list[str]:
    """The critic's tokens of ``text``: lower-cased words and multi-character punctuation (see module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"expected a caption string, got {type(text).__name__} ({text!r:.60}).")
    return [t for t in _TOKEN.findall(text.lower()) if not (len(t) == 1 and not t.isalnum())]


class CriticVocab:
    """Token <-> id for the critic (see the module docstring)."""

    def __init__(self, words: Sequence[str], max_length: int = MAX_LENGTH):
        words = list(words)
        if words[: len(SPECIALS)] != list(SPECIALS):
            raise ValueError(f"a critic vocabulary starts with {SPECIALS}, got {words[:4]}.")
        if len(set(words)) != len(words):
            raise ValueError("duplicate words in the critic vocabulary.")
        if not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"max_length must be a positive int, got {max_length!r}.")
        self.words, self.max_length = words, max_length
        self.index = {w: i for i, w in enumerate(words)}

    @classmethod
    def build(cls, captions: Iterable[str], max_words: int = MAX_WORDS, max_length: int = MAX_LENGTH) -> CriticVocab:
        """The ``max_words`` most frequent tokens of ``captions`` after the four special tokens."""
        counts = Counter(t for c in captions for t in critic_tokens(c))
        for s in SPECIALS:
            counts.pop(s, None)
        ranked = sorted(counts, key=lambda w: (-counts[w], w))[:max_words]
        return cls([*SPECIALS, *ranked], max_length)

    def __len__(self) -> int:
        return len(self.words)

    def ids(self, text: str) -> list[int]:
        """Ids of ``text`` (at most ``max_length`` tokens, then ``<eos>`` if it fits), unknown words -> ``<unk>``."""
        ids = [self.index.get(t, UNK) for t in critic_tokens(text)][: self.max_length]
        return ids + [EOS] if len(ids) < self.max_length else ids

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids [n, max_length] int64, lengths [n] int64)``; padding is ``<pad>``; an empty caption is ``<eos>``."""
        out = np.zeros((len(texts), self.max_length), dtype=np.int64)
        lengths = np.zeros(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            ids = self.ids(text)
            out[i, : len(ids)] = ids
            lengths[i] = len(ids)
        return out, lengths

    def save(self, folder: str | os.PathLike) -> Path:
        path = Path(folder) / "vocab.json"
        path.write_text(json.dumps({"words": self.words, "max_length": self.max_length}, ensure_ascii=False), "utf-8")
        return path

    @classmethod
    def load(cls, folder: str | os.PathLike) -> CriticVocab:
        path = Path(folder) / "vocab.json"
        if not path.is_file():
            raise FileNotFoundError(f"{folder}: no vocab.json (not a critic folder).")
        data = json.loads(path.read_text("utf-8"))
        return cls(data["words"], int(data["max_length"]))
