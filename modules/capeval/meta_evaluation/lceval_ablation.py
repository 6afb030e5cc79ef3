"""The paper's Table 5 feature-group ablation (and its Table 7 group rows) for capeval's LCEval.

Seven networks are trained on the same training features (:mod:`capeval.corpora.lceval_pairs`), each
reading one feature subset: all features, each group alone, each group removed (groups:
:data:`capeval.lceval.features.GROUPS`). Each is scored on COMPOSITE (all captions, Kendall τ-b against the
correctness score, as ``capeval bench composite``) and on PASCAL-50S (the EXPERT file's 5 references, accuracy %
per category, metric ties ½), beside the paper's numbers (whose test split of COMPOSITE was never released).
Benchmark features are extracted once (cached) and shared by all seven networks.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.lceval.features import FEATURE_NAMES, GROUPS

__all__ = ["PAPER_TABLE5", "VARIANTS", "benchmark_features", "evaluate_model", "run_ablation"]

#: Kendall τ on the paper's 7,996-caption COMPOSITE test split: (remove this group, use only this group).
PAPER_TABLE5 = {"all": 0.418, "semantic": (0.387, 0.372), "lexical": (0.366, 0.409), "syntactic": (0.413, 0.298)}


def _variants() -> dict[str, list[str]]:
    out = {"all": list(FEATURE_NAMES)}
    for group in GROUPS:
        out[f"only-{group}"] = [f for f in FEATURE_NAMES if f in GROUPS[group]]
    for group in GROUPS:
        out[f"without-{group}"] = [f for f in FEATURE_NAMES if f not in GROUPS[group]]
    return out


#: ``{variant: feature names}``: all, only-<group> and without-<group> for each group.
VARIANTS = _variants()


def benchmark_features(bench, extractor, *, progress: bool | None = None) -> dict[str, Any]:
    """Features of a loaded benchmark's items: ``{"x": (n, 16)}`` for caption records (plus ``"human"``), or
    ``{"a", "b"}`` features of both candidates (plus ``"preferred"``, ``"category"``) for pair records."""
    from capeval.batch import CaptionBatch
    from capeval.judgments.records import PairRecord

    records = bench.records
    if records and isinstance(records[0], PairRecord):
        preds = [r.candidates[0] for r in records] + [r.candidates[1] for r in records]
        refs = [list(r.references) for r in records] * 2
        x = extractor.extract(CaptionBatch(preds, refs, cleanup=None, progress=progress))
        n = len(records)
        return {"a": x[:n], "b": x[n:], "preferred": [r.preferred for r in records],
                "category": [r.category for r in records]}
    x = extractor.extract(CaptionBatch([r.candidate for r in records], [list(r.references) for r in records],
                                       cleanup=None, progress=progress))
    return {"x": x, "human": [r.human_mean for r in records]}


def evaluate_model(model, features: dict[str, Any]) -> dict[str, float]:
    """Kendall τ-b (caption benchmarks) or accuracy % per category and average (pair benchmarks) of ``model``."""
    from capeval.judgments.stats import correlation, pairwise_credit

    if "x" in features:
        return {"kendall_b": correlation(features["human"], model.predict(features["x"]), "kendall_b")}
    credit, counts = pairwise_credit(model.predict(features["a"]), model.predict(features["b"]), features["preferred"])
    cats = np.array(features["category"])
    out = {}
    known = [c for c in ("HC", "HI", "HM", "MM") if c in set(cats)]
    for cat in known + sorted(set(cats) - set(known), key=str):
        mask = (cats == cat) & counts
        out[cat] = float(100 * credit[mask].mean())
    out["average"] = float(np.mean(list(out.values())))
    return out


def run_ablation(train: tuple[np.ndarray, np.ndarray], dev: tuple[np.ndarray, np.ndarray],
                 evaluations: dict[str, dict[str, Any]], out_dir: str | Path, *, variants: Sequence[str] | None = None,
                 progress: bool | None = None, **train_options: Any) -> dict[str, Any]:
    """Train each variant into ``out_dir/<variant>`` (resumable) and evaluate it on every benchmark of
    ``evaluations`` (``{name: benchmark_features(...)}``). Returns ``{"variants": {variant: {"features": [...],
    "best_epoch", "dev_loss", "dev_accuracy", <benchmark>: scores}}, "paper_table5": ...}``."""
    from capeval.lceval.model import LCEvalModel
    from capeval.lceval.train import train_lceval

    names = list(variants) if variants is not None else list(VARIANTS)
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown ablation variant(s) {unknown}; choose from {list(VARIANTS)}.")
    result: dict[str, Any] = {"variants": {}, "paper_table5": PAPER_TABLE5}
    for name in names:
        folder = Path(out_dir) / name
        log = train_lceval(train[0], train[1], dev[0], dev[1], folder, progress_bar=progress,
                           features=VARIANTS[name], **train_options)
        model = LCEvalModel.from_pretrained(folder)
        best = next(e for e in log["epochs"] if e["epoch"] == log["best_epoch"])
        row = {"features": VARIANTS[name], "best_epoch": log["best_epoch"], "dev_loss": best["dev_loss"],
               "dev_accuracy": best["dev_accuracy"]}
        for bench, feats in evaluations.items():
            row[bench] = evaluate_model(model, feats)
        result["variants"][name] = row
    return result
