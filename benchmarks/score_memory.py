"""Peak memory of ``capeval score`` on many captions (BENCHMARKS.md, "capeval score on a million captions"): issue
54's goal is 1,000,000 captions of BLEU + ROUGE-L + CIDEr-D under 2 GB.

    python benchmarks/score_memory.py [--n 1000000] [--refs 2] [--metrics bleu,rouge_l,cider_d] [--dir /tmp/capeval-mem]
        [--in-memory]

Writes ``--n`` predictions (a JSON-lines file, ``image_id`` + ``caption``, 6 to 14 words drawn from a 20-word list,
seed 0) and ``--refs`` references each (JSON lines, ``image_id`` + ``references``), then runs ``capeval score`` on
them in a child process and prints its peak resident memory (``ru_maxrss``: the largest process; and the whole process
tree's, sampled every 0.2 s with psutil: the chunks are scored in several processes), the wall time and the corpus
scores. ``--in-memory`` forces the in-memory route (``CAPEVAL_SCORE_IN_MEMORY_MAX`` set above ``--n``) to show
what it would take.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = "a the dog cat man woman runs sits on in with red blue grass field street table ball child plays".split()


def write_files(folder: Path, n: int, refs: int) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    pred_path, ref_path = folder / f"pred-{n}.jsonl", folder / f"ref-{n}x{refs}.jsonl"
    if pred_path.is_file() and ref_path.is_file():
        return pred_path, ref_path
    rng = random.Random(0)

    def caption() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))

    with pred_path.open("w") as preds, ref_path.open("w") as references:
        for i in range(n):
            preds.write(json.dumps({"image_id": i, "caption": caption()}) + "\n")
            references.write(json.dumps({"image_id": i, "references": [caption() for _ in range(refs)]}) + "\n")
    return pred_path, ref_path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--refs", type=int, default=2)
    parser.add_argument("--metrics", default="bleu,rouge_l,cider_d")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/capeval-mem"))
    parser.add_argument("--in-memory", action="store_true")
    args = parser.parse_args()
    pred_path, ref_path = write_files(args.dir, args.n, args.refs)
    env = dict(os.environ)
    if args.in_memory:
        env["CAPEVAL_SCORE_IN_MEMORY_MAX"] = str(args.n)
    command = [sys.executable, "-m", "capeval", "score", "--predictions", str(pred_path), "--references",
               str(ref_path), "--metrics", args.metrics, "--no-language-check"]
    from score_dataset_coco import _tree_rss

    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=err, text=True)
        tree_peak = 0
        while proc.poll() is None:
            tree_peak = max(tree_peak, _tree_rss(proc))
            time.sleep(0.2)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    wall = time.perf_counter() - start
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024 ** 2
    print(stdout)
    if proc.returncode:
        print(stderr[-2000:], file=sys.stderr)
    route = "in memory" if args.in_memory else "default"
    print(f"n={args.n} refs={args.refs} metrics={args.metrics} route={route}: rc {proc.returncode}, "
          f"peak RSS {peak_gb:.2f} GiB (the largest process), {tree_peak / 1024 ** 3:.2f} GiB (the whole process "
          f"tree, sampled every 0.2 s), wall {wall:.0f} s")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
