"""Where the commands write, shared by every ``cmd_*`` module.

* ``--json FILE`` writes the result to FILE; ``--json -`` prints it on stdout, and then the human-readable
  text of the command goes to stderr, so that stdout is exactly one JSON document (``capeval score ... --json -
  | jq .cider_d``).
* ``--progress`` shows progress bars even when stderr is not a terminal (by default they show on a terminal,
  for work that lasts more than a second).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

#: The ``--json`` value that means stdout.
STDOUT = "-"


def json_target(value: str) -> Path | str:
    """``argparse`` type of ``--json``: ``"-"`` (stdout) or a file path."""
    return STDOUT if value == STDOUT else Path(value)


def add_json_argument(parser: argparse.ArgumentParser, what: str, *, required: bool = False,
                      dest: str | None = None) -> None:
    """``--json FILE|-``: ``what`` is the payload, e.g. ``"the result (same keys)"``."""
    kwargs = {"dest": dest} if dest else {}
    parser.add_argument("--json", type=json_target, metavar="FILE", required=required,
                        help=f"write {what} to FILE as JSON; '-' prints it on stdout (the tables go to stderr)",
                        **kwargs)


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--progress``: ``args.progress`` is True, else None (bars only on a terminal, after one second)."""
    parser.add_argument("--progress", action="store_const", const=True, default=None,
                        help="show progress bars on stderr even when it is not a terminal (default: only on a "
                             "terminal, for steps longer than a second)")


def add_signature_argument(parser: argparse.ArgumentParser) -> None:
    """``--signature short|full``: how the signature prints on the terminal (``args.signature``)."""
    parser.add_argument("--signature", choices=["short", "full"], default="short",
                        help="short (default): one line per metric, continued after a comma where it is wider than the "
                             "terminal; full: the whole "
                             "string on one line (as in --json)")


def print_signature(signature: str, args: argparse.Namespace, out: TextIO, label: str = "signature") -> None:
    """Print ``signature`` as ``--signature`` asks (:func:`capeval.signature.signature_lines` when short)."""
    from capeval.signature import signature_lines

    if getattr(args, "signature", "short") == "full":
        print(f"{label}: {signature}", file=out)
        return
    print("\n".join(signature_lines(signature, label=label)), file=out)


def for_terminal(text: str) -> str:
    """A command's text for the terminal (:func:`capeval.render.terminal_width`; ``--wide``: as it is): each
    ``signature: ...`` line as one short line per metric (:func:`capeval.signature.signature_lines`), every other
    line longer than the width wrapped between words (tables built with ``text_table`` already fit)."""
    from capeval.render import fit_text
    from capeval.signature import signature_lines

    out = []
    for line in text.split("\n"):
        if line.startswith("signature: "):
            out += signature_lines(line[len("signature: "):])
        else:
            out.append(line)
    return fit_text("\n".join(out))


def text_stream(*targets: Any) -> TextIO:
    """Where the human-readable output goes: stderr when one of ``targets`` is stdout (``--json -``)."""
    return sys.stderr if any(t == STDOUT for t in targets) else sys.stdout


def check_output_path(path: Path | str, flag: str = "--json") -> None:
    """Refuse an output path that cannot be written, before any scoring (a result is never lost)."""
    if path == STDOUT:
        return
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give a file name, e.g. {path / 'scores.json'}.")
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ValueError(f"{flag} {path}: {folder} is a file, not a directory.")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{flag} {path}: no permission to write in {folder}.")
            break
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{flag} {path}: the file exists and is not writable.")


def write_json(target: Path | str, payload: Any, *, indent: int = 2, default=None) -> None:
    """Write ``payload`` to ``target`` (a path, or :data:`STDOUT`); a file write is reported on stderr."""
    text = json.dumps(payload, indent=indent, ensure_ascii=False, default=default) + "\n"
    if target == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    try:
        if path.exists() and not path.is_file():  # a device or a pipe (/dev/stdout): written in place
            with path.open("w", encoding="utf-8") as handle:
                handle.write(text)
        else:  # all at once: a full disk or a kill leaves the old file (or none), never half a result
            from capeval.paths import write_bytes_atomic

            write_bytes_atomic(path, text.encode("utf-8"), fsync=False)
    except OSError as err:
        raise OSError(f"cannot write {path}: {err.strerror or err}") from None
    print(f"wrote {path}", file=sys.stderr)


class Lazy:
    """A list in a :func:`write_json_streamed` payload given as ``items()``, an iterable read once while it is
    written (per-caption scores of more captions than memory holds)."""

    def __init__(self, items) -> None:
        self.items = items


def json_pieces(value: Any, depth: int = 0, indent: int = 2):
    """The text of ``json.dumps(value, indent=indent, ensure_ascii=False)`` in pieces, :class:`Lazy` lists (at any
    depth, inside objects) written item by item."""
    pad, close = " " * (indent * (depth + 1)), " " * (indent * depth)
    if isinstance(value, Lazy):
        first = True
        for item in value.items():
            yield ("[\n" if first else ",\n") + pad + json.dumps(item, indent=indent, ensure_ascii=False).replace(
                "\n", "\n" + pad)
            first = False
        yield "[]" if first else "\n" + close + "]"
    elif isinstance(value, dict) and value and any(isinstance(v, (Lazy, dict)) for v in value.values()):
        for k, (key, item) in enumerate(value.items()):
            yield ("{\n" if k == 0 else ",\n") + pad + json.dumps(str(key), ensure_ascii=False) + ": "
            yield from json_pieces(item, depth + 1, indent)
        yield "\n" + close + "}"
    else:
        yield json.dumps(value, indent=indent, ensure_ascii=False).replace("\n", "\n" + close)


def write_json_streamed(target: Path | str, payload: dict) -> None:
    """:func:`write_json` of a payload with :class:`Lazy` lists, the same bytes, written piece by piece (to a file: to
    a temporary file beside it, then renamed over it: a full disk or a kill leaves the old file, or none)."""
    def write(emit) -> None:
        buffer: list[str] = []
        size = 0
        for piece in json_pieces(payload):
            buffer.append(piece)
            size += len(piece)
            if size > 1 << 20:
                emit("".join(buffer))
                buffer, size = [], 0
        emit("".join(buffer) + "\n")

    if target == STDOUT:
        write(sys.stdout.write)
        sys.stdout.flush()
        return
    path = Path(target)
    try:
        if path.exists() and not path.is_file():  # a device or a pipe: written in place
            with path.open("w", encoding="utf-8") as handle:
                write(handle.write)
        else:
            from capeval.paths import atomic_write

            with atomic_write(path, fsync=False) as raw:
                write(lambda text: raw.write(text.encode("utf-8")))
    except OSError as err:
        raise OSError(f"cannot write {path}: {err.strerror or err}") from None
    print(f"wrote {path}", file=sys.stderr)


def add_model_arguments(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = (),
                        extra_help: dict[str, str] | None = None) -> None:
    """The flag of every metric option (:func:`capeval.cli.metric_flags.add_metric_flags`: generated from the
    options' declarations), and ``--scale``, which sets the learned metrics' ``*_scale`` options together."""
    from capeval.cli.metric_flags import add_metric_flags
    from capeval.scales import SCALE_CHOICES

    add_metric_flags(parser, skip=skip, extra_help=extra_help)
    parser.add_argument("--scale", choices=list(SCALE_CHOICES), default=None,
                        help="the learned metrics' scale, for every one of them at once (critic_scale, lceval_scale, "
                             "lceval_plus_scale; a metric's own flag wins): auto (default for capeval score: the "
                             "shipped default models' readable scale, the share of human captions a caption beats; "
                             "other models raw), readable, or raw (the model's probability; what capeval bench reads "
                             "unless told)")


def model_options(args: argparse.Namespace) -> dict:
    """The metric options given on the command line (:func:`add_model_arguments`), ``--scale`` spread over the
    ``*_scale`` options not given on their own."""
    from capeval.cli.metric_flags import given_options, registered_options

    declared = registered_options()
    given = given_options(args, declared)
    scale = getattr(args, "scale", None)
    if scale is not None:
        for option in declared:
            if option.endswith("_scale") and option not in given:
                given[option] = scale
    return given
