"""``capeval verify``: re-measure every published number capeval knows; reproduced / differs (by how much) / skipped
(of which kind, why). First the counts, then the differing rows, the reproduced ones one line each and the skipped
ones one line per group (``--show`` lists any status row by row). Exit code 0 unless a row differs or a measurement
fails (then 1)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import (add_json_argument, add_progress_argument, check_output_path, text_stream,
                                write_json)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="re-measure the published numbers capeval knows: reproduced / differs / skipped",
        description="Re-measure every published number of capeval's table (the papers' tables, the leaderboard's "
                    "anchors, the clipscore / pacscore / pycocoevalcap example outputs) wherever the data and "
                    "weights are here, compare each with its stated tolerance (half a unit of the last printed "
                    "digit; SPICE: capeval's fidelity target against official SPICE) and print reproduced, differs "
                    "(by how much) or skipped (why). Printed: first the counts (reproduced, differ, skipped by kind: "
                    "weights, data, irreproducible, not_in_capeval, other), then the differing rows, the reproduced "
                    "ones one line each and the skipped ones one line per group with what is missing and how to get "
                    "it (--show lists rows one by one). Benchmark runs go through `capeval bench`'s score cache, so "
                    "a second run is fast. Exit code: 0 unless a row differs or a measurement fails (1).",
    )
    p.add_argument("--metrics", help="only these metrics (comma-separated result keys, e.g. bleu_4,cider_d,clip_s; "
                                     "published spellings such as refclip_s also work)")
    p.add_argument("--benchmarks", help="only these benchmarks (comma-separated, named as in `capeval bench`, e.g. "
                                        "flickr8k-expert,thumb; also clipscore-example, pacscore-example, "
                                        "pycocoevalcap-example, coco2015)")
    p.add_argument("--fast", action="store_true", help="do not measure SPICE (its rows are skipped, saying so)")
    p.add_argument("--show", metavar="WHAT",
                   help="list these rows one by one instead of the default view (differing rows, reproduced rows, "
                        "skipped rows one line per group): differs, reproduced, skipped (every skipped row with its "
                        "kind and reason) or all, comma-separated; e.g. --show skipped")
    add_json_argument(p, "the rows [{metric, benchmark, published, measured, tolerance, status, skip_kind, reason, "
                         "source, ...}]", dest="json_out")
    p.add_argument("--markdown", type=Path, help="write the table as markdown here")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the score cache")
    add_progress_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capeval.meta_evaluation.verify import render, show_set, verify

    show_set(args.show)  # an unknown --show value: one line, before the measurements
    for flag, out in (("--json", args.json_out), ("--markdown", args.markdown)):
        if out is not None:
            check_output_path(out, flag)  # before the measurements, not after
    split = lambda text: [t.strip() for t in text.split(",") if t.strip()] if text else None  # noqa: E731
    report = verify(split(args.metrics), split(args.benchmarks), fast=args.fast, use_cache=not args.no_cache,
                    show_progress=args.progress)
    print(render(report, "text", show=args.show), file=text_stream(args.json_out))
    if args.json_out:
        write_json(args.json_out, report.to_json())
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render(report, "markdown") + "\n", encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0 if report.ok else 1
