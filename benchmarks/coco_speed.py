"""Speed and parity of capeval's COCO metrics against pycocoevalcap 1.2, side by side.

On the 20,000 Karpathy-test candidates of SMURF's release (``$CAPEVAL_DATA_DIR/coco_karpathy_test``):

1. **BLEU-1..4 + ROUGE-L + CIDEr-D including tokenisation.** pycocoevalcap: its PTBTokenizer
   (references and candidates, as ``COCOEvalCap`` calls it) then Bleu(4), Rouge, Cider.
   capeval: ``capeval.score(..., metrics=["bleu", "rouge_l", "cider_d"], cleanup="none", tokenizer=T)``.
2. **METEOR 1.5** on the same token strings: pycocoevalcap's ``Meteor`` (its JVM start-up included) vs capeval's
   default Python backend (``--meteor-backend python``: language data loaded from its cache, included) or its jar
   driver (``--meteor-backend java``).

Each side runs in a fresh Python process, so times and peak memory (RSS of the Python process, and of
its largest child: the Java tokenizer or METEOR JVM) are its own. Scores are compared corpus and per
caption (max absolute difference).

Usage::

    PYTHONPATH=modules python benchmarks/coco_speed.py [--tokenizer ptb] [--meteor] [--meteor-jvms 1]
        [--meteor-repeat 2] [--limit N] [--json out/coco_speed.json]

``--tokenizer`` defaults to ``ptb`` (pure Python) and falls back to ``ptb-java`` when ``ptb`` is not
installed; the tokenizer used is printed.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST_KEYS = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d"]


# -- data ------------------------------------------------------------------------------------------------


def load_karpathy(limit: int | None) -> tuple[list[str], list[list[str]]]:
    from capeval.paths import data_dir

    folder = data_dir(required=True) / "coco_karpathy_test"
    candidates = json.loads((folder / "karpathy_cand.json").read_text(encoding="utf-8"))
    by_image: dict[str, list[str]] = {}
    for ref in json.loads((folder / "karpathy_ref.json").read_text(encoding="utf-8")):
        by_image.setdefault(ref["image_id"], []).append(ref["caption"])
    if limit:
        candidates = candidates[:limit]
    return [c["caption"] for c in candidates], [by_image[c["image_id"]] for c in candidates]


def token_strings(preds, refs) -> tuple[list[str], list[list[str]]]:
    """pycocoevalcap's token strings for METEOR (from the Java tokenizer, not timed)."""
    from capeval.text.ptb_java import JavaPTBTokenizer

    flat = list(preds) + [r for rs in refs for r in rs]
    tokens = [" ".join(t) for t in JavaPTBTokenizer().tokenize(flat)]
    out, i = [], len(preds)
    for rs in refs:
        out.append(tokens[i : i + len(rs)])
        i += len(rs)
    return tokens[: len(preds)], out


# -- workers (each in its own process) --------------------------------------------------------------------


def _memory() -> dict:
    own = resource.getrusage(resource.RUSAGE_SELF)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "peak_rss_mb": round(own.ru_maxrss / 1024, 1),
        "peak_child_rss_mb": round(child.ru_maxrss / 1024, 1),
        "cpu_s": round(own.ru_utime + own.ru_stime, 2),
        "child_cpu_s": round(child.ru_utime + child.ru_stime, 2),
    }


def worker_pycoco_fast(args) -> dict:
    import contextlib
    import io

    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    preds, refs = load_karpathy(args.limit)
    times = {}
    start = time.perf_counter()
    gts = {i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)}
    res = {i: [{"caption": p}] for i, p in enumerate(preds)}
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize(gts)
    res = tokenizer.tokenize(res)
    times["tokenize"] = time.perf_counter() - start
    scores, per = {}, {}
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        corpus, per_caption = Bleu(4).compute_score(gts, res)
    times["bleu"] = time.perf_counter() - t
    for k in range(4):
        scores[f"bleu_{k + 1}"] = corpus[k]
        per[f"bleu_{k + 1}"] = [float(x) for x in per_caption[k]]
    for key, scorer in (("rouge_l", Rouge()), ("cider_d", Cider())):
        t = time.perf_counter()
        corpus, per_caption = scorer.compute_score(gts, res)
        times[key] = time.perf_counter() - t
        scores[key] = float(corpus)
        per[key] = [float(x) for x in per_caption]
    times["total"] = time.perf_counter() - start
    return {"times": times, "scores": scores, "per_caption": per, **_memory()}


def worker_capeval_fast(args) -> dict:
    import capeval
    import capeval.coco.bleu  # noqa: F401 - imports are not timed (pycocoevalcap's are not either)
    import capeval.coco.cider  # noqa: F401
    import capeval.coco.rouge  # noqa: F401
    from capeval.text import get_tokenizer

    get_tokenizer(args.tokenizer)
    preds, refs = load_karpathy(args.limit)
    start = time.perf_counter()
    result = capeval.score(preds, refs, metrics=["bleu", "rouge_l", "cider_d"], cleanup="none", tokenizer=args.tokenizer, progress=False)
    total = time.perf_counter() - start
    memory = _memory()
    # breakdown (a second pass, same steps as capeval.score)
    from capeval.batch import CaptionBatch
    from capeval.registry import metric_class

    times = {"total": total}
    t = time.perf_counter()
    batch = CaptionBatch(preds, refs, cleanup="none", tokenizer=args.tokenizer, progress=False)
    batch.prediction_tokens, batch.reference_tokens  # noqa: B018 - computes the tokens
    times["tokenize"] = time.perf_counter() - t
    for name in ("bleu", "rouge_l", "cider_d"):
        t = time.perf_counter()
        metric_class(name)().compute(batch)
        times[name] = time.perf_counter() - t
    return {
        "times": times,
        "scores": {k: result[k] for k in FAST_KEYS},
        "per_caption": {k: result["per_caption"][k] for k in FAST_KEYS},
        "signature": result["signature"],
        **memory,
    }


def worker_pycoco_meteor(args) -> dict:
    from pycocoevalcap.meteor.meteor import Meteor

    hyps, refs = json.loads(Path(args.tokens).read_text(encoding="utf-8"))
    start = time.perf_counter()
    scorer = Meteor()
    corpus, per = scorer.compute_score({i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)})
    total = time.perf_counter() - start
    scorer.meteor_p.kill()
    scorer.meteor_p.wait()
    return {"times": {"total": total}, "scores": {"meteor": corpus}, "per_caption": {"meteor": list(per)}, **_memory()}


def worker_capeval_meteor(args) -> dict:
    from capeval.coco.meteor import MeteorScorer, PythonMeteorScorer

    hyps, refs = json.loads(Path(args.tokens).read_text(encoding="utf-8"))
    start = time.perf_counter()
    backend = PythonMeteorScorer() if args.meteor_backend == "python" else MeteorScorer(jvms=args.meteor_jvms)
    with backend as scorer:
        corpus, per = scorer.score(hyps, refs)
    total = time.perf_counter() - start
    return {"times": {"total": total}, "scores": {"meteor": corpus}, "per_caption": {"meteor": per}, **_memory()}


WORKERS = {
    "pycoco-fast": worker_pycoco_fast,
    "capeval-fast": worker_capeval_fast,
    "pycoco-meteor": worker_pycoco_meteor,
    "capeval-meteor": worker_capeval_meteor,
}


# -- driver ----------------------------------------------------------------------------------------------


def run_worker(name: str, args, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, __file__, "--worker", name, "--worker-out", str(out), "--tokenizer", args.tokenizer,
               "--meteor-jvms", str(args.meteor_jvms), "--meteor-backend", args.meteor_backend] + (["--limit", str(args.limit)] if args.limit else []) + extra
        subprocess.run(cmd, check=True)
        return json.loads(out.read_text(encoding="utf-8"))


def compare(ours: dict, theirs: dict, keys: list[str]) -> dict:
    diffs = {}
    for key in keys:
        per = max(abs(a - b) for a, b in zip(ours["per_caption"][key], theirs["per_caption"][key]))
        diffs[key] = {"corpus": abs(ours["scores"][key] - theirs["scores"][key]), "per_caption_max": per}
    return diffs


def choose_tokenizer(requested: str) -> str:
    if requested == "ptb" and importlib.util.find_spec("capeval.text.ptb") is None:
        print("tokenizer 'ptb' is not installed: falling back to 'ptb-java'", file=sys.stderr)
        return "ptb-java"
    return requested


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", default="ptb", choices=["ptb", "ptb-java"])
    parser.add_argument("--meteor", action="store_true", help="also compare METEOR (starts JVMs; slower)")
    parser.add_argument("--meteor-backend", default="python", choices=["python", "java"],
                        help="capeval's METEOR backend (python: no JVM; java: the jar through capeval's driver)")
    parser.add_argument("--meteor-jvms", type=int, default=1)
    parser.add_argument("--meteor-repeat", type=int, default=2, help="runs per side, interleaved ABBA")
    parser.add_argument("--limit", type=int, default=None, help="first N candidates only (development)")
    parser.add_argument("--json", type=Path, default=None, help="write all measurements here")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        result = WORKERS[args.worker](args)
        args.worker_out.write_text(json.dumps(result), encoding="utf-8")
        return 0

    args.tokenizer = choose_tokenizer(args.tokenizer)
    preds, _ = load_karpathy(args.limit)
    report: dict = {
        "n_candidates": len(preds),
        "tokenizer": args.tokenizer,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_before": os.getloadavg(),
    }
    print(f"{len(preds)} candidates; capeval tokenizer: {args.tokenizer}", flush=True)
    theirs = run_worker("pycoco-fast", args, [])
    ours = run_worker("capeval-fast", args, [])
    report["fast"] = {"pycocoevalcap": _strip(theirs), "capeval": _strip(ours), "diff": compare(ours, theirs, FAST_KEYS)}
    report["fast"]["speedup"] = theirs["times"]["total"] / ours["times"]["total"]
    report["fast"]["signature"] = ours["signature"]
    _print_fast(report["fast"])

    if args.meteor:
        raw_preds, raw_refs = load_karpathy(args.limit)
        runs: dict[str, list[dict]] = {"pycoco-meteor": [], "capeval-meteor": []}
        with tempfile.TemporaryDirectory() as tmp:
            tokens = Path(tmp) / "tokens.json"
            tokens.write_text(json.dumps(token_strings(raw_preds, raw_refs)), encoding="utf-8")
            # ABBA order, so that a drifting machine load does not favour either side
            order = []
            for r in range(args.meteor_repeat):
                order += ["pycoco-meteor", "capeval-meteor"] if r % 2 == 0 else ["capeval-meteor", "pycoco-meteor"]
            for name in order:
                runs[name].append(run_worker(name, args, ["--tokens", str(tokens)]))
                print(f"  {name}: {runs[name][-1]['times']['total']:.2f} s", flush=True)
        theirs_m, ours_m = runs["pycoco-meteor"][0], runs["capeval-meteor"][0]
        for a_run, b_run in zip(runs["pycoco-meteor"], runs["capeval-meteor"]):
            assert a_run["per_caption"] == runs["pycoco-meteor"][0]["per_caption"]
            assert b_run["per_caption"] == runs["capeval-meteor"][0]["per_caption"]
        median = {name: statistics.median(r["times"]["total"] for r in rs) for name, rs in runs.items()}
        report["meteor"] = {
            "pycocoevalcap": [_strip(r) for r in runs["pycoco-meteor"]],
            "capeval": [_strip(r) for r in runs["capeval-meteor"]],
            "diff": compare(ours_m, theirs_m, ["meteor"]),
            "median_s": median,
            "speedup_of_medians": median["pycoco-meteor"] / median["capeval-meteor"],
            "jvms": args.meteor_jvms, "backend": args.meteor_backend,
        }
        _print_meteor(report["meteor"])
    report["load_average_after"] = os.getloadavg()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _strip(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "per_caption"}


def _print_fast(fast: dict) -> None:
    theirs, ours = fast["pycocoevalcap"], fast["capeval"]
    print("\nBLEU-1..4 + ROUGE-L + CIDEr-D, tokenisation included (seconds)")
    print(f"{'step':<10} {'pycocoevalcap':>14} {'capeval':>10}")
    for step in ("tokenize", "bleu", "rouge_l", "cider_d", "total"):
        print(f"{step:<10} {theirs['times'][step]:>14.2f} {ours['times'][step]:>10.2f}")
    print(f"speed-up (total): {fast['speedup']:.1f}x")
    print(f"peak RSS MB (python / largest child): pycocoevalcap {theirs['peak_rss_mb']} / {theirs['peak_child_rss_mb']}, "
          f"capeval {ours['peak_rss_mb']} / {ours['peak_child_rss_mb']}")
    print(f"{'key':<8} {'pycocoevalcap':>20} {'capeval':>20} {'max |diff| per caption':>24}")
    for key, d in fast["diff"].items():
        print(f"{key:<8} {theirs['scores'][key]:>20.15f} {ours['scores'][key]:>20.15f} {d['per_caption_max']:>24.3g}")
    print(f"signature: {fast['signature']}")


def _print_meteor(m: dict) -> None:
    where = "Python backend, no JVM" if m.get("backend", "java") == "python" else f"jar backend, {m['jvms']} JVM(s)"
    print(f"\nMETEOR 1.5 (start-up included; pycocoevalcap's JVM, capeval's {where}); runs in ABBA order")
    for side in ("pycocoevalcap", "capeval"):
        runs = m[side]
        walls = ", ".join(f"{r['times']['total']:.2f}" for r in runs)
        cpus = ", ".join(f"{r['child_cpu_s']:.1f}" for r in runs)
        peak_jvm = max(r["peak_child_rss_mb"] for r in runs)
        print(f"{side:<14} wall s: {walls}; JVM CPU s: {cpus}; peak RSS MB python/JVM: {runs[0]['peak_rss_mb']}/{peak_jvm}")
    print(f"median wall s: pycocoevalcap {m['median_s']['pycoco-meteor']:.2f}, capeval {m['median_s']['capeval-meteor']:.2f} "
          f"(speed-up {m['speedup_of_medians']:.2f}x)")
    print(f"score: pycocoevalcap {m['pycocoevalcap'][0]['scores']['meteor']!r}, capeval {m['capeval'][0]['scores']['meteor']!r}, "
          f"max |diff| per caption {m['diff']['meteor']['per_caption_max']:.3g}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "modules"))
    sys.exit(main())
