"""Where METEOR's time goes on captions (BENCHMARKS.md / lab notes, "capeval score on a million captions"): CPU
seconds of building the sentences (``_add_sentences``: texts prepared, split, their table phrases looked up and
packed) and of aligning them (``best_stats``) for the first ``--n`` pairs of ``benchmarks/score_memory.py``'s files.

    python benchmarks/meteor_parts.py [--n 10000] [--predictions /tmp/capeval-mem/pred-1000000.jsonl]
        [--references /tmp/capeval-mem/ref-1000000x2.jsonl]

Each stage is wrapped with a ``time.process_time`` timer (the wrappers add about a microsecond per call); the
statistics lines are those of the unwrapped scorer.
"""
from __future__ import annotations

import argparse
import json
import time
from itertools import islice


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--predictions", default="/tmp/capeval-mem/pred-1000000.jsonl")
    parser.add_argument("--references", default="/tmp/capeval-mem/ref-1000000x2.jsonl")
    args = parser.parse_args()
    import capeval.meteor.scorer as scorer_module
    from capeval.meteor.scorer import PythonMeteorScorer

    with open(args.predictions, encoding="utf-8") as preds, open(args.references, encoding="utf-8") as refs:
        hypotheses = [json.loads(line)["caption"] for line in islice(preds, args.n)]
        references = [json.loads(line)["references"] for line in islice(refs, args.n)]
    scorer = PythonMeteorScorer(processes=1)
    scorer.load()
    spent: dict[str, float] = {}

    def timed(name, function):
        def wrapper(*a, **k):
            start = time.process_time()
            try:
                return function(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start
        return wrapper

    scorer._add_sentences = timed("building sentences", scorer._add_sentences)
    scorer._table.lookup = timed("  of which table lookups", scorer._table.lookup)
    scorer._sentence = timed("  of which packing", scorer._sentence)
    scorer_module.best_stats = timed("aligning", scorer_module.best_stats)
    scorer_module.format_stats = timed("formatting lines", scorer_module.format_stats)
    start = time.process_time()
    scorer.statistics(hypotheses, references)
    total = time.process_time() - start
    print(f"{args.n} pairs: {total:.2f} s of CPU")
    for name, seconds in spent.items():
        print(f"  {name}: {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
