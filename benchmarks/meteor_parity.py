"""METEOR without Java: parity with the jar and speed, side by side in one run (issue 29).

Parity: every caption of the 20,000 Karpathy-test candidates (PTB-tokenised as capeval tokenises them),
of Flickr8k-Expert and of PASCAL-50S is scored by the jar (pycocoevalcap's ``meteor-1.5.jar -stdio -l en
-norm`` through ``capeval.meteor.jar``) and by ``capeval.meteor.scorer``; the script counts identical
statistics lines, captions within 1e-4, the corpus difference, and lists every caption that differs.

Speed: each backend in a fresh Python process (what a user pays: the jar's JVM start and paraphrase
load; the Python backend's language data from its cache, built beforehand) on the first 2,000 and on all
20,000 Karpathy candidates, then a one-caption call in a warm process, and the Python backend with
``--processes 2`` through ``capeval score``.

Usage: python benchmarks/meteor_parity.py [--skip-speed] [--json out.json]
(``../shared/data`` beside the checkout, or ``$CAPEVAL_DATA_DIR``; Java for the jar).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))

from capeval.paths import data_dir  # noqa: E402


def karpathy(n: int | None = None) -> tuple[list[str], list[list[str]]]:
    data = data_dir(required=True) / "coco_karpathy_test"
    rows = json.load(open(data / "karpathy_cand.json"))
    refmap: dict[str, list[str]] = {}
    for r in json.load(open(data / "karpathy_ref.json")):
        refmap.setdefault(r["image_id"], []).append(r["caption"])
    rows = rows[:n] if n else rows
    return [r["caption"] for r in rows], [refmap[r["image_id"]] for r in rows]


def tokenised(hyps: list[str], refs: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    from capeval.text import get_tokenizer

    tok = get_tokenizer("ptb")
    flat = tok.tokenize(hyps + [c for rs in refs for c in rs])
    out_h = [" ".join(t) for t in flat[: len(hyps)]]
    out_r, k = [], len(hyps)
    for rs in refs:
        out_r.append([" ".join(t) for t in flat[k : k + len(rs)]])
        k += len(rs)
    return out_h, out_r


def parity(name: str, hyps: list[str], refs: list[list[str]]) -> dict:
    from capeval.meteor.jar import MeteorScorer
    from capeval.meteor.scorer import PythonMeteorScorer

    with MeteorScorer(timeout=300) as jar:
        theirs = jar.statistics(hyps, refs)
        jar_corpus, jar_per = jar.evaluate(theirs)
    py = PythonMeteorScorer()
    ours = py.statistics(hyps, refs)
    corpus, per = py.evaluate(ours)
    differing = [i for i in range(len(hyps)) if ours[i] != theirs[i]]
    within = sum(abs(a - b) <= 1e-4 for a, b in zip(per, jar_per))
    row = {"benchmark": name, "captions": len(hyps), "identical_statistics": len(hyps) - len(differing),
           "within_1e-4": within, "corpus_python": corpus, "corpus_jar": jar_corpus,
           "corpus_abs_diff": abs(corpus - jar_corpus), "max_caption_abs_diff": max(abs(a - b) for a, b in zip(per, jar_per)),
           "differing": [{"index": i, "hypothesis": hyps[i], "python": ours[i], "jar": theirs[i]} for i in differing]}
    print(f"{name}: {row['identical_statistics']}/{len(hyps)} identical statistics lines, {within} within 1e-4, "
          f"corpus {corpus:.6f} vs jar {jar_corpus:.6f} (|diff| {row['corpus_abs_diff']:.1e})", flush=True)
    return row


def benchmark_pairs(name: str) -> tuple[list[str], list[list[str]]]:
    from capeval.judgments import load_benchmark

    bench = load_benchmark(name)
    return tokenised(bench.candidates(), bench.references())


_TIMED = """
import json, sys, time
t0 = time.perf_counter()
data = json.load(open(sys.argv[2]))
if sys.argv[1] == "java":
    from capeval.meteor.jar import MeteorScorer
    scorer = MeteorScorer(timeout=300)
else:
    from capeval.meteor.scorer import PythonMeteorScorer
    scorer = PythonMeteorScorer()
corpus, per = scorer.score(data["hyps"], data["refs"])
total = time.perf_counter() - t0
t1 = time.perf_counter(); scorer.score(["a dog runs on the grass"], [["a dog running on a lawn"]]); one = time.perf_counter() - t1
scorer.close()
print(json.dumps({"seconds": total, "one_caption_warm_s": one, "corpus": corpus}))
"""


def timed(backend: str, hyps: list[str], refs: list[list[str]]) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"hyps": hyps, "refs": refs}, f)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "modules")}
    try:
        out = subprocess.run([sys.executable, "-c", _TIMED, backend, f.name], capture_output=True, text=True, env=env,
                             timeout=3600, check=True)
    finally:
        os.unlink(f.name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed_processes(hyps: list[str], refs: list[list[str]], processes: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        pred = Path(tmp) / "pred.json"
        ref = Path(tmp) / "ref.json"
        json.dump([{"image_id": i, "caption": h} for i, h in enumerate(hyps)], open(pred, "w"))
        json.dump([{"image_id": i, "caption": r} for i, rs in enumerate(refs) for r in rs], open(ref, "w"))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "modules")}
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", str(pred), "--references", str(ref),
                        "--metrics", "meteor", "--processes", str(processes), "--json", str(Path(tmp) / "o.json")],
                       check=True, env=env, capture_output=True, timeout=3600)
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from capeval.meteor.paraphrase import default_table

    t = time.perf_counter()
    default_table()  # build (or load) the paraphrase cache first: a one-time cost, reported apart
    print(f"paraphrase table ready in {time.perf_counter() - t:.1f} s", flush=True)
    hyps, refs = tokenised(*karpathy())
    report: dict = {"parity": [parity("karpathy-test-20000", hyps, refs)]}
    for name in ("flickr8k-expert", "pascal50s"):
        report["parity"].append(parity(name, *benchmark_pairs(name)))
    if not args.skip_speed:
        report["speed"] = []
        for n in (2000, 20000):
            for backend in ("java", "python"):
                row = {"captions": n, "backend": backend, **timed(backend, hyps[:n], refs[:n])}
                row["captions_per_s"] = n / row["seconds"]
                report["speed"].append(row)
                print(f"{n} captions, {backend}: {row['seconds']:.2f} s ({row['captions_per_s']:.0f}/s), one caption warm "
                      f"{row['one_caption_warm_s'] * 1000:.1f} ms", flush=True)
        for processes in (1, 2):
            seconds = timed_processes(hyps, refs, processes)
            report["speed"].append({"captions": len(hyps), "backend": f"python via capeval score --processes {processes}",
                                    "seconds": seconds})
            print(f"capeval score --metrics meteor --processes {processes}, 20,000 captions: {seconds:.1f} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
