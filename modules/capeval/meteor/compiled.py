"""The aligner METEOR runs: :mod:`capeval.meteor.align` compiled to C when that copy is current, else the Python one.

``setup.py`` compiles ``align.py`` with Cython, as it is (pure-Python mode, no C types: the same operations on the
same Python objects, so the same statistics), into ``capeval.meteor._align_compiled``, stamped with the SHA-256 of the
source it was compiled from (:data:`SOURCE_DIGEST` inside it). :func:`aligner` returns that module when it is there and
its stamp is the digest of the ``align.py`` beside it; otherwise (no C compiler or Cython at install time, or
``align.py`` edited since: an editable install rebuilds it with ``pip install -e .``) the Python module. Both give
identical statistics (tests compare them); the compiled one aligns a caption in fewer instructions
(``BENCHMARKS.md``, "METEOR").
"""
from __future__ import annotations

import hashlib
from importlib import import_module
from pathlib import Path
from types import ModuleType

__all__ = ["COMPILED_NAME", "aligner", "source_digest"]

#: The compiled copy's module name.
COMPILED_NAME = "capeval.meteor._align_compiled"


def source_digest() -> str:
    """SHA-256 (hex) of ``align.py`` as it is on disk now."""
    return hashlib.sha256((Path(__file__).with_name("align.py")).read_bytes()).hexdigest()


def compiled_aligner() -> ModuleType | None:
    """The compiled copy of :mod:`capeval.meteor.align` when it is installed and compiled from today's ``align.py``;
    ``None`` otherwise."""
    try:
        module = import_module(COMPILED_NAME)
    except ImportError:
        return None
    return module if getattr(module, "SOURCE_DIGEST", None) == source_digest() else None


def aligner() -> ModuleType:
    """The module whose :func:`~capeval.meteor.align.best_stats` METEOR calls: the current compiled copy, else
    :mod:`capeval.meteor.align`."""
    return compiled_aligner() or import_module("capeval.meteor.align")
