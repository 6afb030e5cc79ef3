"""Time and memory per caption of the text metrics on long, detailed captions (100-300 words) against 10-word ones.

Usage: PYTHONPATH=modules python benchmarks/long_captions.py [--metrics spice,meteor,cider_d,lceval]
       [--words 10,100,200,300] [--captions 40] [--json out.json]

Captions: paragraphs of real caption sentences. For each of ``--captions`` COCO val2014 images (capeval's bundled
annotations, seeded order) the candidate is the image's own captions followed by captions of the next images, joined
as sentences, cut at a sentence boundary once it reaches the word count; its two references are built the same way
from the same pool, starting elsewhere (detailed-caption benchmarks pair long candidates with long references). With
``--words 10`` every text is one caption of about 10 words: the captions every metric was made for.

Each (metric, length) runs in a fresh process: wall time of the ``capeval.score`` call (models and language data
loaded once before it, with a one-caption warm-up, so the time is the scoring's), and the process's peak resident
memory over that call (``ru_maxrss`` after minus before the call, in MiB). SPICE runs without its parse cache,
LCEval with its default model. ``max_caption_chars=None``: nothing is refused. The table gives seconds per caption,
its ratio to the 10-word row, and that ratio per word (1.0 = linear in the words).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time, warnings
import capeval
args = json.loads(sys.stdin.read())
preds, refs, metric = args["preds"], args["refs"], args["metric"]
options = {"spice_cache": False} if metric.startswith("spice") else {}
warnings.simplefilter("ignore")
capeval.score(preds[:1], refs[:1], metrics=[metric], max_caption_chars=None, progress=False, **options)  # loads
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = capeval.score(preds, refs, metrics=[metric], max_caption_chars=None, progress=False, **options)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
key = [k for k in result if k not in ("per_caption", "signature")][0]
print(json.dumps({"seconds": seconds, "peak_mib": peak / 1024, "grown_mib": (peak - before) / 1024,
                  "value": result[key]}))
"""


def paragraphs(n_captions: int, words: int, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``n_captions`` candidates of about ``words`` words (whole sentences), and two references each."""
    from capeval.coco.captions import coco_captions

    captions = coco_captions("val2014")
    ids = sorted(captions)
    random.Random(seed).shuffle(ids)
    pool = [" ".join(c.strip().rstrip(".").split()) + "." for i in ids[:4000] for c in captions[i]]

    def paragraph(start: int) -> str:
        out, count, k = [], 0, start
        while count < words:
            sentence = pool[k % len(pool)]
            out.append(sentence)
            count += len(sentence.split())
            k += 1
        return " ".join(out)

    step = max(1, words // 10) * 5
    preds = [paragraph(i * step) for i in range(n_captions)]
    refs = [[paragraph(i * step + len(pool) // 3), paragraph(i * step + 2 * len(pool) // 3)] for i in range(n_captions)]
    return preds, refs


def run(metric: str, preds: list[str], refs: list[list[str]]) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["modules", os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps({"preds": preds, "refs": refs,
                                                                          "metric": metric}),
                          capture_output=True, text=True, env=env, timeout=7200)
    if done.returncode != 0:
        return {"error": " ".join(done.stderr.split())[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--metrics", default="spice,meteor,cider_d,lceval")
    ap.add_argument("--words", default="10,100,200,300")
    ap.add_argument("--captions", type=int, default=40)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lengths = [int(w) for w in args.words.split(",")]
    rows = []
    print(f"{'metric':<8} {'words':>5} {'mean words':>10} {'s/caption':>10} {'× 10-word':>9} {'per word':>8} "
          f"{'peak MiB':>9} {'grown MiB':>9}", flush=True)
    for metric in args.metrics.split(","):
        base = None
        for words in lengths:
            preds, refs = paragraphs(args.captions, words)
            mean_words = sum(len(p.split()) for p in preds) / len(preds)
            started = time.perf_counter()
            out = run(metric, preds, refs)
            row = {"metric": metric, "words": words, "mean_words": mean_words, "captions": len(preds), **out,
                   "process_seconds": time.perf_counter() - started}
            rows.append(row)
            if "error" in out:
                print(f"{metric:<8} {words:>5} {mean_words:>10.1f} error: {out['error']}", flush=True)
                continue
            per = out["seconds"] / len(preds)
            if base is None:
                base = (per, mean_words)  # the shortest length of this metric
            ratio = per / base[0]
            per_word = ratio / (mean_words / base[1])
            print(f"{metric:<8} {words:>5} {mean_words:>10.1f} {per:>10.4f} {ratio:>9.1f} {per_word:>8.2f} "
                  f"{out['peak_mib']:>9.0f} {out['grown_mib']:>9.0f}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
