"""Old import paths (capeval 0.1) that keep working, with a ``DeprecationWarning``.

The 0.2 layout gave every concept one home (``docs/architecture.md``). Code written against 0.1 keeps
running: importing an old module path returns the module at its new home (the very same module
object, so ``isinstance`` checks and monkey-patching keep working) and warns once per path.

==============================  ==============================================
old path                        new home
==============================  ==============================================
``capeval.metrics``             :mod:`capeval.registry` + :mod:`capeval.metric`
``capeval.metrics.base``        :mod:`capeval.metric`
``capeval.metrics.<coco>``      :mod:`capeval.coco.<coco>` (bleu, cider, meteor, rouge)
``capeval.metrics._ngrams``     :mod:`capeval.coco.ngrams`
``capeval.cider_df``            :mod:`capeval.coco.document_frequency`
``capeval.spiceu[.x]``          :mod:`capeval.spice_u[.x] <capeval.spice_u>`
``capeval.bench[.x]``           :mod:`capeval.benchmarks[.x] <capeval.benchmarks>` (``cache`` → ``score_cache``)
``capeval.benchmarks._files``   :mod:`capeval.benchmarks.files`
``capeval.cli.render``          :mod:`capeval.render`
==============================  ==============================================
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

#: old module path -> new module path (``None``: a composite module, built below).
MOVED: dict[str, str | None] = {
    "capeval.metrics": None,
    "capeval.metrics.base": "capeval.metric",
    "capeval.metrics.bleu": "capeval.coco.bleu",
    "capeval.metrics.cider": "capeval.coco.cider",
    "capeval.metrics.meteor": "capeval.coco.meteor",
    "capeval.metrics.rouge": "capeval.coco.rouge",
    "capeval.metrics._ngrams": "capeval.coco.ngrams",
    "capeval.cider_df": "capeval.coco.document_frequency",
    "capeval.spiceu": "capeval.spice_u",
    "capeval.spiceu.build": "capeval.spice_u.build",
    "capeval.spiceu.concepts": "capeval.spice_u.concepts",
    "capeval.spiceu.metric": "capeval.spice_u.metric",
    "capeval.spiceu.tables": "capeval.spice_u.tables",
    "capeval.spiceu.uniqueness": "capeval.spice_u.uniqueness",
    "capeval.bench": "capeval.benchmarks",
    "capeval.bench.cache": "capeval.benchmarks.score_cache",
    "capeval.bench.harness": "capeval.benchmarks.harness",
    "capeval.bench.report": "capeval.benchmarks.report",
    "capeval.bench.scorers": "capeval.benchmarks.scorers",
    "capeval.benchmarks._files": "capeval.benchmarks.files",
    "capeval.cli.render": "capeval.render",
}

#: The 0.1 ``capeval.metrics`` package held the registry and the metric base class.
_COMPOSITE_SOURCES = ("capeval.registry", "capeval.metric")


def _composite_metrics_module() -> types.ModuleType:
    module = types.ModuleType("capeval.metrics", "Deprecated: use capeval.registry and capeval.metric.")
    for source in _COMPOSITE_SOURCES:
        for name, value in vars(importlib.import_module(source)).items():
            if not name.startswith("_"):
                setattr(module, name, value)
    module.__path__ = []  # a package, so that ``capeval.metrics.bleu`` resolves through this finder
    return module


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str | None) -> None:
        self.old, self.new = old, new

    def create_module(self, spec):
        target = self.new or _COMPOSITE_SOURCES[0]
        warnings.warn(
            f"{self.old} moved to {' and '.join(_COMPOSITE_SOURCES) if self.new is None else target} in capeval "
            f"0.2; the old import path will be removed in a future release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return _composite_metrics_module() if self.new is None else importlib.import_module(self.new)

    def exec_module(self, module) -> None:  # the module is already initialised at its new home
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolves the old import paths in :data:`MOVED` to their new homes."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        loader = _MovedModuleLoader(fullname, MOVED[fullname])
        return importlib.machinery.ModuleSpec(fullname, loader, is_package=fullname in _PACKAGES)


_PACKAGES = {"capeval.metrics", "capeval.spiceu", "capeval.bench"}


def install() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())  # before PathFinder: no second copy via an old __path__
