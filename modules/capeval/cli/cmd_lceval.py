"""``capeval lceval train|ablate``: retrain LCEval (Sharif et al. 2019) and its feature-group ablation."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.cli.output import add_json_argument, add_progress_argument, check_output_path, write_json


def _add_training_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=None, help="capeval data directory (default: $CAPEVAL_DATA or "
                                                               "../shared/data)")
    p.add_argument("--machine-captions", type=Path, nargs="+", default=[], metavar="FILE",
                   help="captioner JSON-lines outputs for the Flickr8k train images (`capeval captioner generate "
                        "--split train`, e.g. beam captions and --samples); the first 3 distinct per image are used; "
                        "needed with --negatives machine and the flickr8k-train source, refused with --negatives "
                        "mismatched")
    p.add_argument("--sources", default="coco-karpathy,flickr8k-train",
                   help="training sources, comma-separated: coco-karpathy, flickr8k-train")
    p.add_argument("--rc-per-image", type=int, default=0,
                   help="mismatched negatives per image (another image's human caption; capeval's addition, 0 = the "
                        "paper's human-vs-machine pairs only)")
    p.add_argument("--negatives", choices=("machine", "mismatched"), default="machine",
                   help="what label 0 is: 'machine' (the paper: machine captions, plus --rc-per-image mismatched "
                        "ones) or 'mismatched' (only another image's human captions, Cui et al. 2018 §4.4's "
                        "caption-level objective; needs --rc-per-image >= 1, no machine captions)")
    p.add_argument("--plus", action="store_true",
                   help="LCEval+: also the sentence-embedding and reference-only-critic features (needs torch)")
    p.add_argument("--extra-critic", default=None, metavar="NAME|DIR",
                   help="with --plus: the reference-only critic of the critic feature (a shipped name such as "
                        "critic-coco-ref, or a `capeval critic train --context reference` folder; default "
                        "critic-flickr8k-ref)")
    p.add_argument("--hidden", type=int, default=12, help="hidden ReLU units (0 = the linear variant)")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=75)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--weight-decay", type=float, default=1e-4, help="L2 regularisation (Adam weight decay)")
    p.add_argument("--patience", type=int, default=20, help="epochs without a lower dev loss before stopping")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--word-vectors", default="glove-6b-50d",
                   help="vectors for WMD / MOWE: 'glove-6b-50d' (offline) or a word2vec / GloVe text file")
    p.add_argument("--restart", action="store_true", help="ignore existing checkpoints")
    add_progress_argument(p)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lceval", help="retrain LCEval (Sharif et al. 2019) and run its feature-group ablation")
    inner = p.add_subparsers(dest="lceval_command", metavar="ACTION")
    t = inner.add_parser("train", help="train on COCO Karpathy test + Flickr8k train pairs (every reported "
                                       "benchmark's images left out; a dev split of the training images selects "
                                       "the epoch); seeded, checkpoints, resume")
    t.add_argument("--out", type=Path, required=True, help="output folder (model, training.json, checkpoints/)")
    _add_training_arguments(t)
    t.set_defaults(func=train)
    a = inner.add_parser("ablate", help="the paper's Table 5: networks on all features, each group alone and each "
                                        "group removed, scored on COMPOSITE (τ-b) and PASCAL-50S (accuracy)")
    a.add_argument("--out", type=Path, required=True, help="folder for the seven trained networks")
    add_json_argument(a, "the ablation table", required=True)
    a.add_argument("--benchmarks", default="composite,pascal50s", help="benchmarks to score each network on")
    _add_training_arguments(a)
    a.set_defaults(func=ablate)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _check_arguments(args) -> None:
    if args.extra_critic and not args.plus:
        raise ValueError("--extra-critic is LCEval+'s critic feature: give it with --plus.")
    if args.negatives == "mismatched" and args.machine_captions:
        raise ValueError("--machine-captions with --negatives mismatched: that objective has no machine negatives; "
                         "drop one of them.")


def _training_data(args):
    from capeval.corpora.lceval_pairs import build_training_set, pair_features
    from capeval.lceval.features import FeatureExtractor

    sources = [s.strip() for s in args.sources.split(",") if s.strip()]
    ts = build_training_set(args.data_dir, machine_captions=args.machine_captions, sources=sources, seed=args.seed,
                            rc_per_image=args.rc_per_image, negatives=args.negatives)
    print(f"LCEval training pairs: {json.dumps(ts.report)}", file=sys.stderr)
    extractor = FeatureExtractor(args.word_vectors, extra=args.plus, extra_critic=args.extra_critic)
    try:
        train = pair_features(ts.train, extractor, progress=args.progress)
        dev = pair_features(ts.dev, extractor, progress=args.progress)
    finally:
        extractor.close()
    return ts, train, dev, extractor


def _negatives_text(args) -> str:
    if args.negatives == "mismatched":
        return (f"label 0 = {args.rc_per_image} mismatched human captions per image only (Cui et al. 2018 §4.4's "
                f"caption-level objective, no machine captions)")
    return f"machine negatives and {args.rc_per_image} mismatched negatives per image"


def _options(args) -> dict:
    from capeval.lceval.features import ALL_FEATURE_NAMES, FEATURE_NAMES

    return {"hidden": args.hidden, "epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
            "weight_decay": args.weight_decay, "patience": args.patience, "seed": args.seed,
            "features": list(ALL_FEATURE_NAMES if args.plus else FEATURE_NAMES)}


def train(args: argparse.Namespace) -> int:
    from capeval.lceval.train import train_lceval

    _check_arguments(args)
    ts, (xt, yt), (xd, yd), extractor = _training_data(args)
    log = train_lceval(xt, yt, xd, yd, args.out, resume=not args.restart, progress_bar=args.progress,
                       word_vectors=args.word_vectors, extra_log={"training_set": ts.report},
                       extra_critic=extractor.extra_critic,
                       description=(f"LCEval{'+' if args.plus else ''} retrained by capeval: {args.hidden or 'linear'} "
                                    f"hidden units, pairs from {args.sources} (reported benchmarks' images left out), "
                                    f"{_negatives_text(args)}, seed {args.seed}."),
                       **_options(args))
    best = next(e for e in log["epochs"] if e["epoch"] == log["best_epoch"])
    print(f"best epoch {log['best_epoch']}: dev loss {best['dev_loss']:.4f}, dev accuracy {best['dev_accuracy']:.4f}; "
          f"model in {args.out}", file=sys.stderr)
    return 0


def ablate(args: argparse.Namespace) -> int:
    from capeval.judgments import load_benchmark
    from capeval.meta_evaluation.lceval_ablation import benchmark_features, run_ablation
    from capeval.lceval.features import FeatureExtractor

    check_output_path(args.json)
    _check_arguments(args)
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    ts, train_xy, dev_xy, _ = _training_data(args)
    extractor = FeatureExtractor(args.word_vectors)
    try:
        evaluations = {name: benchmark_features(load_benchmark(name, args.data_dir), extractor, progress=args.progress)
                       for name in names}
    finally:
        extractor.close()
    opts = _options(args)
    opts.pop("features")  # each variant reads its own subset of the 16
    if args.restart:
        import shutil

        shutil.rmtree(args.out, ignore_errors=True)
    result = run_ablation(train_xy, dev_xy, evaluations, args.out, progress=args.progress, **opts)
    result["training_set"] = ts.report
    result["options"] = opts
    for variant, row in result["variants"].items():
        cells = [f"{b}: " + ", ".join(f"{k} {v:.3f}" for k, v in row[b].items()) for b in names]
        print(f"{variant:20s} " + " | ".join(cells), file=sys.stderr)
    write_json(args.json, result)
    return 0
