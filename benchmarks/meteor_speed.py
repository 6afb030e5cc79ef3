"""METEOR speed: capeval's Python backend against pycocoevalcap's jar on 2,000 and 20,000 captions, in one run.

The Karpathy-test candidates (``$CAPEVAL_DATA_DIR/coco_karpathy_test``, PTB-tokenised as capeval tokenises them; not
timed) with their references. Each side scores the first N pairs in a fresh Python process; the time runs from
before the scorer's import to the statistics lines (imports, the jar's JVM start and paraphrase load or the Python
backend's language data from its cache, every pair), and each side's statistics lines are compared line by line
with the other's (they must be identical). Rounds alternate the order (jar first, then Python first).

After the 20,000-caption call each Python process then scores one new caption at a time, 20 times: the first call
and the slowest are what a user meets right after a large call. The same is measured through ``capeval.score``
(which pauses Python's garbage collector during a call): a 20,000-caption call, then 20 one-caption calls.

Usage: python benchmarks/meteor_speed.py [--rounds 2] [--processes N] [--modules DIR] [--json out.json]
(``--processes``: the Python scorer's ``processes``, default: its own choice; ``--modules``: time another checkout's
capeval, e.g. ``git archive <commit> modules | tar -x -C /tmp/before`` then ``--modules /tmp/before/modules``; Java
for the jar).
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
sys.path.insert(0, str(ROOT / "modules"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from meteor_parity import karpathy, tokenised  # noqa: E402

_WORKER = r"""
import json, sys, time
backend, data_file, out_file, processes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
data = json.load(open(data_file))
t0 = time.perf_counter()
if backend == "java":
    from capeval.meteor.jar import MeteorScorer
    scorer = MeteorScorer(timeout=300)
else:
    from capeval.meteor.scorer import PythonMeteorScorer
    scorer = PythonMeteorScorer() if processes == "auto" else PythonMeteorScorer(processes=int(processes))
lines = scorer.statistics(data["hyps"], data["refs"])
seconds = time.perf_counter() - t0
one = []
for k in range(20):
    t = time.perf_counter()
    scorer.statistics([f"a dog number {k} runs on the grass"], [["a dog running on a lawn", "a brown dog"]])
    one.append(time.perf_counter() - t)
scorer.close()
json.dump({"seconds": seconds, "lines": lines, "one_caption_s": one}, open(out_file, "w"))
"""

_API_WORKER = r"""
import json, sys, time
data = json.load(open(sys.argv[1]))
import capeval
t0 = time.perf_counter()
capeval.score(data["hyps"], data["refs"], metrics="meteor", progress=False)
seconds = time.perf_counter() - t0
one = []
for k in range(20):
    t = time.perf_counter()
    capeval.score([f"a dog number {k} runs on the grass"], [["a dog running on a lawn", "a brown dog"]], metrics="meteor",
                  progress=False)
    one.append(time.perf_counter() - t)
print(json.dumps({"seconds": seconds, "one_caption_s": one}))
"""


#: The capeval code the worker processes import (``--modules``: another checkout's, for a before / after comparison).
MODULES = [ROOT / "modules"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(MODULES[0])}


def timed(backend: str, data_file: Path, processes: str) -> dict:
    """One fresh process scoring the pairs in ``data_file``: seconds (from before the import to the lines), the
    lines, the one-caption calls after it (seconds each) and the process's whole wall time."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out_file = Path(f.name)
    try:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", _WORKER, backend, str(data_file), str(out_file), processes], check=True,
                       env=_env(), timeout=3600)
        wall = time.perf_counter() - start
        row = json.loads(out_file.read_text())
    finally:
        out_file.unlink(missing_ok=True)
    row["process_wall_s"] = wall
    return row


def through_api(data_file: Path) -> dict:
    """``capeval.score`` of the pairs (tokenisation included), then 20 one-caption calls, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _API_WORKER, str(data_file)], check=True, env=_env(),
                         capture_output=True, text=True, timeout=3600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _one_caption(row: dict) -> dict:
    one = row.pop("one_caption_s")
    return {"first_ms": one[0] * 1000, "max_ms": max(one) * 1000, "median_ms": statistics.median(one) * 1000}


def measure(hyps: list[str], refs: list[list[str]], sizes: list[int], rounds: int, processes: str,
            tmp: Path) -> list[dict]:
    """Every (round, size, backend) row, the two sides' lines compared per size and round."""
    rows = []
    for n in sizes:
        data_file = tmp / f"pairs-{n}.json"
        data_file.write_text(json.dumps({"hyps": hyps[:n], "refs": refs[:n]}))
        for r in range(rounds):
            order = ("java", "python") if r % 2 == 0 else ("python", "java")
            got = {backend: timed(backend, data_file, processes) for backend in order}
            identical = sum(a == b for a, b in zip(got["java"]["lines"], got["python"]["lines"]))
            for backend in order:
                row = got[backend]
                del row["lines"]
                row.update(captions=n, backend=backend, round=r + 1, identical_lines=identical,
                           **({"one_caption_after": _one_caption(row)} if backend == "python" else {}))
                if backend == "java":
                    row.pop("one_caption_s")
                rows.append(row)
                print(f"{n} captions, {backend} (round {r + 1}): {row['seconds']:.2f} s, process {row['process_wall_s']:.2f} s; "
                      f"{identical}/{n} identical lines", flush=True)
    return rows


def summary(rows: list[dict]) -> list[dict]:
    """Per size: the median seconds of each side and their ratio."""
    out = []
    for n in sorted({r["captions"] for r in rows}):
        med = {b: statistics.median(r["seconds"] for r in rows if r["captions"] == n and r["backend"] == b)
               for b in ("java", "python")}
        out.append({"captions": n, "jar_s": med["java"], "python_s": med["python"], "ratio": med["java"] / med["python"],
                    "all_identical": all(r["identical_lines"] == n for r in rows if r["captions"] == n)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--processes", default="auto", help="the Python scorer's processes (default: its choice)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--modules", type=Path, default=MODULES[0],
                        help="the capeval code to time (default: this checkout's modules/)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    MODULES[0] = args.modules.resolve()
    from capeval.meteor.paraphrase import default_table

    default_table()  # the paraphrase cache built beforehand (a one-time cost, not measured here)
    hyps, refs = tokenised(*karpathy())
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(hyps, refs, args.sizes, args.rounds, args.processes, Path(tmp))
        api_file = Path(tmp) / "api.json"
        api_file.write_text(json.dumps({"hyps": hyps[: max(args.sizes)], "refs": refs[: max(args.sizes)]}))
        api = through_api(api_file)
    api = {"captions": max(args.sizes), "seconds": api["seconds"], **_one_caption(api)}
    print(f"capeval.score, {api['captions']} captions: {api['seconds']:.2f} s; then one caption: first "
          f"{api['first_ms']:.1f} ms, slowest {api['max_ms']:.1f} ms, median {api['median_ms']:.1f} ms")
    for row in rows:
        if row["backend"] == "python" and row["captions"] == max(args.sizes):
            one = row["one_caption_after"]
            print(f"PythonMeteorScorer after {row['captions']} (round {row['round']}): one caption first "
                  f"{one['first_ms']:.1f} ms, slowest {one['max_ms']:.1f} ms, median {one['median_ms']:.1f} ms")
    table = summary(rows)
    for row in table:
        print(f"{row['captions']} captions: jar {row['jar_s']:.2f} s, Python {row['python_s']:.2f} s, "
              f"{row['ratio']:.2f}x; identical lines: {row['all_identical']}")
    report = {"date": time.strftime("%Y-%m-%d"), "commit": _commit(), "modules": str(MODULES[0]), "cpus": os.cpu_count(),
              "processes": args.processes, "rows": rows, "summary": table, "capeval_score": api}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
