"""METEOR 1.5's English language data, read from the files pycocoevalcap 1.2 installs (never copied).

* ``meteor-1.5.jar`` members: ``function/english.words`` (function words), ``nonbreaking/english.prefixes``
  (the normaliser's non-breaking prefixes), ``synonym/english.{synsets,exceptions}`` (WordNet synonyms,
  :mod:`capeval.meteor.synonyms`).
* ``meteor/data/paraphrase-en.gz`` beside the jar: the English paraphrase table
  (:mod:`capeval.meteor.paraphrase` builds a compact cache from it once).
"""
from __future__ import annotations

import zipfile
from functools import lru_cache
from pathlib import Path

from capeval.paths import meteor_jar

__all__ = ["MeteorDataNotFoundError", "function_words", "jar_text", "paraphrase_file"]


class MeteorDataNotFoundError(FileNotFoundError):
    """pycocoevalcap's METEOR 1.5 files (jar, paraphrase table) are missing."""


def _jar() -> Path:
    jar = meteor_jar()
    if not jar.is_file():
        raise MeteorDataNotFoundError(
            f"METEOR 1.5's language data comes from pycocoevalcap's {jar.name}, not found at {jar}: "
            "pip install pycocoevalcap==1.2"
        )
    return jar


def jar_text(member: str) -> str:
    """A text member of the METEOR 1.5 jar, decoded as UTF-8."""
    with zipfile.ZipFile(_jar()) as zf:
        return zf.read(member).decode("utf-8")


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """METEOR's English function words (one per line of ``function/english.words``)."""
    text = jar_text("function/english.words")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return frozenset(line.rstrip("\r") for line in lines)


def paraphrase_file() -> Path:
    """``paraphrase-en.gz`` (5.27 M entries: probability, phrase, paraphrase; 62 MB) beside the jar."""
    path = _jar().parent / "data" / "paraphrase-en.gz"
    if not path.is_file():
        raise MeteorDataNotFoundError(
            f"METEOR 1.5's English paraphrase table is missing ({path}): pip install --force-reinstall pycocoevalcap==1.2"
        )
    return path
