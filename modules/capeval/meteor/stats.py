"""METEOR 1.5 sufficient statistics and the score computed from them (``MeteorStats`` / ``computeMetrics``).

A statistics vector has 23 numbers, in the jar's ``MeteorStats.toString`` order: test length,
reference length, test / reference function words, then for each of the 4 matcher stages (exact,
stem, synonym, paraphrase) test content, reference content, test function and reference function
matches, then chunks, test word matches, reference word matches.

The score follows ``MeteorScorer.computeMetrics`` operation by operation, in IEEE doubles as Java
evaluates them (same order of additions; a division by zero gives ±inf or NaN, never an exception;
a NaN score is 0): weighted precision and recall with function words weighted ``1 - δ`` and content
words ``δ``, matches weighted per stage, ``Fmean = 1 / ((1 - α) / P + α / R)``, fragmentation
``chunks / mean matches`` (0 for a perfect match), penalty ``γ · frag^β``,
``score = max(0, Fmean · (1 - penalty))``. English ranking task (the jar's ``-l en`` default):
α = 0.85, β = 0.20, γ = 0.60, δ = 0.75, stage weights 1.0, 0.6, 0.8, 0.6. Scores are in [0, 1].
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["ALPHA", "BETA", "DELTA", "GAMMA", "N_STAGES", "STAGE_WEIGHTS", "STAT_FIELDS", "aggregate",
           "aggregate_lines", "format_stats", "parse_stats", "score", "score_bound"]

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.20, 0.60, 0.75
STAGE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)
N_STAGES = 4
STAT_FIELDS = 4 + 4 * N_STAGES + 3
_CHUNKS = 4 + 4 * N_STAGES


def _div(a: float, b: float) -> float:
    """Java's double division: x/0 is ±inf, 0/0 and NaN operands are NaN."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def score(stats: Sequence[float]) -> float:
    """The METEOR score of one statistics vector (a segment's, or summed ones for the corpus)."""
    test_len, ref_len, test_fn, ref_fn = stats[0], stats[1], stats[2], stats[3]
    stages = stats[4:_CHUNKS]
    chunks, test_words, ref_words = stats[_CHUNKS], stats[_CHUNKS + 1], stats[_CHUNKS + 2]
    test_weighted_len = (DELTA * (test_len - test_fn)) + ((1.0 - DELTA) * test_fn)
    ref_weighted_len = (DELTA * (ref_len - ref_fn)) + ((1.0 - DELTA) * ref_fn)
    test_matches = 0.0
    for i in range(N_STAGES):
        test_matches += stages[4 * i] * STAGE_WEIGHTS[i] * DELTA
    ref_matches = 0.0
    for i in range(N_STAGES):
        ref_matches += stages[4 * i + 1] * STAGE_WEIGHTS[i] * DELTA
    for i in range(N_STAGES):
        test_matches += stages[4 * i + 2] * STAGE_WEIGHTS[i] * (1.0 - DELTA)
    for i in range(N_STAGES):
        ref_matches += stages[4 * i + 3] * STAGE_WEIGHTS[i] * (1.0 - DELTA)
    precision = _div(test_matches, test_weighted_len)
    recall = _div(ref_matches, ref_weighted_len)
    fmean = _div(1.0, _div(1.0 - ALPHA, precision) + _div(ALPHA, recall))
    test_total = 0.0
    ref_total = 0.0
    for i in range(N_STAGES):
        test_total += stages[4 * i] + stages[4 * i + 2]
        ref_total += stages[4 * i + 1] + stages[4 * i + 3]
    if test_total == test_len and ref_total == ref_len and chunks == 1:
        frag = 0.0
    else:
        frag = _div(float(chunks), (test_words + ref_words) / 2)
    penalty = GAMMA * (math.nan if math.isnan(frag) else math.pow(frag, BETA))
    value = fmean * (1.0 - penalty)
    if math.isnan(value):
        return 0.0
    return max(value, 0.0)


def score_bound(test: tuple[int, int, int, int], reference: tuple[int, int, int, int]) -> float:
    """An upper bound on :func:`score` for two non-empty lines of which only some words can be matched.

    ``test`` and ``reference``: ``(words, function words, coverable words, coverable function words)`` of each line
    (a coverable word: one that some candidate match covers). Each line's weighted matches are at most its coverable
    words matched at stage weight 1, and the fragmentation at least one chunk over all coverable words (none when
    every word of both lines is coverable); :func:`score` increases with the matches and decreases with the
    fragmentation, so no alignment of these lines scores above the bound. In [0, 1].
    """
    (n1, function1, covered1, covered_function1), (n2, function2, covered2, covered_function2) = test, reference
    if not covered1 or not covered2:
        return 0.0
    precision = (DELTA * (covered1 - covered_function1) + (1.0 - DELTA) * covered_function1) / (
        DELTA * (n1 - function1) + (1.0 - DELTA) * function1)
    recall = (DELTA * (covered2 - covered_function2) + (1.0 - DELTA) * covered_function2) / (
        DELTA * (n2 - function2) + (1.0 - DELTA) * function2)
    fmean = 1.0 / ((1.0 - ALPHA) / precision + ALPHA / recall)
    if covered1 == n1 and covered2 == n2:
        return fmean
    return fmean * (1.0 - GAMMA * math.pow(2.0 / (covered1 + covered2), BETA))


def aggregate(rows: Iterable[Sequence[float]], start: Sequence[float] | None = None) -> list[float]:
    """Corpus statistics as ``MeteorStats.addStats`` accumulates them: every field summed in segment order,
    except that a perfect segment (all words matched in one chunk) adds no chunks; ``start``: the sums of the
    segments before these (so that batches aggregated one after another give one call's sums)."""
    total = [0.0] * STAT_FIELDS if start is None else [float(v) for v in start]
    if len(total) != STAT_FIELDS:
        raise ValueError(f"METEOR statistics have {STAT_FIELDS} fields, got {len(total)} to start from.")
    for row in rows:
        if len(row) != STAT_FIELDS:
            raise ValueError(f"METEOR statistics have {STAT_FIELDS} fields, got {len(row)}.")
        stages = row[4:_CHUNKS]
        test_total = ref_total = 0.0
        for i in range(N_STAGES):  # as score() adds them (sum() of floats rounds otherwise on Python 3.12+)
            test_total += stages[4 * i] + stages[4 * i + 2]
            ref_total += stages[4 * i + 1] + stages[4 * i + 3]
        perfect = test_total == row[0] and ref_total == row[1] and row[_CHUNKS] == 1
        for k in range(STAT_FIELDS):
            if k == _CHUNKS and perfect:
                continue
            total[k] += row[k]
    return total


def aggregate_lines(lines: Sequence[str], start: Sequence[float] | None = None) -> list[float]:
    """:func:`aggregate` of statistics lines (:func:`parse_stats` of each, refused as it refuses them), computed for
    all of them at once with numpy: the same sums, bit for bit (each field added in segment order:
    ``np.add.accumulate`` adds one value at a time, as the loop does)."""
    import numpy as np

    total = aggregate((), start=start)
    fields = [line.split() for line in lines]
    for line, values in zip(lines, fields):
        if len(values) != STAT_FIELDS:
            parse_stats(line)  # its refusal
    if not fields:
        return total
    flat = [value for values in fields for value in values]
    floats = {text: float(text) for text in set(flat)}  # a few distinct texts: each parsed once
    rows = np.fromiter(map(floats.__getitem__, flat), dtype=np.float64, count=len(flat)).reshape(-1, STAT_FIELDS)
    stages = rows[:, 4:_CHUNKS]
    test_total, ref_total = np.zeros(len(rows)), np.zeros(len(rows))
    for i in range(N_STAGES):
        test_total = test_total + (stages[:, 4 * i] + stages[:, 4 * i + 2])
        ref_total = ref_total + (stages[:, 4 * i + 1] + stages[:, 4 * i + 3])
    perfect = (test_total == rows[:, 0]) & (ref_total == rows[:, 1]) & (rows[:, _CHUNKS] == 1)
    for k in range(STAT_FIELDS):
        column = rows[~perfect, k] if k == _CHUNKS else rows[:, k]
        total[k] = float(np.add.accumulate(np.concatenate(([total[k]], column)))[-1])
    return total


def _java_double(value: float) -> str:
    if value.is_integer() and abs(value) < 1e7:
        return f"{value:.1f}"
    return repr(value)


def format_stats(stats: Sequence[float]) -> str:
    """The jar's statistics line (``MeteorStats.toString``: Java doubles joined by spaces)."""
    return " ".join(_java_double(float(v)) for v in stats)


def parse_stats(line: str) -> list[float]:
    """A statistics line back to its 23 numbers (``ValueError`` naming the problem otherwise)."""
    fields = line.split()
    if len(fields) != STAT_FIELDS:
        raise ValueError(f"METEOR statistics have {STAT_FIELDS} fields, got {len(fields)}: {line[:200]!r}")
    return [float(f) for f in fields]
