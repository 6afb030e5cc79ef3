"""Text pipeline: raw caption -> clean caption -> normalised tokens.

Tokenizers are looked up by name:

* ``ptb`` (default): pure-Python reproduction of pycocoevalcap's PTBTokenizer (Stanford CoreNLP 3.4.1
  ``PTBTokenizer -preserveLines -lowerCase``, then removal of the COCO punctuation tokens), each
  caption tokenised on its own, so its tokens never depend on the other captions of the call.
* ``ptb-ctx``: the same, but captions are read like the lines of one file, as the jar reads them in
  pycocoevalcap: a caption's last token can depend on how the next caption starts (``letter A.`` +
  ``The ...``). Only for reproducing pycocoevalcap's output order-for-order.
* ``ptb-java``: the Java tokenizer itself, through the jar shipped with pycocoevalcap (list context,
  like ``ptb-ctx``).

A tokenizer is an object with ``name`` (str, goes into signatures) and
``tokenize(texts: Sequence[str]) -> list[list[str]]``.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Protocol

from capeval.text.cleanup import clean_all, get_cleanup, thumb_cleanup

#: Tokens pycocoevalcap removes after PTB tokenisation (its tokenizer's punctuation list).
COCO_PUNCTUATION = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)


class Tokenizer(Protocol):
    name: str

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]: ...


_TOKENIZERS = {  # name -> (module, class, constructor keyword arguments)
    "ptb": ("capeval.text.ptb", "PTBTokenizer", {"line_context": False}),
    "ptb-ctx": ("capeval.text.ptb", "PTBTokenizer", {"line_context": True}),
    "ptb-java": ("capeval.text.ptb_java", "JavaPTBTokenizer", {}),
}


def available_tokenizers() -> list[str]:
    return sorted(_TOKENIZERS)


def check_tokenizer(name: str | Tokenizer = "ptb") -> str | Tokenizer:
    """``name`` unchanged if :func:`get_tokenizer` accepts it (a known name, or an object with a str ``name`` and a
    ``tokenize`` method), without building the tokenizer (its module is imported on first use); errors as there."""
    if not isinstance(name, str):
        return get_tokenizer(name)
    if name not in _TOKENIZERS:
        raise ValueError(f"Unknown tokenizer {name!r}; choose one of {available_tokenizers()}.")
    return name


def get_tokenizer(name: str | Tokenizer = "ptb") -> Tokenizer:
    """Return a tokenizer instance by name (or pass an instance through, after checking its interface)."""
    if not isinstance(name, str):
        if not isinstance(getattr(name, "name", None), str) or not callable(getattr(name, "tokenize", None)):
            raise TypeError(
                f"tokenizer must be one of {available_tokenizers()} or an object with a str 'name' and a "
                f"'tokenize(texts)' method, got a {type(name).__name__} ({name!r:.60})."
            )
        return name
    if name not in _TOKENIZERS:
        raise ValueError(f"Unknown tokenizer {name!r}; choose one of {available_tokenizers()}.")
    module, cls, kwargs = _TOKENIZERS[name]
    return getattr(importlib.import_module(module), cls)(**kwargs)


__all__ = [
    "COCO_PUNCTUATION",
    "Tokenizer",
    "available_tokenizers",
    "check_tokenizer",
    "clean_all",
    "get_cleanup",
    "get_tokenizer",
    "thumb_cleanup",
]
