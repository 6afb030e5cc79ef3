"""Flickr8k-Expert, Cui protocol: which Kendall variant could give Cui et al.'s Table 1 values?

Usage: PYTHONPATH=modules python benchmarks/cui_protocol_variants.py
Prints, for BLEU-4, CIDEr-D and SPICE, Kendall tau-b and tau-a over the 3 expert rows per pair and
over the mean of the 3 experts (published, Cui et al. 2018: BLEU-4 .206, CIDEr .289, SPICE .456).
"""
from __future__ import annotations

import numpy as np
from scipy.stats import kendalltau

import capeval
from capeval.judgments import load_benchmark


def tau(human: np.ndarray, metric: np.ndarray, variant: str) -> float:
    tb = kendalltau(human, metric)[0]
    if variant == "b":
        return float(tb)
    n0 = len(human) * (len(human) - 1) / 2

    def ties(x):
        _, c = np.unique(x, return_counts=True)
        return (c * (c - 1) / 2).sum()

    return float(tb * np.sqrt((n0 - ties(human)) * (n0 - ties(metric))) / n0)  # tau-a from tau-b


def main() -> None:
    bench = load_benchmark("flickr8k-expert", protocol="cui")
    for metric in ("bleu_4", "cider_d", "spice"):
        scores = capeval.score(bench.candidates(), bench.references(), metrics=[metric])["per_caption"][metric]
        rows_h = np.array([h for r in bench.records for h in r.human_scores])
        rows_m = np.array([s for s, r in zip(scores, bench.records) for _ in r.human_scores])
        mean_h = np.array([np.mean(r.human_scores) for r in bench.records])
        print(f"{metric:8s} rows: tau_b {tau(rows_h, rows_m, 'b'):.3f} tau_a {tau(rows_h, rows_m, 'a'):.3f}   "
              f"mean of experts: tau_b {tau(mean_h, np.asarray(scores), 'b'):.3f} "
              f"tau_a {tau(mean_h, np.asarray(scores), 'a'):.3f}")


if __name__ == "__main__":
    main()
