"""The Ray routes on the 20,000 COCO Karpathy-test candidates (id, prediction, 5 references) with BLEU, METEOR,
ROUGE-L and CIDEr-D, on a local Ray of ``--cpus`` CPUs:

* ``capeval score-dataset --engine ray`` against the default engine (``--processes`` of them) on the same parquet
  file and chunk size: shards (tables and their records) and ``result.json`` compared, largest per-caption and
  corpus differences, each run's wall time (the Ray run includes starting the local Ray; both include imports);
* ``capeval.ray.score`` + ``capeval.ray.corpus`` on a ``ray.data.read_parquet`` of the same file against
  ``capeval.score`` on the whole list: largest differences, wall time.

    python benchmarks/ray_karpathy.py [--cpus 2] [--processes 2] [--chunk-size 2000] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path


def _shards(folder: Path) -> dict[str, tuple]:
    import pyarrow.parquet as pq

    return {p.name: (pq.read_table(p).to_pydict(), pq.read_schema(p).metadata)
            for p in sorted((folder / "shards").glob("part-*.parquet"))}


def _largest(a: dict[str, list], b: dict[str, list], keys: list[str]) -> float:
    return max(max(abs(x - y) for x, y in zip(a[k], b[k])) for k in keys)


def _engines(data: Path, work: Path, args, keys: list[str]) -> dict:
    """Both engines through the command line, in fresh processes; their folders compared."""
    base = [sys.executable, "-m", "capeval", "score-dataset", str(data), "--metrics", args.metrics,
            "--chunk-size", str(args.chunk_size), "--no-language-check"]
    runs = {}
    for name, extra in (("local", ["--processes", str(args.processes)]),
                        ("ray", ["--engine", "ray", "--ray-actors", str(args.cpus)])):
        env = dict(os.environ, RAY_AUTH_MODE="disabled")
        start = time.perf_counter()
        subprocess.run([*base, *extra, "--out", str(work / name)], check=True, stdout=subprocess.DEVNULL, env=env)
        runs[name] = round(time.perf_counter() - start, 1)
    local, ray = (json.loads((work / n / "result.json").read_text()) for n in ("local", "ray"))
    a, b = _shards(work / "local"), _shards(work / "ray")
    columns = lambda s: {k: [v for name in sorted(s) for v in s[name][0][k]] for k in keys}  # noqa: E731
    return {"seconds": runs, "identical_shards": a == b, "identical_result": local == ray,
            "max_corpus_diff": max(abs(local[k] - ray[k]) for k in keys),
            "max_per_caption_diff": _largest(columns(a), columns(b), keys), "rows": ray["rows"],
            "chunks": ray["chunks"]}


def _pipeline(data: Path, preds, refs, args, keys: list[str]) -> dict:
    import logging

    import ray

    import capeval
    import capeval.ray

    start = time.perf_counter()
    whole = capeval.score(preds, refs, metrics=args.metrics.split(","), language_check=False)
    whole_s = time.perf_counter() - start
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             logging_level=logging.WARNING)
    ray.data.DataContext.get_current().enable_progress_bars = False
    start = time.perf_counter()
    scored = capeval.ray.score(ray.data.read_parquet(str(data)), metrics=args.metrics.split(","),
                               batch_size=args.chunk_size, id_column="id", language_check=False).materialize()
    corpus = capeval.ray.corpus(scored)
    seconds = time.perf_counter() - start
    rows = {r["id"]: r for r in scored.select_columns(["id", *keys]).take_all()}
    ray.shutdown()
    return {"seconds": round(seconds, 1), "capeval_score_seconds": round(whole_s, 1), "rows": corpus["rows"],
            "max_corpus_diff": max(abs(corpus[k] - whole[k]) for k in keys),
            "signature_equal": corpus["signature"] == whole["signature"], "_rows": rows, "_whole": whole}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", default="bleu,meteor,rouge_l,cider_d")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--chunk-size", type=int, default=2000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capeval.judgments.coco_karpathy import load_coco_karpathy
    from capeval.registry import resolve

    records = load_coco_karpathy().records
    ids = [f"{n:05d}-{r.source_id}" for n, r in enumerate(records)]  # unique per row
    preds = [r.candidate for r in records]
    refs = [list(r.references) for r in records]
    work = Path(tempfile.mkdtemp(prefix="capeval-ray-karpathy-"))
    data = work / "karpathy.parquet"
    pq.write_table(pa.table({"id": ids, "prediction": preds, "references": refs}), data)
    keys = [k for ks in resolve(args.metrics.split(",")).values() for k in ks]
    report: dict = {"rows": len(ids), "metrics": args.metrics, "chunk_size": args.chunk_size, "cpus": args.cpus,
                    "processes": args.processes, "date": time.strftime("%Y-%m-%d")}
    report["engines"] = _engines(data, work, args, keys)
    print(f"engines: {report['engines']}")
    pipeline = _pipeline(data, preds, refs, args, keys)
    rows, whole = pipeline.pop("_rows"), pipeline.pop("_whole")
    pipeline["max_per_caption_diff"] = max(max(abs(rows[i][k] - whole["per_caption"][k][n]) for n, i in
                                               enumerate(ids)) for k in keys)
    report["pipeline"] = pipeline
    print(f"pipeline: {pipeline}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
