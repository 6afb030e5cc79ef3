"""``capeval thumb``: THumB 1.0 human evaluation (report, sheet, collect).

* ``capeval thumb report FILE``: aggregate a THumB-format score file (e.g. ``mscoco_THumB-1.0.jsonl``):
  Table 2 (system means, 90 % bootstrap CIs) and Table 3 (strictly best / worst counts).
* ``capeval thumb sheet OUTPUTS... --out DIR``: blinded annotation sheets (CSV, printable HTML) and key.
* ``capeval thumb collect --key KEY SHEET [SHEET2] --out DIR``: validate, un-blind, aggregate; with two
  annotators also Cohen's κ and the disagreements to review. ``sheet --label-studio`` also writes a Label
  Studio configuration and tasks; ``collect --key KEY EXPORT.json`` reads Label Studio's JSON export.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import (add_json_argument, add_progress_argument, check_output_path, for_terminal, text_stream,
                                write_json)


def _add_score_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("aggregation (defaults: THumB 1.0)")
    g.add_argument("--precision-weight", type=float, default=0.5,
                   help="weight of P in the total; R gets 1 minus it (default 0.5)")
    g.add_argument("--fluency-scale", type=float, default=1.0, help="multiplier of the fluency penalty (default 1)")
    g.add_argument("--conciseness-scale", type=float, default=1.0, help="multiplier of the conciseness penalty")
    g.add_argument("--inclusive-scale", type=float, default=1.0, help="multiplier of the inclusive-language penalty")
    g.add_argument("--bootstrap-samples", type=int, default=1000, help="bootstrap replicates (0: no CIs)")
    g.add_argument("--seed", type=int, default=12345, help="bootstrap seed (default 12345)")
    g.add_argument("--confidence-level", type=float, default=0.9, help="CI level (default 0.9)")
    g.add_argument("--markdown", action="store_true", help="print markdown tables")
    add_progress_argument(p)


def _score_options(args: argparse.Namespace) -> dict:
    return {
        "precision_weight": args.precision_weight, "fluency_scale": args.fluency_scale,
        "conciseness_scale": args.conciseness_scale, "inclusive_scale": args.inclusive_scale,
        "bootstrap_samples": args.bootstrap_samples, "seed": args.seed, "confidence_level": args.confidence_level,
        "progress": args.progress,
    }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("thumb", help="THumB rubric human evaluation: report, sheet, collect",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    thumb_sub = p.add_subparsers(dest="thumb_command", metavar="STEP")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    r = thumb_sub.add_parser("report", help="aggregate a THumB-format score file (Tables 2 and 3)",
                             description="Aggregate a THumB-format score file (JSONL/JSON/CSV with P, R, Fl, Con, "
                                         "Inc and SYS / image columns), e.g. the THumB 1.0 release.")
    r.add_argument("scores", type=Path, nargs="?", help="score file (default: <data dir>/thumb/mscoco_THumB-1.0.jsonl)")
    r.add_argument("--paper", action="store_true", help="print the published Table 2/3 values beside")
    add_json_argument(r, "the full result", dest="json_out")
    _add_score_options(r)
    r.set_defaults(func=run_report)

    s = thumb_sub.add_parser("sheet", help="make blinded annotation sheets from system outputs",
                             description="Blinded THumB annotation sheets. OUTPUTS: one JSON mapping system -> "
                                         "[{image, caption}], or one file per system as NAME=PATH (or PATH; name = "
                                         "file stem) in COCO results / JSONL / CSV format with image ids.")
    s.add_argument("outputs", nargs="+", help="system output file(s)")
    s.add_argument("--out", type=Path, required=True, help="output folder for the sheet, HTML page and key")
    s.add_argument("--seed", type=int, default=0, help="shuffle seed (default 0)")
    s.add_argument("--cleanup", default="thumb", choices=["thumb", "none"],
                   help="caption clean-up before display (default THumB's)")
    s.add_argument("--no-dedupe", action="store_true",
                   help="keep identical captions of one image as separate items")
    s.add_argument("--image-url", default=None,
                   help="show images in the HTML page: URL/path template with {image}, e.g. 'imgs/{image}'")
    s.add_argument("--title", default="THumB annotation sheet")
    s.add_argument("--label-studio", action="store_true",
                   help="also write DIR/label-studio/config.xml (labeling configuration), tasks.json (one task "
                        "per blinded item, no system names) and instructions.html, to import in Label Studio")
    s.set_defaults(func=run_sheet)

    c = thumb_sub.add_parser("collect", help="validate and un-blind filled sheets, then aggregate",
                             description="Read filled sheets back (one, or two annotators of the same sheet), "
                                         "validate them, un-blind with the key and print the THumB report.")
    c.add_argument("sheets", nargs="+", type=Path,
                   help="filled sheet CSV(s): one, or two annotators'; or Label Studio JSON export(s) (a JSON "
                        "list of tasks with \"annotations\"; one or two annotators, in one file or one per annotator)")
    c.add_argument("--key", type=Path, required=True, help="key file written by `capeval thumb sheet`")
    c.add_argument("--out", type=Path, default=None, help="folder for thumb_scores.jsonl, thumb_report.json, "
                                                          "thumb_disagreements.csv")
    c.add_argument("--combine", default="mean", choices=["mean", "first", "last"],
                   help="with two sheets: which ratings enter the report (default: their mean)")
    _add_score_options(c)
    c.set_defaults(func=run_collect)


def run_report(args: argparse.Namespace) -> int:
    from capeval.paths import data_dir
    from capeval.thumb import score
    from capeval.thumb.records import load_scores
    from capeval.thumb.report import format_report

    if args.json_out:
        check_output_path(args.json_out)
    path = args.scores
    if path is None:
        path = data_dir(required=True) / "thumb" / "mscoco_THumB-1.0.jsonl"
    table = load_scores(path)
    result = score(table.precision, table.recall, table.fluency, table.conciseness, table.inclusive,
                   systems=table.systems, images=table.images, **_score_options(args))
    out = text_stream(args.json_out)
    print(f"{path}", file=out)
    text = format_report(result, fmt="markdown" if args.markdown else "text", paper=args.paper)
    print(text if args.markdown else for_terminal(text), file=out)
    if table.given_total is not None:
        given = [float(v) for v in table.given_total]
        same = sum(abs(a - b) <= 1e-9 for a, b in zip(result["per_caption"]["total"], given))
        print(f"per-caption totals equal to the file's given totals: {same}/{len(given)}", file=out)
    if args.json_out:
        write_json(args.json_out, result)
    return 0


def run_sheet(args: argparse.Namespace) -> int:
    from capeval.thumb.workflow import make_sheets

    files = make_sheets(args.outputs, args.out, seed=args.seed, cleanup=args.cleanup, dedupe=not args.no_dedupe,
                        image_url=args.image_url, title=args.title, label_studio=args.label_studio)
    print(f"{len(files.systems)} systems, {files.n_images} images, {files.n_captions} captions -> "
          f"{files.n_items} sheet items (identical captions of an image merged: {not args.no_dedupe})")
    print(f"annotation sheet: {files.csv}\nprintable page:   {files.html}\n"
          f"key file:         {files.key}  (keep it away from the annotators)")
    if files.label_studio is not None:
        ls = files.label_studio
        print(f"Label Studio:     {ls.config} (labeling configuration), {ls.tasks} (tasks to import), "
              f"{ls.instructions} (instructions)")
    if files.incomplete_images:
        print(f"warning: {len(files.incomplete_images)} image(s) lack a caption from some system, e.g. "
              f"{files.incomplete_images[:3]}", file=sys.stderr)
    return 0


def run_collect(args: argparse.Namespace) -> int:
    from capeval.thumb.report import format_report
    from capeval.thumb.workflow import collect

    from capeval.thumb.label_studio import looks_like_export
    from capeval.thumb.workflow import collect_label_studio

    kinds = [looks_like_export(p) for p in args.sheets]
    if any(kinds) and not all(kinds):
        raise ValueError("give either filled CSV sheets or Label Studio JSON exports, not both; got "
                         f"{sum(kinds)} JSON and {len(kinds) - sum(kinds)} other file(s).")
    run = collect_label_studio if all(kinds) else collect
    report = run(args.key, args.sheets, out_dir=args.out, combine=args.combine, **_score_options(args))
    text = format_report(report["result"], fmt="markdown" if args.markdown else "text")
    print(text if args.markdown else for_terminal(text))
    agreement = report["agreement"]
    if agreement is not None:
        def fmt(k):
            return f"{k:.3f}" if isinstance(k, float) else k
        print(f"\nagreement over {agreement['items']} items: Cohen's kappa P {fmt(agreement['kappa_precision'])}, "
              f"R {fmt(agreement['kappa_recall'])}; {agreement['disagreements']} item(s) differ "
              f"(report uses: {agreement['combine']})")
    for name, path in report["files"].items():
        print(f"{name}: {path}")
    missing = report.get("not_collected")
    if missing:
        print(f"not collected: {missing['annotations']} annotation(s); {missing['items']} item(s) of the key without "
              f"an annotation ({len(missing['problems'])} warning(s) above)")
    return 0

