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
one-time builds copied in beforehand; ``references``: a fresh cache into which another process first scored every
distinct reference against itself with ``sentence_cosine`` (untimed), so the references' sentence vectors are cached and
the candidates' are not: an evaluation repeated after a training epoch (the sentence-embedding metrics only);
``warm``: the same command again on the cache the cold run left. The timed region is the
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
#: The metrics that read the sentence-vector cache (the ``references`` state).
SENTENCE_METRICS = ("sentence_cosine", "critic_plus")

CHILD = r'''
import contextlib, json, os, resource, sys, time
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
    folder = root / "flickr8k" / "images-224"  # absent in a captions-only copy (benchmarks/device_bundle.py)
    names = sorted(n for n in groups if not folder.is_dir() or (folder / n).is_file())[: spec["limit"] or None]
    preds, refs, images = [], [], []
    for name in names:
        caps = groups[name]
        for i, cap in enumerate(caps):
            preds.append(cap)
            refs.append(caps[:i] + caps[i + 1:])
            images.append(str(folder / name))
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
metric, device = spec["metric"], spec["device"]
if spec.get("prime"):  # cache the references' sentence vectors (as the metric reads them: cleaned), nothing else
    texts = list(dict.fromkeys(r for rs in refs for r in rs))
    capeval.score(texts, [[t] for t in texts], metrics=["sentence_cosine"], progress=False,
                  cleanup="thumb" if metric == "sentence_cosine" else "none",  # critic_plus reads the raw text
                  **{k: v for k, v in spec["options"].items() if k.startswith("sentence_cosine")})
    print("RESULT " + json.dumps({"primed": len(texts)}))
    raise SystemExit(0)
info = {}
if device or spec["autocast"]:
    import torch
    info["torch"] = torch.__version__
    if torch.cuda.is_available() and (device or "cuda").startswith("cuda"):
        info["card"] = torch.cuda.get_device_name(0)


def precision():
    # --autocast: every forward pass of the timed call in torch.autocast (float16 / bfloat16) on the device's type.
    if not spec["autocast"]:
        return contextlib.nullcontext()
    import torch
    kind = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu")).type
    return torch.autocast(kind, dtype=getattr(torch, spec["autocast"]))


def synchronize():
    if device and device.startswith("cuda"):
        import torch
        torch.cuda.synchronize()


if spec.get("processes"):  # `capeval score --processes N` on the same items, timed end to end (a subprocess)
    import subprocess, tempfile
    from pathlib import Path
    if images is not None and metric in spec["image_metrics"] or metric == "image_features":
        raise SystemExit("a processes variant runs the text-only metrics")
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: Path(tmp) / f"{name}.json" for name in ("predictions", "references", "result")}
        files["predictions"].write_text(json.dumps([{"image_id": i, "caption": c} for i, c in enumerate(preds)]))
        files["references"].write_text(json.dumps({"annotations": [{"image_id": i, "caption": c}
                                                                    for i, rs in enumerate(refs) for c in rs]}))
        command = [sys.executable, "-m", "capeval", "score", "--metrics", metric, "--predictions",
                   str(files["predictions"]), "--references", str(files["references"]), "--processes",
                   str(spec["processes"]), "--json", str(files["result"])]
        for key, value in spec["options"].items():
            command += [f"--{key.replace('_', '-')}", str(value)]
        t = time.time()
        subprocess.run(command, check=True, capture_output=True)
        elapsed = time.time() - t
        result = json.loads(files["result"].read_text())
    values = None
    out = {"items": len(preds), "unit": "captions", "value": result[metric], "pairs": sum(len(r) for r in refs),
           "processes": spec["processes"]}
elif metric == "image_features":
    from capeval.models.image_encoder import load_image_encoder
    unique = list(dict.fromkeys(images))
    t = time.time()
    encoder = load_image_encoder(device=device)
    loaded = time.time()
    with precision():
        values = encoder.encode(unique, progress=False, batch_size=spec["image_batch_size"])
    synchronize()
    elapsed = time.time() - t
    out = {"items": len(unique), "unit": "images", "load_s": loaded - t}
    values = values.numpy()
    if spec["again"]:  # every image read, decoded and encoded again (no cache), the model already loaded
        uncached = load_image_encoder(device=device, cache=False)
        t = time.time()
        with precision():
            uncached.encode(unique, progress=False, batch_size=spec["image_batch_size"])
        synchronize()
        out["again_s"] = time.time() - t
else:
    kwargs = dict(spec["options"])
    if metric in spec["image_metrics"]:
        kwargs["images"] = images
    if device:
        kwargs.update({key: device for key in spec["device_options"].get(metric, ())})
    t = time.time()
    with precision():
        result = capeval.score(preds, refs, metrics=[metric], progress=False, **kwargs)
    synchronize()
    elapsed = time.time() - t
    values = result["per_caption"][metric]
    out = {"items": len(preds), "unit": "captions", "value": result[metric], "pairs": sum(len(r) for r in refs)}
    if spec["again"]:  # the same call in the same process: models loaded, caches as the first call left them
        t = time.time()
        with precision():
            capeval.score(preds, refs, metrics=[metric], progress=False, **kwargs)
        synchronize()
        out["again_s"] = time.time() - t
if spec["dump"] and values is not None:
    import numpy as np
    np.save(spec["dump"], np.asarray(values, dtype=np.float32))
self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
out.update(info, seconds=elapsed, startup_s=ready - started, peak_rss_mb=self_rss, child_peak_rss_mb=child_rss)
print("RESULT " + json.dumps(out))
'''


#: The score options that put each metric on a device (``--device``); the critics' image encoder follows the critic.
DEVICE_OPTIONS = {"critic": ("critic_device",), "critic_img": ("critic_device",), "critic_ref": ("critic_device",),
                  "critic_plus": ("critic_device",), "sentence_cosine": ("sentence_cosine_device",)}


def run_child(spec: dict, cache: Path) -> dict:
    env = {**os.environ, "CAPEVAL_CACHE_DIR": str(cache), "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")) if p),
        "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], env=env, capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{spec}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def agreement(reference: Path, other: Path) -> dict:
    """How far a variant's output (per-caption scores, or image features) lies from the first variant's: the
    largest absolute difference, the relative error ``‖Δ‖ / ‖ref‖`` and, for scores, Kendall's τ-b between the two."""
    import numpy as np

    ref, got = np.load(reference).astype(np.float64), np.load(other).astype(np.float64)
    if ref.shape != got.shape or not np.isfinite(got).all():
        return {"max_abs_diff": float("nan"), "rel_err": float("nan")}
    out = {"max_abs_diff": float(np.abs(got - ref).max()),
           "rel_err": float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))}
    if ref.ndim == 1:
        from scipy.stats import kendalltau

        out["kendall_tau"] = float(kendalltau(ref, got).statistic)
    return out


def seed_cache(seed: Path) -> None:
    """Build the one-time tables into ``seed``: COCO val2014's document frequencies (LCEval's CIDEr-D feature) and
    METEOR's paraphrase cache (LCEval's METEOR feature); both are built once per machine, not per run."""
    env = {**os.environ, "CAPEVAL_CACHE_DIR": str(seed), "PYTHONPATH": str(ROOT / "modules")}
    code = ("import capeval; capeval.score(['a dog'], [['a dog runs']], metrics=['cider_d', 'meteor'], "
            "cider_df='coco-val2014')")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)


def parse_variants(args) -> list[dict]:
    """The settings each (workload, metric) is run with: ``--variants`` (a JSON list, or a file holding one) of
    ``{"name", "device", "autocast", "options", "image_batch_size", "processes"}`` objects, else one variant from
    the flags. ``processes``: run ``capeval score --processes N`` on the same items instead (text-only metrics; timed
    end to end, interpreter and imports of every process included)."""
    if args.variants:
        text = args.variants if args.variants.lstrip().startswith("[") else Path(args.variants).read_text()
        variants = json.loads(text)
    else:
        variants = [{"name": "default", "device": args.device, "autocast": args.autocast,
                     "options": json.loads(args.options), "image_batch_size": args.image_batch_size}]
    names = set()
    for v in variants:
        unknown = set(v) - {"name", "device", "autocast", "options", "image_batch_size", "processes"}
        if unknown or "name" not in v or v["name"] in names:
            raise SystemExit(f"bad variant {v}: needs a unique name; unknown keys {sorted(unknown)}")
        if v.get("autocast") not in (None, "float16", "bfloat16"):
            raise SystemExit(f"variant {v['name']}: autocast must be float16 or bfloat16")
        names.add(v["name"])
    return variants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="first N images (flickr8k) / candidates (karpathy)")
    parser.add_argument("--only", default="", help="comma-separated metrics (and/or image_features) to run")
    parser.add_argument("--workloads", default="flickr8k,karpathy")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when available)")
    parser.add_argument("--autocast", default=None, choices=("float16", "bfloat16"),
                        help="run the forward passes in torch.autocast with this dtype")
    parser.add_argument("--options", default="{}", help="extra capeval.score options as JSON (batch sizes ...)")
    parser.add_argument("--image-batch-size", type=int, default=None, help="image_features: images per batch")
    parser.add_argument("--variants", default="", help="JSON list (or file) of variants; the first is the reference "
                        "the others' outputs are compared with")
    parser.add_argument("--states", default="cold,warm", help="comma-separated: cold, references, warm")
    parser.add_argument("--again", action="store_true", help="repeat each call once in the same process (models "
                        "loaded): the steady-state rate without model loading")
    parser.add_argument("--keep-going", action="store_true", help="a failing run becomes a row with its error; the "
                        "others still run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    only = {m for m in args.only.split(",") if m}
    variants = parse_variants(args)
    states = [s for s in args.states.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / "seed"
        seed.mkdir()
        if any(m.startswith("lceval") for m in (only or FLICKR_METRICS)):  # only LCEval reads those tables
            seed_cache(seed)
        for workload in args.workloads.split(","):
            metrics = (("image_features",) + FLICKR_METRICS) if workload == "flickr8k" else KARPATHY_METRICS
            for metric in metrics:
                if only and metric not in only:
                    continue
                for variant in variants:
                    cache = Path(tmp) / f"{workload}-{metric}-{variant['name']}"
                    shutil.copytree(seed, cache)
                    for state in states:
                        if state == "references" and metric not in SENTENCE_METRICS:
                            continue
                        dump = Path(tmp) / f"{workload}-{metric}-{variant['name']}-{state}.npy"
                        spec = {"workload": workload, "metric": metric, "limit": args.limit,
                                "image_metrics": IMAGE_METRICS, "device": variant.get("device"),
                                "autocast": variant.get("autocast"), "options": variant.get("options") or {},
                                "image_batch_size": variant.get("image_batch_size"), "device_options": DEVICE_OPTIONS,
                                "again": args.again, "dump": str(dump), "processes": variant.get("processes")}
                        state_cache = cache
                        if state == "references":  # a fresh cache holding only the references' vectors
                            state_cache = Path(tmp) / f"{workload}-{metric}-{variant['name']}-references"
                            shutil.copytree(seed, state_cache)
                            run_child({**spec, "prime": True}, state_cache)
                        t = time.time()
                        try:
                            res = run_child(spec, state_cache)
                        except RuntimeError as err:
                            if not args.keep_going:
                                raise
                            rows.append({"workload": workload, "metric": metric, "variant": variant["name"],
                                         "state": state, "error": str(err)[-1500:]})
                            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                            continue
                        res.update(workload=workload, metric=metric, variant=variant["name"], state=state,
                                   process_s=time.time() - t,
                                   rate=res["items"] / res["seconds"] if res["seconds"] else None)
                        if res.get("again_s"):
                            res["again_rate"] = res["items"] / res["again_s"]
                        if "pairs" in res and metric.startswith("critic"):
                            res["pairs_per_s"] = res["pairs"] / res["seconds"]
                        reference = Path(tmp) / f"{workload}-{metric}-{variants[0]['name']}-{state}.npy"
                        if variant is not variants[0] and reference.is_file() and dump.is_file():
                            res["vs_" + variants[0]["name"]] = agreement(reference, dump)
                        rows.append(res)
                        print(json.dumps(res), file=sys.stderr, flush=True)
                        if state_cache is not cache:
                            shutil.rmtree(state_cache, ignore_errors=True)
                    shutil.rmtree(cache, ignore_errors=True)
    print("| workload | metric | variant | state | items | seconds | items/s | again items/s | pairs/s | "
          "peak RSS MB (children) | vs first variant |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['workload']} | {r['metric']} | {r['variant']} | {r['state']} | failed: "
                  f"{r['error'].strip().splitlines()[-1][:120]} |||||||")
            continue
        pairs = f"{r['pairs_per_s']:.0f}" if "pairs_per_s" in r else "—"
        again = f"{r['again_rate']:.0f}" if "again_rate" in r else "—"
        jvm = f" ({r['child_peak_rss_mb']:.0f})" if r["child_peak_rss_mb"] > 50 else ""
        vs = next((v for k, v in r.items() if k.startswith("vs_")), None)
        vs = (", ".join(f"{k} {v:.2g}" if k != "kendall_tau" else f"τ {v:.5f}" for k, v in vs.items())
              if vs else "—")
        print(f"| {r['workload']} | {r['metric']} | {r['variant']} | {r['state']} | {r['items']:,} {r['unit']} | "
              f"{r['seconds']:.1f} | {r['rate']:.0f} | {again} | {pairs} | {r['peak_rss_mb']:.0f}{jvm} | {vs} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": os.uname().nodename, "cpus": os.cpu_count(),
                                         "variants": variants, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
