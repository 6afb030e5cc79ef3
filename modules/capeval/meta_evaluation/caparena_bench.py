"""``capeval bench caparena``: CapArena's human battles (:mod:`capeval.judgments.caparena`) scored with any metrics.

Both captions of every battle are scored in one call against the battle's reference (DOCCI's human caption), each
metric's verdict per battle is the caption it scores higher (a tie when equal), and its entry holds CapArena's
statistics (:func:`capeval.judgments.caparena.caparena_agreement`): ``agreement`` (caption-level, overall; the
headline, a share in [0, 1]), ``levels`` (per difficulty level), ``ties``, ``spearman`` / ``kendall`` (model level:
the systems' Elo ranking from the metric's verdicts against CapArena's human ranking), ``ranking``. Battles with the
human caption are scored but left out of the statistics, as the reference does.

Length: ``caption_length`` is scored as every benchmark's baseline (CapArena's own finding: length alone agrees
with people .585, above every rule-based metric); each metric's ``length_controlled`` is its caption-level agreement
over the *length-matched* battles (the two captions differ by at most one word; ties as in the agreement: a metric
tie agrees only with a human tie), with ``pairs`` their number.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.judgments.caparena import CapArena, caparena_agreement, load_caparena, metric_verdicts, scoring_inputs
from capeval.meta_evaluation.length_control import LENGTH_KEY, MATCH_TOLERANCE, informative

#: The Elo bootstrap of the model-level statistics: CapArena's rounds and seed (``cal_ranking.py``).
ELO_ROUNDS, ELO_SEED = 1000, 42


def length_matched_agreement(bench: CapArena, values: np.ndarray, lengths: np.ndarray) -> dict[str, Any]:
    """The caption-level agreement over the battles whose captions differ by at most :data:`MATCH_TOLERANCE` words."""
    n = len(bench.pairs)
    verdicts = metric_verdicts(list(values[:n]), list(values[n:]))
    hits = [int(verdicts[i] == pair.human_verdict) for i, pair in enumerate(bench.pairs)
            if verdicts[i] is not None and not pair.has_human and abs(lengths[i] - lengths[n + i]) <= MATCH_TOLERANCE]
    return {"statistic": "agreement_length_matched", "value": sum(hits) / len(hits) if hits else None,
            "pairs": len(hits), "tolerance_words": MATCH_TOLERANCE}


def entry_of(bench: CapArena, values: np.ndarray, signature: str, rounds: int = ELO_ROUNDS) -> dict[str, Any]:
    """One metric's entry (see the module docstring) from its scores of the 2 × battles captions."""
    n = len(bench.pairs)
    stats = caparena_agreement(bench, (list(values[:n]), list(values[n:])), rounds=rounds, seed=ELO_SEED)
    levels = stats["caption_level"]
    model = stats["model_level"]
    overall = levels["overall"]["agreement"]
    return {"agreement": overall, "levels": {k: v["agreement"] for k, v in levels.items() if k != "overall"},
            "battles": levels["overall"]["n"], "ties": stats["ties"], "spearman": model.get("spearman"),
            "kendall": model.get("kendall"), "ranking": model.get("ranking"), "primary": "agreement",
            "signature": signature, "headline": {"statistic": "agreement", "value": overall, "ci": None}}


def run_caparena(metrics: Sequence[str], scorer, result, rounds: int = ELO_ROUNDS) -> None:
    """Fill ``result`` (a :class:`capeval.meta_evaluation.harness.BenchResult`) for CapArena."""
    bench = load_caparena()
    result.settings.update({"battles": len(bench), "elo_rounds": rounds, "elo_seed": ELO_SEED})
    predictions, references, images = scoring_inputs(bench, bool(scorer.image_metrics))
    scores = scorer(predictions, references, images)
    lengths = scores[LENGTH_KEY].values if LENGTH_KEY in scores else None
    if lengths is not None and not informative(lengths):
        lengths = None
    skipped = sum(p.has_human for p in bench.pairs)
    if skipped:
        result.notes.append(f"{skipped} battle(s) with the human caption scored but left out of the statistics, as "
                            "CapArena does")
    for key, item in scores.items():
        entry = entry_of(bench, np.asarray(item.values, dtype=float), item.signature, rounds)
        if lengths is not None and key != LENGTH_KEY:
            entry["length_controlled"] = length_matched_agreement(bench, item.values, lengths)
        result.results[key] = entry


__all__ = ["ELO_ROUNDS", "ELO_SEED", "entry_of", "length_matched_agreement", "run_caparena"]
