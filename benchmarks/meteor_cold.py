"""METEOR on 1,000 COCO captions in a fresh process: capeval cold (empty cache: the paraphrase table is built) and
warm (cache built) beside pycocoevalcap's Java METEOR (JVM start and its paraphrase load included), in one run.

The first N Karpathy-test candidates of SMURF's release (``$CAPEVAL_DATA_DIR/coco_karpathy_test``) with their 5
references, PTB-tokenised once by capeval (not timed); every side then scores the same token strings in a new Python
process, and the time is that process's wall clock from its start (interpreter, imports, JVM or table, scoring) to
the scores. Rounds alternate the order (jar, cold, warm / warm, cold, jar); each cold run gets a new empty
``CAPEVAL_CACHE_DIR``. Scores are compared per caption (they must be identical).

Usage: python benchmarks/meteor_cold.py [--captions 1000] [--rounds 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WORKER = r"""
import json, sys, time
start = float(sys.argv[3])
hyps, refs = json.load(open(sys.argv[2]))
if sys.argv[1] == "jar":
    from pycocoevalcap.meteor.meteor import Meteor
    scorer = Meteor()
    corpus, per = scorer.compute_score({i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)})
    per = [float(x) for x in per]
    scorer.meteor_p.kill()
else:
    from capeval.meteor.scorer import PythonMeteorScorer
    corpus, per = PythonMeteorScorer().score(hyps, refs)
print(json.dumps({"seconds": time.time() - start, "corpus": corpus, "per": per}))
"""


def captions(n: int) -> tuple[list[str], list[list[str]]]:
    sys.path.insert(0, str(ROOT / "modules"))
    from capeval.paths import data_dir
    from capeval.text import get_tokenizer

    folder = data_dir(required=True) / "coco_karpathy_test"
    rows = json.loads((folder / "karpathy_cand.json").read_text(encoding="utf-8"))[:n]
    by_image: dict[str, list[str]] = {}
    for ref in json.loads((folder / "karpathy_ref.json").read_text(encoding="utf-8")):
        by_image.setdefault(ref["image_id"], []).append(ref["caption"])
    refs = [by_image[r["image_id"]] for r in rows]
    flat = get_tokenizer("ptb").tokenize([r["caption"] for r in rows] + [c for rs in refs for c in rs])
    hyps = [" ".join(t) for t in flat[:n]]
    out, k = [], n
    for rs in refs:
        out.append([" ".join(t) for t in flat[k : k + len(rs)]])
        k += len(rs)
    return hyps, out


def run(side: str, tokens: Path, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "modules"), "CAPEVAL_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _WORKER, side, str(tokens), repr(time.time())], env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--captions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    hyps, refs = captions(args.captions)
    times: dict[str, list[float]] = {"jar": [], "cold": [], "warm": []}
    per: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens.json"
        tokens.write_text(json.dumps([hyps, refs]), encoding="utf-8")
        warm = Path(tmp) / "cache-warm"
        run("capeval", tokens, warm)  # builds the warm side's table (not timed)
        for r in range(args.rounds):
            for side in (["jar", "cold", "warm"] if r % 2 == 0 else ["warm", "cold", "jar"]):
                cache = Path(tmp) / f"cache-cold-{r}" if side == "cold" else warm  # cold: a new, empty folder
                result = run("jar" if side == "jar" else "capeval", tokens, cache)
                times[side].append(result["seconds"])
                per.setdefault("jar" if side == "jar" else "capeval", result["per"])
                print(f"round {r + 1}, {side}: {result['seconds']:.2f} s (corpus {result['corpus']:.6f})", flush=True)
    same = per["jar"] == per["capeval"]
    report = {"captions": args.captions, "seconds": times, "median_s": {k: statistics.median(v) for k, v in times.items()},
              "identical_per_caption": same,
              "max_abs_diff": max(abs(a - b) for a, b in zip(per["jar"], per["capeval"]))}
    print(f"median of {args.rounds}: jar {report['median_s']['jar']:.2f} s, capeval cold {report['median_s']['cold']:.2f} s, "
          f"warm {report['median_s']['warm']:.2f} s; per-caption scores identical: {same} "
          f"(max |diff| {report['max_abs_diff']:.2g})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
