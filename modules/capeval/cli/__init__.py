"""``capeval`` command line.

Sub-commands live in sibling modules named ``cmd_<name>.py``; each defines
``register(subparsers)`` which adds its parser and sets ``func`` (returning an exit code).
Heavy imports stay inside the command functions so ``capeval --help`` is instant.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import pkgutil
import re
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
    """``capeval``'s parsers (the sub-commands' too): :class:`HelpFormatter` unless one is given; an argument error
    is one line and where to read more, never the whole usage (:meth:`error`)."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message: str):
        """Print ``capeval COMMAND: error: MESSAGE`` with the closest valid name of a misspelt choice, then ``Run
        capeval COMMAND --help for its options.``, and exit with status 2 (argparse's code for a usage error)."""
        from capeval.suggest import did_you_mean

        line = " ".join(message.split())
        found = _INVALID_CHOICE.search(line)
        if found:
            given, choices = found.group("given"), _choices(found.group("choices"))
            what = found.group("what")
            what = "command" if what in ("COMMAND", "command") or what.isupper() else what
            hint = did_you_mean(given, choices)
            line = f"unknown {what} {given!r}" + (hint or f"; valid: {', '.join(choices)}")
        from capeval.cli.stderr_lines import fit

        sys.stderr.write(f"{fit(f'{self.prog}: error: {line}')}\nRun '{self.prog} --help' for its options.\n")
        raise SystemExit(2)


#: argparse's message for a value outside ``choices``.
_INVALID_CHOICE = re.compile(
    r"argument (?P<what>[^:]+): invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")
def _choices(text: str) -> list[str]:
    """The choices of that message: quoted by Python 3.11 (``'a', 'b'``), bare since 3.12.8 (``a, b``)."""
    quoted = re.findall(r"'([^']*)'", text)
    return quoted or [c.strip() for c in text.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="capeval", description="Image-caption evaluation (capeval).")
    parser.add_argument("--version", action="version", version=f"capeval {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{info.name}").register(sub)
    for command in _command_parsers(parser):
        if "--wide" not in command._option_string_actions:
            command.add_argument("--wide", action="store_true",
                                 help="print every table and line whole, however wide (default: fit the terminal: "
                                      "$COLUMNS, else its size, else 100 columns)")
        if "--quiet" not in command._option_string_actions:
            command.add_argument("--quiet", action="store_true",
                                 help="do not announce one-time work (loading a model, building a table) that runs "
                                      "longer than 2 s")
    return parser


def command_flags(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of every command below ``parser`` (``--images``, ``--max-caption-chars``, ...)."""
    return {flag for command in _command_parsers(parser) for flag in command._option_string_actions}


def _command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every parser below ``capeval``'s own, each once (``models`` and ``models fetch`` both)."""
    seen: dict[int, argparse.ArgumentParser] = {}
    stack = [parser]
    while stack:
        current = stack.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child in action.choices.values():
                    if id(child) not in seen:
                        seen[id(child)] = child
                        stack.append(child)
    return list(seen.values())


def main(argv: list[str] | None = None) -> int:
    """Run one command. Errors caused by the input (``ValueError``, ``TypeError``, ``OSError``,
    ``RuntimeError``) print one line ``capeval COMMAND: error: ...`` and return 1; warnings print one
    line each. ``CAPEVAL_DEBUG=1`` shows Python tracebacks instead."""
    import os
    import warnings

    try:
        parser = build_parser()  # imports every command's module: Ctrl-C may come here
    except KeyboardInterrupt:
        print("capeval: interrupted", file=sys.stderr)
        return 130
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, which knows its flags
        _unrecognized(parser, args, extra)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for commands that relaunch themselves
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    debug = os.environ.get("CAPEVAL_DEBUG", "") not in ("", "0")
    from capeval.progress import quiet_third_party_bars

    quiet_third_party_bars()  # transformers' / huggingface_hub's bars only on a terminal, as capeval's own
    previous = warnings.showwarning
    if not debug:  # on a line of its own, above an open progress bar
        from capeval.cli.metric_flags import cli_words

        from capeval.cli.stderr_lines import say

        warnings.showwarning = lambda message, category, *rest, **kw: say(
            f"capeval {args.command}: warning: {cli_words(message, command_flags(parser)) or message}"
        )
    from capeval.progress import quiet
    from capeval.render import full_width

    try:
        with full_width(getattr(args, "wide", False)), quiet(getattr(args, "quiet", False) is True), \
                _terminate_as_interrupt():
            return int(args.func(args) or 0)
    except (ValueError, TypeError, OSError, RuntimeError, ImportError, LookupError) as err:
        if debug:
            raise
        from capeval.cli.metric_flags import cli_words

        line = " ".join((cli_words(err, command_flags(parser)) or "").split()) or _one_line(err)
        _say_error(f"capeval {_command_name(args)}: error: {line}")
        return 1
    except MemoryError:
        if debug:
            raise
        _say_error(f"capeval {_command_name(args)}: error: out of memory; score fewer captions at a time (capeval "
                   "score-dataset scores a dataset chunk by chunk in bounded memory) or use a machine with more memory")
        return 1
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (Terminated)
        stopped = isinstance(err, Terminated)
        if not os.environ.get("CAPEVAL_RELAUNCHED_BY"):  # one of several processes: the parent says it once
            print(f"capeval {_command_name(args)}: {'terminated' if stopped else 'interrupted'}", file=sys.stderr)
        return 143 if stopped else 130
    finally:
        warnings.showwarning = previous


#: Set by a command that runs itself in several processes (``capeval score --processes``): the folder where each of
#: them leaves its error line (``<rank>.txt``) instead of printing it, so the parent prints each distinct line once
#: (every process meets the same bad input).
ERRORS_FOLDER_ENV = "CAPEVAL_RELAUNCH_ERRORS"


def _say_error(line: str) -> None:
    import os

    folder = os.environ.get(ERRORS_FOLDER_ENV)
    if folder:
        try:
            with open(os.path.join(folder, f"{int(os.environ.get('RANK', '0') or 0)}.txt"), "w",
                      encoding="utf-8") as f:
                f.write(line + "\n")
            return
        except (OSError, ValueError):
            pass  # said here, then
    from capeval.cli.stderr_lines import fit

    print(fit(line), file=sys.stderr)


def say_relaunched_errors(folder: str) -> None:
    """Print the error lines the processes left in ``folder`` (:data:`ERRORS_FOLDER_ENV`), in rank order, each
    distinct line once."""
    import os

    said: list[str] = []
    names = sorted((n for n in os.listdir(folder) if n.endswith(".txt") and n[:-4].isdigit()),
                   key=lambda n: int(n[:-4]))
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
            for line in f.read().splitlines():
                if line and line not in said:
                    said.append(line)
    from capeval.cli.stderr_lines import fit

    for line in said:
        print(fit(line), file=sys.stderr)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C is: the same clean-up runs (temporary files removed, workers
    stopped), then one line and exit status 143 (128 + SIGTERM)."""


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM raises :class:`Terminated` while a command runs (installed once, in the main thread, before the
    command starts any thread; the previous handler is put back after). Elsewhere (a thread) nothing changes."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Exit through the parser of the command that was typed, naming ``extra`` and the closest flag of that
    command to the first one."""
    from capeval.suggest import did_you_mean

    current = parser
    for name in _command_name(args).split():
        action = next((a for a in current._actions if isinstance(a, argparse._SubParsersAction)), None)
        if action is None or name not in action.choices:
            break
        current = action.choices[name]
    flags = [f for f in current._option_string_actions if f.startswith("--")]
    hint = did_you_mean(extra[0].split("=")[0], flags) if extra[0].startswith("-") else ""
    current.error(f"unrecognized arguments: {' '.join(extra)}{hint}")


def _command_name(args: argparse.Namespace) -> str:
    """``score``, ``models fetch``: the command as typed, for the start of an error line."""
    names = [args.command]
    for key, value in vars(args).items():
        if key.endswith("_command") and isinstance(value, str):
            names.append(value)
    return " ".join(names)


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    if isinstance(err, KeyError) and len(err.args) == 1:  # KeyError's str() is the key's repr
        return f"no such name: {err.args[0]!r}" if not isinstance(err.args[0], str) or " " not in err.args[0] \
            else err.args[0]
    return " ".join(str(err).split()) or type(err).__name__
