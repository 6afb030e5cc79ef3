"""Why SPICE's Kendall τ-b on Flickr8k-Expert (cui protocol) is far above its τ-c: ties.

For each metric, prints τ-b, τ-c and the share of the protocol's row pairs that the metric ties (rows whose metric
scores are equal, among pairs whose human scores differ). τ-b divides by sqrt((n0 - n1)(n0 - n2)), which shrinks with
the metric's own ties; τ-c does not. A metric that gives many captions exactly the same score (SPICE: 0 when no
tuple matches) is favoured by τ-b.

Usage: PYTHONPATH=modules OMP_NUM_THREADS=1 python benchmarks/expert_ties.py [--protocol cui|clipscore]
       [--critic-models critic-flickr8k-joint,...] [--json OUT]
(CAPEVAL_DATA_DIR as for `capeval bench`; every metric is scored afresh with `capeval.score`.)
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import capeval
from capeval.judgments.flickr8k import load_expert
from capeval.judgments.stats import correlation


def tied_share(human: np.ndarray, metric: np.ndarray) -> float:
    """Share of row pairs with different human scores whose metric scores are equal (in [0, 1])."""
    order = np.argsort(human, kind="stable")
    h, m = human[order], metric[order]
    _, m_codes = np.unique(m, return_inverse=True)
    differing, tied = 0, 0
    for value in np.unique(h):  # pairs (i in group g, j above g): human scores differ
        inside = h == value
        above = h > value
        n_in, n_above = int(inside.sum()), int(above.sum())
        differing += n_in * n_above
        counts_in = np.bincount(m_codes[inside], minlength=m_codes.max() + 1)
        counts_above = np.bincount(m_codes[above], minlength=m_codes.max() + 1)
        tied += int((counts_in * counts_above).sum())
    return tied / differing if differing else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="cui", choices=["cui", "clipscore"])
    parser.add_argument("--metrics", default="spice,cider_d,bleu_4")
    parser.add_argument("--critic-models", default="critic-flickr8k-joint,critic-flickr8k-caption")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    bench = load_expert(protocol=args.protocol)
    cands, refs, images = bench.candidates(), bench.references(), bench.images()
    columns: dict[str, list[float]] = {}
    text = capeval.score(predictions=cands, references=refs, metrics=args.metrics.split(","))
    for name in args.metrics.split(","):
        columns[name] = text["per_caption"][name]
    for model in filter(None, args.critic_models.split(",")):
        result = capeval.score(predictions=cands, references=refs, images=images, metrics=["critic"],
                               critic_model=model)
        columns[model] = result["per_caption"]["critic"]
    rows = {}
    print(f"Flickr8k-Expert, {args.protocol} protocol: {len(cands)} candidates")
    print(f"{'metric':<24} {'tau_b':>6} {'tau_c':>6} {'tied pairs':>10} {'distinct scores':>15}")
    for name, scores in columns.items():
        human, metric, _ = bench.judgment_rows(scores)
        human, metric = np.asarray(human, float), np.asarray(metric, float)
        tau_b, tau_c = correlation(human, metric, "kendall_b"), correlation(human, metric, "kendall_c")
        share, distinct = tied_share(human, metric), int(len(np.unique(scores)))
        rows[name] = {"tau_b": tau_b, "tau_c": tau_c, "tied_pair_share": share, "distinct_scores": distinct}
        print(f"{name:<24} {tau_b:6.3f} {tau_c:6.3f} {share:10.3f} {distinct:15d}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"protocol": args.protocol, "metrics": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
