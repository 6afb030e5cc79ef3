"""Speed of capeval's default image encoder (EfficientNet-Lite0, 224², CPU) on Flickr8k images.

Usage (from the repository root; needs ``capeval[learned]`` and the data dir):
    PYTHONPATH=modules python benchmarks/image_encoder_speed.py [--n 500] [--batch-sizes 8,16,32,64] [--threads 2]

Images: the first ``--n`` files (sorted by name) of ``$CAPEVAL_DATA_DIR/flickr8k/images-224`` (224×224 JPEGs).
Per batch size, in this process, model loaded and warmed up outside the timed region:

1. **cold**: ``encoder.encode(paths, batch_size=B)`` into an empty feature cache (read, hash, decode, resize +
   crop + normalise, forward, cache write: everything a first call does);
2. **warm**: the same call again (every feature read back from the cache).

Also, once: the stages apart (read + decode + preprocess only; forward only on a pre-built batch, with the
default speed-ups, without batch-norm folding, and as plain timm), to show where the time goes. Prints a JSON summary (``--json`` writes it);
the machine is shared, so each timing also records ``cpu_share``, the process CPU seconds per wall second
(2.0 with ``--threads 2``: both cores were ours; lower: other jobs took part of them), and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def flickr8k_images(n: int) -> list[Path]:
    from capeval.paths import data_dir

    folder = data_dir(required=True) / "flickr8k" / "images-224"
    paths = sorted(folder.glob("*.jpg"))[:n]
    if len(paths) < n:
        raise SystemExit(f"{folder} has {len(paths)} images, fewer than --n {n}")
    return paths


CPU_SHARE: list[float] = []  # process CPU seconds per wall second of each timed call (2.0 = both cores ours)


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        CPU_SHARE.append((time.process_time() - c0) / times[-1])
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--batch-sizes", default="8,16,32,64")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="cold/warm runs per batch size (median reported)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    import torch

    from capeval.models import images as image_io
    from capeval.models.image_encoder import load_image_encoder

    torch.set_num_threads(args.threads)
    paths = flickr8k_images(args.n)
    result = {"n_images": len(paths), "threads": args.threads, "torch": torch.__version__,
              "loadavg_before": os.getloadavg(), "runs": []}

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        encoder = load_image_encoder(cache_root=Path(tmp) / "warmup")
        result["load_s"] = round(time.perf_counter() - t0, 2)
        encoder.encode(paths[:16], batch_size=16, cache=False)  # warm-up (oneDNN primitives, page cache)
        result["settings"] = encoder.settings

        for bs in [int(b) for b in args.batch_sizes.split(",")]:
            cold, warm = [], []
            for r in range(args.repeat):
                enc = load_image_encoder(cache_root=Path(tmp) / f"bs{bs}-{r}")
                seconds, first = timed(lambda: enc.encode(paths, batch_size=bs, progress=False))
                cold.append(seconds)
                seconds, again = timed(lambda: enc.encode(paths, batch_size=bs, progress=False))
                warm.append(seconds)
                assert torch.equal(first, again)
            run = {"batch_size": bs, "cold_s": round(statistics.median(cold), 2),
                   "cold_images_per_s": round(len(paths) / statistics.median(cold), 1),
                   "warm_s": round(statistics.median(warm), 3),
                   "warm_images_per_s": round(len(paths) / statistics.median(warm), 0),
                   "cold_cpu_share": round(CPU_SHARE[-2], 2), "loadavg_1min": os.getloadavg()[0]}
            result["runs"].append(run)
            print(json.dumps(run), flush=True)

        # where the time goes (batch size 32)
        def prepare():
            return torch.stack([encoder.preprocess(image_io.read_item(p, i).decode()) for i, p in enumerate(paths)])

        prep_s, batch = timed(prepare)
        result["stages_bs32"] = {"read_decode_preprocess_images_per_s": round(len(paths) / prep_s, 0)}
        variants = {"forward_default_images_per_s": encoder,  # channels-last + folded batch norms
                    "forward_channels_last_unfolded_images_per_s": load_image_encoder(cache=False, fold_bn=False),
                    "forward_plain_timm_images_per_s": load_image_encoder(cache=False, fold_bn=False,
                                                                          channels_last=False)}
        for label, enc in variants.items():
            fwd_s, _ = timed(lambda: [enc.forward(batch[i:i + 32]) for i in range(0, len(batch), 32)])
            result["stages_bs32"][label] = round(len(paths) / fwd_s, 1)
            result["stages_bs32"][label.replace("images_per_s", "cpu_share")] = round(CPU_SHARE[-1], 2)
    result["loadavg_after"] = os.getloadavg()
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
