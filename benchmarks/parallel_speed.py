"""Speed-up of multi-process scoring (``capeval score --processes N``) for the heavy parts: SPICE, METEOR.

Usage (from the repository root):
    PYTHONPATH=modules python benchmarks/parallel_speed.py --n 1000 --processes 1 2 --json /tmp/parallel.json

Data: the first ``--n`` Flickr8k images (``$CAPEVAL_DATA_DIR/flickr8k/Flickr8k.token.txt``); the prediction is
each image's caption #0, its references captions #1-#4. Per metric (``spice`` with its parse cache off, so
every run parses; ``meteor``) and per process count, one fresh run: 1 process = ``python``, N processes =
``python -m torch.distributed.run --nproc_per_node N`` (what ``--processes N`` / ``accelerate launch --multi_gpu``
start on a machine without GPUs). Timed in the main process between a barrier after start-up (imports, data,
model) and the result: ``score_s``; ``wall_s`` is the whole command (interpreter start, imports, METEOR's data).

The machine is shared, so each run also records ``cpu_share``: CPU seconds of the run's processes (and their
children) per wall second (2.0 = two cores busy with this run; less: other jobs took part of them), and the load
average before it. The script checks that every N-process result equals the 1-process one.
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

_WORKER = """
import json, os, sys, time
from capeval.paths import data_dir
path = data_dir(required=True) / "flickr8k" / "Flickr8k.token.txt"
captions = {{}}
for line in path.read_text(encoding="utf-8").splitlines():
    key, _, text = line.partition("\\t")
    image, _, k = key.partition("#")
    captions.setdefault(image, {{}})[int(k)] = text
images = sorted(captions)[:{n}]
preds = [captions[i][0] for i in images]
refs = [[captions[i][k] for k in sorted(captions[i]) if k] for i in images]
options = dict(metrics={metric!r}, spice_cache=False) if {metric!r} == "spice" else dict(metrics={metric!r})
from capeval.parallel import in_distributed_launch, process_state, score
state = process_state() if in_distributed_launch() else None
if {metric!r} == "spice":
    from capeval.spice.parser import load_model  # load spaCy before the clock starts (loaded once per process)
    load_model()
if state is not None:
    state.wait_for_everyone()
t0 = time.perf_counter()
if state is None:
    import capeval
    result = capeval.score(preds, refs, **options)
else:
    result = score(preds, refs, state=state, **options)
elapsed = time.perf_counter() - t0
if result is not None:
    result["score_s"] = elapsed
    json.dump(result, open({out!r}, "w"))
"""


def run_one(metric: str, n: int, processes: int, out: Path) -> dict:
    """One fresh run; its timings, CPU share and result."""
    code = _WORKER.format(n=n, metric=metric, out=str(out))
    script = out.with_suffix(".py")
    script.write_text(code)
    command = [sys.executable, str(script)]
    if processes > 1:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes), str(script)]
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")])}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{metric} with {processes} process(es) failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = json.loads(out.read_text())
    return {"metric": metric, "processes": processes, "n": n, "score_s": round(result.pop("score_s"), 2),
            "wall_s": round(wall, 2), "cpu_share": round(cpu / wall, 2), "loadavg_1min_before": load,
            "result": result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="Flickr8k images (items) to score")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--metrics", nargs="+", default=["spice", "meteor"])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for metric in args.metrics:
            for p in args.processes:
                run = run_one(metric, args.n, p, Path(tmp) / f"{metric}-{p}.json")
                runs.append(run)
                print(f"{metric:7s} {p} process(es): score {run['score_s']:7.2f} s, command {run['wall_s']:7.2f} s, "
                      f"cpu_share {run['cpu_share']:.2f}, load {run['loadavg_1min_before']:.2f}", flush=True)
    for metric in args.metrics:
        mine = [r for r in runs if r["metric"] == metric]
        base = mine[0]
        for r in mine[1:]:
            identical = r["result"] == base["result"]
            print(f"{metric}: {r['processes']} vs {base['processes']} process(es): speed-up "
                  f"{base['score_s'] / r['score_s']:.2f}x (scoring), {base['wall_s'] / r['wall_s']:.2f}x (command); "
                  f"identical result: {identical}")
            if not identical:
                raise SystemExit(f"{metric}: the {r['processes']}-process result differs from one process")
    if args.json:
        for r in runs:
            r["result"] = {k: v for k, v in r["result"].items() if k != "per_caption"}
        args.json.write_text(json.dumps({"runs": runs, "cpus": os.cpu_count()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
