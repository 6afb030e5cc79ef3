"""Peak memory (resident set) of reading and of scoring one image with the ``critic`` metric: a bundled photo
vs degenerate strips (issue 54: a 20000×1 PNG peaked at 6.0 GB, 50000×1 at 13.7 GB, when the shorter side was
scaled to 256 px before the centre crop).

Usage: PYTHONPATH=modules python benchmarks/image_memory.py [--unbounded] [--sizes 20000x1 50000x1 ...]

Each measurement is a fresh ``python`` subprocess (so one's peak does not hide another's) reporting its
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (peak RSS, GiB = 2**30 bytes) and wall time:

* ``read``: :func:`capeval.models.images.read_item` + ``decode`` + the critic's image encoder preprocessing
  (``ImageEncoder._pixels``) of the image, with the encoder built (random weights, no feature cache);
* ``critic``: ``capeval.score([caption], [[reference]], metrics=["critic"], images=[path])``, after a first call on
  an 8×8 array that loads the models (the time is the second call's; the peak covers both);
* ``space``: what the ``learned_critic`` Space runs for an uploaded file (``capeval.hf.space_inputs.
  score_image_captions`` with the evaluate module of ``metrics/learned_critic``, ``critic`` ticked), after a first
  call on an 8×8 upload (``--kinds space``).

The time of ``read`` is the reading, decoding and preprocessing alone (the encoder built before).

The photo is the bundled ``chelsea.jpg`` (:func:`capeval.io.example_images`); the strips are one-colour PNGs
written to a temporary folder. ``--unbounded`` sets ``RESIZE_MAX_PIXELS`` to 2**62, i.e. the whole resize before
the crop as before the bound (the figures of the issue); beware: 50000×1 then needs ~14 GB. Each subprocess
gets an empty ``CAPEVAL_CACHE_DIR`` (a temporary folder), so no image's features come from the feature cache.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from capeval.models import images
if sys.argv[3] == "unbounded":
    images.RESIZE_MAX_PIXELS = 2 ** 62
started = time.perf_counter()
if sys.argv[1] == "read":
    from capeval.models.image_encoder import load_image_encoder
    encoder = load_image_encoder(pretrained=False, cache=False)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    shape = encoder._pixels(images.read_item(sys.argv[2], 0).decode(), "images[0]").shape
elif sys.argv[1] == "space":  # what the learned_critic Space runs for an uploaded file
    from capeval.hf.space import load_module
    from capeval.hf.space_inputs import score_image_captions
    import numpy as np
    module = load_module(sys.argv[4])
    import os, tempfile
    warm = os.path.join(tempfile.mkdtemp(), "warm.png")
    from PIL import Image
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(warm)
    score_image_captions(module.compute, ["critic"], [warm], "a picture", "a photo of something", ["critic"])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    score_image_captions(module.compute, ["critic"], [sys.argv[2]], "a picture", "a photo of something", ["critic"])
    shape = None
else:
    import capeval
    import numpy as np
    args = (["a picture"], [["a photo of something"]])
    capeval.score(*args, metrics=["critic"], images=[np.zeros((8, 8, 3), np.uint8)], progress=False)  # load
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    capeval.score(*args, metrics=["critic"], images=[sys.argv[2]], progress=False)
    shape = None
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
print(json.dumps({"peak_kib": peak, "before_kib": base, "seconds": time.perf_counter() - started,
                  "shape": list(shape) if shape is not None else None}))
"""


def measure(kind: str, path: str, mode: str) -> dict:
    with tempfile.TemporaryDirectory() as cache:  # an empty feature cache: every image is encoded
        env = {**os.environ, "CAPEVAL_CACHE_DIR": cache}
        app = str(Path(__file__).resolve().parents[1] / "metrics" / "learned_critic" / "app.py")
        done = subprocess.run([sys.executable, "-c", CHILD, kind, path, mode, app], capture_output=True, text=True,
                              env={**env, "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--unbounded", action="store_true", help="the whole resize before the crop (old behaviour)")
    parser.add_argument("--sizes", nargs="+", default=["20000x1", "50000x1"], help="strips WIDTHxHEIGHT")
    parser.add_argument("--kinds", nargs="+", default=["read", "critic"], choices=["read", "critic", "space"])
    args = parser.parse_args()
    from PIL import Image

    from capeval.io import example_images

    mode = "unbounded" if args.unbounded else "bounded"
    photo = next(p for p in example_images() if p.name == "chelsea.jpg")
    with tempfile.TemporaryDirectory() as folder:
        cases = [(f"photo {photo.name} {'×'.join(map(str, Image.open(photo).size))}", str(photo))]
        for spec in args.sizes:
            w, h = (int(v) for v in spec.lower().split("x"))
            path = Path(folder) / f"strip-{w}x{h}.png"
            Image.new("RGB", (w, h), (30, 160, 60)).save(path)
            cases.append((f"{w}×{h} PNG ({path.stat().st_size} bytes)", str(path)))
        print(f"resize: {mode}")
        print(f"{'image':<32} {'path':<7} {'peak RSS':>10} {'time':>8}  note")
        for name, path in cases:
            for kind in args.kinds:
                r = measure(kind, path, mode)
                if "error" in r:
                    print(f"{name:<32} {kind:<7} {'-':>10} {'-':>8}  {r['error'][:80]}")
                    continue
                note = (f"encoder built: {r['before_kib'] / 2 ** 20:.2f} GiB; pixels {r['shape']}" if kind == "read"
                        else f"critic loaded: {r['before_kib'] / 2 ** 20:.2f} GiB" + (" (Space)" if kind == "space"
                                                                                      else ""))
                print(f"{name:<32} {kind:<7} {r['peak_kib'] / 2 ** 20:>6.2f} GiB {r['seconds']:>7.2f}s  {note}",
                      flush=True)


if __name__ == "__main__":
    main()
