"""Is a hand-written all-MiniLM-L6-v2 forward faster on this CPU? The transformers forward against one with the
three attention projections fused into one matrix product and PyTorch's scaled-dot-product attention.

Encodes the first N distinct Karpathy-test candidates (default 4,000) the way capeval does (sorted by length,
mean pooling, L2 normalisation), at batch sizes 64 and 128, ``--rounds`` times each in alternation, and prints
texts/s and the largest difference of the fused vectors from the transformers ones.

Usage: ``PYTHONPATH=modules python benchmarks/sentence_forward.py [--texts 4000] [--rounds 2]``
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def fused_forward(model, input_ids, attention_mask):
    """BERT's encoder with Q, K, V as one linear layer (the same weights, concatenated) and SDPA attention."""
    import torch

    x = model.embeddings(input_ids=input_ids)
    batch, length, hidden = x.shape
    heads = model.config.num_attention_heads
    mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    for layer in model.encoder.layer:
        attention = layer.attention
        weight = torch.cat([attention.self.query.weight, attention.self.key.weight, attention.self.value.weight])
        bias = torch.cat([attention.self.query.bias, attention.self.key.bias, attention.self.value.bias])
        qkv = torch.nn.functional.linear(x, weight, bias).view(batch, length, 3, heads, hidden // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        context = context.transpose(1, 2).reshape(batch, length, hidden)
        x = attention.output.LayerNorm(attention.output.dense(context) + x)
        x = layer.output.LayerNorm(layer.output.dense(layer.intermediate.intermediate_act_fn(
            layer.intermediate.dense(x))) + x)
    return x


def encode(encoder, texts, forward, batch_size):
    import torch

    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    out = np.zeros((len(texts), encoder.dim), np.float32)
    start = time.perf_counter()
    with torch.inference_mode():
        for lo in range(0, len(order), batch_size):
            rows = order[lo:lo + batch_size]
            batch = encoder.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                      max_length=encoder.max_length, return_tensors="pt")
            hidden = forward(batch)
            mask = batch["attention_mask"].unsqueeze(-1).float()
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out[rows] = torch.nn.functional.normalize(mean, dim=1).numpy()
    return time.perf_counter() - start, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    from capeval.models.sentence_encoder import load_sentence_encoder
    from capeval.paths import data_dir

    cands = json.loads((data_dir(required=True) / "coco_karpathy_test" / "karpathy_cand.json").read_text())
    texts = list(dict.fromkeys(c["caption"] for c in cands))[: args.texts]
    encoder = load_sentence_encoder(device="cpu")
    model = encoder.model
    forwards = {"transformers": lambda b: model(**b).last_hidden_state,
                "fused": lambda b: fused_forward(model, b["input_ids"], b["attention_mask"])}
    _, reference = encode(encoder, texts, forwards["transformers"], 128)  # warm-up, and the reference vectors
    print(f"{len(texts)} texts; texts/s per forward and batch size")
    for _ in range(args.rounds):
        for name, forward in forwards.items():
            for batch_size in (64, 128):
                seconds, vectors = encode(encoder, texts, forward, batch_size)
                print(f"{name:12s} batch {batch_size:3d}: {len(texts) / seconds:6.0f} texts/s "
                      f"(max |Δ| vs transformers@128 {np.abs(vectors - reference).max():.1e})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
