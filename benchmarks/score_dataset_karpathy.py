"""Issue 39's goal check: ``capeval score-dataset`` on the 20,000 COCO Karpathy-test candidates (id, prediction,
references) with ``--chunk-size 2000`` against ``capeval.score`` on the whole list; killed after its first shard and
run again; ``--processes 2``; other settings on the same folder refused with the folder unchanged.

    python benchmarks/score_dataset_karpathy.py [--metrics bleu,meteor,rouge_l,cider_d] [--json out.json]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", default="bleu,meteor,rouge_l,cider_d")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    import capeval
    from capeval.judgments.coco_karpathy import load_coco_karpathy

    records = load_coco_karpathy().records
    ids = [r.source_id for r in records]
    preds = [r.candidate for r in records]
    refs = [list(r.references) for r in records]
    work = Path(tempfile.mkdtemp(prefix="capeval-karpathy-"))
    data = work / "karpathy.parquet"
    pq.write_table(pa.table({"id": ids, "prediction": preds, "references": refs}), data)
    metrics = args.metrics.split(",")
    report: dict = {"rows": len(ids), "metrics": metrics, "chunk_size": 2000}

    start = time.perf_counter()
    whole = capeval.score(preds, refs, metrics=metrics, language_check=False)
    report["capeval_score_seconds"] = round(time.perf_counter() - start, 1)
    keys = [k for k in whole if isinstance(whole[k], float)]

    def compare(folder: Path) -> dict:
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        table = ds.dataset(str(folder / "shards"), format="parquet").to_table().to_pydict()
        return {"rows": len(table["id"]), "distinct_ids": len(set(table["id"])), "ids_in_order": table["id"] == ids,
                "max_corpus_diff": max(abs(result[k] - whole[k]) for k in keys),
                "max_per_caption_diff": max(max(abs(a - b) for a, b in zip(table[k], whole["per_caption"][k]))
                                            for k in keys),
                "signature_equal": result["signature"] == whole["signature"]}

    command = [sys.executable, "-m", "capeval", "score-dataset", str(data), "--metrics", args.metrics,
               "--chunk-size", "2000", "--no-language-check"]
    one = work / "one"
    start = time.perf_counter()
    subprocess.run([*command, "--out", str(one)], check=True, stdout=subprocess.DEVNULL)
    report["one_process"] = {**compare(one), "seconds": round(time.perf_counter() - start, 1)}

    killed = work / "killed"
    proc = subprocess.Popen([*command, "--out", str(killed)], stdout=subprocess.DEVNULL, start_new_session=True)
    first = killed / "shards" / "part-000000.parquet"
    while proc.poll() is None and not first.exists():
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    shards_at_kill = len(list((killed / "shards").glob("part-*.parquet")))
    subprocess.run([*command, "--out", str(killed)], check=True, stdout=subprocess.DEVNULL)
    report["killed_after_first_shard"] = {**compare(killed), "shards_at_kill": shards_at_kill,
                                          "result_json_identical": (killed / "result.json").read_bytes()
                                          == (one / "result.json").read_bytes()}

    two = work / "two"
    start = time.perf_counter()
    subprocess.run([*command, "--out", str(two), "--processes", "2"], check=True, stdout=subprocess.DEVNULL)
    report["two_processes"] = {**compare(two), "seconds": round(time.perf_counter() - start, 1),
                               "result_json_identical": (two / "result.json").read_bytes()
                               == (one / "result.json").read_bytes()}

    before = _snapshot(one)
    refused = subprocess.run([sys.executable, "-m", "capeval", "score-dataset", str(data), "--metrics", "bleu",
                              "--chunk-size", "2000", "--out", str(one)], capture_output=True, text=True)
    report["other_settings"] = {"exit_code": refused.returncode, "folder_unchanged": _snapshot(one) == before,
                                "message": refused.stderr.strip().splitlines()[-1][:300] if refused.stderr else ""}
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
