"""Head-word chain matching (HWCM, Liu & Gildea 2005) as LCEval's syntactic features (features 11-15).

A sentence's dependency tree is given as :data:`DependencyRow` s, one per token: ``(lemma, label, head)`` with
``head`` the index of the token's head (a root points to itself, spaCy's convention). A *u-chain* is a path of u
tokens going down the tree, each the head of the next (u = 1: every token; u = 2: every head-dependent pair).
Chains are compared by the values of their tokens: lemmas (``field="lemma"``) or dependency labels
(``field="dep"``).

For one candidate and one reference, the overlap at length u is the number of the candidate's u-chains found in
the reference (clipped: each reference chain matches at most as often as it occurs) divided by the number of the
reference's u-chains (the reference code's normalisation, ``+1e-9``; the paper's text says the candidate's).
``HWCM_n`` is the mean of the overlaps for u = 1..n, in [0, 1]. LCEval takes the maximum over the references.

Deviations from the reference code (``syntactic.py``), documented: it reads only the first sentence's tree and
joins 3- and 4-chains by the *value* of the middle token (so two tokens with the same lemma share their
sub-chains) and averages 3 lengths with a factor 0.33; capeval walks the whole forest by token identity and takes
the exact mean. Empty parses (an empty caption) give 0.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["DependencyRow", "FIELDS", "chain_table", "chains", "hwcm", "hwcm_max", "hwcm_tables"]

#: One token of a parse: ``(lemma, dependency label, head index as a string)``.
DependencyRow = tuple[str, str, str]
FIELDS = {"lemma": 0, "dep": 1}
SMALL = 1e-9


def _children(rows: Sequence[DependencyRow]) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in rows]
    for i, row in enumerate(rows):
        head = int(row[2])
        if head != i and 0 <= head < len(rows):
            kids[head].append(i)
    return kids


def chains(rows: Sequence[DependencyRow], field: str, length: int) -> Counter:
    """Counts of the ``length``-chains of one parse, each a tuple of ``field`` values from head to dependent."""
    if field not in FIELDS:
        raise ValueError(f"field must be one of {sorted(FIELDS)}, got {field!r}.")
    col = FIELDS[field]
    kids = _children(rows)
    paths: list[tuple[int, ...]] = [(i,) for i in range(len(rows))]
    for _ in range(length - 1):
        paths = [p + (k,) for p in paths for k in kids[p[-1]]]
    return Counter(tuple(rows[i][col] for i in p) for p in paths)


#: ``{(field, length): (chain counts, number of chains)}`` of one parse (:func:`chain_table`).
ChainTable = dict


def chain_table(rows: Sequence[DependencyRow], specs: Sequence[tuple[str, int]]) -> ChainTable:
    """The chains of one parse for every field of ``specs`` and every length up to its ``n``, computed once (what
    :func:`hwcm_tables` compares; a caption that is the reference of many candidates is walked once). The same
    counts as :func:`chains` for each ``(field, length)``; the tree's paths are walked once for all fields."""
    longest: dict[str, int] = {}
    for field, n in specs:
        if field not in FIELDS:
            raise ValueError(f"field must be one of {sorted(FIELDS)}, got {field!r}.")
        longest[field] = max(n, longest.get(field, 0))
    table: ChainTable = {}
    if not longest:
        return table
    kids = _children(rows)
    values = {field: [row[FIELDS[field]] for row in rows] for field in longest}
    paths: list[tuple[int, ...]] = [(i,) for i in range(len(rows))]
    for u in range(1, max(longest.values()) + 1):
        if u > 1:
            paths = [p + (k,) for p in paths for k in kids[p[-1]]]
        for field, n in longest.items():
            if u <= n:
                col = values[field]
                table[(field, u)] = (Counter([tuple([col[i] for i in p]) for p in paths]), len(paths))
    return table


def hwcm_tables(candidate: ChainTable, reference: ChainTable, field: str, n: int) -> float:
    """:func:`hwcm` from two :func:`chain_table` s."""
    total = 0.0
    for u in range(1, n + 1):
        ref, ref_total = reference[(field, u)]
        cand, _ = candidate[(field, u)]
        matched = sum(min(count, ref[c]) for c, count in cand.items() if c in ref)
        total += matched / (ref_total + SMALL)
    return total / n


def hwcm(candidate: Sequence[DependencyRow], reference: Sequence[DependencyRow], field: str, n: int) -> float:
    """``HWCM_n`` of one candidate parse against one reference parse (mean overlap over chain lengths 1..n)."""
    spec = [(field, n)]
    return hwcm_tables(chain_table(candidate, spec), chain_table(reference, spec), field, n)


def hwcm_max(candidate: Sequence[DependencyRow] | ChainTable, references: Sequence[Sequence[DependencyRow] | ChainTable],
             specs: Sequence[tuple[str, int]]) -> np.ndarray:
    """For each ``(field, n)`` of ``specs``, the maximum of :func:`hwcm` over the references (0 without any).
    Parses or their :func:`chain_table` s (built for ``specs``)."""
    def table(x):
        return x if isinstance(x, dict) else chain_table(x, specs)

    cand = table(candidate)
    refs = [table(r) for r in references]
    out = np.zeros(len(specs), dtype=np.float64)
    for k, (field, n) in enumerate(specs):
        out[k] = max((hwcm_tables(cand, ref, field, n) for ref in refs), default=0.0)
    return out
