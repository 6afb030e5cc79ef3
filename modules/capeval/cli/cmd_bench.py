"""``capeval bench``: agreement of metrics with human judgments on a benchmark, beside the papers."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import (add_model_arguments, add_json_argument, add_progress_argument, check_output_path,
                                model_options, text_stream, write_json)
from capeval.registry import BENCHMARK_ALIASES, judged_benchmarks, metric_list


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="correlate metrics with human judgments on a benchmark",
        description="Score BENCHMARK with the metrics and compare with human judgments and published numbers. "
                    f"Benchmarks: {', '.join(judged_benchmarks())}. Metrics (result keys): {metric_list()}.",
    )
    aliases = ", ".join(f"{a}={n}" for a, n in BENCHMARK_ALIASES.items() if n in judged_benchmarks())
    p.add_argument("benchmark", help=f"one of {', '.join(judged_benchmarks())} (aliases: {aliases})")
    p.add_argument("--metrics", required=True,
                   help="comma-separated capeval metric names or result keys (e.g. bleu_4,cider_d,spice), or "
                        "evaluate:<module>[@key]")
    p.add_argument("--subset", choices=["8k", "30k", "coco"],
                   help="COMPOSITE: score one subset only (8k: Flickr8k test images, all present for image metrics)")
    p.add_argument("--protocol", choices=["clipscore", "cui"], help="Flickr8k protocol (default clipscore)")
    p.add_argument("--scores", choices=["original", "corrected"],
                   help="Nebula: the test split's human scores as distributed (original, the default) or Pearl's "
                        "corrections (corrected: the mean of the rows of the same image and caption in "
                        "spica_{train,val,test}.csv under <data dir>/nebula/)")
    p.add_argument("--refs", help="PASCAL-50S: expert (default), all or k; ABSTRACT-50S: all (default) or k")
    p.add_argument("--seed", default="0", help="reference-sampling seed, or several: 0,1,2,3,4")
    p.add_argument("--bootstrap", type=int, default=None,
                   help="bootstrap resamples for confidence intervals, the 95%% interval of each metric's headline "
                        "statistic among them (default 0: none; 1000 with --compare)")
    p.add_argument("--compare", action="append", metavar="A,B", default=[],
                   help="paired bootstrap of the headline statistic A - B of two result keys on the same resamples "
                        "(difference, 95%% interval, p, verdict); repeatable; a key not among --metrics is scored "
                        "too; needs --bootstrap N > 0 (default 1000 resamples)")
    p.add_argument("--cleanup", choices=["thumb", "none"], help="clean-up of the text that text-reading metrics see (default thumb); tokens never see it")
    p.add_argument("--tokenizer", choices=["ptb", "ptb-ctx", "ptb-java"], help="tokenizer (default ptb)")
    add_model_arguments(p)
    add_json_argument(p, "{benchmark, settings, results, notes, comparisons}", dest="json_out")
    p.add_argument("--markdown", type=Path, help="write the tables as markdown here")
    p.add_argument("--plot", type=Path, help="write a PNG here: a scatter per metric against the human judgments (the headline "
                        "statistic and its interval in each title), or per-category accuracy bars with their "
                        "intervals as error bars (pairwise benchmarks)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the score cache")
    p.add_argument("--no-length-baseline", action="store_true",
                   help="leave out the caption_length row (words per caption) and the length-controlled column that "
                        "every report carries by default")
    add_progress_argument(p)
    p.set_defaults(func=run)


def _refs(value: str | None):
    if value is None or value in ("expert", "all"):
        return value
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"--refs must be expert, all or an integer, got {value!r}") from None


def _compare(values: list[str] | None) -> list[tuple[str, str]]:
    """``--compare A,B`` values as ``(A, B)`` pairs; ``ValueError`` unless each is two names joined by a comma."""
    pairs = []
    for value in values or ():
        names = [n.strip() for n in value.split(",")]
        if len(names) != 2 or not all(names):
            raise ValueError(f"--compare needs two result keys separated by a comma (e.g. --compare lceval,cider_d), "
                             f"got {value!r}.")
        pairs.append((names[0], names[1]))
    return pairs


def run(args: argparse.Namespace) -> int:
    from capeval.meta_evaluation.harness import run_benchmark
    from capeval.meta_evaluation.report import plot, plot_thumb_systems, render

    try:
        seeds = [int(s) for s in args.seed.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seed must be integers separated by commas, got {args.seed!r}") from None
    for flag, out in (("--json", args.json_out), ("--markdown", args.markdown), ("--plot", args.plot)):
        if out is not None:
            check_output_path(out, flag)  # before hours of scoring, not after
    options = {k: v for k, v in (("cleanup", args.cleanup), ("tokenizer", args.tokenizer)) if v is not None}
    options.update(model_options(args))
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    compare = _compare(args.compare)  # run_benchmark checks the keys and --bootstrap before any scoring
    result = run_benchmark(args.benchmark, metrics, protocol=args.protocol, refs=_refs(args.refs), subset=args.subset,
                           seeds=seeds, bootstrap=args.bootstrap, use_cache=not args.no_cache, metric_options=options,
                           show_progress=args.progress, compare=compare, scores=args.scores,
                           length_baseline=not args.no_length_baseline)
    print(render(result, "text"), file=text_stream(args.json_out))
    if args.json_out:
        write_json(args.json_out, result.to_json(), default=float)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render(result, "markdown") + "\n", encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    if args.plot:
        print(f"wrote {plot(result, args.plot)}", file=sys.stderr)
        if result.benchmark == "thumb":
            extra = args.plot.with_name(args.plot.stem + "-systems.png")
            print(f"wrote {plot_thumb_systems(extra)}", file=sys.stderr)
    return 0
