"""Flickr8k-Expert: critic_plus beside its two parts, the base critic alone and the MiniLM cosine alone.

Usage: PYTHONPATH=modules python benchmarks/critic_plus_parts.py [COMBINER_DIR_OR_NAME]   (default critic-flickr8k-plus)

One pass per protocol computes, for every (candidate, reference) pair, the base critic's log-odds and the sentence
cosine (capeval.critic.stack.stack_features), then correlates three per-candidate means with the expert judgments
exactly as ``capeval bench flickr8k-expert`` does: critic_plus (the combiner), the critic's P(human), the cosine.
Nothing is fitted or selected here: the combiner's weights come from Flickr8k dev (``capeval critic fit-plus``).
"""
from __future__ import annotations

import json
import sys

import numpy as np

from capeval.judgments import load_benchmark
from capeval.meta_evaluation.harness import _correlations
from capeval.critic.stack import load_scorer, stack_features


def main(name: str | None = None) -> dict:
    scorer = load_scorer(name or "critic-flickr8k-plus")
    folder, combiner, encoder = scorer.folder, scorer.stack, scorer.encoder
    out: dict = {}
    for protocol in ("clipscore", "cui"):
        bench = load_benchmark("flickr8k-expert", protocol=protocol)
        feats = stack_features(bench.candidates(), [list(r) for r in bench.references()], members=scorer.members,
                               encoder=encoder, images=bench.images())
        critic_log_odds = feats.log_odds[:, 0]
        variants = {"critic_plus": feats.mean(combiner.probability(feats.log_odds, feats.cosine)),
                    f"critic alone ({combiner.critics[0]})": feats.mean(1 / (1 + np.exp(-critic_log_odds))),
                    f"cosine alone ({encoder.name})": feats.mean(feats.cosine)}
        for variant, values in variants.items():
            c = _correlations(bench, values, 0, 0)
            out.setdefault(protocol, {})[variant] = {k: round(float(c[k]), 4) for k in ("tau_b", "tau_c", "pearson")}
    print("| protocol | scorer | tau_b | tau_c | pearson |\n|---|---|---:|---:|---:|")
    for protocol, rows in out.items():
        for variant, row in rows.items():
            print(f"| {protocol} | {variant} | {row['tau_b']:.3f} | {row['tau_c']:.3f} | {row['pearson']:.3f} |")
    print(json.dumps({"combiner": str(folder), "weights": [combiner.weights[0], combiner.cosine_weight, combiner.intercept], "results": out}))
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
