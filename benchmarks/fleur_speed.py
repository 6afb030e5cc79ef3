"""Throughput of capeval's FLEUR judge against the reference procedure (one prompt per ``generate``), same weights,
same machine, same prompts.

Workload: ``--images`` images (the bundled photos, then seeded noise images of photo sizes) × ``--captions-per-image``
captions each (Flickr8k-Expert has 5.8 per image, PASCAL-50S 2, THumB 5), FLEUR's prompt. Judge: LLaVA-1.5's
architecture with seeded random weights (``--size 13b``: Vicuna-13B + CLIP ViT-L/14-336, the paper's judge; ``7b``;
``tiny``: capeval's tiny test model, for a CPU rehearsal), in ``--dtype`` (default float16 on a GPU, the reference's;
float32 on the CPU), built in memory: throughput does not depend on the values. The tokenizer is capeval's tiny
SentencePiece model (600 pieces): its FLEUR prompt is longer than Llama's by about a hundred tokens, for both
variants alike. Random weights never say ``</s>``, so every prompt generates ``--max-new-tokens`` tokens (default 6:
``▁ 0 . 7 5 </s>``, the length of a real answer), for both variants alike.

Variants:

* ``reference``: one prompt per ``generate``, the whole prompt prefilled each time: Yebin46/FLEUR's loop (capeval's
  ``fleur_batch_size=1`` path, which tests/judges/test_fleur.py checks against the original LLaVA code);
* ``capeval``: capeval's path at ``--batch-size``: each image's shared prompt prefix computed once, prompts of equal
  remaining length generated together (:func:`capeval.judges.judge.generate_shared`).

Prints one JSON line per variant (seconds, captions/s, peak GPU memory) and one with the ratio and the largest
difference of the digit probabilities between the two (the same computation up to the last bits). Usage::

    python benchmarks/fleur_speed.py --size 13b --device cuda [--images 16] [--captions-per-image 5]
                                     [--batch-size 16] [--max-new-tokens 6] [--variants reference,capeval]
    python benchmarks/fleur_speed.py --size tiny --device cpu      # the rehearsal
    python benchmarks/fleur_speed.py --size 13b --layers 1 --device cpu --images 2 --captions-per-image 2
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))

SIZES = {
    "13b": dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=40, num_attention_heads=40,
                num_key_value_heads=40),
    "7b": dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=32),
}
#: CLIP ViT-L/14 at 336 px (LLaVA-1.5's vision tower).
VIT_L_336 = dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                 image_size=336, patch_size=14, projection_dim=768)
CAPTIONS = ("a dog runs on the grass", "two children play football in a park", "a man rides a red bicycle down a "
            "street", "a cat sleeps on a sofa next to a window", "people walk along a busy market at night",
            "a small boat on a calm lake under a cloudy sky", "a woman holds an umbrella in the rain")


def images(n: int):
    """The bundled photos, then seeded noise images (640 x 480 and 500 x 375, alternating), as RGB PIL images."""
    import numpy as np
    from PIL import Image

    from capeval.io import example_images
    from capeval.models.images import read_item

    out = [read_item(p, i).decode() for i, p in enumerate(example_images())][:n]
    rng = np.random.default_rng(0)
    while len(out) < n:
        w, h = (640, 480) if len(out) % 2 else (500, 375)
        out.append(Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)))
    return out


def build_judge(size: str, device: str, dtype_name: str, work: Path, layers: int | None = None):
    """A :class:`capeval.judges.judge.Judge` of LLaVA-1.5's architecture with random weights, in memory."""
    import torch
    import transformers

    from capeval.judges import judge as J
    from capeval.judges.random_llava import CLIP_MEAN, CLIP_STD, write_tiny_llava

    tiny = write_tiny_llava(work / "tiny")
    if size == "tiny":
        return J.load_judge(str(tiny["hf"]), device=device, dtype=dtype_name)
    dtype = J._torch_dtype(dtype_name, torch.device(device))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny["hf"]))
    vocab = 32064  # llava-hf's padded vocabulary; the original 32,000 rows are the softmax's
    shape = dict(SIZES[size], **({"num_hidden_layers": layers} if layers else {}))
    text = transformers.LlamaConfig(vocab_size=vocab, max_position_embeddings=4096, rms_norm_eps=1e-5,
                                    tie_word_embeddings=False, **shape)
    config = transformers.LlavaConfig(vision_config=transformers.CLIPVisionConfig(**VIT_L_336).to_dict(),
                                      text_config=text.to_dict(), image_token_id=32000, projector_hidden_act="gelu",
                                      vision_feature_select_strategy="default", vision_feature_layer=-2)
    with torch.device(device):
        model = transformers.LlavaForConditionalGeneration._from_config(config, dtype=dtype).eval()
    processor_config = {"size": {"shortest_edge": 336}, "crop_size": {"height": 336, "width": 336},
                        "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD), "resample": 3}
    cls = getattr(transformers, "CLIPImageProcessorPil", None) or transformers.CLIPImageProcessor
    judge = J._llava_judge(model, tokenizer, cls(**processor_config), base_vocab=32000)
    judge.image_token_id = 32000
    judge.label, judge.fingerprint, judge.paper = f"random-llava-1.5-{size}", "random", False
    judge.device, judge.dtype = next(model.parameters()).device, dtype
    judge.digit_tokens = J.digit_token_ids(tokenizer.encode)
    judge.stop_ids, judge.pad_id = [tokenizer.eos_token_id], tokenizer.pad_token_id
    return judge


def run(variant: str, judge, prompts, keys, pictures, batch_size: int, max_new_tokens: int):
    import torch

    from capeval.judges import judge as J

    if judge.device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    if variant == "reference":
        out = []
        for prompt, key in zip(prompts, keys):
            inputs = J.llava_batch(judge, [prompt], [pictures[key]])
            out += J.generate(judge, inputs, max_new_tokens)
    else:
        out = J.generate_shared(judge, prompts, keys, pictures.__getitem__, batch_size, max_new_tokens)
    if judge.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = torch.cuda.max_memory_allocated() / 2**30 if judge.device.type == "cuda" else None
    return out, seconds, peak


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=["tiny", "7b", "13b"], default="13b")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--captions-per-image", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=6)
    parser.add_argument("--variants", default="reference,capeval")
    parser.add_argument("--layers", type=int, default=None,
                        help="the language model's layers (default: the size's; fewer to rehearse on a CPU)")
    parser.add_argument("--warmup", type=int, default=2, help="prompts generated before timing (CUDA kernels)")
    args = parser.parse_args(argv)

    from capeval.judges.judge import llava_pixels
    from capeval.judges.prompts import fleur_instruction, llava_v1_prompt

    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        judge = build_judge(args.size, args.device, args.dtype, Path(work), args.layers)
        print(json.dumps({"event": "judge", "size": args.size, "device": str(judge.device), "dtype": judge.dtype_name,
                          "parameters": sum(p.numel() for p in judge.model.parameters()),
                          "seconds": round(time.perf_counter() - started, 1)}), flush=True)
        photos = images(args.images)
        pictures = {str(i): llava_pixels(judge, im) for i, im in enumerate(photos)}
        prompts, keys = [], []
        for i in range(args.images):
            for k in range(args.captions_per_image):
                prompts.append(llava_v1_prompt(fleur_instruction(CAPTIONS[(i + k) % len(CAPTIONS)])))
                keys.append(str(i))
        run("reference", judge, prompts[:args.warmup], keys[:args.warmup], pictures, 1, args.max_new_tokens)
        results, times = {}, {}
        for variant in args.variants.split(","):
            out, seconds, peak = run(variant, judge, prompts, keys, pictures, args.batch_size, args.max_new_tokens)
            results[variant], times[variant] = out, seconds
            print(json.dumps({"variant": variant, "captions": len(prompts), "images": args.images,
                              "batch_size": 1 if variant == "reference" else args.batch_size,
                              "seconds": round(seconds, 3), "captions_per_s": round(len(prompts) / seconds, 2),
                              "peak_gpu_gb": None if peak is None else round(peak, 2)}), flush=True)
        if {"reference", "capeval"} <= set(results):
            diff = max(float((a.digit_probs.float() - b.digit_probs.float()).abs().max())
                       for a, b in zip(results["reference"], results["capeval"]) if len(a.ids) == len(b.ids))
            same = sum(a.ids == b.ids for a, b in zip(results["reference"], results["capeval"]))
            print(json.dumps({"speedup": round(times["reference"] / times["capeval"], 2), "same_tokens": f"{same}/{len(prompts)}",
                              "max_digit_prob_diff": diff}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
