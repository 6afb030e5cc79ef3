"""Speed and memory of capeval's SPICE.

Usage (from the repository root):
    PYTHONPATH=modules python benchmarks/spice_speed.py [--texts 3000] [--tokenizer ptb-java]

1. Parsing throughput on one core with a cold cache: unique COCO val2014 captions (PTB-tokenised,
   lower-cased, as SPICE sees them) through ``SceneGraphParser(use_cache=False)``, model load excluded.
2. End-to-end SPICE (tokenisation, then the SPICE stage, timed apart) on the pycocoevalcap example (1,000 captions, COCO val2014 references), each run in
   a fresh process: cold (empty cache directory, model loaded) then warm (same cache), with wall time
   and peak resident memory (``ru_maxrss`` of the child).
All runs pin BLAS/OpenMP to one thread (``OMP_NUM_THREADS=1`` etc.).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}

_E2E = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {bench!r})
from spice_fidelity import load_coco_example
from capeval.batch import CaptionBatch
from capeval.spice.metric import Spice
preds, refs, _ = load_coco_example()
t1 = time.perf_counter()
batch = CaptionBatch(preds, refs, cleanup="none", tokenizer={tok!r})
batch.prediction_tokens
t2 = time.perf_counter()
metric = Spice()
out = metric.compute(batch)
t3 = time.perf_counter()
print(json.dumps({{"spice": out.corpus["spice"], "load_data_s": t1 - t0, "tokenize_s": t2 - t1,
                  "spice_s": t3 - t2, "score_s": t3 - t1}}))
"""


def parse_throughput(n_texts: int, tokenizer: str) -> dict:
    from capeval.coco.captions import coco_captions
    from capeval.spice.parser import SceneGraphParser
    from capeval.text import get_tokenizer

    captions = list(dict.fromkeys(c for caps in coco_captions("val2014").values() for c in caps))[:n_texts]
    texts = [" ".join(t) for t in get_tokenizer(tokenizer).tokenize(captions)]
    parser = SceneGraphParser(use_cache=False, n_process=1)
    t0 = time.perf_counter()
    parser.nlp  # load the model outside the timed region  # noqa: B018
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    parser.parse(texts)
    elapsed = time.perf_counter() - t0
    return {"texts": len(texts), "seconds": elapsed, "texts_per_s": len(texts) / elapsed, "model_load_s": load_s}


def end_to_end(cache: str, tokenizer: str) -> dict:
    env = {**os.environ, **ONE_THREAD, "CAPEVAL_CACHE_DIR": cache, "PYTHONPATH": str(ROOT / "modules")}
    code = _E2E.format(bench=str(ROOT / "benchmarks"), tok=tokenizer)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update({"process_wall_s": wall, "peak_rss_mb_upper_bound": max(peak_kb, before) / 1024})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=3000)
    ap.add_argument("--tokenizer", default="ptb-java")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ.update(ONE_THREAD)
    report = {"parse": parse_throughput(args.texts, args.tokenizer)}
    print("parse throughput (1 core, cold):", report["parse"])
    with tempfile.TemporaryDirectory() as cache:
        report["cold"] = end_to_end(cache, args.tokenizer)
        print("end-to-end cold:", report["cold"])
        report["warm"] = end_to_end(cache, args.tokenizer)
        print("end-to-end warm:", report["warm"])
    report["cold_over_warm_score_s"] = report["cold"]["score_s"] / report["warm"]["score_s"]
    report["cold_over_warm_spice_s"] = report["cold"]["spice_s"] / report["warm"]["spice_s"]
    print(f"speed-up warm vs cold: tokenize+SPICE {report['cold_over_warm_score_s']:.1f}x, "
          f"SPICE stage alone {report['cold_over_warm_spice_s']:.1f}x")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
