"""SPICE scoring: candidate tuples against the merged reference graph (``edu.anu.spice.Evaluation``).

For one caption: ``tp`` = number of candidate tuples similar to some reference tuple (every element
shares a word or a WordNet synset; exact concept equality with ``use_synonyms=False``), ``fp`` =
candidates - tp, ``fn`` = references - tp; precision = tp / candidates, recall = tp / references,
F = harmonic mean (0 when either is 0). Category scores use the same matching on a filtered subset of
both sides and are NaN for a caption whose references have no tuple of that category; corpus category
scores average over the captions where they are defined (official ``macroAverage``).

Categories (official names in brackets): ``object``, ``attribute``, ``relation``, ``color`` (attribute
is one of 18 colour words), ``count`` [Cardinality] (attribute is ``one`` .. ``ten``), ``size``
(attribute is one of 99 size adjectives). The attribute filters test the Java string of the concept,
so a merged concept (``gray/grey``) never counts as a colour — reproduced here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from capeval.spice.graph import SpiceTuple

SMALL_NUMBERS = frozenset("one two three four five six seven eight nine ten".split())
COMMON_COLORS = frozenset(
    "black brown blue red yellow pink gray grey green dark light white cream orange purple maroon beige violet".split()
)
SIZE_ADJECTIVES = frozenset(
    """baby illimitable scrawny beefy immeasurable short big immense sizable bony infinitesimal skeletal boundless
    lanky skimpy brawny large skinny broad lean slender bulky life-size slim chunky limitless small colossal little
    squat compact mammoth stocky corpulent massive stout cosmic meager strapping cubby measly sturdy curvy
    microscopic tall elfin mini teensy emaciated miniature teeny endless minuscule teeny-tiny enormous minute
    teeny-weeny epic narrow thick expansive obese thickset extensive outsized thin fat oversize tiny fleshy
    overweight titanic full-size paltry towering gargantuan petite trifling gaunt pint-size trim giant plump tubby
    gigantic pocket-size undersized grand portly underweight great pudgy unlimited heavy puny vast hefty rotund wee
    huge scanty whopping hulking scraggy wide""".split()
)


def _attribute_in(words: frozenset[str]) -> Callable[[SpiceTuple], bool]:
    return lambda t: len(t.concepts) == 2 and t.concepts[1].text() in words


CATEGORIES: dict[str, Callable[[SpiceTuple], bool]] = {
    "object": lambda t: len(t.concepts) == 1,
    "attribute": lambda t: len(t.concepts) == 2,
    "relation": lambda t: len(t.concepts) == 3,
    "color": _attribute_in(COMMON_COLORS),
    "count": _attribute_in(SMALL_NUMBERS),
    "size": _attribute_in(SIZE_ADJECTIVES),
}


def categories_of(t: SpiceTuple) -> tuple[str, ...]:
    """The official categories a tuple belongs to (``object``; ``attribute`` [+ ``color``/``count``/``size``];
    ``relation``)."""
    n = len(t.concepts)
    if n == 1:
        return ("object",)
    if n == 3:
        return ("relation",)
    text = t.concepts[1].text()
    extra = tuple(name for name, words in _ATTRIBUTE_SETS if text in words)
    return ("attribute", *extra)


_ATTRIBUTE_SETS = (("color", COMMON_COLORS), ("count", SMALL_NUMBERS), ("size", SIZE_ADJECTIVES))


@dataclass
class TupleScore:
    """Counts and scores of one comparison. ``precision``/``recall``/``f`` in [0, 1] or NaN (categories)."""

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f: float

    def as_dict(self) -> dict:
        """JSON-safe: undefined scores (no reference tuple of the category) become ``None``."""
        def defined(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "pr": defined(self.precision),
                "re": defined(self.recall), "f": defined(self.f)}


def _scores(tp: int, n_cand: int, n_ref: int, allow_nan: bool) -> TupleScore:
    fp, fn = n_cand - tp, n_ref - tp
    precision = recall = f = 0.0
    if n_ref > 0:
        recall = tp / n_ref
        if n_cand > 0:
            precision = tp / n_cand
        if precision > 0 and recall > 0:
            f = 2 * precision * recall / (precision + recall)
    elif allow_nan:
        precision = recall = f = math.nan
    return TupleScore(tp, fp, fn, precision, recall, f)


def _similar_pairs(
    candidates: Sequence[SpiceTuple], references: Sequence[SpiceTuple], use_synonyms: bool
) -> list[list[int]]:
    """For each candidate, the indices of the references it matches (same arity, every element similar)."""
    by_arity: dict[int, list[tuple[int, SpiceTuple]]] = {}
    for j, ref in enumerate(references):
        by_arity.setdefault(len(ref.concepts), []).append((j, ref))
    out = []
    for cand in candidates:
        same = cand.similar if use_synonyms else cand.exact
        out.append([j for j, ref in by_arity.get(len(cand.concepts), ()) if same(ref)])
    return out


def match(candidates: Sequence[SpiceTuple], references: Sequence[SpiceTuple], use_synonyms: bool = True) -> int:
    """Count candidates with a matching reference; sets ``matched`` on both sides (first match wins)."""
    pairs = _similar_pairs(candidates, references, use_synonyms)
    return _count(candidates, references, pairs, range(len(candidates)), set(range(len(references))), flag=True)


def _count(candidates, references, pairs, cand_ids, ref_ids: set[int], flag: bool) -> int:
    tp = 0
    if flag:
        for t in references:
            t.matched = False
    for i in cand_ids:
        first = next((j for j in pairs[i] if j in ref_ids), None)
        if flag:
            candidates[i].matched = first is not None
            if first is not None:
                references[first].matched = True
        tp += first is not None
    return tp


def score_caption(
    candidates: Sequence[SpiceTuple], references: Sequence[SpiceTuple], use_synonyms: bool = True
) -> dict[str, TupleScore]:
    """``{"all": ..., "object": ..., ...}`` for one caption; ``matched`` flags describe the ``all`` comparison."""
    pairs = _similar_pairs(candidates, references, use_synonyms)
    all_refs = set(range(len(references)))
    tp = _count(candidates, references, pairs, range(len(candidates)), all_refs, flag=True)
    out = {"all": _scores(tp, len(candidates), len(references), allow_nan=False)}
    cand_cats = [categories_of(t) for t in candidates]
    ref_cats = [categories_of(t) for t in references]
    for name in CATEGORIES:
        cand_ids = [i for i, cats in enumerate(cand_cats) if name in cats]
        ref_ids = {j for j, cats in enumerate(ref_cats) if name in cats}
        tp_c = _count(candidates, references, pairs, cand_ids, ref_ids, flag=False)
        out[name] = _scores(tp_c, len(cand_ids), len(ref_ids), allow_nan=True)
    return out


def macro_average(per_caption: Sequence[dict[str, TupleScore]], category: str) -> dict:
    """Official ``macroAverage``: summed counts, mean P/R/F over captions where all three are defined."""
    tp = fp = fn = 0
    f = pr = re_ = 0.0
    n = 0
    for scores in per_caption:
        s = scores[category]
        tp, fp, fn = tp + s.tp, fp + s.fp, fn + s.fn
        if not (math.isnan(s.f) or math.isnan(s.precision) or math.isnan(s.recall)):
            f, pr, re_, n = f + s.f, pr + s.precision, re_ + s.recall, n + 1
    if not n:  # no caption has reference tuples of this category: undefined, reported as None (JSON null)
        return {"f": None, "precision": None, "recall": None, "tp": tp, "fp": fp, "fn": fn, "num_images": 0}
    return {"f": f / n, "precision": pr / n, "recall": re_ / n, "tp": tp, "fp": fp, "fn": fn, "num_images": n}
