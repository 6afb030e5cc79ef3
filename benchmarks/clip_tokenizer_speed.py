"""Seconds to tokenize Flickr8k captions as CLIP-S does (``prefix + caption``, OpenAI's byte-pair encoding, cut at 77
tokens: :func:`capeval.vision_language.tokenizer.encode_texts`), every per-process table emptied before each repeat
(the vocabulary and merges loaded beforehand, as the metrics load them). Workload: the captions of the first
``--images`` Flickr8k test images (5 each) as candidates, then each image's other 4 as references (20,000 texts, all
already seen). Prints one JSON line: the median and minimum of ``--repeats`` runs per list. Usage::

    python benchmarks/clip_tokenizer_speed.py [--images 1000] [--repeats 7]
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
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--data", default=os.environ.get("CAPEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    args = p.parse_args()
    from clip_speed import workload

    from capeval.vision_language import tokenizer

    _, cands, refs, _ = workload(Path(args.data), args.images)
    flat = [r for group in refs for r in group]
    tokenizer.warm_up()
    seconds: dict[str, list[float]] = {"candidates": [], "references": []}
    for _ in range(args.repeats):
        tokenizer.clear_caches()
        for name, texts in (("candidates", cands), ("references", flat)):
            start = time.perf_counter()
            tokenizer.encode_texts(texts)
            seconds[name].append(time.perf_counter() - start)
    print(json.dumps({"texts": {"candidates": len(cands), "references": len(flat)}, "repeats": args.repeats,
                      **{f"{k}_median_s": round(statistics.median(v), 4) for k, v in seconds.items()},
                      **{f"{k}_min_s": round(min(v), 4) for k, v in seconds.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
