"""``capeval score-dataset``: score a dataset (Hugging Face, parquet or JSON-lines shards) into parquet shards and
``result.json``, resumably, over processes (``--processes N``) or GPUs and machines (``accelerate launch -m capeval
score-dataset ...``); :func:`capeval.score_dataset`."""
from __future__ import annotations

import argparse
from pathlib import Path

from capeval.cli.output import (add_json_argument, add_model_arguments, add_progress_argument, for_terminal,
                                model_options, text_stream, write_json)
from capeval.registry import DEFAULT_METRICS, metric_list
from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, EMPTY_CHOICES


def register(sub: argparse._SubParsersAction) -> None:
    from capeval.cli.cmd_score import _limit, _positive
    from capeval.dataset_scoring import DEFAULT_CHUNK_SIZE, ENGINES, ON_ERROR

    p = sub.add_parser(
        "score-dataset",
        help="score a dataset (Hub id, parquet / JSON-lines files) into parquet shards, resumably",
        description="Score every row of a dataset into DIR/shards/part-*.parquet (the id column and one column per "
                    "per-caption result key) and DIR/result.json (corpus values, signature, row count), chunk by "
                    "chunk: killed at any moment, the same command finishes the rest. The numbers are capeval "
                    f"score's on the whole data. Metrics (result keys): {metric_list()}.",
    )
    p.add_argument("data", metavar="DATA",
                   help="a parquet / JSON-lines file, a folder of such shards (sorted by name), or a Hugging Face "
                        "Hub dataset id with --split (streamed)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="output folder: new, empty, or one an earlier run with the same settings wrote (resumed); "
                        "any other is refused and left untouched")
    p.add_argument("--metrics", default=",".join(DEFAULT_METRICS), metavar="NAMES",
                   help=f"comma-separated metric names or result keys (default: {','.join(DEFAULT_METRICS)})")
    p.add_argument("--split", default=None, help="the split of a Hub dataset (or of a DatasetDict)")
    p.add_argument("--chunk-size", type=_positive, default=DEFAULT_CHUNK_SIZE, metavar="N",
                   help=f"rows per chunk: memory, and how much a crash can cost (default {DEFAULT_CHUNK_SIZE})")
    p.add_argument("--processes", type=_positive, default=1, metavar="N",
                   help="score the chunks in N processes on this machine (chunk k in process k mod N); the output "
                        "is identical to one process. Across GPUs or machines: accelerate launch [its options] "
                        "-m capeval score-dataset ...")
    p.add_argument("--engine", choices=list(ENGINES), default="local",
                   help="what scores the chunks: local (this machine's processes, default) or ray (a Ray cluster's "
                        "actors; pip install \"capeval[ray]\"); the output is the same, and either resumes the other's "
                        "folder")
    p.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --engine ray: the cluster (ray.init's address: auto, ray://HOST:PORT; default "
                        "$RAY_ADDRESS or a new local Ray)")
    p.add_argument("--ray-actors", type=_positive, default=None, metavar="N",
                   help="with --engine ray: scoring actors, each loading the models once (default: one per CPU of the "
                        "cluster, or per --ray-gpus-per-actor of its GPUs)")
    p.add_argument("--ray-gpus-per-actor", type=_non_negative, default=0.0, metavar="G",
                   help="with --engine ray: GPUs (or a fraction of one) each actor reserves (default 0: CPU actors)")
    p.add_argument("--prediction-column", default="prediction", metavar="NAME")
    p.add_argument("--references-column", default="references", metavar="NAME",
                   help="a reference string or a list of them per row (default: references)")
    p.add_argument("--image-column", default=None, metavar="NAME",
                   help="one image per row (a path, relative to the data files' folder, or a datasets Image) for "
                        "metrics that read images")
    p.add_argument("--id-column", default="id", metavar="NAME",
                   help="copied into the shards (default: id; 'none' numbers the rows instead, column 'row')")
    p.add_argument("--on-error", choices=list(ON_ERROR), default="raise",
                   help="a row with an empty or missing prediction or references, a wrong type, an over-long "
                        "caption, or (with --image-column) a missing or unreadable image: raise (default: stop, "
                        "naming the row, counted from 0 in the input's order, and its id) or skip (the other rows "
                        "scored; the skipped ones listed in result.json by row and id)")
    p.add_argument("--cleanup", default="thumb", choices=["thumb", "none"])
    p.add_argument("--tokenizer", default="ptb", choices=["ptb", "ptb-ctx", "ptb-java"])
    add_model_arguments(p, extra_help={"cider_df": " (references: counted over every row's references in a first "
                                                   "pass)"})
    p.add_argument("--max-caption-chars", type=_limit, default=DEFAULT_MAX_CAPTION_CHARS, metavar="N",
                   help=f"rows with a longer caption are errors (--on-error) for METEOR / SPICE / LCEval (default "
                        f"{DEFAULT_MAX_CAPTION_CHARS}; 'none' for no limit)")
    p.add_argument("--empty", choices=list(EMPTY_CHOICES), default="error",
                   help="an empty prediction: 'error' (default: a bad row, see --on-error) or 'zero' (scored 0)")
    p.add_argument("--no-language-check", action="store_true",
                   help="do not warn about rows that do not look English")
    add_json_argument(p, "the result (result.json's content)", dest="json_out")
    add_progress_argument(p)
    p.set_defaults(func=run)


def _non_negative(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r:.40}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r:.40}")
    return value


def run(args: argparse.Namespace) -> int:
    from capeval.dataset_scoring import score_dataset
    from capeval.render import text_table

    from capeval.cli.metric_flags import registered_options

    declared = registered_options()
    # an option given at its default is left out: the settings of a run with it and without it are the same
    options = {k: v for k, v in model_options(args).items() if v != declared[k][0].default}
    id_column = None if str(args.id_column).lower() == "none" else args.id_column
    result = score_dataset(args.data, metrics=args.metrics, output_dir=args.out, split=args.split,
                           prediction_column=args.prediction_column, references_column=args.references_column,
                           image_column=args.image_column, id_column=id_column, chunk_size=args.chunk_size,
                           processes=args.processes, on_error=args.on_error, cleanup=args.cleanup,
                           tokenizer=args.tokenizer, max_caption_chars=args.max_caption_chars, empty=args.empty,
                           language_check=not args.no_language_check, progress=args.progress, engine=args.engine,
                           ray_address=args.ray_address, ray_actors=args.ray_actors,
                           ray_gpus_per_actor=args.ray_gpus_per_actor, **options)
    if result is None:  # a non-main process of accelerate launch
        return 0
    out = text_stream(args.json_out)
    keys = [k for k in result if isinstance(result[k], float)]
    print(for_terminal(f"{result['rows']:,} row(s) scored in {result['chunks']} chunk(s); shards: "
                       f"{args.out / 'shards'}"), file=out)
    print(text_table(["metric", "score"], [(k, result[k]) for k in keys]), file=out)
    if result["skipped"]["count"]:
        first = result["skipped"]["rows"][0]
        print(for_terminal(f"skipped {result['skipped']['count']} row(s) (listed in result.json), e.g. row "
                           f"{first['row']} (id {first['id']!r}): {first['why']}"), file=out)
    if result.get("coverage"):
        from capeval.cli.cmd_score import coverage_line

        print(for_terminal(coverage_line(result["coverage"])), file=out)
    print(for_terminal(f"signature: {result['signature']}"), file=out)
    if args.json_out:
        write_json(args.json_out, result)
    return 0
