"""Scoring speed of the critic with cached image features: (candidate, reference) pairs per second.

Usage (from the repository root; needs ``capeval[learned]`` and the data dir):
    PYTHONPATH=modules OMP_NUM_THREADS=2 python benchmarks/critic_speed.py [--critic DIR] [--repeats 3] [--json OUT]

Workload: Flickr8k-Expert under the cui protocol (5,822 candidates, every reference of the query image as context:
``sum(len(refs))`` pairs) scored with :func:`capeval.critic.scoring.critic_scores`. The model is loaded and the
image features of the 1,000 query images computed once before timing (the feature cache: what a second call
sees), so the timed region is tokenising, the LSTM over every distinct caption, the image projection and the
classifier over every pair, and the average per candidate. Also timed: the same through ``capeval.score(...,
metrics=["critic"], images=...)`` (feature cache read from disk, validation, signature). Prints JSON with
pairs/s, the thread count, ``cpu_share`` (process CPU seconds per wall second) and the load average, because the
machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--critic", default=None, help="critic folder (default: the shipped critic-flickr8k)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    from capeval.api import score
    from capeval.judgments import load_benchmark
    from capeval.critic.loading import load_critic
    from capeval.critic.scoring import critic_scores, encode_images

    bench = load_benchmark("flickr8k-expert", protocol="cui")
    cands, refs = bench.candidates(), bench.references()
    images = [str(r.image_path) for r in bench.records]
    model, vocab = load_critic(args.critic)
    feats = encode_images(model, images)  # fills the on-disk feature cache too
    pairs = sum(len(r) for r in refs)
    timings, api_timings = [], []
    for _ in range(args.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        critic_scores(cands, refs, image_features=feats, model=model, vocab=vocab)
        timings.append((time.perf_counter() - t0, time.process_time() - c0))
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        score(cands, refs, metrics=["critic"], images=images, critic_model=args.critic, progress=False)
        api_timings.append(time.perf_counter() - t0)
    best = min(timings)
    out = {"workload": "flickr8k-expert cui", "candidates": len(cands), "pairs": pairs,
           "distinct_captions": len(set(cands) | {r for rs in refs for r in rs}),
           "seconds": [round(t, 3) for t, _ in timings], "pairs_per_second": round(pairs / best[0]),
           "cpu_share": round(best[1] / best[0], 2), "api_seconds": [round(t, 3) for t in api_timings],
           "api_pairs_per_second": round(pairs / min(api_timings)), "threads": torch.get_num_threads(),
           "loadavg": os.getloadavg()[0], "median_seconds": round(statistics.median(t for t, _ in timings), 3)}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
