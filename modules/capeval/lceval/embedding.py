"""LCEval's word-embedding features (Sharif et al., 2019): feature 7 (WMD similarity) and feature 10 (MOWE).

Documents are lists of words, normally :func:`capeval.lceval.stopwords.content_words` of a caption (the
reference code removes NLTK's English stop words first); ``vectors`` is a
:class:`capeval.models.word_vectors.WordVectors` (GloVe 6B 50-d by default). Words without a vector are dropped.

* :func:`wmd_distance`: the word mover's distance (Kusner et al., 2015) between two documents, exactly what
  gensim 4's ``KeyedVectors.wmdistance(d1, d2, norm=True)`` returns (unit-length word vectors, Euclidean
  costs, nBOW weights, POT's exact EMD solver), computed on the distinct words of the two documents instead
  of gensim's padded dictionary-sized matrix (the same optimum). Units: Euclidean distance between unit
  vectors, so values lie in [0, 2]; ``inf`` when a document has no known word.
* :func:`wmd_similarity`: ``exp(-min over references of wmd_distance)`` in [0, 1]; an infinite distance
  counts as 1000 (similarity ``exp(-1000) == 0.0``, the reference code's convention).
* :func:`mowe_similarity`: cosine of the mean word vectors, max over references, mapped to
  ``(cos + 1) / 2`` in [0, 1]; a side without any known word counts as cosine -1 (similarity 0).
* :func:`wmd_similarities`, :func:`mowe_similarities`: the same for a whole batch, reusing work (unit
  vectors, documents and identical (candidate, reference) pairs are computed once per call); what
  :mod:`capeval.lceval.features` calls.

One deliberate difference from gensim: when every word of both documents has the same unit vector but
the documents differ (the cost matrix sums to < 1e-8; impossible with GloVe 6B, which has no two parallel
vectors), gensim aborts and returns ``inf``; here the distance is its true value, 0.0. Words whose vector
is all zeros (possible in a user's vector file, where gensim would give NaN) are treated as unknown by WMD.

POT (``pip install POT``) is needed at run time for WMD; gensim is not (the tests compare with it).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from scipy.spatial.distance import cdist

from capeval.models.word_vectors import WordVectors
from capeval.progress import progress as _progress

__all__ = ["INFINITE_DISTANCE", "mowe_similarities", "mowe_similarity", "wmd_distance", "wmd_similarities",
           "wmd_similarity"]

INFINITE_DISTANCE = 1000.0
"""What an infinite WMD (a document without known words) counts as in :func:`wmd_similarity`."""

_EMD_MAX_ITER = 100000  # ot.emd2's default numItermax
_Solver = Callable[[np.ndarray, np.ndarray, np.ndarray], float]


@lru_cache(maxsize=1)
def _emd_solver() -> _Solver:
    """``(a, b, M) -> ot.emd2(a, b, M)``: POT's network-simplex C solver called directly when this POT has
    it (``ot.emd2`` adds ~160 µs of checks per call around an ~8 µs solve), else ``ot.emd2`` itself."""
    try:
        import ot
    except ImportError as err:
        raise ImportError("LCEval's WMD feature needs POT (Python Optimal Transport): pip install POT") from err

    def public(a: np.ndarray, b: np.ndarray, M: np.ndarray) -> float:
        return float(ot.emd2(a, b, M))

    try:
        from ot.lp.emd_wrap import emd_c
    except ImportError:
        return public

    def direct(a: np.ndarray, b: np.ndarray, M: np.ndarray) -> float:
        out = emd_c(a, b * a.sum(0) / b.sum(0), M, _EMD_MAX_ITER, 1)  # b rescaled to a's mass, as ot.emd2
        if out[-1] != 1:  # not OPTIMAL: let ot.emd2 solve it again and warn as it does
            return public(a, b, M)
        return float(out[1])

    try:  # the private solver's signature and result must be what this code expects
        rng = np.random.default_rng(0)
        M = rng.random((3, 4))
        a, b = np.array([0.5, 0.25, 0.25]), np.array([0.4, 0.2, 0.2, 0.2])  # equal masses
        if abs(direct(a, b, M) - public(a, b, M)) > 1e-12:
            return public
    except Exception:  # noqa: BLE001 - any incompatibility: use the public API
        return public
    return direct


def _check_words(words: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(words, str):
        raise TypeError(f"{what}: expected a list of words, got the string {words[:40]!r} (split it first).")
    return tuple(words)


class _Doc:
    """A document's distinct known words (first-occurrence order), nBOW weights and unit vectors."""

    __slots__ = ("units", "weights", "words")

    def __init__(self, words: tuple[str, ...], weights: np.ndarray, units: np.ndarray):
        self.words, self.weights, self.units = words, weights, units


class _UnitVectors:
    """Unit-length (L2) word vectors, normalised once per word, bit for bit as gensim's
    ``get_vector(word, norm=True)`` (float32 vector / float32 norm), kept as rows of one growing matrix.

    ``slot[word]`` is the word's row in :attr:`matrix`, or -1 for a word without a vector (or with an all-zero
    one, which has no direction).
    """

    def __init__(self, vectors: WordVectors):
        self._source = np.asarray(vectors.vectors)  # a plain view of the memmap: cheaper fancy indexing
        self._index = vectors.index
        self.slot: dict[str, int] = {}
        self.matrix = np.empty((256, vectors.dim), dtype=np.float32)
        self._size = 0

    def add(self, words: Sequence[str]) -> None:
        new = [w for w in dict.fromkeys(words) if w not in self.slot]
        for w in new:
            self.slot[w] = -1
        known = [w for w in new if w in self._index]
        if not known:
            return
        raw = np.asarray(self._source[[self._index[w] for w in known]], dtype=np.float32)
        norms = np.linalg.norm(raw, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            unit = raw / norms[:, None]
        ok = (norms > 0) & np.isfinite(unit).all(axis=1)
        unit = unit[ok]
        if self._size + len(unit) > len(self.matrix):
            grown = np.empty((max(2 * len(self.matrix), self._size + len(unit)), self.matrix.shape[1]), np.float32)
            grown[:self._size] = self.matrix[:self._size]
            self.matrix = grown
        self.matrix[self._size:self._size + len(unit)] = unit
        for w, row in zip((w for w, good in zip(known, ok) if good), range(self._size, self._size + len(unit))):
            self.slot[w] = row
        self._size += len(unit)


class _WMD:
    """Word mover's distances over one ``WordVectors``, caching unit vectors, documents and pairs."""

    def __init__(self, vectors: WordVectors):
        self.units = _UnitVectors(vectors)
        self._docs: dict[tuple[str, ...], _Doc | None] = {}
        self._pairs: dict[tuple[tuple[str, ...], tuple[str, ...]], float] = {}
        self._emd = _emd_solver()

    def doc(self, words: tuple[str, ...]) -> _Doc | None:
        if words in self._docs:
            return self._docs[words]
        self.units.add(words)
        slot = self.units.slot
        counts: dict[str, int] = {}
        n = 0
        for w in words:
            if slot[w] >= 0:
                counts[w] = counts.get(w, 0) + 1
                n += 1
        doc = None
        if n:
            distinct = tuple(counts)
            weights = np.array([counts[w] / float(n) for w in distinct], dtype=np.float64)
            doc = _Doc(distinct, weights, self.units.matrix[[slot[w] for w in distinct]])
        self._docs[words] = doc
        return doc

    def distance(self, words1: tuple[str, ...], words2: tuple[str, ...]) -> float:
        key = (words1, words2)
        d = self._pairs.get(key)
        if d is None:
            d = self._pairs[key] = self._distance(self.doc(words1), self.doc(words2))
        return d

    def _distance(self, d1: _Doc | None, d2: _Doc | None) -> float:
        if d1 is None or d2 is None:
            return math.inf
        if len(d1.words) == 1 and d1.words == d2.words:
            return 0.0  # a single distinct word in both documents
        M = cdist(d1.units, d2.units)  # float64, C-ordered
        if abs(M.sum()) < 1e-8:
            return 0.0  # every word at the same point (gensim aborts here with inf)
        if len(d1.words) == 1:  # the flow is forced: all of the one word's mass goes to every word of d2
            return max(0.0, float(M[0] @ d2.weights))
        if len(d2.words) == 1:
            return max(0.0, float(d1.weights @ M[:, 0]))
        return max(0.0, self._emd(d1.weights, d2.weights, M))


def _similarity(distance: float) -> float:
    return math.exp(-(INFINITE_DISTANCE if math.isinf(distance) else distance))


def _check_batch(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> None:
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} reference lists.")
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            raise TypeError(f"references[{i}]: expected a list of word lists, got the string {refs[:40]!r}.")
        if len(refs) == 0:
            raise ValueError(f"references[{i}] is empty: every candidate needs at least one reference "
                             f"(a list of word lists).")


def wmd_distance(words1: Sequence[str], words2: Sequence[str], vectors: WordVectors) -> float:
    """The word mover's distance between two word lists, as gensim 4's ``wmdistance(words1, words2)``.

    Unknown words are dropped; ``math.inf`` if either list is then empty; 0.0 if the two lists have one
    distinct word between them. Units: Euclidean distance between unit-length word vectors, moved with
    weights word count / document length; range [0, 2] (or ``inf``). Needs POT.
    """
    wmd = _WMD(vectors)
    return wmd.distance(_check_words(words1, "words1"), _check_words(words2, "words2"))


def wmd_similarity(candidate_words: Sequence[str], references_words: Sequence[Sequence[str]],
                   vectors: WordVectors) -> float:
    """LCEval feature 7: ``exp(-min over references of wmd_distance)``, in [0, 1] (1 = identical meaning).

    An infinite distance (no known word on a side) counts as 1000, giving 0.0. Needs at least one reference.
    """
    return float(wmd_similarities([candidate_words], [references_words], vectors)[0])


def wmd_similarities(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
                     vectors: WordVectors, progress: bool | None = False) -> np.ndarray:
    """:func:`wmd_similarity` of every ``(candidates[i], references[i])``: float64 ``[len(candidates)]`` in [0, 1].

    ``candidates[i]`` is a word list (content words), ``references[i]`` a non-empty list of word lists
    (``ValueError`` naming ``i`` otherwise). Unit vectors, documents and identical (candidate, reference)
    pairs are computed once per call. ``progress``: a progress bar (``None``: on a terminal after a second).
    """
    _check_batch(candidates, references)
    wmd = _WMD(vectors)
    out = np.empty(len(candidates), dtype=np.float64)
    for i in _progress(range(len(candidates)), total=len(candidates), desc="WMD", enabled=progress):
        cand = _check_words(candidates[i], f"candidates[{i}]")
        best = min(wmd.distance(cand, _check_words(r, f"references[{i}]")) for r in references[i])
        out[i] = _similarity(best)
    return out


def mowe_similarity(candidate_words: Sequence[str], references_words: Sequence[Sequence[str]],
                    vectors: WordVectors) -> float:
    """LCEval feature 10: ``(cos + 1) / 2`` of the mean word vectors, max over references; in [0, 1].

    ``cos`` is the cosine between the mean of the candidate's known word vectors (repeats counted) and a
    reference's; -1 when a side has no known word (or a zero mean), so such a value gives 0.0.
    """
    return float(mowe_similarities([candidate_words], [references_words], vectors)[0])


def mowe_similarities(candidates: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
                      vectors: WordVectors, progress: bool | None = False) -> np.ndarray:
    """:func:`mowe_similarity` of every ``(candidates[i], references[i])``: float64 ``[len(candidates)]`` in [0, 1].

    Inputs as :func:`wmd_similarities`; each distinct document's mean vector is computed once per call, and
    all cosines at once.
    """
    _check_batch(candidates, references)
    index = vectors.index
    doc_id: dict[tuple[str, ...], int] = {}
    rows: list[int] = []  # the known words' rows of every distinct document, one after another
    starts: list[int] = []
    counts: list[int] = []

    def document(words: Sequence[str], what: str) -> int:
        key = _check_words(words, what)
        j = doc_id.get(key)
        if j is None:
            j = doc_id[key] = len(counts)
            starts.append(len(rows))
            known = [index[w] for w in key if w in index]
            rows.extend(known)
            counts.append(len(known))
        return j

    item: list[int] = []
    cand: list[int] = []
    ref: list[int] = []
    for i in _progress(range(len(candidates)), total=len(candidates), desc="MOWE", enabled=progress):
        c = document(candidates[i], f"candidates[{i}]")
        for r in references[i]:
            item.append(i)
            cand.append(c)
            ref.append(document(r, f"references[{i}]"))

    n_docs, dim = len(counts), vectors.dim
    units = np.zeros((n_docs, dim), dtype=np.float64)
    defined = np.zeros(n_docs, dtype=bool)
    size = np.asarray(counts, dtype=np.int64)
    full = np.flatnonzero(size > 0)
    if len(full):
        from scipy.sparse import csr_matrix

        # each non-empty document sums its own rows (empty documents add no rows): a 0/1 matrix product
        bounds = np.append(np.asarray(starts, dtype=np.int64)[full], len(rows))
        members = csr_matrix((np.ones(len(rows)), np.arange(len(rows)), bounds), shape=(len(full), len(rows)))
        sums = members @ np.asarray(vectors.vectors[rows], dtype=np.float64)
        means = sums / size[full, None]
        norms = np.linalg.norm(means, axis=1)
        ok = (norms > 0) & np.isfinite(norms)
        units[full[ok]] = means[ok] / norms[ok, None]
        defined[full[ok]] = True
    item_a, cand_a, ref_a = (np.asarray(x, dtype=np.int64) for x in (item, cand, ref))
    cos = np.clip(np.einsum("ij,ij->i", units[cand_a], units[ref_a]), -1.0, 1.0)
    cos[~(defined[cand_a] & defined[ref_a])] = -1.0  # the reference code's NaN -> 0 after (cos + 1) / 2
    best = np.full(len(candidates), -1.0)
    np.maximum.at(best, item_a, cos)
    return (best + 1.0) / 2.0
