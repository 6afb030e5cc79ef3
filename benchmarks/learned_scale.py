"""The learned metrics at test-set scale: time, captions/s and peak memory, cold and warm (issue 30 item 4).

Usage (from the repository root; needs ``capeval[learned,lceval]`` and the data dir; no Java):

    PYTHONPATH=modules python benchmarks/learned_scale.py [--limit N] [--only NAME,...] [--json out/scale.json]

Workloads:

* ``flickr8k``: all 8,091 Flickr8k images × their 5 captions (40,455 candidates), each caption scored against the
  image's other 4 captions (and the image, for the metrics that read one: ``images-224/<name>``). First the image
  features alone (EfficientNet-Lite0 224², every image read, decoded, encoded, cached), then every learned metric.
* ``karpathy``: the 20,000 Karpathy-test candidates against their references, the metrics that read no image.

Each (workload, metric, state) runs in a fresh Python process, so peak RSS (``ru_maxrss`` of the process and of its
children: METEOR's JVM for LCEval, before METEOR ran in Python) is its own. ``cold``: an empty capeval cache (image
features, parses, LCEval features), except COCO val2014's document-frequency table and METEOR's paraphrase cache,
one-time builds copied in beforehand; ``warm``: the same command again on the cache the cold run left. The timed region is the
``capeval.score`` call (model loading included: what a user's script pays); ``startup_s`` is the interpreter and
import time before it. Rates: captions/s (candidates per second); for the critic also (candidate, reference) pairs
per second. Prints a markdown table and JSON (``--json``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE_METRICS = ("critic", "critic_img", "critic_plus")
FLICKR_METRICS = ("critic", "critic_img", "critic_plus", "critic_ref", "sentence_cosine", "lceval", "lceval_released",
                  "lceval_plus")
KARPATHY_METRICS = ("critic_ref", "sentence_cosine", "lceval", "lceval_released", "lceval_plus")

CHILD = r'''
import json, os, resource, sys, time
started = time.time()
spec = json.loads(sys.argv[1])
import capeval
from capeval.paths import data_dir
root = data_dir(required=True)
if spec["workload"] == "flickr8k":
    groups = {}
    for line in (root / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            key, caption = line.split("\t", 1)
            groups.setdefault(key.split("#")[0], []).append(caption.strip())
    names = sorted(n for n in groups if (root / "flickr8k" / "images-224" / n).is_file())[: spec["limit"] or None]
    preds, refs, images = [], [], []
    for name in names:
        caps = groups[name]
        for i, cap in enumerate(caps):
            preds.append(cap)
            refs.append(caps[:i] + caps[i + 1:])
            images.append(str(root / "flickr8k" / "images-224" / name))
else:
    cands = json.loads((root / "coco_karpathy_test" / "karpathy_cand.json").read_text())
    refmap = {}
    for row in json.loads((root / "coco_karpathy_test" / "karpathy_ref.json").read_text()):
        refmap.setdefault(row["image_id"], []).append(row["caption"])
    rows = cands[: spec["limit"] or None]
    preds = [r["caption"] for r in rows]
    refs = [refmap[r["image_id"]] for r in rows]
    images = None
ready = time.time()
metric = spec["metric"]
if metric == "image_features":
    from capeval.models.image_encoder import load_image_encoder
    unique = list(dict.fromkeys(images))
    t = time.time()
    feats = load_image_encoder().encode(unique, progress=False)
    elapsed = time.time() - t
    out = {"items": len(unique), "unit": "images"}
else:
    kwargs = {"images": images} if metric in spec["image_metrics"] else {}
    t = time.time()
    result = capeval.score(preds, refs, metrics=[metric], progress=False, **kwargs)
    elapsed = time.time() - t
    value = result[metric]
    out = {"items": len(preds), "unit": "captions", "value": value,
           "pairs": sum(len(r) for r in refs)}
self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
out.update(seconds=elapsed, startup_s=ready - started, peak_rss_mb=self_rss, child_peak_rss_mb=child_rss)
print("RESULT " + json.dumps(out))
'''


def run_child(spec: dict, cache: Path) -> dict:
    env = {**os.environ, "CAPEVAL_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT / "modules"),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{spec}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def seed_cache(seed: Path) -> None:
    """Build the one-time tables into ``seed``: COCO val2014's document frequencies (LCEval's CIDEr-D feature) and
    METEOR's paraphrase cache (LCEval's METEOR feature); both are built once per machine, not per run."""
    env = {**os.environ, "CAPEVAL_CACHE_DIR": str(seed), "PYTHONPATH": str(ROOT / "modules")}
    code = ("import capeval; capeval.score(['a dog'], [['a dog runs']], metrics=['cider_d', 'meteor'], "
            "cider_df='coco-val2014')")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N images (flickr8k) / candidates (karpathy)")
    parser.add_argument("--only", default="", help="comma-separated metrics (and/or image_features) to run")
    parser.add_argument("--workloads", default="flickr8k,karpathy")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    only = {m for m in args.only.split(",") if m}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "seed"
        seed_cache(seed)
        for workload in args.workloads.split(","):
            metrics = (("image_features",) + FLICKR_METRICS) if workload == "flickr8k" else KARPATHY_METRICS
            for metric in metrics:
                if only and metric not in only:
                    continue
                cache = Path(tmp) / f"{workload}-{metric}"
                shutil.copytree(seed, cache)
                spec = {"workload": workload, "metric": metric, "limit": args.limit, "image_metrics": IMAGE_METRICS}
                for state in ("cold", "warm"):
                    t = time.time()
                    res = run_child(spec, cache)
                    res.update(workload=workload, metric=metric, state=state, process_s=time.time() - t,
                               rate=res["items"] / res["seconds"] if res["seconds"] else None)
                    if "pairs" in res and metric.startswith("critic"):
                        res["pairs_per_s"] = res["pairs"] / res["seconds"]
                    rows.append(res)
                    print(json.dumps(res), file=sys.stderr, flush=True)
                shutil.rmtree(cache, ignore_errors=True)
    print("| workload | metric | state | items | seconds | items/s | pairs/s | peak RSS MB (children) |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        pairs = f"{r['pairs_per_s']:.0f}" if "pairs_per_s" in r else "—"
        jvm = f" ({r['child_peak_rss_mb']:.0f})" if r["child_peak_rss_mb"] > 50 else ""
        print(f"| {r['workload']} | {r['metric']} | {r['state']} | {r['items']:,} {r['unit']} | {r['seconds']:.1f} | "
              f"{r['rate']:.0f} | {pairs} | {r['peak_rss_mb']:.0f}{jvm} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(), "rows": rows},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
