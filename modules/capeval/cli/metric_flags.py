"""The metric options' command-line flags, generated from their one declaration (:class:`capeval.options.Option`).

Every option of every registered metric gets ``--<name-with-dashes>`` (or the declaration's ``flag``, plus its
``aliases``) on ``capeval score``, ``score-dataset``, ``bench`` and ``robustness``: its help (the metrics that take it,
then the declaration's help), choices, metavar and value type. A flag left out passes nothing (the metric's default
applies); :func:`given_options` returns those given. :func:`flag_of` names an option's flag in messages; :func:`cli_words` says a library error or warning that carries its
option as data (:class:`capeval.options.OptionValueError`, :class:`capeval.advice.Words`) with the flags: the one
place where keyword names become flags.
"""
from __future__ import annotations

import argparse
from collections.abc import Collection, Iterable
from typing import Any

from capeval.options import KINDS, Option, declared

#: Python types of the flags' values, by option kind (the rest take text).
_VALUE_TYPES = {"int": int, "float": float}


def registered_options() -> dict[str, tuple[Option, list[str]]]:
    """``{option: (declaration, [metrics that take it])}`` over every registered metric whose module imports here
    (a metric whose optional dependency is missing at import time is left out), in registry order."""
    from capeval.registry import REGISTRY, metric_class

    found: dict[str, tuple[Option, list[str]]] = {}
    for name in REGISTRY:
        try:
            options = declared(metric_class(name).options)
        except ImportError:
            continue
        for option, declaration in options.items():
            if option in found:
                found[option][1].append(name)
            else:
                found[option] = (declaration, [name])
    return found


def flag_of(option: str, declaration: Option | None = None) -> str:
    """The long flag of ``option`` (``critic_batch_size`` → ``--critic-batch-size``)."""
    if declaration is not None and declaration.flag:
        return declaration.flag
    return "--" + option.replace("_", "-")


def _help(declaration: Option, metrics: list[str]) -> str:
    shown = ", ".join(metrics[:4]) + (", ..." if len(metrics) > 4 else "")
    text = declaration.help or "(no description)"
    return f"{shown}: {text}".replace("%", "%%")


def add_metric_flags(parser: argparse.ArgumentParser, *, skip: Iterable[str] = (),
                     extra_help: dict[str, str] | None = None) -> list[str]:
    """Add the flag of every registered metric option to ``parser`` (in a group "metric options"), except those in
    ``skip`` (a command that gives one a meaning of its own); ``extra_help``: words added to an option's help on this
    command. Returns the options added (their ``dest`` is the option's name, ``None`` when not given)."""
    group = parser.add_argument_group("metric options (generated from the metrics' declarations; each passed only when given)")
    added = []
    for option, (declaration, metrics) in registered_options().items():
        if option in skip:
            continue
        flags = [flag_of(option, declaration), *declaration.aliases]
        help_text = _help(declaration, metrics) + (extra_help or {}).get(option, "")
        if declaration.kind == "bool":
            group.add_argument(*flags, dest=option, action=argparse.BooleanOptionalAction, default=None,
                               help=help_text)
        else:
            kwargs: dict[str, Any] = {"dest": option, "default": None, "help": help_text}
            if declaration.choices is not None:
                kwargs["choices"] = list(declaration.choices)
                kind = _VALUE_TYPES.get(declaration.kind)
                if kind is not None:
                    kwargs["type"] = kind
            else:
                kwargs["metavar"] = declaration.metavar or KINDS[declaration.kind]
                if declaration.kind in _VALUE_TYPES:
                    kwargs["type"] = _VALUE_TYPES[declaration.kind]
            group.add_argument(*flags, **kwargs)
        added.append(option)
    return added


def given_options(args: argparse.Namespace, options: Iterable[str] | None = None) -> dict[str, Any]:
    """The metric options given on the command line (those of :func:`add_metric_flags`, or ``options``)."""
    names = registered_options() if options is None else options
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def option_error_line(err: Exception) -> str | None:
    """An :class:`capeval.options.OptionValueError` said with the option's flag (``--fleur-batch-size must be an
    integer >= 1, got 0.``), from its fields; ``None`` for any other error."""
    from capeval.options import OptionValueError

    if not isinstance(err, OptionValueError):
        return None
    declaration = registered_options().get(err.option, (None, []))[0]
    flag = flag_of(err.option, declaration)
    hint = f"; did you mean {err.suggestion}?" if err.suggestion is not None else "."
    return f"{flag} must be {err.expected}, got {err.value!r:.60}{hint}"


#: What the command line advises for an option where its flags offer more than the keyword (a :class:`capeval.advice.Fix`
#: in the library's message), by option.
CLI_FIXES = {
    "images": "give --images FILE (one image path per prediction, in prediction order) or --image-dir DIR (the images "
              "named by the predictions' image ids)",
    "max_caption_chars": "give a larger N, or --max-caption-chars none for no limit, if this caption is intended",
    "images_by_position": "give one image path per prediction instead (capeval score --images FILE)",
    "duplicate_ids": "score each captioner separately (capeval score --duplicate-ids split)",
    "resume": "give --restart",
}


#: Keyword arguments whose flag is not ``--`` + the keyword with dashes.
RENAMED_FLAGS = {"title": "--project-title", "output_dir": "--out", "cards_dir": "--cards", "url": "--label-studio"}


def _declaration(option: str) -> Option | None:
    return registered_options().get(option, (None, []))[0]


def setting_in_flags(option: str, value: Any, shown: str | None = None) -> str:
    """``option`` set to ``value`` as typed on the command line: ``--cider-df coco-val2014``; ``True`` the flag alone,
    ``False`` its ``--no-`` form, ``None`` ``none``; ``shown`` (a placeholder such as ``FILE``) instead of the value."""
    flag = RENAMED_FLAGS.get(option) or flag_of(option, _declaration(option))
    if shown is not None:
        return f"{flag} {shown}" if shown else flag
    if value is True:
        return flag
    if value is False:
        return "--no-" + flag[2:]
    return f"{flag} {'none' if value is None else value}"


def cli_words(err: BaseException, flags: Collection[str] | None = None) -> str | None:
    """``err`` (an exception or a warning) said with the command line's flags, from its fields: an
    :class:`capeval.options.OptionValueError` (:func:`option_error_line`), or anything carrying
    :class:`capeval.advice.Words` as ``words`` (its option written as the flag, its settings as typed, its fixes from
    :data:`CLI_FIXES`). ``None`` when ``err`` carries neither (its message names no option), or when ``flags`` (the
    flags the command line has) is given and lacks the option's flag: the API's words then stand."""
    from capeval.advice import Words

    line = option_error_line(err) if isinstance(err, Exception) else None
    if line is not None:
        return line
    said = getattr(err, "words", None)
    if not isinstance(said, Words):
        return None
    from capeval.advice import OPTION, Setting

    def flag(option: str) -> str:
        return RENAMED_FLAGS.get(option) or flag_of(option, _declaration(option))

    def setting(part: Setting) -> str:
        return setting_in_flags(part.option or said.option, part.value, part.shown)

    typed = [flag(said.option) if part is OPTION else setting(part).split()[0]
             for part in said.parts if part is OPTION or isinstance(part, Setting)]
    if flags is not None and any(name not in flags for name in typed):
        return None  # a keyword the command line has no flag for
    return said.render(flag(said.option), setting, lambda fix: CLI_FIXES.get(fix.key or said.option, fix.api))
