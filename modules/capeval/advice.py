"""Messages whose fix is one keyword argument, kept as data so that each front end says them in its own words.

The library writes its errors and warnings in the words of the Python API (``pass max_caption_chars=None``); the
command line says the same with its flags (``--max-caption-chars none``). Instead of rewriting message text, an error
or warning carries :class:`Words`: the message as parts, among them markers for the option's name
(:data:`OPTION`), a value to give it (:class:`Setting`) and advice that differs between the API and the command
line (:class:`Fix`). :meth:`Words.api` is the API's message (the exception's ``str()``); the command line renders
the same parts with flags (:func:`capeval.cli.metric_flags.cli_words`).

Attach them with :func:`with_words` (any exception or warning class, its type unchanged) or raise
:class:`capeval.validation.OptionError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

__all__ = ["OPTION", "Fix", "Setting", "Words", "about", "with_words", "words"]


class _OptionName:
    """Marker: the option's name here (``max_caption_chars`` in the API, ``--max-caption-chars`` on the command
    line)."""

    def __repr__(self) -> str:
        return "OPTION"


#: Where a message names its option.
OPTION = _OptionName()


@dataclass(frozen=True)
class Setting:
    """The option set to ``value``: ``cider_df='coco-val2014'`` in the API, ``--cider-df coco-val2014`` on the
    command line (``True``: the flag alone; ``False``: its ``--no-`` form; ``None``: ``none``). ``shown``: a
    placeholder written instead of the value (``"<path to the .pth>"``, ``"FILE"``), the same in both. ``option``: another
    option than the message's own (``None``: the message's)."""

    value: Any = None
    shown: str | None = None
    option: str | None = None

    def api(self, option: str) -> str:
        """``option=value`` (the setting's own option, if it has one, instead of ``option``)."""
        return f"{self.option or option}={self.shown if self.shown is not None else repr(self.value)}"


@dataclass(frozen=True)
class Fix:
    """Advice in the API's words (``"pass images= (one per prediction, in prediction order)"``) that the command line
    says its own way (its flags may offer more than the keyword does: ``--image-dir``); a front end without words of
    its own for the option shows ``api`` as it is. ``key``: the name the front end's own words are found under (default:
    the message's option)."""

    api: str
    key: str | None = None


Part = Any  # str, OPTION, Setting or Fix


@dataclass(frozen=True)
class Words:
    """A message about one option, as parts: text (``str``), :data:`OPTION`, :class:`Setting` and :class:`Fix`.

    option: the keyword argument (``"max_caption_chars"``). item / index: the input entry the message is about, when
    one is (``"predictions"``, ``3``), else ``None``."""

    option: str
    parts: tuple[Part, ...]
    item: str | None = None
    index: int | None = None

    def render(self, name: str, setting: Callable[[Setting], str], fix: Callable[[Fix], str]) -> str:
        """The message with :data:`OPTION` written ``name`` and the settings and fixes by the given functions."""
        out = []
        for part in self.parts:
            if part is OPTION:
                out.append(name)
            elif isinstance(part, Setting):
                out.append(setting(part))
            elif isinstance(part, Fix):
                out.append(fix(part))
            else:
                out.append(str(part))
        return "".join(out)

    def api(self) -> str:
        """The message in the Python API's words (keyword names)."""
        return self.render(self.option, lambda s: s.api(self.option), lambda f: f.api)


def words(option: str, *parts: Part, item: str | None = None, index: int | None = None) -> Words:
    """:class:`Words` of ``parts`` about ``option``."""
    return Words(option, tuple(parts), item=item, index=index)


E = TypeVar("E", bound=BaseException)


def with_words(kind: type[E], said: Words) -> E:
    """An instance of the exception or warning class ``kind`` whose message is ``said`` in the API's words, with
    ``said`` as its ``words`` attribute (for the command line) and ``option`` / ``item`` / ``index`` as attributes."""
    instance = kind(said.api())
    instance.words = said  # type: ignore[attr-defined]
    instance.option = said.option  # type: ignore[attr-defined]
    if said.item is not None:
        instance.item, instance.index = said.item, said.index  # type: ignore[attr-defined]
    return instance


def about(kind: type[E], option: str, message: str) -> E:
    """``kind(f"{option}: {message}")``, an error about the value given to ``option`` (``polos_model: /x is not a
    checkpoint``), with the option's name as data (:func:`with_words`)."""
    return with_words(kind, words(option, OPTION, ": ", message))
