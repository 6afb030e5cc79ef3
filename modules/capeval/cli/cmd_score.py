"""``capeval score``: score a predictions file against a references file."""
from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="score predictions against references",
        description="Score captions. Metric names are the result keys (bleu = bleu_1..bleu_4).",
    )
    p.add_argument("--metrics", default=None, help="comma-separated, e.g. bleu,meteor,rouge_l,cider_d (default)")
    p.add_argument("--predictions", type=Path, help="JSON / JSONL / CSV / COCO results file")
    p.add_argument("--references", type=Path, help="JSON / JSONL / CSV / COCO annotations file")
    p.add_argument("--example", action="store_true", help="score the bundled example (offline)")
    p.add_argument("--json", type=Path, dest="json_out", help="write the result (same keys) to this JSON file")
    p.add_argument("--cleanup", default="thumb", choices=["thumb", "none"])
    p.add_argument("--tokenizer", default="ptb", choices=["ptb", "ptb-ctx", "ptb-java"])
    p.add_argument("--cider-df", default="references", help="'references' (pycocoevalcap) or 'coco-val2014'")
    p.add_argument("--meteor-jvms", type=int, default=1, help="parallel METEOR JVMs for large corpora")
    p.add_argument("--per-caption", action="store_true", help="also print per-caption scores")
    p.set_defaults(func=run)


def example_files() -> tuple[Path, Path]:
    root = resources.files("capeval") / "data" / "example"
    return Path(str(root / "predictions.json")), Path(str(root / "references.json"))


def run(args: argparse.Namespace) -> int:
    from capeval.api import score
    from capeval.render import text_table
    from capeval.io import load_predictions, load_references, pair
    from capeval.registry import DEFAULT_METRICS, REGISTRY, resolve

    if args.example:
        pred_path, ref_path = example_files()
    elif args.predictions and args.references:
        pred_path, ref_path = args.predictions, args.references
    else:
        raise ValueError("give --predictions FILE and --references FILE, or --example")
    ids, preds = load_predictions(pred_path)
    ref_ids, refs = load_references(ref_path)
    ids, preds, refs = pair(ids, preds, ref_ids, refs)

    metrics = args.metrics
    if metrics is None and args.example:
        metrics = _every_installed_metric(DEFAULT_METRICS, REGISTRY)
    selected = resolve(metrics)
    result = score(
        preds, refs, metrics=metrics, cleanup=args.cleanup, tokenizer=args.tokenizer,
        cider_df=args.cider_df, meteor_jvms=args.meteor_jvms,
    )

    keys = [k for ks in selected.values() for k in ks]
    print(f"{len(preds)} predictions scored against {pred_path.name} / {ref_path.name}")
    print(text_table(["metric", "score"], [(k, result[k]) for k in keys]))
    print(f"signature: {result['signature']}")
    if args.per_caption:
        rows = [[ids[i] if ids else i, *(result["per_caption"][k][i] for k in keys)] for i in range(len(preds))]
        print(text_table(["item", *keys], rows))
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json_out}", file=sys.stderr)
    return 0


def _every_installed_metric(default, registry) -> list[str]:
    """Default metrics plus optional ones whose dependencies are installed."""
    from capeval.registry import metric_class

    names = list(default)
    for name in registry:
        if name in names:
            continue
        try:
            metric_class(name).check_available()
        except (ImportError, AttributeError, OSError):
            continue
        names.append(name)
    return names
