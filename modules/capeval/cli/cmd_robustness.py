"""``capeval robustness``: how far metrics fall when human captions are transformed (Cui et al. 2018, §3.4)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.cli.output import (add_model_arguments, add_json_argument, add_progress_argument, check_output_path,
                                model_options, text_stream, write_json)
from capeval.registry import metric_list

TRANSFORM_HELP = "RC (a human caption of a similar image), WP (words permuted), RW (random words)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "robustness",
        help="robustness of metrics to pathological caption transformations (Cui et al. 2018)",
        description="Score every Flickr8k test caption against its image's other 4 captions, transformed by RC, WP "
                    "and RW at strengths gamma; curves of the mean score normalised by the untransformed one, and "
                    "their area (AUC, lower = more robust). "
                    f"Metrics (result keys): {metric_list()}.",
    )
    p.add_argument("--metrics", required=True, help="comma-separated result keys, e.g. bleu_4,cider_d,meteor,spice")
    p.add_argument("--transforms", default="RC,WP,RW", help=f"comma-separated, default RC,WP,RW: {TRANSFORM_HELP}")
    p.add_argument("--gammas", default="0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1",
                   help="strengths in [0, 1], increasing, starting at 0 (default 0,0.1,...,1; also start:stop:step)")
    p.add_argument("--images-limit", type=int, metavar="N", help="only the first N images of the split (quick runs)")
    p.add_argument("--split", choices=("test", "dev"), default="test",
                   help="Flickr8k split (default test, the reported numbers; dev: to choose between models without "
                        "reading test)")
    p.add_argument("--seed", type=int, default=0, help="seed of the transformations (default 0)")
    p.add_argument("--data-dir", type=Path, help="data directory (default $CAPEVAL_DATA_DIR or ../shared/data)")
    p.add_argument("--features", type=Path,
                   help="RC's image features: a `capeval features extract` file (grid features are pooled); "
                        "default: EfficientNet-Lite0 pooled features of the images, computed and disk-cached")
    add_json_argument(p, "{settings, auc, results (curves), examples}", dest="json_out")
    p.add_argument("--plot", type=Path, help="write a PNG (one panel per transformation, AUC in the legend) here")
    p.add_argument("--markdown", type=Path, help="write the AUC table as markdown here")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the score cache")
    # hidden: run on given captions instead of Flickr8k (tests, other corpora). JSON {"captions": {image: [...]},
    # "vocabulary": [...] or "train_captions": {image: [...]}, optional "features": {image: [floats]},
    # optional "images": {image: path}}
    p.add_argument("--captions-json", type=Path, help=argparse.SUPPRESS)
    add_model_arguments(p)
    add_progress_argument(p)
    p.set_defaults(func=run)


def _given_data(path: Path):
    from capeval.meta_evaluation.robustness import RobustnessData, train_vocabulary

    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno}).") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("captions"), dict):
        raise ValueError(f"{path}: expected {{\"captions\": {{image: [captions]}}, \"vocabulary\": [words], ...}}.")
    vocabulary = payload.get("vocabulary")
    if vocabulary is None:
        vocabulary = train_vocabulary(payload.get("train_captions") or {})
    images = payload.get("images")
    return RobustnessData(payload["captions"], vocabulary,
                          None if images is None else {k: Path(v) for k, v in images.items()},
                          payload.get("features"), source=f"given captions ({path})")


def run(args: argparse.Namespace) -> int:
    from capeval.meta_evaluation.robustness import parse_gammas, plot_robustness, render, run_robustness

    for flag, out in (("--json", args.json_out), ("--plot", args.plot), ("--markdown", args.markdown)):
        if out is not None:
            check_output_path(out, flag)  # before the scoring, not after
    gammas = parse_gammas(args.gammas)
    if args.data_dir is not None and not args.data_dir.is_dir():
        raise FileNotFoundError(f"--data-dir {args.data_dir} is not a directory.")
    data = _given_data(args.captions_json) if args.captions_json else None
    features = None
    if args.features is not None:
        from capeval.models.feature_table import FeatureTable

        features = FeatureTable.load(args.features)
    result = run_robustness(args.metrics, data, transforms=args.transforms, gammas=gammas, seed=args.seed,
                            root=args.data_dir, images_limit=args.images_limit, split=args.split, features=features,
                            use_cache=not args.no_cache, metric_options=model_options(args) or None,
                            show_progress=args.progress)
    print(render(result, "text"), file=text_stream(args.json_out))
    if args.json_out:
        write_json(args.json_out, result.to_json())
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render(result, "markdown") + "\n", encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    if args.plot:
        print(f"wrote {plot_robustness(result, args.plot)}", file=sys.stderr)
    return 0
