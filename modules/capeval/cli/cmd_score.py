"""``capeval score``: score a predictions file against a references file."""
from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from capeval.cli.output import (
    add_json_argument,
    add_model_arguments,
    add_progress_argument,
    add_signature_argument,
    check_output_path,
    model_options,
    print_signature,
    text_stream,
    write_json,
)
from capeval.registry import DEFAULT_METRICS, REGISTRY, metric_list, metric_options
from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, EMPTY_CHOICES

__all__ = ["check_output_path", "example_files", "register", "run"]  # check_output_path: its old home


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "score",
        help="score predictions against references",
        description=f"Score captions. Metrics (result keys): {metric_list()}. A metric name selects all its "
                    "keys, a result key only itself.",
    )
    p.add_argument("--metrics", default=None, metavar="NAMES",
                   help=f"comma-separated metric names or result keys (default: {','.join(DEFAULT_METRICS)}; "
                        "with --example: every installed metric)")
    p.add_argument("--predictions", type=Path, help="JSON / JSONL / CSV / COCO results file")
    p.add_argument("--references", type=Path, help="JSON / JSONL / CSV / COCO annotations file")
    p.add_argument("--example", action="store_true", help="score the bundled example (offline)")
    add_json_argument(p, "the result (same keys)", dest="json_out")
    p.add_argument("--cleanup", default="thumb", choices=["thumb", "none"],
                   help="clean-up of the text that text-reading metrics see; tokens never see it")
    p.add_argument("--tokenizer", default="ptb", choices=["ptb", "ptb-ctx", "ptb-java"])
    add_model_arguments(p, extra_help={"cider_df": " (with --example the default is coco-val2014: the example's "
                                                   "8 captions are too few for their own)"})
    p.add_argument("--max-caption-chars", type=_limit, default=DEFAULT_MAX_CAPTION_CHARS, metavar="N",
                   help=f"refuse captions longer than N characters before METEOR/SPICE/SPICE-U run "
                        f"(default {DEFAULT_MAX_CAPTION_CHARS}; 'none' for no limit)")
    p.add_argument("--empty", choices=list(EMPTY_CHOICES), default="error",
                   help="an empty or whitespace-only prediction: 'error' (default) refuses the file naming it; "
                        "'zero' scores it 0 on every metric, with a warning naming it")
    p.add_argument("--duplicate-ids", choices=["error", "split"], default="error",
                   help="predictions with a repeated image id: 'error' (default) refuses the file; 'split' scores "
                        "the k-th caption of every image as captioner k, each captioner separately (for files "
                        "that list several systems' captions per image in a fixed order)")
    images = p.add_mutually_exclusive_group()
    images.add_argument("--images", type=Path, default=None, metavar="FILE",
                        help="one image per prediction, in prediction order, for metrics that read images: a text "
                             "file with one image path per line or a JSON list of paths (relative paths are "
                             "resolved against FILE's folder). Ignored by metrics that read no image")
    images.add_argument("--image-dir", type=Path, default=None, metavar="DIR",
                        help="the folder of the images, for a predictions file with image ids (COCO results "
                             "'image_id', a JSON/JSONL/CSV image or id field): the image of id X is DIR/X, else "
                             "DIR/X.jpg, else (integer ids) DIR/COCO_val2014_<X, 12 digits>.jpg")
    p.add_argument("--per-caption", action="store_true", help="also print per-caption scores")
    add_signature_argument(p)
    p.add_argument("--features", action="store_true",
                   help="with lceval / lceval_released / lceval_plus: add each caption's LCEval features to the JSON "
                        "result (under lceval_features / lceval_released_features / lceval_plus_features) and print "
                        "them with --per-caption")
    p.add_argument("--no-language-check", action="store_true",
                   help="do not warn about predictions or references that do not look English (capeval's metrics "
                        "were built for English captions; the check never changes a score)")
    p.add_argument("--processes", type=_positive, default=1, metavar="N",
                   help="split the heavy per-caption work (SPICE parsing, METEOR) over N processes started with "
                        "accelerate (pip install accelerate); the scores are identical to one process. "
                        "`accelerate launch --multi_gpu --num_processes N -m capeval score ...` and torchrun do the same")
    add_progress_argument(p)
    p.set_defaults(func=run)


def _positive(value: str, alternative: str = "") -> int:
    """A positive integer argument; the argparse error says what else is accepted (``alternative``)."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer{' ' + alternative if alternative else ''}, "
                                         f"got {value!r}")
    return n



def _limit(value: str) -> int | None:
    if value.strip().lower() in ("none", "0", "off"):
        return None
    return _positive(value, "or 'none'")


def example_files() -> tuple[Path, Path]:
    root = resources.files("capeval") / "data" / "example"
    return Path(str(root / "predictions.json")), Path(str(root / "references.json"))


#: Set in the environment of the processes :func:`_relaunch` starts: their parent says "interrupted" once for all.
RELAUNCHED_ENV = "CAPEVAL_RELAUNCHED_BY"
#: Seconds the launcher gets to stop its processes after Ctrl-C or SIGTERM before it is killed.
STOP_GRACE_S = 20


def _die_with_parent() -> None:
    """In the launcher, before it runs: SIGTERM when its parent dies, even by SIGKILL, so that a killed
    ``capeval score --processes`` never leaves processes scoring beside a restarted one (the launcher stops its
    workers on SIGTERM)."""
    import signal

    from capeval.workers import die_with_parent

    die_with_parent(signal.SIGTERM)


def _relaunch(args: argparse.Namespace) -> int:
    """Run this same command in ``--processes`` processes under ``accelerate launch``; its exit code.

    Ctrl-C or SIGTERM here: the launcher gets SIGINT (it passes it to its processes, which stop without a word:
    :data:`RELAUNCHED_ENV`), then SIGKILL after :data:`STOP_GRACE_S`; the caller prints the one line."""
    import os
    import signal
    import subprocess

    from capeval.dependencies import require
    from capeval.parallel import launch_command

    require("accelerate", "torch", what="capeval score --processes")
    argv = getattr(args, "argv", None)
    if argv is None:
        raise ValueError("--processes needs the command line to relaunch: run it through capeval.cli.main.")
    command = launch_command(args.processes, argv)
    if command[1:3] != ["-m", "accelerate.commands.launch"]:
        raise RuntimeError(f"unexpected launch command {command[:3]}")
    command[1:3] = ["-m", "capeval.cli.launcher"]  # accelerate launch, quiet when stopped
    from capeval.cli import ERRORS_FOLDER_ENV, say_relaunched_errors
    from capeval.scratch import scratch_folder

    with scratch_folder("capeval-processes-") as folder:
        errors = str(folder)
        env = dict(os.environ, **{RELAUNCHED_ENV: str(os.getpid()), ERRORS_FOLDER_ENV: errors})
        launcher = subprocess.Popen(command, env=env,
                                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        try:
            code = launcher.wait()
        except KeyboardInterrupt:  # Ctrl-C (the terminal sent it to the processes too) or SIGTERM (cli.Terminated)
            if launcher.poll() is None:
                launcher.send_signal(signal.SIGINT)
            try:
                launcher.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                launcher.kill()
                launcher.wait()
            raise
        say_relaunched_errors(errors)  # every process met the same bad input: its line once
        return code


def run(args: argparse.Namespace) -> int:
    from capeval.io import (
        load_predictions,
        load_references,
        split_by_occurrence,
        unscored_reference_ids,
    )
    from capeval.registry import resolve

    chosen = _scorer_of_this_process(args)
    if isinstance(chosen, int):  # --processes N: relaunched, and its exit status
        return chosen
    score, main_process = chosen
    pred_path, ref_path = _input_paths(args)
    if args.json_out:
        check_output_path(args.json_out)
    metrics = args.metrics
    if metrics is None and args.example:
        metrics = _every_installed_metric(DEFAULT_METRICS, REGISTRY)
    selected = resolve(metrics)  # an unknown metric name fails before the files are read
    keys = [k for ks in selected.values() for k in ks]

    from capeval.cli.score_in_chunks import streamable, warn_unscored

    if streamable(args, selected, main_process, pred_path):  # too many: streamed and scored in chunks
        _score_streamed(args, (pred_path, ref_path), metrics, selected, keys)
        return 0
    split = args.duplicate_ids == "split"
    ids, preds = load_predictions(pred_path, allow_duplicate_ids=split, allow_empty=args.empty == "zero")
    ref_ids, refs = load_references(ref_path)
    if split and ids is None:
        raise ValueError(f"--duplicate-ids split needs image ids in {pred_path.name} (COCO results, CSV/JSONL with ids).")
    images = _images(args, ids, len(preds), pred_path)
    rows = list(range(len(preds)))
    systems = split_by_occurrence(ids, rows) if split else [(ids, rows)]  # prediction rows per captioner
    unscored = unscored_reference_ids(ids, ref_ids)
    if unscored and main_process:
        warn_unscored(len(unscored), len(ref_ids), unscored[:3])
    options = _score_options(args, selected)
    results = _score_systems(args, score, main_process, split, systems, (ids, preds, ref_ids, refs, images),
                             metrics, selected, options)
    if not main_process:
        return 0  # the main process prints and writes the result
    out = text_stream(args.json_out)
    if not split:
        payload = _print_one(args, results[0], keys, selected, (pred_path, ref_path), out)
    else:
        payload = _print_captioners(args, results, keys, ids, (pred_path, ref_path), out)
    if args.json_out:
        write_json(args.json_out, payload)
    return 0


def _scorer_of_this_process(args: argparse.Namespace):
    """``(score function, whether this is the main process)``: :func:`capeval.score`, or its process-shared form in
    one of several processes (``--processes``, ``accelerate launch``, ``torchrun``); an ``int`` (the exit status)
    when ``--processes N`` relaunched the command."""
    from capeval.api import score
    from capeval.parallel import in_distributed_launch

    if in_distributed_launch():
        from functools import partial

        from capeval.parallel import process_state
        from capeval.parallel import score as score_shared

        state = process_state()
        return partial(score_shared, state=state), state.is_main_process
    if getattr(args, "processes", 1) > 1:
        return _relaunch(args)
    return score, True


def _input_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """The predictions and references files: the bundled example's, or the ones given."""
    if args.example:
        return example_files()
    if args.predictions and args.references:
        return args.predictions, args.references
    raise ValueError("give --predictions FILE and --references FILE, or --example")


def _score_options(args: argparse.Namespace, selected: dict[str, list[str]]) -> dict:
    """The keyword arguments of :func:`capeval.score` the flags give (the metrics' options included; ``--features``:
    each selected metric's ``<name>_features``)."""
    given = model_options(args)
    if args.example:
        given.setdefault("cider_df", "coco-val2014")
    options = dict(cleanup=args.cleanup, tokenizer=args.tokenizer, max_caption_chars=args.max_caption_chars, empty=args.empty,
                   language_check=not args.no_language_check,
                   progress=args.progress, **given)
    if getattr(args, "features", False):
        learned = [name for name in selected if f"{name}_features" in metric_options(name)]
        if not learned:
            offering = [name for name in REGISTRY if f"{name}_features" in metric_options(name)]
            raise ValueError(f"--features needs --metrics {', '.join(offering[:-1])} or {offering[-1]} (the metrics "
                             "with a <name>_features option).")
        options.update({f"{name}_features": True for name in learned})
    return options


def _score_systems(args, score, main_process: bool, split: bool, systems, inputs, metrics, selected,
                   options: dict) -> list[tuple]:
    """``[(ids, predictions, result), ...]``, one per captioner (one without ``--duplicate-ids split``)."""
    from capeval.io import pair

    _, preds, ref_ids, refs, images = inputs
    results = []
    for s_ids, s_rows in systems:
        s_ids, s_preds, s_refs = pair(s_ids, [preds[i] for i in s_rows], ref_ids, refs)
        extra = {} if images is None else {"images": [images[i] for i in s_rows]}  # pair keeps prediction order
        results.append((s_ids, s_preds, score(s_preds, s_refs, metrics=metrics, **options, **extra)))
    return results


def _score_streamed(args, paths: tuple[Path, Path], metrics, selected, keys: list[str]) -> None:
    """Above the in-memory limit: the files streamed and scored in chunks (:mod:`capeval.cli.score_in_chunks`); the
    same tables and ``--json`` result as :func:`_print_one`, the per-caption ones read shard by shard."""
    from capeval.cli.output import write_json_streamed
    from capeval.cli.score_in_chunks import scored_files
    from capeval.render import text_table_lines

    pred_path = paths[0]
    options = _score_options(args, selected)
    with scored_files(args, paths, metrics=metrics, selected=selected, options=options,
                      images_of=lambda ids, n: _images(args, ids, n, pred_path)) as scored:
        out = text_stream(args.json_out)
        _print_head(args, scored.n, scored.result, keys, paths, out)
        if args.per_caption:
            def rows():
                return ([ident, _shown(caption), *values] for ident, caption, values in scored.rows())

            for line in text_table_lines(["item", "caption", *keys], rows, overflow="cut"):
                print(line, file=out)
        if args.json_out:
            write_json_streamed(args.json_out, scored.payload(per_caption=True))


def _print_one(args, scored: tuple, keys: list[str], selected, paths: tuple[Path, Path], out) -> dict:
    """Print one captioner's tables; the ``--json`` payload."""
    from capeval.render import text_table

    ids, preds, result = scored
    _print_head(args, len(preds), result, keys, paths, out)
    if args.per_caption:
        rows = [[ids[i] if ids else i, _shown(preds[i]), *(result["per_caption"][k][i] for k in keys)]
                for i in range(len(preds))]
        print(text_table(["item", "caption", *keys], rows, overflow="cut"), file=out)
        for name in selected:
            feats = result.get(f"{name}_features")
            if feats:
                names = list(feats[0])
                print(f"{name} features:", file=out)
                print(text_table(["item", *names], [[ids[i] if ids else i, *(feats[i][f] for f in names)]
                                                    for i in range(len(preds))]), file=out)
                break
    # keyed input (COCO results, pycocoevalcap dicts, files with ids): each per-caption entry's image id, as
    # capeval.score gives them for keyed input
    return result if ids is None else {**result, "image_ids": list(ids)}


def _print_head(args, n: int, result: dict, keys: list[str], paths: tuple[Path, Path], out) -> None:
    """The lines before the per-caption table: what was scored, the scores, coverage, scale and signature."""
    from capeval.render import fit_text, text_table

    pred_path, ref_path = paths
    source = (f"capeval's bundled example ({pred_path.parent})" if args.example else
              f"{pred_path.name} / {ref_path.name}")
    print(fit_text(f"{_count(n, 'prediction')} scored against {source}"), file=out)
    print(text_table(["metric", "score"], [(k, result[k]) for k in keys]), file=out)
    if result.get("coverage"):
        print(fit_text(coverage_line(result["coverage"])), file=out)
    if scale_line(result["signature"]):
        print(fit_text(scale_line(result["signature"])), file=out)
    print_signature(result["signature"], args, out)


def _print_captioners(args, results: list[tuple], keys: list[str], ids, paths: tuple[Path, Path], out) -> dict:
    """Print the tables of several captioners (``--duplicate-ids split``); the ``--json`` payload."""
    from capeval.render import fit_text, text_table

    pred_path, ref_path = paths
    sizes = [len(p) for _, p, _ in results]
    print(fit_text(f"{_count(sum(sizes), 'prediction')} for {_count(len(set(map(str, ids))), 'image')} in "
                   f"{pred_path.name}: scored as {_count(len(results), 'captioner')} (the k-th caption of every "
                   f"image = captioner k; {' / '.join(map(str, sizes))} captions) against {ref_path.name}"),
          file=out)
    if len(set(sizes)) > 1:
        print("capeval score: warning: the captioners have different numbers of captions, so their scores "
              "come from different image sets (CIDEr-D document frequencies too)", file=sys.stderr)
    headers = ["metric", *(f"captioner {k + 1}" for k in range(len(results)))]
    print(text_table(headers, [(k, *(r[k] for _, _, r in results)) for k in keys]), file=out)
    for k, (_, _, r) in enumerate(results):
        if r.get("coverage"):
            print(fit_text(f"captioner {k + 1}: {coverage_line(r['coverage'])}"), file=out)
        print_signature(r["signature"], args, out, label=f"signature (captioner {k + 1})")
    if args.per_caption:
        for k, (s_ids, s_preds, r) in enumerate(results):
            print(f"captioner {k + 1}:", file=out)
            print(text_table(["item", "caption", *keys],
                             [[s_ids[i], _shown(s_preds[i]), *(r["per_caption"][key][i] for key in keys)]
                              for i in range(len(s_preds))], overflow="cut"), file=out)
    return {"captioners": [dict(r, image_ids=s_ids) for s_ids, _, r in results]}


def coverage_line(coverage: dict[str, float | None]) -> str:
    """``vocabulary coverage: critic_ref 98.8%, lceval 99.6% of the predictions' tokens`` (the share of the prediction
    tokens each learned metric read that its vocabulary knows, ``n/a`` without one; :mod:`capeval.coverage`)."""
    return "vocabulary coverage: " + ", ".join(
        f"{name} {'n/a' if share is None else f'{share:.1%}'}" for name, share in coverage.items()
    ) + " of the predictions' tokens"


def scale_line(signature: str) -> str:
    """``readable scale (...): critic_ref, lceval`` for the metrics the signature records on the readable scale
    (:mod:`capeval.scales`), "" when none."""
    from capeval.signature import Signature

    names = [name for name, settings in Signature.of(signature).metric_fields() if ",scale=readable@" in f",{settings}"]
    if not names:
        return ""
    return ("readable scale (the share of human captions of unseen images that score lower; 0.5 = the median human "
            f"caption; --scale raw for the probability): {', '.join(names)}")


def _count(n: int, noun: str) -> str:
    """``"1 prediction"``, ``"2 predictions"``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _shown(caption: str, width: int = 60) -> str:
    """A caption on one table line: whitespace runs as one space, a lone surrogate as its escape (``\\ud800``: it
    cannot be printed), cut to ``width`` terminal columns (a wide character takes two) with an ellipsis."""
    from capeval.render import display_width

    text = " ".join(str(caption).split()).encode("utf-8", "backslashreplace").decode("utf-8")
    if display_width(text) <= width:
        return text
    text = text[:width]  # a character takes at least one column
    while display_width(text) > width - 1:
        text = text[:-1]
    return text + "…"


def _images(args: argparse.Namespace, ids, n: int, pred_path: Path) -> list[str] | None:
    """The image path of every prediction (file order) from ``--images`` / ``--image-dir``, or ``None``."""
    from capeval.io import images_from_dir, load_image_list

    if getattr(args, "images", None) is not None:
        images = load_image_list(args.images)
        if len(images) != n:
            raise ValueError(f"--images {args.images} lists {len(images)} image(s) but {pred_path.name} has {n} "
                             "prediction(s); give one image path per prediction, in prediction order.")
        return images
    if getattr(args, "image_dir", None) is not None:
        return images_from_dir(ids, args.image_dir, what=f"the predictions in {pred_path.name}")
    return None


def _every_installed_metric(default, registry) -> list[str]:
    """Default metrics plus optional ones whose dependencies are installed (not those that read images: the bundled
    example's captions describe no image of their own; not those whose default model does not ship with capeval,
    such as the experimental ``sentence_rank``)."""
    from capeval.catalog import default_available
    from capeval.registry import metric_class

    names = list(default)
    for name in registry:
        if name in names or not default_available(name):
            continue
        try:
            cls = metric_class(name)
            cls.check_available()
        except (ImportError, AttributeError, OSError):
            continue
        if getattr(cls, "needs_images", False):
            continue
        names.append(name)
    return names
