"""Time of METEOR / SPICE on one caption of N characters (why ``max_caption_chars`` defaults to 5,000).

Usage: PYTHONPATH=modules python benchmarks/caption_length.py METRIC [--text random|coco-words|repeat] N [N ...]

``--text random`` (default): seeded random words of a 20-word caption vocabulary; ``coco-words``: the
same from every alphabetic word of the COCO val2014 captions; ``repeat``: the first reference
("a dog runs on the grass") repeated, so every word matches (METEOR's aligner is slowest then).
One prediction of N characters against two short references, scored with the length limit off
(``max_caption_chars=None``); SPICE without its parse cache. The sizes run one after the other in
this process; METEOR's time includes loading its language data, SPICE's the first one loading spaCy.
"""
from __future__ import annotations

import argparse
import random
import time

import capeval

VOCAB = ("a man dog woman red blue sits on the grass with table near big small tree car street runs "
         "holding umbrella").split()
REFS = ["a dog runs on the grass", "a brown dog on a lawn"]


def caption(n: int, words: list[str], rng: random.Random) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < n:
        out.append(rng.choice(words))
    return " ".join(out)[:n]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("metric")
    ap.add_argument("sizes", nargs="+", type=int)
    ap.add_argument("--text", choices=["random", "coco-words", "repeat"], default="random")
    args = ap.parse_args()
    words = VOCAB
    if args.text == "coco-words":
        from capeval.coco.captions import coco_captions

        words = sorted({w for caps in coco_captions("val2014").values() for c in caps for w in c.lower().split()
                        if w.isalpha()})
    options = {"spice_cache": False} if args.metric.startswith("spice") else {}
    rng = random.Random(0)
    for n in args.sizes:
        if args.text == "repeat":
            pred = ((REFS[0] + " ") * (n // len(REFS[0]) + 1))[:n]
        else:
            pred = caption(n, words, rng)
        start = time.perf_counter()
        try:
            capeval.score([pred], [REFS], metrics=[args.metric], max_caption_chars=None, progress=False, **options)
            status = "ok"
        except Exception as err:  # report, do not stop: this measures failures too
            status = f"{type(err).__name__}: {' '.join(str(err).split())[:120]}"
        print(f"{args.metric} {args.text} {n:>7,} chars: {time.perf_counter() - start:7.2f} s  {status}", flush=True)


if __name__ == "__main__":
    main()
