"""``capeval thumb``: THumB 1.0 human evaluation (report, sheet, collect).

* ``capeval thumb report FILE``: aggregate a THumB-format score file (e.g. ``mscoco_THumB-1.0.jsonl``):
  Table 2 (system means, 90 % bootstrap CIs) and Table 3 (strictly best / worst counts).
* ``capeval thumb sheet OUTPUTS... --out DIR``: blinded annotation sheets (CSV, printable HTML) and key.
* ``capeval thumb collect --key KEY SHEET [SHEET2] --out DIR``: validate, un-blind, aggregate; with two
  annotators also Cohen's κ and the disagreements to review. ``sheet --label-studio`` also writes a Label
  Studio configuration and tasks; ``collect --key KEY EXPORT.json`` reads Label Studio's JSON export;
  ``sheet --checks N`` mixes in attention checks, whose pass rates ``collect`` reports.
* ``capeval thumb push DIR --label-studio URL``: create the Label Studio project on a running server;
  ``collect --key KEY --label-studio URL --project ID`` pulls its annotations; ``status`` shows each
  annotator's progress.
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
    """Add ``capeval thumb`` and its steps (report, sheet, collect, push, status) to the top-level parsers."""
    p = sub.add_parser("thumb", help="THumB rubric human evaluation: report, sheet, collect",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    thumb_sub = p.add_subparsers(dest="thumb_command", metavar="STEP")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    _register_report(thumb_sub)
    _register_sheet(thumb_sub)
    _register_collect(thumb_sub)
    _register_push(thumb_sub)
    _register_status(thumb_sub)


def _register_report(thumb_sub: argparse._SubParsersAction) -> None:
    """``capeval thumb report [FILE]``: aggregate a THumB-format score file."""
    r = thumb_sub.add_parser("report", help="aggregate a THumB-format score file (Tables 2 and 3)",
                             description="Aggregate a THumB-format score file (JSONL/JSON/CSV with P, R, Fl, Con, "
                                         "Inc and SYS / image columns), e.g. the THumB 1.0 release.")
    r.add_argument("scores", type=Path, nargs="?", help="score file (default: <data dir>/thumb/mscoco_THumB-1.0.jsonl)")
    r.add_argument("--paper", action="store_true", help="print the published Table 2/3 values beside")
    add_json_argument(r, "the full result", dest="json_out")
    _add_score_options(r)
    r.set_defaults(func=run_report)


def _register_sheet(thumb_sub: argparse._SubParsersAction) -> None:
    """``capeval thumb sheet OUTPUTS... --out DIR``: blinded annotation sheets."""
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
    s.add_argument("--checks", type=int, default=0, metavar="N",
                   help="mix N attention-check items in blindly (N distinct images each get a caption of another "
                        "image, an obviously wrong caption; only the key says which); `collect` reports each "
                        "annotator's pass rate (a check is passed with precision at most 2). Default 0: none")
    s.set_defaults(func=run_sheet)


def _register_collect(thumb_sub: argparse._SubParsersAction) -> None:
    """``capeval thumb collect --key KEY SHEET...``: validate, un-blind and aggregate filled sheets."""
    c = thumb_sub.add_parser("collect", help="validate and un-blind filled sheets, then aggregate",
                             description="Read filled sheets back (one, or two annotators of the same sheet), "
                                         "validate them, un-blind with the key and print the THumB report.")
    c.add_argument("sheets", nargs="*", type=Path,
                   help="filled sheet CSV(s): one, or two annotators'; or Label Studio JSON export(s) (a JSON "
                        "list of tasks with \"annotations\"; one or two annotators, in one file or one per annotator); "
                        "none with --label-studio and --project")
    c.add_argument("--key", type=Path, required=True, help="key file written by `capeval thumb sheet`")
    _add_server_options(c, "pull the annotations of project ID from a running Label Studio server (its JSON export)",
                        required=False)
    c.add_argument("--out", type=Path, default=None, help="folder for thumb_scores.jsonl, thumb_report.json, "
                                                          "thumb_disagreements.csv")
    c.add_argument("--combine", default="mean", choices=["mean", "first", "last"],
                   help="with two sheets: which ratings enter the report (default: their mean)")
    _add_score_options(c)
    c.set_defaults(func=run_collect)


def _register_push(thumb_sub: argparse._SubParsersAction) -> None:
    """``capeval thumb push DIR --label-studio URL``: create a Label Studio project from a sheet folder."""
    u = thumb_sub.add_parser("push", help="create a Label Studio project from a sheet folder",
                             description="Create a project on a running Label Studio server from what `capeval thumb "
                                         "sheet ... --out DIR --label-studio` wrote: the rubric's labeling "
                                         "configuration, the instructions and one task per blinded item (images: "
                                         "http(s) addresses referenced, local files uploaded: only images under "
                                         "DIR or --image-root, checked before anything is sent). Prints the project id "
                                         "and writes DIR/label-studio/project.json (no token).")
    u.add_argument("sheet_dir", type=Path, metavar="DIR",
                   help="the --out folder of `capeval thumb sheet --label-studio`")
    _add_server_options(u, None, required=True)
    u.add_argument("--project-title", metavar="TITLE", default=None,
                   help="project title, 1-50 characters (default: THumB: <DIR name>)")
    u.add_argument("--annotators", type=int, default=2, metavar="N",
                   help="annotators per task (Label Studio's overlap, maximum_annotations; default 2)")
    u.add_argument("--image-root", type=Path, metavar="ROOT", default=None,
                   help="the folder local images must lie under to be uploaded (default: DIR); a file elsewhere "
                        "(after links and '..' are resolved), or one that is not an image, refuses the push "
                        "before anything is sent")
    add_progress_argument(u)
    u.set_defaults(func=run_push)


def _register_status(thumb_sub: argparse._SubParsersAction) -> None:
    """``capeval thumb status --label-studio URL --project ID``: each annotator's progress."""
    t = thumb_sub.add_parser("status", help="each annotator's progress in a Label Studio project",
                             description="Each annotator's submitted and skipped tasks in a Label Studio project, "
                                         "and what is left.")
    _add_server_options(t, "the project's id (printed by `capeval thumb push`)", required=True)
    t.set_defaults(func=run_status)


def _add_server_options(p: argparse.ArgumentParser, project: str | None, required: bool) -> None:
    """``--label-studio URL --token TOKEN`` and, when ``project`` says what it is for, ``--project ID``."""
    g = p.add_argument_group("Label Studio server")
    g.add_argument("--label-studio", metavar="URL", default=None, required=required,
                   help="the server's address, e.g. http://localhost:8080")
    g.add_argument("--token", default=None,
                   help="a personal access token (or a legacy token); default: $LABEL_STUDIO_API_KEY, which keeps "
                        "it out of the shell history; never printed")
    if project is not None:
        g.add_argument("--project", type=int, metavar="ID", default=None, required=required, help=project)


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
                        image_url=args.image_url, title=args.title, label_studio=args.label_studio,
                        checks=args.checks)
    print(f"{len(files.systems)} systems, {files.n_images} images, {files.n_captions} captions -> "
          f"{files.n_items} sheet items (identical captions of an image merged: {not args.no_dedupe})")
    if files.n_checks:
        print(f"attention checks: {files.n_checks} of the {files.n_items} items are a caption of another image, "
              "mixed in blindly (the key says which)")
    print(f"annotation sheet: {files.csv}\nprintable page:   {files.html}\n"
          f"key file:         {files.key}  (keep it away from the annotators)")
    if files.label_studio is not None:
        ls = files.label_studio
        print(for_terminal(f"Label Studio:     {ls.config} (labeling configuration), {ls.tasks} (tasks to import), "
                           f"{ls.instructions} (instructions)"))
    if files.incomplete_images:
        print(f"warning: {len(files.incomplete_images)} image(s) lack a caption from some system, e.g. "
              f"{files.incomplete_images[:3]}", file=sys.stderr)
    return 0


def run_collect(args: argparse.Namespace) -> int:
    from capeval.thumb.label_studio import looks_like_export
    from capeval.thumb.report import format_report
    from capeval.thumb.workflow import collect, collect_label_studio, collect_label_studio_project

    server = args.label_studio is not None or args.project is not None
    if server:
        if args.sheets:
            raise ValueError(f"give either files ({len(args.sheets)} given) or --label-studio URL --project ID, "
                             "not both.")
        if args.label_studio is None or args.project is None:
            raise ValueError("collecting from a Label Studio server needs both --label-studio URL and --project ID.")
        report = collect_label_studio_project(args.key, args.label_studio, args.project, token=args.token,
                                              out_dir=args.out, combine=args.combine, **_score_options(args))
    else:
        if not args.sheets:
            raise ValueError("nothing to collect: give filled sheet CSV(s) or Label Studio export(s), or "
                             "--label-studio URL --project ID.")
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
    checks = report.get("attention_checks")
    if checks is not None:
        from capeval.thumb.checks import describe

        if agreement is None:
            print()
        for row in checks["annotators"]:
            print(f"attention checks: {describe(row, checks['items'])}")
    for name, path in report["files"].items():
        print(f"{name}: {path}")
    missing = report.get("not_collected")
    if missing:
        print(f"not collected: {missing['annotations']} annotation(s); {missing['items']} item(s) of the key without "
              f"an annotation ({len(missing['problems'])} warning(s) above)")
    return 0


def run_push(args: argparse.Namespace) -> int:
    from capeval.thumb.label_studio_api import push

    from capeval.thumb.label_studio_api import without_userinfo

    pushed = push(args.sheet_dir, args.label_studio, token=args.token, title=args.project_title,
                  annotators=args.annotators, progress=args.progress, image_root=args.image_root)
    server = without_userinfo(args.label_studio)
    images = f", {pushed.uploaded_images} image(s) uploaded" if pushed.uploaded_images else ""
    key = args.sheet_dir / "thumb_key.json"
    print(for_terminal(f"Label Studio project {pushed.id} created: {pushed.url}\n"
                       f"{pushed.tasks} tasks, {pushed.maximum_annotations} annotation(s) per task{images}; recorded "
                       f"in {pushed.record} (no token)\n"
                       f"progress: capeval thumb status --label-studio {server} --project {pushed.id}\n"
                       f"collect:  capeval thumb collect --key {key} --label-studio {server} "
                       f"--project {pushed.id} --out DIR"))
    return 0


def run_status(args: argparse.Namespace) -> int:
    from capeval.render import text_table
    from capeval.thumb.label_studio_api import LabelStudio, progress_of

    state = progress_of(LabelStudio(args.label_studio, args.token), args.project)
    print(f"project {state.id} ({state.title}): {state.tasks} tasks, {state.complete_tasks} with "
          f"{state.maximum_annotations} submitted annotation(s)")
    if not state.annotators:
        print("no annotation yet")
        return 0
    rows = [[a.annotator, a.submitted, a.skipped, a.left, f"{100 * a.submitted / max(state.tasks, 1):.0f}%"]
            for a in state.annotators]
    print(text_table(["annotator", "submitted", "skipped", "left", "done"], rows))
    return 0
