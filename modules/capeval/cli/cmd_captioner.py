"""``capeval caption IMAGE...`` and ``capeval captioner train|evaluate|generate|distractors``: the Flickr8k captioner."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.cli.output import STDOUT, add_json_argument, check_output_path, write_json

SPLITS = ("train", "dev", "test")


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("caption", help="caption image files with the Flickr8k captioner (beam search)")
    c.add_argument("images", nargs="+", type=Path, help="image files")
    c.add_argument("--model", type=Path, help="captioner folder (default: capeval's shipped Flickr8k captioner)")
    c.add_argument("--num-beams", type=int, default=3)
    c.add_argument("--num-return", type=int, default=1, help="captions per image (<= --num-beams)")
    add_json_argument(c, "a list of {id, candidates: [{caption, logp}]}")
    c.set_defaults(func=caption)

    p = sub.add_parser("captioner", help="train, evaluate and sample the Flickr8k captioner")
    inner = p.add_subparsers(dest="captioner_command", metavar="ACTION")
    t = inner.add_parser("train", help="train on Flickr8k train (seeded, checkpoints, resume, accelerate)")
    t.add_argument("--features", type=Path, required=True,
                   help="image features of Flickr8k (`capeval features extract --kind grid`)")
    t.add_argument("--out", type=Path, required=True, help="output folder (checkpoints/ inside)")
    t.add_argument("--epochs", type=int, default=12)
    t.add_argument("--images-per-batch", type=int, default=32)
    t.add_argument("--lr", type=float, default=5e-4)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--patience", type=int, default=3, help="epochs without a better dev CIDEr-D before stopping")
    t.add_argument("--hidden-size", type=int, default=256)
    t.add_argument("--layers", type=int, default=2)
    t.add_argument("--dropout", type=float, default=0.3)
    t.add_argument("--scst-from", type=Path, metavar="DIR",
                   help="fine-tune this trained captioner with self-critical training on CIDEr-D (use a small --lr, "
                        "e.g. 2e-5); the architecture options are then ignored")
    t.add_argument("--scst-samples", type=int, default=5, help="sampled captions per image in self-critical training")
    t.add_argument("--warmup-steps", type=int, default=300)
    t.add_argument("--restart", action="store_true", help="ignore existing checkpoints")
    t.add_argument("--gpu", action="store_true", help="use CUDA when available (default: CPU)")
    t.set_defaults(func=train)

    e = inner.add_parser("evaluate", help="beam captions of a split scored with BLEU..SPICE-U (JSON)")
    _split_arguments(e)
    add_json_argument(e, "{settings, results}", required=True)
    e.add_argument("--num-beams", type=int, default=3)
    e.add_argument("--metrics", default="bleu,meteor,rouge_l,cider_d,spice,spice_u")
    e.add_argument("--captions-out", type=Path, help="also write the captions (JSONL)")
    e.set_defaults(func=evaluate)

    g = inner.add_parser("generate", help="beam candidates and/or Monte-Carlo samples of a split (JSONL)")
    _split_arguments(g)
    g.add_argument("--out", type=Path, required=True, help="output JSONL: {id, candidates: [{caption, logp}]}")
    g.add_argument("--num-beams", type=int, default=3)
    g.add_argument("--num-return", type=int, default=1, help="beam candidates per image (<= --num-beams)")
    g.add_argument("--samples", type=int, default=0, help="Monte-Carlo samples per image instead of beam search")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=generate)

    d = inner.add_parser("distractors", help="Wang et al. 2020 §3.1: do frequent training captions out-score "
                                             "human captions under P(s|I)?")
    _split_arguments(d)
    add_json_argument(d, "{settings, results}", required=True)
    d.add_argument("--top", type=int, default=5, help="how many of the most common training captions")
    d.set_defaults(func=distractors)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _split_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=SPLITS, default="test", help="Flickr8k split (default test)")
    parser.add_argument("--model", type=Path, help="captioner folder (default: capeval's shipped one)")
    parser.add_argument("--features", type=Path, help="features file (default: encode the split's images, cached)")
    parser.add_argument("--images", type=Path,
                        help="folder of Flickr8k images (default: $CAPEVAL_DATA_DIR/flickr8k/images-224)")


def _split_inputs(args: argparse.Namespace):
    """``(model, tokenizer, features, references)`` of ``args.split``."""
    from capeval.corpora.captions import flickr8k_captions
    from capeval.models.feature_table import FeatureTable
    from capeval.captioning.load import image_features, load_captioner

    model, tokenizer = load_captioner(args.model)
    refs = flickr8k_captions(args.split)
    if args.features:
        table = FeatureTable.load(args.features)
    else:
        from capeval.paths import data_dir

        folder = args.images or data_dir(required=True) / "flickr8k" / "images-224"
        names = sorted(refs)
        table = image_features(model, [folder / n for n in names], names=names)
    return model, tokenizer, table, refs


def caption(args: argparse.Namespace) -> int:
    from capeval.captioning.load import caption_images
    from capeval.cli.output import text_stream

    if args.json is not None:
        check_output_path(args.json)
    rows = caption_images(args.images, args.model, num_beams=args.num_beams, num_return_sequences=args.num_return)
    out = text_stream(args.json)
    for row in rows:
        for cand in row["candidates"]:
            print(f"{row['id']}\t{cand['caption']}\t{cand['logp']:.3f}", file=out)
    if args.json is not None:
        write_json(args.json, rows)
    return 0


def train(args: argparse.Namespace) -> int:
    from capeval.corpora.captions import flickr8k_captions
    from capeval.models.feature_table import FeatureTable
    from capeval.captioning.train import train_captioner

    table = FeatureTable.load(args.features)
    config = None if args.scst_from else {"hidden_size": args.hidden_size, "num_hidden_layers": args.layers,
                                          "dropout": args.dropout, "intermediate_size": 4 * args.hidden_size}
    scst = {"objective": "scst", "init_from": args.scst_from, "scst_samples": args.scst_samples} if args.scst_from else {}
    log = train_captioner(
        table, flickr8k_captions("train"), args.out, dev=flickr8k_captions("dev"), held_out={"test": flickr8k_captions("test")},
        config=config, resume=not args.restart, cpu=not args.gpu, epochs=args.epochs,
        images_per_batch=args.images_per_batch, lr=args.lr, seed=args.seed, patience=args.patience,
        warmup_steps=args.warmup_steps, **scst)
    print(f"best epoch {log['best_epoch']} (dev CIDEr-D {log['best_dev']:.4f}) -> {args.out}", file=sys.stderr)
    return 0


def evaluate(args: argparse.Namespace) -> int:
    from capeval.captioning.evaluate import evaluate_captioner

    check_output_path(args.json)
    model, tokenizer, table, refs = _split_inputs(args)
    out = evaluate_captioner(model, tokenizer, table, refs, split=f"flickr8k-{args.split}", num_beams=args.num_beams,
                             metrics=[m for m in args.metrics.split(",") if m],
                             model_name=str(args.model or "capeval:flickr8k-captioner"), captions_out=args.captions_out)
    write_json(args.json, out, indent=1)
    if args.json != STDOUT:  # with --json - stdout holds the whole output already
        print(json.dumps(out["results"], indent=1))
    return 0


def generate(args: argparse.Namespace) -> int:
    from capeval.captioning.generate import beam_candidates, sample_captions, write_jsonl

    check_output_path(args.out, "--out")
    model, tokenizer, table, refs = _split_inputs(args)
    names = sorted(refs)
    if args.samples:
        rows = sample_captions(model, tokenizer, table, names, num_samples=args.samples, temperature=args.temperature,
                               seed=args.seed)
        settings = {"decoding": "sample", "samples": args.samples, "temperature": args.temperature, "seed": args.seed}
    else:
        rows = beam_candidates(model, tokenizer, table, names, num_beams=args.num_beams,
                               num_return_sequences=args.num_return)
        settings = {"decoding": "beam", "num_beams": args.num_beams, "num_return": args.num_return, "length_penalty": 0.0}
    write_jsonl(rows, args.out, {**settings, "split": f"flickr8k-{args.split}", "model": str(args.model or "shipped")})
    print(f"{len(rows)} images -> {args.out}", file=sys.stderr)
    return 0


def distractors(args: argparse.Namespace) -> int:
    from capeval.corpora.captions import flickr8k_captions
    from capeval.captioning.distractors import distractor_analysis

    check_output_path(args.json)
    model, tokenizer, table, refs = _split_inputs(args)
    out = distractor_analysis(model, tokenizer, table, refs, flickr8k_captions("train"), top=args.top)
    out["settings"]["split"] = f"flickr8k-{args.split}"
    write_json(args.json, out, indent=1)
    if args.json != STDOUT:  # with --json - stdout holds the whole output already
        print(json.dumps(out["results"], indent=1))
    return 0
