"""The one cache of loaded models in a process: judges, CLIP backends, Polos, critics and their encoders, spaCy
parsers, sentence encoders. Each is loaded once per key (two threads asking for the same model wait for one load;
different models load side by side) and kept until :func:`clear_loaded_models`, after which capeval holds no
reference to any of them (a 13-billion-parameter judge is freed once the caller drops its own)."""
from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["clear_loaded_models", "forget", "load_once", "loaded_kinds"]

T = TypeVar("T")

_LOCK = threading.Lock()
_MODELS: dict[tuple[str, Hashable], Any] = {}
_KEY_LOCKS: dict[tuple[str, Hashable], threading.Lock] = {}


def load_once(kind: str, key: Hashable, load: Callable[[], T]) -> T:
    """The model of ``kind`` (``"judge"``, ``"clip"``, ...) for ``key`` (what decides it: its file, device,
    dtype...), from ``load()`` the first time, kept afterwards. A ``load`` that raises keeps nothing."""
    slot = (kind, key)
    with _LOCK:
        if slot in _MODELS:
            return _MODELS[slot]
        lock = _KEY_LOCKS.setdefault(slot, threading.Lock())
    with lock:
        with _LOCK:
            if slot in _MODELS:
                return _MODELS[slot]
        model = load()
        with _LOCK:
            _MODELS[slot] = model
            _KEY_LOCKS.pop(slot, None)
        return model


def forget(kind: str | None = None) -> int:
    """Drop the loaded models of ``kind`` (every kind: ``None``); how many were dropped."""
    with _LOCK:
        slots = [slot for slot in _MODELS if kind is None or slot[0] == kind]
        for slot in slots:
            del _MODELS[slot]
    return len(slots)


def loaded_kinds() -> dict[str, int]:
    """``{kind: models loaded}`` now."""
    with _LOCK:
        counts: dict[str, int] = {}
        for kind, _ in _MODELS:
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def clear_loaded_models() -> int:
    """Forget every model capeval has loaded in this process (:func:`forget`), then collect garbage and, when torch
    is in use with CUDA, return its cached GPU memory: afterwards capeval references no model. Returns how many were
    dropped. The next call that needs one loads it again."""
    dropped = forget()
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "cuda", None) is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return dropped
