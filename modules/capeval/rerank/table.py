"""The shape of Wang et al. (ECCV 2020) Table 3: plain beam search vs MMI re-ranking with each caption LM.

Inputs: n-best beam candidates (``{"id", "candidates": [{"caption", "logp"}]}``, best first) of a dev and
a test split, their references, and per LM corpus a unigram and an LSTM LM. One grid search on dev
(:func:`capeval.rerank.tune.tune`, λ and α in 0..1 step .1, objective: the geometric mean of the six
metrics) gives all three MMI rows: ``mmi-unigram`` is the α = 1 column (P_uni only), ``mmi-lstm`` the
α = 0 column, ``mmi-interpolated`` the best cell. Each row's (λ, α) is then applied to the test candidates
and scored there. ``beam`` is the top candidate of the same beam (λ = 0). Metrics are capeval's result
keys and scales; ``geomean`` is their geometric mean.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from capeval.api import score
from capeval.models.caption_lm import CaptionLM, combine
from capeval.rerank.mmi import flat_captions, top1_indices, validate_items
from capeval.rerank.tune import GEOMEAN_METRICS, GRID, geomean, tune


def _scores(items: Sequence[dict], refs: Sequence[Sequence[str]], pick: Sequence[int], metrics: Sequence[str]):
    result = score([it["candidates"][j]["caption"] for it, j in zip(items, pick)], [list(r) for r in refs],
                   list(metrics), progress=False)
    row = {k: float(result[k]) for k in metrics}
    row["geomean"] = geomean([row[k] for k in metrics])
    return row, result.get("signature", "")


def mmi_table(dev_items: Sequence[dict], dev_refs: Sequence[Sequence[str]], test_items: Sequence[dict],
              test_refs: Sequence[Sequence[str]], lms: Mapping[str, tuple[CaptionLM, CaptionLM]], *,
              metrics: Sequence[str] = GEOMEAN_METRICS, lambdas: Sequence[float] = GRID,
              alphas: Sequence[float] = GRID) -> dict[str, Any]:
    """Rows of the table (see the module docstring). ``lms``: ``{corpus name: (unigram, lstm)}``.

    ``lambdas`` / ``alphas``: the grid searched on dev (default 0..1 step .1 each; ``alphas`` must hold 0 and 1
    for the LSTM-only and unigram-only rows). Each distinct dev selection costs one scoring run of every
    metric (METEOR aligns and SPICE parses new captions): about 10–30 s for 1,000 images on 2 cores.
    """
    dev_items, test_items = validate_items(dev_items), validate_items(test_items)
    if len(dev_refs) != len(dev_items) or len(test_refs) != len(test_items):
        raise ValueError("one reference list per dev / test item is needed.")
    if not lms:
        raise ValueError("no caption LMs given.")
    if not (any(abs(a) < 1e-9 for a in alphas) and any(abs(a - 1) < 1e-9 for a in alphas)):
        raise ValueError(f"alphas must include 0 (LSTM only) and 1 (unigram only), got {list(alphas)}.")
    metrics = list(metrics)
    beam_row, signature = _scores(test_items, test_refs, [0] * len(test_items), metrics)
    rows: list[dict[str, Any]] = [{"method": "beam", "lambda": 0.0, **beam_row}]
    tuning: dict[str, Any] = {}
    test_caps = flat_captions(test_items)
    for corpus, (unigram, lstm) in lms.items():
        grid = tune(dev_items, dev_refs, unigram, lstm, metrics=metrics, lambdas=lambdas, alphas=alphas)
        tuning[corpus] = {"distinct_selections": grid["distinct_selections"], "grid": grid["grid"]}
        lp_uni, lp_lstm = unigram.log_prob(test_caps), lstm.log_prob(test_caps)
        for method, alpha in (("mmi-unigram", 1.0), ("mmi-lstm", 0.0), ("mmi-interpolated", None)):
            cells = [g for g in grid["grid"] if alpha is None or abs(g["alpha"] - alpha) < 1e-9]
            best = max(cells, key=lambda g: (g["value"], -g["lambda"], -g["alpha"]))
            pick = top1_indices(test_items, combine(lp_uni, lp_lstm, best["alpha"]), best["lambda"])
            row, _ = _scores(test_items, test_refs, pick, metrics)
            changed = sum(j != 0 for j in pick) / len(pick)
            rows.append({"method": method, "lm_corpus": corpus, "lambda": best["lambda"], "alpha": best["alpha"],
                         "dev_geomean": best["value"], "changed_share": changed, **row})
    return {"settings": {"metrics": metrics, "lambdas": list(lambdas), "alphas": list(alphas), "dev_items": len(dev_items), "test_items": len(test_items),
                         "candidates_per_item": sorted({len(it["candidates"]) for it in test_items}),
                         "lms": {c: [u.settings, m.settings] for c, (u, m) in lms.items()}, "signature": signature},
            "rows": rows, "tuning": tuning}
