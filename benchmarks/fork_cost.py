"""What a forked decoding pool would cost capeval's CLIP scoring: the time to start N forked workers from a process
holding a loaded ViT-B/32 CLIP (about 2 GB resident), until their first results and until shut down.

    python benchmarks/fork_cost.py CHECKPOINT [--workers 2,8,16]

CHECKPOINT: an OpenAI-format CLIP file (``benchmarks/clip_speed.py`` writes one under its ``--work`` folder).
"""
from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "modules"))


def _double(x: int) -> int:
    return 2 * x


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint")
    p.add_argument("--workers", default="2,8,16")
    args = p.parse_args()
    from capeval.vision_language.backends import load_clip

    load_clip(args.checkpoint, device="cpu")
    print(f"parent peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB")
    for n in (int(w) for w in args.workers.split(",")):
        start = time.perf_counter()
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
            list(pool.map(_double, range(4 * n)))
            first = time.perf_counter() - start
        print(f"{n} workers: first results after {first:.3f} s, shut down after {time.perf_counter() - start:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
