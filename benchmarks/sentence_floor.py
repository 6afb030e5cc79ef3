"""How fast can ``sentence_cosine`` be on this machine? The arithmetic floor of all-MiniLM-L6-v2 on a workload.

Counts the work the encoder must do on the distinct texts of a workload (``learned_scale.py``'s: Flickr8k's 40,455
captions, or the 20,000 Karpathy-test candidates with their references) — every token through 6 layers of
384 → 384 ×4 (attention projections) and 384 → 1,536 → 384 (feed-forward) matrix products, 2 FLOPs per
multiply-add, plus the attention scores and sums over each text's own length; padding within a batch is extra
work not counted — and measures the float32 matrix-product rate torch reaches here on the model's own shapes. The
floor is FLOPs / rate: no float32 implementation of the model runs faster on this CPU.

Usage: ``PYTHONPATH=modules python benchmarks/sentence_floor.py [--workloads flickr8k,karpathy,karpathy-candidates]``
(``karpathy-candidates``: the Karpathy candidates' texts that are not references, all that is encoded once the
references' vectors are cached).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))

HIDDEN, FFN, LAYERS = 384, 1536, 6


def workload_texts(name: str) -> tuple[int, list[str]]:
    """(number of candidates, distinct texts encoded) of a learned_scale.py workload."""
    from capeval.paths import data_dir

    root = data_dir(required=True)
    if name == "flickr8k":
        groups: dict[str, list[str]] = {}
        for line in (root / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
            if "\t" in line:
                key, caption = line.split("\t", 1)
                groups.setdefault(key.split("#")[0], []).append(caption.strip())
        folder = root / "flickr8k" / "images-224"
        names = [n for n in sorted(groups) if (folder / n).is_file()]
        captions = [c for n in names for c in groups[n]]
        return len(captions), list(dict.fromkeys(captions))
    cands = json.loads((root / "coco_karpathy_test" / "karpathy_cand.json").read_text())
    refs = json.loads((root / "coco_karpathy_test" / "karpathy_ref.json").read_text())
    wanted = {c["image_id"] for c in cands}
    references = [r["caption"] for r in refs if r["image_id"] in wanted]
    if name == "karpathy-candidates":  # the references' vectors cached (learned_scale.py's `references` state)
        known = set(references)
        return len(cands), list(dict.fromkeys(c["caption"] for c in cands if c["caption"] not in known))
    return len(cands), list(dict.fromkeys([c["caption"] for c in cands] + references))


def flops(lengths: list[int]) -> float:
    """Float operations of the encoder on texts of these token lengths (no padding)."""
    per_token = 2 * LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
    attention = sum(2 * 2 * LAYERS * HIDDEN * n * n for n in lengths)  # scores and weighted sums
    return per_token * sum(lengths) + attention


def matmul_rate(tokens_per_batch: int, repeats: int = 30) -> float:
    """float32 GFLOP/s of torch on the feed-forward's shapes ([T, 384] x [384, 1536], [T, 1536] x [1536, 384])."""
    import torch

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens_per_batch, HIDDEN, generator=gen)
    w1, w2 = torch.randn(HIDDEN, FFN, generator=gen), torch.randn(FFN, HIDDEN, generator=gen)
    with torch.no_grad():
        for _ in range(3):
            (x @ w1) @ w2
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            (x @ w1) @ w2
            best = min(best, time.perf_counter() - t)
    return 2 * 2 * tokens_per_batch * HIDDEN * FFN / best / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="flickr8k,karpathy")
    parser.add_argument("--goal", type=float, default=1000.0, help="captions per second asked for")
    args = parser.parse_args(argv)
    import torch

    from capeval.models.sentence_encoder import _default_model_path

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(_default_model_path()))
    rate = max(matmul_rate(128 * 16), matmul_rate(128 * 32))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: float32 matmul {rate:.0f} GFLOP/s "
          "(best of 30, the model's feed-forward shapes, 2,048-4,096 tokens)")
    print("| workload | candidates | distinct texts | tokens | mean tokens | GFLOP | floor s | floor captions/s | "
          f"seconds for {args.goal:.0f}/s | needed GFLOP/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.workloads.split(","):
        n, texts = workload_texts(name)
        lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
        work = flops(lengths) / 1e9
        floor = work / rate
        target = n / args.goal
        print(f"| {name} | {n:,} | {len(texts):,} | {sum(lengths):,} | {sum(lengths) / len(lengths):.1f} | "
              f"{work:,.0f} | {floor:.1f} | {n / floor:.0f} | {target:.1f} | {work / target:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
