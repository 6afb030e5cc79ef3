"""Issue 39's vision-language row: ``capeval score-dataset`` with ``clip_s`` + ``ref_clip_s`` on Flickr8k test images.

Rows: the first ``--images`` Flickr8k test images × their 5 captions (each caption a prediction, its image's other 4
its references, the image path in an ``image`` column), written as one parquet file. The CLI runs in a fresh process
(cold: nothing cached, the model loaded inside the timed run), with ``--chunk-size`` rows per chunk; then the same rows
through ``capeval.score`` in this process, to compare per-caption and corpus values. Weights: an OpenAI-format CLIP
checkpoint (``--checkpoint``; ``benchmarks/clip_speed.py`` writes ViT-B/32 with seeded random weights — throughput does
not depend on the values). Prints one JSON object (seconds, rows/s, images/s, the child's peak RSS, max |Δ|)::

    python benchmarks/score_dataset_images.py --checkpoint /tmp/clip-speed/vit-b-32-random.pt [--images 1000]
        [--device cuda] [--chunk-size 1000] [--json out.json]
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
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def image_rows(data_dir: Path, images: int, prefix: str) -> tuple[Path, list[str], list[str], list[str], list[list[str]]]:
    """``(a parquet file in a new temporary folder, ids, image paths, captions, references)``: the first ``images`` Flickr8k
    test images × their 5 captions (``benchmarks/clip_speed.py``'s workload), one row per caption with an ``id``
    (``<image>#<k>``), ``prediction``, ``references`` (the image's other captions) and ``image`` (its path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clip_speed import workload

    paths, cands, refs, _ = workload(Path(data_dir), images)
    ids = [f"{Path(p).name}#{i % 5}" for i, p in enumerate(paths)]
    data = Path(tempfile.mkdtemp(prefix=prefix)) / "flickr8k-test.parquet"
    pq.write_table(pa.table({"id": ids, "prediction": cands, "references": refs, "image": paths}), data)
    return data, ids, paths, cands, refs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--metrics", default="clip_s,ref_clip_s")
    parser.add_argument("--data", default=os.environ.get("CAPEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import pyarrow.dataset as ds

    data, ids, paths, cands, refs = image_rows(Path(args.data), args.images, "capeval-images-")
    work = data.parent
    metrics = args.metrics.split(",")
    out = work / "scores"
    command = [sys.executable, "-m", "capeval", "score-dataset", str(data), "--out", str(out), "--metrics",
               ",".join(metrics), "--image-column", "image", "--chunk-size", str(args.chunk_size),
               "--clip-model", args.checkpoint, "--clip-device", args.device, "--no-language-check"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")]),
           "CAPEVAL_CACHE_DIR": str(work / "cache")}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        print(json.dumps({"error": done.stderr[-3000:]}))
        return 1
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    table = ds.dataset(str(out / "shards"), format="parquet").to_table().to_pydict()

    import capeval

    whole = capeval.score(cands, refs, metrics=metrics, images=paths, clip_model=args.checkpoint,
                          clip_device=args.device, language_check=False)
    keys = [k for k in metrics if isinstance(whole.get(k), float)]
    report = {
        "rows": len(ids), "images": len(set(paths)), "metrics": metrics, "device": args.device,
        "chunk_size": args.chunk_size, "seconds": round(seconds, 2), "rows_per_s": round(len(ids) / seconds, 1),
        "images_per_s": round(len(set(paths)) / seconds, 1), "child_peak_rss_gb": round(rss, 2),
        "rows_written": len(table["id"]), "ids_in_order": table["id"] == ids,
        "max_corpus_diff": max(abs(result[k] - whole[k]) for k in keys),
        "max_per_caption_diff": max(max(abs(a - b) for a, b in zip(table[k], whole["per_caption"][k])) for k in keys),
        "corpus": {k: result[k] for k in keys}, "note": "seconds: the CLI process, start to exit, model loading included",
    }
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
