"""LCEval feature extraction + scoring speed and peak memory on PASCAL-50S (the paper's §5.7 workload).

Usage (from the repository root; needs ``capeval[lceval]`` and the data dir; no Java):
    PYTHONPATH=modules OMP_NUM_THREADS=1 python benchmarks/lceval_speed.py [--candidates both|first] [--json OUT]

Workload: the 4,000 PASCAL-50S pairs with the EXPERT file's 5 references: 8,000 candidate captions (both of every
pair; ``--candidates first``: the first candidate of every pair, 4,000 captions), features + ``lceval`` score for
each. The paper timed 4,000 captions with one reference each (228.8 s for
LCEval, Core i7 3.5 GHz). Three states, each in its own process with its own cache directory:

* ``cold``: empty feature and parse caches (the COCO val2014 document-frequency table, a one-time 20-40 s build
  per tokenizer and machine, is copied in beforehand; its build time is reported separately);
* ``warm-references``: the parse caches already hold the *reference* captions (parsed before timing), the
  candidates are new: scoring new captions against known references;
* ``warm``: everything cached (a repeated run).

The timed region starts after the process has loaded spaCy, the word vectors and METEOR's language data on two
unrelated captions (``startup_s`` reports that part) and covers features + scores of all 8,000 candidates. Peak
memory: the process's and its children's (the METEOR JVM, before METEOR ran in Python) maximum resident set
sizes.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def _workload(candidates: str = "both"):
    """PASCAL-50S captions and their EXPERT references: both candidates of every pair, or the ``first`` of each."""
    from capeval.judgments import load_benchmark

    bench = load_benchmark("pascal50s", references="expert")
    preds = [r.candidates[0] for r in bench.records]
    refs = [list(r.references) for r in bench.records]
    if candidates == "both":
        preds, refs = preds + [r.candidates[1] for r in bench.records], refs * 2
    return preds, refs


def child(state: str, candidates: str = "both") -> dict:
    """Run in a fresh process with CAPEVAL_CACHE_DIR set up by the parent."""
    t_start = time.perf_counter()
    import numpy as np

    from capeval.batch import CaptionBatch
    from capeval.lceval.features import FeatureExtractor
    from capeval.lceval.model import LCEvalModel

    preds, refs = _workload(candidates)
    model = LCEvalModel.from_pretrained("lceval-flickr8k-coco")
    extractor = FeatureExtractor(model.config.word_vectors)
    extractor.extract(CaptionBatch(["a warm up caption"], [["another caption for warming up"]], cleanup=None))
    if state == "warm-references":
        flat = [r for rs in refs for r in rs]
        batch = CaptionBatch(flat[:1], [flat], cleanup=None)
        texts = list(dict.fromkeys(" ".join(t) for t in batch.reference_tokens[0]))
        extractor.dependency_parser.parse(texts)  # fills SPICE's parse cache too
    startup = time.perf_counter() - t_start
    t0 = time.perf_counter()
    x = extractor.extract(CaptionBatch(preds, refs, cleanup=None))
    scores = model.predict(x)
    elapsed = time.perf_counter() - t0
    extractor.close()
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"state": state, "captions": len(preds), "seconds": round(elapsed, 2),
            "captions_per_s": round(len(preds) / elapsed, 1), "startup_s": round(startup, 2),
            "peak_rss_mb": round(self_kb / 1024), "peak_rss_children_mb": round(child_kb / 1024),
            "mean_score": float(np.mean(scores))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--candidates", choices=["both", "first"], default="both",
                        help="both candidates of every pair (8,000 captions, default) or the first (4,000)")
    parser.add_argument("--child", choices=["cold", "warm-references", "warm"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.candidates)))
        return 0
    from capeval.coco.document_frequency import coco_document_frequency

    results = {"load_average": os.getloadavg(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
               "candidates": args.candidates}
    with tempfile.TemporaryDirectory() as df_home:
        env = {**os.environ, "CAPEVAL_CACHE_DIR": df_home, "PYTHONPATH": str(ROOT / "modules")}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from capeval.coco.document_frequency import coco_document_frequency as f; "
                        "f(tokenizer='ptb')"], env=env, check=True)
        results["coco_df_build_s"] = round(time.perf_counter() - t0, 1)
        runs = []
        for states in (["cold", "warm"], ["warm-references"]):
            with tempfile.TemporaryDirectory() as home:
                shutil.copytree(df_home, home, dirs_exist_ok=True)
                for state in states:
                    out = subprocess.run([sys.executable, __file__, "--child", state, "--candidates", args.candidates],
                                         env={**env, "CAPEVAL_CACHE_DIR": home},
                                         check=True, stdout=subprocess.PIPE, text=True).stdout
                    runs.append(json.loads(out.strip().splitlines()[-1]))
                    print(json.dumps(runs[-1]), file=sys.stderr)
        results["runs"] = runs
    del coco_document_frequency
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
