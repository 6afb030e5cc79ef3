"""``capeval sentence-rank train``: train the experimental ``sentence_rank`` metric (its plan: docs/benchmarks/
measurements.md, "Beyond the papers: a learned ranker on sentence embeddings") on COCO train2014's captions, every
reported benchmark's images left out."""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from capeval.cli.output import add_progress_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sentence-rank", aliases=["sentence_rank"],
                       help="train the experimental sentence_rank metric (a learned ranker on frozen MiniLM "
                            "embeddings)")
    inner = p.add_subparsers(dest="sentence_rank_command", metavar="ACTION")
    t = inner.add_parser("train", help="train on COCO train2014's captions (reported benchmarks' images left out, 2 %% "
                                       "of the images as dev); seeded, safetensors + JSON checkpoints, resume")
    t.add_argument("--out", type=Path, required=True,
                   help="output folder (config.json, model.safetensors, training.json, checkpoints/)")
    t.add_argument("--cache-dir", type=Path, default=None,
                   help="where the captions' sentence vectors are cached as float16 safetensors (default: capeval's "
                        "cache folder, sentence_rank/); a rerun reads them instead of re-encoding (~1 h on 2 cores)")
    t.add_argument("--encoder", default="all-minilm-l6-v2",
                   help="the frozen sentence encoder (default all-minilm-l6-v2, offline)")
    t.add_argument("--epochs", type=int, default=10, help="at most this many epochs (default 10)")
    t.add_argument("--batch-size", type=int, default=256, help="pairs per batch (default 256)")
    t.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default 1e-3)")
    t.add_argument("--patience", type=int, default=2,
                   help="epochs without a better dev pairwise accuracy before stopping (default 2)")
    t.add_argument("--seed", type=int, default=0, help="seed of the dev split, the pairs and the network (default 0)")
    t.add_argument("--dev-seed", type=int, default=1234, help="seed of the fixed dev pairs (default 1234)")
    t.add_argument("--max-images", type=int, default=None,
                   help="train on a seeded sample of this many training images (smoke tests; default: all)")
    t.add_argument("--device", default=None, help="cpu, cuda, ... (default: CUDA when available)")
    t.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    t.add_argument("--restart", action="store_true", help="ignore (and remove) existing checkpoints")
    add_progress_argument(t)
    t.set_defaults(func=train)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def train(args: argparse.Namespace) -> int:
    from capeval.corpora.held_out import benchmark_images
    from capeval.corpora.coco_train2014 import coco_training_corpus
    from capeval.paths import cache_dir
    from capeval.sentence_rank.train import train_sentence_rank

    if args.max_images is not None and args.max_images < 2:
        raise ValueError(f"--max-images must be at least 2, got {args.max_images}.")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    benchmarks = benchmark_images()
    if not benchmarks:
        raise ValueError("no benchmark data found (CAPEVAL_DATA_DIR): the reported benchmarks' images cannot be left "
                         "out of the training corpus, so sentence_rank is not trained.")
    corpus = coco_training_corpus(benchmarks, seed=args.seed)
    train_captions = corpus.train
    if args.max_images is not None and args.max_images < len(train_captions):
        keep = random.Random(args.seed).sample(sorted(train_captions), args.max_images)
        train_captions = {name: train_captions[name] for name in sorted(keep)}
        corpus.report["max_images"] = args.max_images
    print(f"COCO train2014: {len(train_captions)} train / {len(corpus.dev)} dev images; left out "
          f"{corpus.report['left_out'] or 'none'} (checked: {', '.join(corpus.report['benchmarks_checked'])})",
          file=sys.stderr)
    log = train_sentence_rank(
        train_captions, corpus.dev, args.out, encoder=args.encoder,
        cache_dir=args.cache_dir if args.cache_dir is not None else cache_dir("sentence_rank"),
        held_out={f"benchmark {b}": names for b, names in benchmarks.items()},
        catalog_name="sentence-rank-coco" if args.encoder == "all-minilm-l6-v2" else None,
        corpus_report=corpus.report, device=args.device, resume=not args.restart, progress_bar=args.progress,
        epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, patience=args.patience, seed=args.seed,
        dev_seed=args.dev_seed)
    initial = log["initial_dev"]["dev_accuracy"]
    print(f"best epoch {log['best_epoch']} (dev pairwise accuracy {log['best_dev']:.4f}; untrained = cosine ranking "
          f"{initial:.4f}) -> {args.out}", file=sys.stderr)
    return 0
