"""``capeval`` command line.

Sub-commands live in sibling modules named ``cmd_<name>.py``; each defines
``register(subparsers)`` which adds its parser and sets ``func`` (returning an exit code).
Heavy imports stay inside the command functions so ``capeval --help`` is instant.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from capeval._version import __version__


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, wrapping lines between words only: a model name (``lceval-caption-flickr8k-coco``) is
    never broken at its hyphens."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return textwrap.fill(self._whitespace_matcher.sub(" ", text).strip(), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


class ArgumentParser(argparse.ArgumentParser):
    """``capeval``'s parsers (the sub-commands' too): :class:`HelpFormatter` unless one is given."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="capeval", description="Image-caption evaluation (capeval).")
    parser.add_argument("--version", action="version", version=f"capeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. Errors caused by the input (``ValueError``, ``TypeError``, ``OSError``,
    ``RuntimeError``) print one line ``capeval COMMAND: error: ...`` and return 1; warnings print one
    line each. ``CAPEVAL_DEBUG=1`` shows Python tracebacks instead."""
    import os
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for commands that relaunch themselves
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    debug = os.environ.get("CAPEVAL_DEBUG", "") not in ("", "0")
    from capeval.progress import quiet_third_party_bars, write

    quiet_third_party_bars()  # transformers' / huggingface_hub's bars only on a terminal, as capeval's own
    previous = warnings.showwarning
    if not debug:  # on a line of its own, above an open progress bar
        warnings.showwarning = lambda message, category, *rest, **kw: write(
            f"capeval {args.command}: warning: {message}", file=sys.stderr
        )
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, OSError, RuntimeError, ImportError) as err:
        if debug:
            raise
        print(f"capeval {args.command}: error: {_one_line(err)}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = previous


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__
