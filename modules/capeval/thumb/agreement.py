"""Inter-annotator agreement for THumB sheets: Cohen's κ and disagreement lists.

Cohen's κ (Cohen 1960) for two annotators who rated the same items on a nominal scale:
``κ = (p_o − p_e) / (1 − p_e)`` with ``p_o`` the observed agreement and ``p_e`` the agreement
expected from each annotator's marginal label frequencies. THumB reports unweighted κ = 0.86 for
precision and 0.82 for recall. Linearly / quadratically weighted κ (for ordinal use) are available
with ``weights="linear" | "quadratic"``: disagreement weight ``|i − j|`` or ``(i − j)²`` over label
positions.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def cohen_kappa(
    first: Sequence[Any],
    second: Sequence[Any],
    labels: Sequence[Any] | None = None,
    weights: str | None = None,
) -> float:
    """Cohen's κ between two annotators' labels of the same items (in [-1, 1]; 1 = perfect).

    Args:
        first, second: one label per item, same length and order.
        labels: the label set in order (needed for weighted κ when some label is unused);
            default: the sorted union of the labels seen.
        weights: ``None`` (Cohen 1960, nominal), ``"linear"`` or ``"quadratic"``.

    Raises:
        ValueError: for empty or mismatched inputs, an item whose label is not in ``labels``, or when κ
            is undefined (both annotators used one and the same label for every item, so chance
            agreement is 1).
    """
    a, b = list(first), list(second)
    if len(a) != len(b):
        raise ValueError(f"Annotators rated different numbers of items: {len(a)} vs {len(b)}.")
    if not a:
        raise ValueError("No items to compare: both annotation lists are empty.")
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}.")
    order = list(labels) if labels is not None else sorted(set(a) | set(b))
    position = {label: k for k, label in enumerate(order)}
    for name, values in (("first", a), ("second", b)):
        for i, v in enumerate(values):
            if v not in position:
                raise ValueError(f"item {i}: the {name} annotator's label {v!r} is not one of {order}.")
    k = len(order)
    confusion = np.zeros((k, k))
    for x, y in zip(a, b):
        confusion[position[x], position[y]] += 1
    confusion /= confusion.sum()
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0))
    idx = np.arange(k)
    if weights is None:
        disagreement = (idx[:, None] != idx[None, :]).astype(float)
    elif weights == "linear":
        disagreement = np.abs(idx[:, None] - idx[None, :]).astype(float)
    else:
        disagreement = ((idx[:, None] - idx[None, :]) ** 2).astype(float)
    expected_disagreement = float((disagreement * expected).sum())
    if expected_disagreement == 0.0:
        raise ValueError(
            f"Cohen's kappa is undefined: both annotators gave every one of the {len(a)} items the same label "
            f"{a[0]!r} (chance agreement is 1)."
        )
    return 1.0 - float((disagreement * confusion).sum()) / expected_disagreement


def disagreements(
    items: Sequence[str],
    first: dict[str, dict[str, float]],
    second: dict[str, dict[str, float]],
    fields: Sequence[str],
    tolerance: float = 1e-9,
) -> list[dict[str, Any]]:
    """Items whose rubric values differ between two annotators, for the second-stage review.

    Args:
        items: item ids in sheet order.
        first, second: item id → {field: value} for each annotator.
        fields: rubric fields to compare (e.g. precision, recall, fluency, conciseness, inclusive).

    Returns:
        One dict per differing item: ``{"item", "differs": [fields], "<field>_1", "<field>_2", ...}``
        in ``items`` order.
    """
    out = []
    for item in items:
        a, b = first[item], second[item]
        differing = [f for f in fields if abs(a[f] - b[f]) > tolerance]
        if differing:
            row: dict[str, Any] = {"item": item, "differs": differing}
            for f in fields:
                row[f"{f}_1"] = a[f]
                row[f"{f}_2"] = b[f]
            out.append(row)
    return out
