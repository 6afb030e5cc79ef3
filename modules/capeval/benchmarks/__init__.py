"""Deprecated name of two packages: :mod:`capeval.judgments` (the human-judgment datasets, their records and the
statistics that compare metrics with them: ``load_benchmark`` and the loaders) and :mod:`capeval.meta_evaluation`
(what runs metrics against them: ``capeval bench``'s harness, its reports, the leaderboard, ``capeval verify``,
``capeval robustness``, the ablations).

``import capeval.benchmarks`` and ``from capeval.benchmarks.<module> import ...`` keep working, with one
``DeprecationWarning``: each old module name is the new module itself (``capeval.benchmarks.harness`` *is*
``capeval.meta_evaluation.harness``), so patches and ``isinstance`` checks see one object.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import pkgutil
import sys
import warnings

import capeval.judgments as judgments
import capeval.meta_evaluation as meta_evaluation
from capeval.judgments import *  # noqa: F401,F403 - the old package's own names

__all__ = list(judgments.__all__)

warnings.warn("capeval.benchmarks is now capeval.judgments (datasets, records, statistics) and "
              "capeval.meta_evaluation (bench harness, reports, leaderboard, verify, robustness); the old name goes "
              "in a later release", DeprecationWarning, stacklevel=2)

#: Where each module of the old package lives now (read from the two packages).
MOVED = {info.name: package.__name__ for package in (judgments, meta_evaluation)
         for info in pkgutil.iter_modules(package.__path__)}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``capeval.benchmarks.<old module>[.<sub>]`` as the module it moved to."""

    PREFIX = __name__ + "."

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.PREFIX):
            return None
        head = fullname[len(self.PREFIX):].split(".")[0]
        if head not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        rest = spec.name[len(self.PREFIX):]
        return importlib.import_module(f"{MOVED[rest.split('.')[0]]}.{rest}")

    def exec_module(self, module):
        """The moved module ran when it was imported; only its own spec is put back (the import system set the
        old name's)."""
        module.__spec__ = importlib.util.find_spec(module.__name__)


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())


def __getattr__(name: str):
    if name in MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
