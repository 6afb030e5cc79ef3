"""Issue 39's benchmark: ``capeval score-dataset`` on COCO train2014's 414,113 captions, each scored against the other
captions of its image, in 2 processes on this 2-core machine: wall time, rows/s and the peak resident memory of the
whole process tree and of each of its processes (sampled every 0.2 s with psutil), optionally killed with SIGKILL and
resumed.

    python benchmarks/score_dataset_coco.py prepare --out /tmp/coco-train2014.parquet [--limit N]
    python benchmarks/score_dataset_coco.py run --data /tmp/coco-train2014.parquet --out /tmp/sd-text \
        --metrics bleu,rouge_l,cider_d,meteor [--processes 2] [--chunk-size 2000] [--kill-after 120] \
        [--compare /tmp/sd-text-uninterrupted] [--json docs/benchmarks/score_dataset/text.json]

``prepare``: one row per caption of :func:`capeval.corpora.captions.coco_train_captions` (images in id order, captions in
their order): ``id`` = ``<image id>#<k>``, ``prediction`` = caption k, ``references`` = the image's other captions.
``run``: the command line above as a subprocess (``--kill-after S``: SIGKILL to the whole process group after S
seconds, then the same command again to the end; the times of both are reported and summed); ``--compare DIR``:
whether ``result.json`` is byte-identical to DIR's and the shards hold the same rows.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def prepare(args) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capeval.corpora.captions import coco_train_captions

    table = coco_train_captions()
    ids, preds, refs = [], [], []
    for image in sorted(table):
        caps = table[image]
        if len(caps) < 2:
            continue
        for k, cap in enumerate(caps):
            ids.append(f"{image}#{k}")
            preds.append(cap)
            refs.append([c for j, c in enumerate(caps) if j != k])
    if args.limit:
        ids, preds, refs = ids[: args.limit], preds[: args.limit], refs[: args.limit]
    pq.write_table(pa.table({"id": ids, "prediction": preds, "references": refs}), args.out, row_group_size=10_000)
    print(f"{len(ids):,} rows -> {args.out}", file=sys.stderr)
    return 0


def _tree_rss(proc, peaks: dict[str, int] | None = None) -> int:
    """Resident bytes of ``proc`` and all its descendants now; ``peaks`` (role -> bytes) keeps each member's largest
    sample under ``main`` (the command's own process) or ``worker <pid>``."""
    import psutil

    try:
        parent = psutil.Process(proc.pid)
        members = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for member in members:
        try:
            rss = member.memory_info().rss
        except psutil.NoSuchProcess:
            continue
        total += rss
        if peaks is not None:
            role = "main" if member.pid == proc.pid else f"worker {member.pid}"
            peaks[role] = max(peaks.get(role, 0), rss)
    return total


def _run_once(command: list[str], kill_after: float | None) -> dict:
    start = time.perf_counter()
    proc = subprocess.Popen(command, start_new_session=True)
    peak = 0
    peaks: dict[str, int] = {}
    killed = False
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc, peaks))
        if kill_after is not None and time.perf_counter() - start >= kill_after:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait()
            break
        time.sleep(0.2)
    return {"seconds": round(time.perf_counter() - start, 1), "peak_rss_gb": round(peak / 2**30, 3),
            "exit_code": proc.returncode, "killed": killed,
            "peak_rss_gb_by_process": {role: round(b / 2**30, 3) for role, b in peaks.items()}}


def run(args) -> int:
    command = [sys.executable, "-m", "capeval", "score-dataset", args.data, "--out", args.out, "--metrics", args.metrics,
               "--processes", str(args.processes), "--chunk-size", str(args.chunk_size), "--no-language-check",
               *args.extra]
    attempts = []
    if args.kill_after:
        attempts.append(_run_once(command, args.kill_after))
    attempts.append(_run_once(command, None))
    if attempts[-1]["exit_code"] != 0:
        print(f"failed: {attempts}", file=sys.stderr)
        return 1
    result = json.loads((Path(args.out) / "result.json").read_text(encoding="utf-8"))
    seconds = sum(a["seconds"] for a in attempts)
    record = {"command": " ".join(command[1:]), "metrics": args.metrics, "processes": args.processes,
              "chunk_size": args.chunk_size, "rows": result["rows"], "attempts": attempts, "seconds": round(seconds, 1),
              "rows_per_second": round(result["rows"] / seconds, 1),
              "peak_rss_gb": max(a["peak_rss_gb"] for a in attempts),
              "corpus": {k: v for k, v in result.items() if isinstance(v, float)}, "signature": result["signature"]}
    if args.compare:
        import pyarrow.dataset as ds

        other = Path(args.compare)
        record["result_json_identical"] = ((Path(args.out) / "result.json").read_bytes()
                                           == (other / "result.json").read_bytes())
        mine = ds.dataset(str(Path(args.out) / "shards"), format="parquet").to_table()
        theirs = ds.dataset(str(other / "shards"), format="parquet").to_table()
        record["shards_identical"] = mine.equals(theirs)
        ids = mine.column("id").to_pylist()
        record["distinct_ids"] = len(set(ids))
    print(json.dumps(record, indent=1))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("--data", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--metrics", required=True)
    r.add_argument("--processes", type=int, default=2)
    r.add_argument("--chunk-size", type=int, default=2000)
    r.add_argument("--kill-after", type=float, default=None)
    r.add_argument("--compare")
    r.add_argument("--json")
    r.add_argument("extra", nargs="*", help="more score-dataset options, after --")
    args = parser.parse_args(argv)
    return prepare(args) if args.command == "prepare" else run(args)


if __name__ == "__main__":
    sys.exit(main())
