"""Flickr8k-Expert: critic_plus beside its two parts, the base critic alone and the MiniLM cosine alone.

Usage: PYTHONPATH=modules python benchmarks/critic_plus_parts.py [COMBINER_DIR_OR_NAME]   (default critic-flickr8k-plus)

One pass per protocol computes, for every (candidate, reference) pair, the base critic's log-odds and the sentence
cosine (capeval.critic.ensemble.pair_features), then correlates three per-candidate means with the expert judgments
exactly as ``capeval bench flickr8k-expert`` does: critic_plus (the combiner), the critic's P(human), the cosine.
Nothing is fitted or selected here: the combiner's weights come from Flickr8k dev (``capeval critic fit-plus``).
"""
from __future__ import annotations

import json
import sys

import numpy as np

from capeval.benchmarks import load_benchmark
from capeval.benchmarks.harness import _correlations
from capeval.critic.ensemble import load_critic_plus, pair_features, plus_folder


def main(name: str | None = None) -> dict:
    folder = plus_folder(name)
    combiner, model, vocab, encoder = load_critic_plus(folder)
    out: dict = {}
    for protocol in ("clipscore", "cui"):
        bench = load_benchmark("flickr8k-expert", protocol=protocol)
        feats = pair_features(bench.candidates(), [list(r) for r in bench.references()], model=model, vocab=vocab,
                              encoder=encoder, images=bench.images())
        variants = {"critic_plus": feats.mean(combiner.probability(feats.critic_log_odds, feats.cosine)),
                    f"critic alone ({combiner.critic})": feats.mean(1 / (1 + np.exp(-feats.critic_log_odds))),
                    f"cosine alone ({encoder.name})": feats.mean(feats.cosine)}
        for variant, values in variants.items():
            c = _correlations(bench, values, 0, 0)
            out.setdefault(protocol, {})[variant] = {k: round(float(c[k]), 4) for k in ("tau_b", "tau_c", "pearson")}
    print(f"| protocol | scorer | tau_b | tau_c | pearson |\n|---|---|---:|---:|---:|")
    for protocol, rows in out.items():
        for variant, row in rows.items():
            print(f"| {protocol} | {variant} | {row['tau_b']:.3f} | {row['tau_c']:.3f} | {row['pearson']:.3f} |")
    print(json.dumps({"combiner": str(folder), "weights": [combiner.a, combiner.b, combiner.c], "results": out}))
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
