"""``capeval leaderboard``: one metric × benchmark table from ``capeval bench --json`` files."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import add_json_argument, check_output_path, for_terminal, text_stream, write_json

DESCRIPTION = """\
Read `capeval bench BENCHMARK --json FILE` outputs (files, or directories whose *.json are read) and print one table:
a column per benchmark / protocol / COMPOSITE subset, in a fixed order, headed by the benchmark's own statistic
(Kendall tau-c / tau-b, Pearson r in [-1, 1]; PASCAL-50S / ABSTRACT-50S average accuracy in %); a row per capeval
metric (the same metric in several files is one row), then the published anchors (CLIP-S, RefCLIP-S, PAC-S,
RefPAC-S, Polos, BERT-S++, TIGEr, NUBIA) from capeval's table of published numbers, with their citation keys.
Cells: the value with its 95 % bootstrap interval when the file has one; a dagger and footnote number when the
metric's training data overlaps the benchmark, '?' when the file does not say, '—' when not measured.

--json writes {columns, rows, anchors, footnotes, citations, files, notes, comparisons}: columns [{key, benchmark, variant,
subset, statistic, label, unit}]; rows [{metric, cells: {column key: {value, ci, confidence, n_resamples,
contamination, best, file}}}]; anchors [{name, metric, reads_images, kind, citations, cells: {column key: {value,
printed, scale, source, where, via, protocol, protocol_matches, mismatch}}, not_shown}]; footnotes [{id, mark,
kind, text, cells: [{row, column}]}] (see capeval.meta_evaluation.leaderboard).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="one metric x benchmark table from `capeval bench --json` files",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="FILE_OR_DIR",
                   help="`capeval bench --json` files, or directories: their *.json bench payloads (others skipped)")
    p.add_argument("--markdown", type=Path, metavar="OUT", help="write the table as markdown here")
    p.add_argument("--plot", type=Path, metavar="PNG",
                   help="write a figure here: a panel per column, each metric's statistic with its 95%% interval where "
                        "the file has one (`capeval bench --bootstrap N`), contaminated and unknown cells marked, "
                        "published anchors as diamonds")
    add_json_argument(p, "{columns, rows, anchors, footnotes, citations, files, notes}", dest="json_out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capeval.meta_evaluation.leaderboard import build_leaderboard, plot_leaderboard, read_payloads, render

    for flag, out in (("--json", args.json_out), ("--markdown", args.markdown), ("--plot", args.plot)):
        if out is not None:
            check_output_path(out, flag)
    payloads, skipped = read_payloads(args.inputs)
    for note in skipped:
        print(f"capeval leaderboard: skipped {note}", file=sys.stderr)
    board = build_leaderboard(payloads)
    print(for_terminal(render(board, "text")), file=text_stream(args.json_out))
    if args.json_out:
        write_json(args.json_out, board.to_json())
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render(board, "markdown") + "\n", encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    if args.plot:
        print(f"wrote {plot_leaderboard(board, args.plot)}", file=sys.stderr)
    return 0
