"""``capeval score-dataset --engine ray`` with image metrics on GPU actors against the default engine on the same GPU:
the first ``--images`` Flickr8k test images × their 5 captions (each caption a prediction, the image's other 4 its
references), ``clip_s`` + ``ref_clip_s`` with a CLIP checkpoint (``--checkpoint``: ``benchmarks/clip_speed.py`` writes
ViT-B/32 with seeded random weights; throughput does not depend on the values). Each side runs in a fresh process from
the command line (model loading and, for Ray, its start included); the shards and ``result.json`` are compared (the
models compute in float32, and an actor's thread count, which Ray sets from the CPUs it reserves, can change the last
bits). Prints one JSON object (seconds and images/s per engine, whether the outputs are identical, the largest
differences)::

    python benchmarks/ray_gpu_actors.py --checkpoint /tmp/clip-speed/vit-b-32-random.pt [--images 1000]
        [--device cuda] [--chunk-size 1000] [--json out.json]

``--device cpu`` rehearses it on a machine without a GPU (CPU actors). Ray must be importable (``capeval[ray]``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _shards(folder: Path) -> dict[str, tuple]:
    import pyarrow.parquet as pq

    return {p.name: (pq.read_table(p).to_pydict(), pq.read_schema(p).metadata)
            for p in sorted((folder / "shards").glob("part-*.parquet"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--data", default=os.environ.get("CAPEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from score_dataset_images import image_rows

    data, ids, _, _, _ = image_rows(Path(args.data), args.images, "capeval-ray-gpu-")
    work = data.parent
    base = [sys.executable, "-m", "capeval", "score-dataset", str(data), "--metrics", "clip_s,ref_clip_s",
            "--image-column", "image", "--chunk-size", str(args.chunk_size), "--clip-model", args.checkpoint,
            "--clip-device", args.device, "--no-language-check"]
    gpus = "1" if args.device.startswith("cuda") else "0"
    report: dict = {"images": args.images, "rows": len(ids), "device": args.device, "chunk_size": args.chunk_size}
    for name, extra in (("local", []), ("ray", ["--engine", "ray", "--ray-actors", "1", "--ray-gpus-per-actor", gpus])):
        env = {**os.environ, "CAPEVAL_CACHE_DIR": str(work / f"cache-{name}"), "RAY_AUTH_MODE": "disabled",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "modules"), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        done = subprocess.run([*base, *extra, "--out", str(work / name)], env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode:
            report[name] = {"error": done.stderr[-2000:]}
            continue
        report[name] = {"seconds": round(seconds, 2), "images_per_s": round(args.images / seconds, 1)}
    if all("seconds" in report[n] for n in ("local", "ray")):
        local, ray = (json.loads((work / n / "result.json").read_text()) for n in ("local", "ray"))
        report["identical_result"] = local == ray
        a, b = _shards(work / "local"), _shards(work / "ray")
        report["identical_shards"] = a == b
        # float32 models: the actors' thread count (Ray gives each one its CPUs) can change the last bits
        report["max_per_caption_diff"] = max(abs(x - y) for name in a for key in ("clip_s", "ref_clip_s")
                                             for x, y in zip(a[name][0][key], b[name][0][key]))
        report["max_corpus_diff"] = max(abs(local[k] - ray[k]) for k in ("clip_s", "ref_clip_s"))
    print(json.dumps(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0 if report.get("max_per_caption_diff", 1.0) <= 1e-5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
