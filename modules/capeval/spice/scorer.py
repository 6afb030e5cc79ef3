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
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "pr": self.precision, "re": self.recall, "f": self.f}


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


def match(candidates: Sequence[SpiceTuple], references: Sequence[SpiceTuple], use_synonyms: bool = True) -> int:
    """Count candidates with a matching reference; sets ``matched`` on both sides (first match wins)."""
    for t in references:
        t.matched = False
    tp = 0
    for cand in candidates:
        cand.matched = False
        for ref in references:
            if cand.similar(ref) if use_synonyms else cand.exact(ref):
                cand.matched = ref.matched = True
                tp += 1
                break
    return tp


def score_caption(
    candidates: Sequence[SpiceTuple], references: Sequence[SpiceTuple], use_synonyms: bool = True
) -> dict[str, TupleScore]:
    """``{"all": ..., "object": ..., ...}`` for one caption (match flags left for the ``all`` comparison)."""
    out: dict[str, TupleScore] = {}
    for name, keep in CATEGORIES.items():
        cand = [t for t in candidates if keep(t)]
        ref = [t for t in references if keep(t)]
        out[name] = _scores(match(cand, ref, use_synonyms), len(cand), len(ref), allow_nan=True)
    tp = match(candidates, references, use_synonyms)  # last, so the flags describe the full comparison
    return {"all": _scores(tp, len(candidates), len(references), allow_nan=False), **out}


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
    if n:
        f, pr, re_ = f / n, pr / n, re_ / n
    else:
        f = pr = re_ = math.nan
    return {"f": f, "precision": pr, "recall": re_, "tp": tp, "fp": fp, "fn": fn, "num_images": n}
