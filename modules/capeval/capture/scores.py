"""CAPTURE's matching and F-scores (capture-metric 0.1.13, ``CAPTURE.compute_match`` / ``compute_f_score``), a
functional core on two :class:`~capeval.capture.graphs.CaptionGraph` and a phrase-vector lookup.

Objects, then attributes, then relations of the candidate are matched to the reference's in three phases:

1. exact: each candidate element takes the first equal, unmatched reference element;
2. synonyms (``synonym_matching``): each unmatched candidate element takes the first unmatched reference element
   that one contains the other of (as text), or that shares a WordNet lemma name with it (multi-word phrases joined
   by ``_``); a relation needs this of all three parts;
3. soft (``soft_matching``): of what is left on both sides, every candidate element adds its highest cosine
   similarity to a left reference element to the candidate's matches, and every reference element its highest to a
   left candidate element to the reference's (phrase vectors of ``all-mpnet-base-v2``; a relation is its three
   parts joined by spaces).

Precision = candidate matches / (candidate elements + ε), recall = reference matches / (reference elements + ε),
F1 = 2PR / (P + R + ε), ε = 1e-6; CAPTURE = (α·F1_objects + β·F1_attributes + γ·F1_relations) / (α + β + γ).
A caption's score is the mean over its references; the corpus value, the mean over captions. All in [0, 1].

Order: phases 1 and 3 do not depend on the order of the elements; phase 2 is greedy, so it can (when an element has
synonyms among several unmatched elements). The reference iterates Python sets, whose order changes with
``PYTHONHASHSEED`` from one process to the next; capeval iterates sorted elements, the same in every process.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from capeval.capture.graphs import CaptionGraph

EPS = 1e-6


@dataclass(frozen=True)
class MatchSettings:
    """The options that decide a score: weights α (objects), β (attributes), γ (relations), the two later phases."""

    alpha: float = 0.5
    beta: float = 0.5
    gamma: float = 0.2
    synonym_matching: bool = True
    soft_matching: bool = True


@dataclass(frozen=True)
class FScores:
    """One candidate against one reference: precision, recall and F1 of objects, attributes and relations, and the
    CAPTURE score; each in [0, 1]."""

    capture: float
    object: tuple[float, float, float]
    attribute: tuple[float, float, float]
    relation: tuple[float, float, float]


#: ``vectors(phrases)``: unit phrase vectors, float32 ``[len(phrases), dim]``.
Vectors = Callable[[Sequence[str]], np.ndarray]
#: ``synonyms(word)``: the WordNet lemma names of ``word``.
Synonyms = Callable[[str], frozenset]


def are_synonyms(a: str, b: str, synonyms: Synonyms) -> bool:
    """The reference's ``compute_synonyms_score(a, b) > 0``: one contains the other, or their WordNet lemma names
    (of the ``_``-joined words) intersect."""
    if a in b or b in a:
        return True
    return bool(synonyms("_".join(a.split())) & synonyms("_".join(b.split())))


def _greedy(cands: Sequence, refs: Sequence, same: Callable[[object, object], bool], taken_c: set, taken_r: set) -> int:
    found = 0
    for i, cand in enumerate(cands):
        if i in taken_c:
            continue
        for j, ref in enumerate(refs):
            if j not in taken_r and same(cand, ref):
                taken_c.add(i)
                taken_r.add(j)
                found += 1
                break
    return found


def match(cands: Sequence, refs: Sequence, settings: MatchSettings, similar: Callable[[object, object], bool],
          as_text: Callable[[object], str], vectors: Vectors) -> tuple[float, float]:
    """(candidate matches, reference matches) of the three phases (see the module docstring)."""
    taken_c: set[int] = set()
    taken_r: set[int] = set()
    found = _greedy(cands, refs, lambda c, r: c == r, taken_c, taken_r)
    if settings.synonym_matching:
        found += _greedy(cands, refs, similar, taken_c, taken_r)
    left_c = [as_text(c) for i, c in enumerate(cands) if i not in taken_c]
    left_r = [as_text(r) for j, r in enumerate(refs) if j not in taken_r]
    if not (settings.soft_matching and left_c and left_r):
        return float(found), float(found)
    a, b = vectors(left_c), vectors(left_r)
    sim = a @ b.T
    return found + float(np.sum(np.max(sim, axis=1))), found + float(np.sum(np.max(sim, axis=0)))


def _prf(matched: tuple[float, float], n_cand: int, n_ref: int) -> tuple[float, float, float]:
    precision = matched[0] / (n_cand + EPS)
    recall = matched[1] / (n_ref + EPS)
    return precision, recall, 2 * precision * recall / (precision + recall + EPS)


def f_scores(reference: CaptionGraph, candidate: CaptionGraph, settings: MatchSettings, synonyms: Synonyms,
             vectors: Vectors) -> FScores:
    """The reference's ``compute_f_score(gt_parsed, cand_parsed)``."""
    word_synonym = lambda a, b: are_synonyms(a, b, synonyms)  # noqa: E731
    objects = _prf(match(candidate.objects, reference.objects, settings, word_synonym, str, vectors),
                   len(candidate.objects), len(reference.objects))
    cand_attrs, ref_attrs = candidate.attribute_words(), reference.attribute_words()
    attributes = _prf(match(cand_attrs, ref_attrs, settings, word_synonym, str, vectors),
                      len(cand_attrs), len(ref_attrs))
    relation_synonym = lambda a, b: all(are_synonyms(x, y, synonyms) for x, y in zip(a, b))  # noqa: E731
    relations = _prf(match(candidate.relations, reference.relations, settings, relation_synonym, " ".join, vectors),
                     len(candidate.relations), len(reference.relations))
    mixed = settings.alpha * objects[2] + settings.beta * attributes[2] + settings.gamma * relations[2]
    return FScores(mixed / (settings.alpha + settings.beta + settings.gamma), objects, attributes, relations)


def mean_f_scores(per_reference: Sequence[FScores]) -> FScores:
    """The mean over a caption's references (the reference's per-sample score and its detail rows, unrounded)."""
    n = len(per_reference)
    if not n:
        raise ValueError("a caption needs at least one reference.")

    def mean3(part: str) -> tuple[float, float, float]:
        rows = [getattr(f, part) for f in per_reference]
        return tuple(sum(row[k] for row in rows) / n for k in range(3))  # type: ignore[return-value]

    return FScores(sum(f.capture for f in per_reference) / n, mean3("object"), mean3("attribute"), mean3("relation"))


__all__ = ["EPS", "FScores", "MatchSettings", "are_synonyms", "f_scores", "match", "mean_f_scores"]
