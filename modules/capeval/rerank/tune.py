"""Grid search of the MMI weight lambda and the LM interpolation alpha on a dev split (paper §5, Table 3).

For every ``(alpha, lambda)`` the top-1 MMI candidate of each item is scored against the references with
:func:`capeval.score`; the pair with the highest objective wins (ties: the smaller lambda, then alpha).
LM log-probs are computed once per model (the interpolation is a weighted sum) and each distinct top-1
selection is scored once, so the 11 x 11 grid costs a handful of metric runs.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from capeval.api import score
from capeval.models.caption_lm import CaptionLM, combine
from capeval.rerank.mmi import flat_captions, top1_indices, validate_items

#: The paper's Table 3 metrics; "geomean" is their geometric mean.
GEOMEAN_METRICS = ("bleu_4", "meteor", "rouge_l", "cider_d", "spice", "spice_u")
GRID = tuple(round(0.1 * i, 1) for i in range(11))


def geomean(values: Sequence[float]) -> float:
    """Geometric mean; 0 when any value is <= 0."""
    vals = [float(v) for v in values]
    if not vals:
        raise ValueError("geomean of no values.")
    return 0.0 if min(vals) <= 0 else math.exp(sum(math.log(v) for v in vals) / len(vals))


def tune(
    dev_items: Sequence[dict],
    references: Sequence[Sequence[str]],
    unigram: CaptionLM,
    lstm: CaptionLM,
    objective: str = "geomean",
    *,
    lambdas: Sequence[float] = GRID,
    alphas: Sequence[float] = GRID,
    metrics: Sequence[str] = GEOMEAN_METRICS,
    scorer: Callable[[list[str], list[list[str]]], dict[str, Any]] | None = None,
    **score_options: Any,
) -> dict[str, Any]:
    """Find ``(lambda, alpha)`` maximising ``objective`` of the top-1 MMI captions on ``dev_items``.

    ``references[i]`` belongs to ``dev_items[i]``. ``objective`` is ``"geomean"`` (geometric mean of
    ``metrics``) or one capeval result key (then ``metrics`` defaults to that key). ``scorer`` replaces
    :func:`capeval.score` (``scorer(predictions, references) -> {key: corpus score}``), e.g. in tests.
    Returns ``{"lambda", "alpha", "objective", "value", "grid": [{"lambda", "alpha", "value"}, ...]}``.
    """
    items = validate_items(dev_items)
    if len(references) != len(items):
        raise ValueError(f"{len(references)} reference lists for {len(items)} dev items.")
    if not lambdas or not alphas:
        raise ValueError("lambdas and alphas must be non-empty.")
    keys = list(metrics) if objective == "geomean" else [objective]
    captions = flat_captions(items)
    lp_uni, lp_lstm = np.asarray(unigram.log_prob(captions), float), np.asarray(lstm.log_prob(captions), float)
    for name, lp in (("unigram", lp_uni), ("lstm", lp_lstm)):
        if lp.shape != (len(captions),) or not np.isfinite(lp).all():
            raise ValueError(f"the {name} LM must return one finite log-prob per candidate.")
    refs = [list(r) for r in references]
    scorer = scorer or (lambda preds, rr: score(preds, rr, metrics=keys, **score_options))
    cache: dict[tuple[int, ...], float] = {}
    grid = []
    for alpha in alphas:
        lp = combine(lp_uni, lp_lstm, alpha)
        for lam in lambdas:
            pick = top1_indices(items, lp, lam)
            if pick not in cache:
                result = scorer([it["candidates"][j]["caption"] for it, j in zip(items, pick)], refs)
                missing = [k for k in keys if k not in result]
                if missing:
                    raise ValueError(f"the scorer returned no {missing}; it returned {sorted(result)}.")
                cache[pick] = geomean([result[k] for k in keys]) if objective == "geomean" else float(result[objective])
            grid.append({"lambda": float(lam), "alpha": float(alpha), "value": cache[pick]})
    best = max(grid, key=lambda g: (g["value"], -g["lambda"], -g["alpha"]))
    return {"lambda": best["lambda"], "alpha": best["alpha"], "objective": objective, "metrics": keys,
            "value": best["value"], "distinct_selections": len(cache), "grid": grid}
