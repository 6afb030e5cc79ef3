"""Metric options, each declared once: :class:`Option` in a metric class's ``options``.

From that one declaration come the checks of :class:`capeval.metric.CaptionMetric` (type, range, choices, with the
closest valid name), the command-line flags of ``capeval score``, ``score-dataset`` and ``bench``
(:mod:`capeval.cli.metric_flags`: ``--critic-batch-size``, its help, choices and metavar), the evaluate modules'
keywords and the option tables of the cards and docs. :func:`capeval.metric_options` lists a metric's options (built-in
or plug-in)::

    from capeval import Option
    options = {"word_count_unit": Option(default="words", choices=("words", "chars"), help="what to count")}

A metric's options all begin with its family's name (``critic_batch_size``), so one keyword set serves several
metrics; two metrics that declare an option of the same name (``clip_s`` and ``ref_clip_s``: ``clip_model``) share
it and must declare it alike.
"""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Option", "OptionValueError", "as_option", "declared"]

#: What ``kind`` names, the values it accepts and the metavar its flag shows.
KINDS = {
    "str": "TEXT",
    "int": "N",
    "float": "X",
    "bool": None,
    "path": "PATH",
    "model": "NAME|DIR",
    "device": "DEVICE",
    "any": "VALUE",
}


class OptionValueError(ValueError):
    """A metric option given a value it does not take: ``option`` (its keyword), ``value`` (as given), ``expected``
    (in words) and ``suggestion`` (the closest valid choice, or ``None``) as data, so that the command line can say it
    with its flag (:func:`capeval.cli.metric_flags.flag_of`) and code never reads the message."""

    def __init__(self, option: str, value: Any, expected: str, suggestion: str | None = None) -> None:
        self.option, self.value, self.expected, self.suggestion = option, value, expected, suggestion
        hint = f"; did you mean {suggestion!r}?" if suggestion is not None else "."
        super().__init__(f"{option} must be {expected}, got {_shown(value)}{hint}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Option:
    """One keyword option of a metric, declared once.

    default: its value when not given (``None``: the metric decides, e.g. "CUDA when available"; say so in ``help``).
    help: one sentence for the flag's help, the keyword's description and the docs (units and ranges included).
    kind: what it takes: ``"str"``, ``"int"``, ``"float"``, ``"bool"``, ``"path"`` (a file or folder), ``"model"``
        (a shipped name, a Hub id or a folder), ``"device"`` (``cpu``, ``cuda``, ``cuda:1``), ``"any"`` (a Python
        value with no flag form, e.g. a table object; its flag takes text). Default: from ``default``'s type, else
        ``"str"``.
    choices: the values it accepts (strings or numbers), or ``None``.
    minimum: the smallest number it accepts (``1`` for sizes and counts), or ``None``.
    none: whether ``None`` is accepted (default: when ``default`` is ``None``).
    metavar: the flag's value name (default: from ``kind``).
    flag: the long flag (default: ``--`` + the keyword with ``-`` for ``_``).
    aliases: more flags that set it (older spellings).
    python_types: for ``kind="any"``: the types accepted besides the flag's text (checked), e.g. ``(dict,)``.
    """

    default: Any = None
    help: str = ""
    kind: str | None = None
    choices: tuple | None = None
    minimum: float | None = None
    none: bool | None = None
    metavar: str | None = None
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    python_types: tuple[type, ...] = field(default=())

    def __post_init__(self) -> None:
        kind = self.kind or _kind_of(self.default)
        if kind not in KINDS:
            raise ValueError(f"Option kind {kind!r} is not one of {sorted(KINDS)}.")
        object.__setattr__(self, "kind", kind)
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if self.none is None:
            object.__setattr__(self, "none", self.default is None)

    # -- checks ------------------------------------------------------------------------------------------------------
    def expected(self) -> str:
        """What it takes, in words (``"one of 'mean', 'max'"``, ``"an integer >= 1"``)."""
        if self.choices is not None:
            words = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind == "int":
            words = "an integer" + (f" >= {self.minimum:g}" if self.minimum is not None else "")
        elif self.kind == "float":
            words = "a number" + (f" >= {self.minimum:g}" if self.minimum is not None else "")
        elif self.kind == "bool":
            words = "True or False"
        elif self.kind in ("path", "model"):
            words = "a " + ("file or folder path" if self.kind == "path" else "model name, Hub id or folder")
        elif self.kind == "device":
            words = "a device such as 'cpu', 'cuda' or 'cuda:1'"
        elif self.kind == "any" and self.python_types:
            words = "text or a " + " / ".join(t.__name__ for t in self.python_types)
        else:
            words = "text"
        return words + (" (or None)" if self.none and self.kind != "bool" else "")

    def check(self, name: str, value: Any) -> Any:
        """``value`` as the metric uses it (an ``int`` for ``kind="int"``, ...), or :class:`OptionValueError`."""
        if value is None:
            if self.none:
                return None
            raise OptionValueError(name, value, self.expected())
        if self.choices is not None:
            if value in self.choices and not (isinstance(value, bool) and not any(isinstance(c, bool)
                                                                                   for c in self.choices)):
                return value
            from capeval.suggest import closest

            found = closest(str(value), [str(c) for c in self.choices], n=1) if isinstance(value, str) else []
            raise OptionValueError(name, value, self.expected(), found[0] if found else None)
        checker = _CHECKS[self.kind]
        try:
            checked = checker(value, self)
        except (TypeError, ValueError):
            raise OptionValueError(name, value, self.expected()) from None
        if self.minimum is not None and checked < self.minimum:
            raise OptionValueError(name, value, self.expected())
        return checked

    def with_default(self, default: Any) -> Option:
        """This option with another default (a subclass's)."""
        return replace(self, default=default)


def _kind_of(default: Any) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, numbers.Integral):
        return "int"
    if isinstance(default, numbers.Real):
        return "float"
    return "str"


def _check_int(value: Any, option: Option) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # "4" too: the flags convert their text
        raise TypeError
    return int(value)


def _check_float(value: Any, option: Option) -> float:
    if isinstance(value, bool):
        raise TypeError
    number = float(value) if isinstance(value, numbers.Real) else None
    if number is None or not math.isfinite(number):
        raise ValueError
    return number


def _check_bool(value: Any, option: Option) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError


def _check_text(value: Any, option: Option) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError
    return value


def _check_path(value: Any, option: Option) -> Any:
    if isinstance(value, os.PathLike):
        return value
    return _check_text(value, option)


def _check_any(value: Any, option: Option) -> Any:
    if option.python_types and isinstance(value, option.python_types):
        return value
    if isinstance(value, os.PathLike):
        return value
    if not option.python_types:
        return value
    return _check_text(value, option)


_CHECKS: dict[str, Callable[[Any, Option], Any]] = {
    "str": _check_text, "int": _check_int, "float": _check_float, "bool": _check_bool, "path": _check_path,
    "model": _check_path, "device": _check_text, "any": _check_any,
}


def as_option(value: Any) -> Option:
    """``value`` if it is an :class:`Option`, else a bare default wrapped as one (a plug-in's ``{"x_n": 3}``: a
    number's or a bool's kind from the default, any other value accepted as given, as before declarations; no
    help)."""
    if isinstance(value, Option):
        return value
    kind = _kind_of(value) if isinstance(value, (bool, numbers.Real)) else "any"
    return Option(default=value, kind=kind)


def declared(options: Mapping[str, Any]) -> dict[str, Option]:
    """A class's ``options`` mapping with every entry as an :class:`Option`."""
    return {name: as_option(value) for name, value in options.items()}
