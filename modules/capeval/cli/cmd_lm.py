"""``capeval lm train|perplexity``: caption language models P(s) for MMI re-ranking."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CORPUS_HELP = ("coco-train2014 (minus Karpathy test / COMPOSITE / THumB images), flickr8k-train, flickr8k-dev, "
               "flickr8k-test, coco-karpathy-test, or a file of references (see capeval score)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lm", help="caption language models P(s) (unigram, LSTM) for MMI re-ranking")
    inner = p.add_subparsers(dest="lm_command", metavar="ACTION")
    t = inner.add_parser("train", help="fit a unigram LM and train an LSTM LM (resumable)")
    t.add_argument("--corpus", required=True, help=CORPUS_HELP)
    t.add_argument("--dev", help="dev corpus (same choices) for early stopping; default none")
    t.add_argument("--out", type=Path, required=True, help="output folder: unigram/ and lstm/ (with checkpoints)")
    t.add_argument("--model", choices=["both", "unigram", "lstm"], default="both")
    t.add_argument("--epochs", type=int, default=10)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--min-count", type=int, default=5, help="rarer words become <unk>")
    t.add_argument("--k", type=float, default=1.0, help="add-k smoothing of the unigram LM")
    t.add_argument("--patience", type=int, default=2, help="epochs without dev improvement before stopping")
    t.add_argument("--dropout", type=float, default=0.0)
    t.add_argument("--tie-weights", action="store_true")
    t.add_argument("--gpu", action="store_true", help="use an accelerator when one is available")
    t.add_argument("--restart", action="store_true", help="ignore existing checkpoints")
    t.set_defaults(func=train)
    q = inner.add_parser("perplexity", help="per-token perplexity (<eos> included) of a saved LM")
    q.add_argument("--lm", type=Path, required=True, help="unigram, LSTM, interpolated or transformers LM folder")
    q.add_argument("--captions", required=True, help=CORPUS_HELP)
    q.set_defaults(func=perplexity)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _captions(spec: str) -> list[str]:
    from capeval.corpora.captions import CORPORA, corpus_captions

    if spec in CORPORA:
        return corpus_captions(spec)
    from capeval.io import load_references

    _, refs = load_references(Path(spec))
    return [c for group in refs for c in group]


def train(args: argparse.Namespace) -> int:
    from capeval.models.caption_lm import UnigramLM

    captions = _captions(args.corpus)
    dev = _captions(args.dev) if args.dev else None
    print(f"{args.corpus}: {len(captions)} captions" + (f"; dev {args.dev}: {len(dev)}" if dev else ""), file=sys.stderr)
    if args.model in ("both", "unigram"):
        UnigramLM.fit(captions, min_count=args.min_count, k=args.k).save(args.out / "unigram")
    if args.model in ("both", "lstm"):
        from capeval.models.lstm_train import train_lstm_lm

        log = train_lstm_lm(captions, args.out / "lstm", dev_captions=dev, epochs=args.epochs,
                            batch_size=args.batch_size, lr=args.lr, seed=args.seed, min_count=args.min_count,
                            patience=args.patience, config={"dropout": args.dropout, "tie_weights": args.tie_weights},
                            cpu=not args.gpu, resume=not args.restart)
        print(json.dumps({k: v for k, v in log.items() if k != "config"}), file=sys.stderr)
    print(args.out)
    return 0


def perplexity(args: argparse.Namespace) -> int:
    from capeval.models.caption_lm import lm_perplexity
    from capeval.models.lm_loading import load_caption_lm

    lm = load_caption_lm(args.lm)
    captions = _captions(args.captions)
    print(json.dumps({"lm": lm.settings, "captions": args.captions, "n": len(captions),
                      "perplexity": lm_perplexity(lm, captions)}))
    return 0
