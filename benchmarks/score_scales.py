"""Where the learned metrics' default outputs lie on non-benchmark captions (groundwork for issue 38 item 3, readable
scales): COCO train2014 human captions scored against their own image's other captions ("matched") and against another
image's captions ("mismatched"), quantiles per metric.

    python benchmarks/score_scales.py [--images 500] [--metrics critic_ref lceval] [--json out.json]

Images: a seeded sample (``random.Random(seed)``) of capeval's COCO train2014 caption corpus
(:func:`capeval.corpora.captions.coco_train_captions`, benchmark images left out); the candidate is each image's first
caption, the matched references its other captions, the mismatched references the other captions of the next image of
the sample.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=500)
    parser.add_argument("--metrics", nargs="+", default=["critic_ref", "lceval"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import capeval
    from capeval.corpora.captions import coco_train_captions

    table = coco_train_captions()
    ids = sorted(i for i, caps in table.items() if len(caps) >= 5)
    sample = random.Random(args.seed).sample(ids, args.images)
    cands = [table[i][0] for i in sample]
    matched = [table[i][1:5] for i in sample]
    mismatched = [table[sample[(k + 1) % len(sample)]][1:5] for k in range(len(sample))]
    out: dict = {"images": args.images, "seed": args.seed, "quantiles": list(QUANTILES), "metrics": {}}
    for metric in args.metrics:
        row = {}
        for name, refs in (("matched", matched), ("mismatched", mismatched)):
            start = time.perf_counter()
            result = capeval.score(cands, refs, metrics=metric, cider_df="coco-val2014", language_check=False,
                                   progress=False)
            per = np.asarray(result["per_caption"][metric])
            row[name] = {"quantiles": [round(float(q), 4) for q in np.quantile(per, QUANTILES)],
                         "mean": round(float(per.mean()), 4), "seconds": round(time.perf_counter() - start, 1),
                         "signature": result["signature"]}
            print(f"{metric} {name}: quantiles {row[name]['quantiles']} mean {row[name]['mean']}", file=sys.stderr)
        out["metrics"][metric] = row
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
