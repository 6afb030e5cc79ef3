"""Metrics from other packages: a distribution that declares an entry point in the group ``capeval.metrics`` adds
its metric to capeval, with no edit to capeval::

    [project.entry-points."capeval.metrics"]
    word_count = "capeval_word_count:WordCount"

The entry point names a :class:`capeval.CaptionMetric` subclass whose ``name`` is the entry point's name, whose
``keys`` are its result keys and whose ``options`` (each a :class:`capeval.Option`) begin with ``<name>_``. Such a
metric is known everywhere a built-in one is (:data:`capeval.registry.REGISTRY`): ``capeval.score``, the command
line with its own flags, ``score-dataset``, the help and the did-you-mean. A plug-in that cannot be loaded (an
import error, not such a class, a name or key capeval already has) is left out with one :class:`PluginWarning`
naming it; capeval itself goes on. ``CAPEVAL_PLUGINS=0`` leaves every plug-in out (a run that must not depend on what
else is installed).
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "PluginWarning", "load_plugins"]

#: The entry-point group that plug-in metrics declare.
ENTRY_POINT_GROUP = "capeval.metrics"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class PluginWarning(UserWarning):
    """A plug-in metric (entry point of :data:`ENTRY_POINT_GROUP`) could not be used and is left out."""


def plugins_enabled() -> bool:
    """Whether plug-ins are loaded (``CAPEVAL_PLUGINS`` unset or not ``0``)."""
    return os.environ.get("CAPEVAL_PLUGINS", "1").strip() not in ("0", "false", "no", "off")


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _origin(point: Any) -> str:
    dist = getattr(point, "dist", None)
    where = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an unknown distribution"
    return f"{point.name} = {point.value!r} (from {where})"


def load_plugins(taken: Mapping[str, Any], taken_keys: set[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"module", "cls", "keys", "source"}}`` of the installed plug-in metrics that can be used (the fields of
    a :class:`capeval.registry.MetricSpec`), in entry-point name order; each one that cannot is one
    :class:`PluginWarning`. ``taken``: the names already registered; ``taken_keys``: the names, result keys and aliases
    already meaning something."""
    if not plugins_enabled():
        return {}
    found: dict[str, Any] = {}
    for point in _entry_points():
        try:
            cls = point.load()
            keys = _check(point.name, cls, taken, taken_keys | {k for spec in found.values() for k in spec["keys"]})
        except Exception as err:  # a plug-in's own failure of any kind: named, left out, capeval goes on
            text = " ".join(str(err).split()) or type(err).__name__
            warnings.warn(f"capeval: the metric plug-in {_origin(point)} is left out: {type(err).__name__}: {text}",
                          PluginWarning, stacklevel=3)
            continue
        dist = getattr(point, "dist", None)
        source = f"{dist.metadata['Name']}=={dist.version}" if dist is not None else ""
        found[point.name] = {"module": cls.__module__, "cls": cls.__qualname__, "keys": keys, "source": source}
    return found


def _check(name: str, cls: Any, taken: Mapping[str, Any], taken_keys: set[str]) -> tuple[str, ...]:
    """The result keys of the plug-in class ``cls`` registered as ``name``; ``TypeError`` / ``ValueError`` saying
    what is wrong with it."""
    from capeval.options import Option

    base = getattr(sys.modules.get("capeval.metric"), "CaptionMetric", None)  # imported by any plug-in that has it
    if base is None or not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"{cls!r} is not a subclass of capeval.CaptionMetric")
    if not _NAME.match(name):
        raise ValueError(f"the name {name!r} is not lower-case letters, digits and _")
    if getattr(cls, "name", None) != name:
        raise ValueError(f"the class's name is {getattr(cls, 'name', None)!r}, not the entry point's {name!r}")
    if name in taken or name in taken_keys:
        raise ValueError(f"capeval already has a metric or result key {name!r}")
    keys = cls.__dict__.get("keys")
    if not isinstance(keys, tuple) or not keys or not all(isinstance(k, str) and _NAME.match(k) for k in keys):
        raise ValueError("its keys must be a non-empty tuple of result-key names (lower case), e.g. keys = "
                         f"({name!r},)")
    clash = sorted(k for k in keys if k in taken_keys and k != name)
    if clash:
        raise ValueError(f"its result keys {clash} are capeval's already")
    options = cls.__dict__.get("options", {})
    if not isinstance(options, dict):
        raise TypeError("its options must be a dict of capeval.Option by keyword")
    for option, declaration in options.items():
        if not isinstance(option, str) or not option.startswith(f"{name}_"):
            raise ValueError(f"its option {option!r} does not begin with {name + '_'!r}")
        if not isinstance(declaration, Option):
            raise TypeError(f"its option {option!r} is not a capeval.Option")
    if getattr(cls.compute, "__isabstractmethod__", False):
        raise TypeError("it does not implement compute(batch)")
    return keys
