"""METEOR 1.5's ``-norm`` normalisation for English (``Normalizer.normalizeLine(line, en, keepPunctuation=true)``).

A Moses-style tokenisation with METEOR's additions, applied to the hypothesis and each reference before
they are lower-cased and aligned:

* every character that is not a letter (METEOR's list: ASCII, Latin-1, Latin Extended-A up to ``ž``,
  Cyrillic, phonetic extensions), digit, ASCII whitespace, ``. ' ` , -`` or a curly single quote is
  surrounded by spaces;
* runs of dots are protected, commas split except inside numbers, curly and doubled quotes become
  ``'`` and ``"``, en dashes and ``--`` become ``-``, a dash between letters/digits becomes a space
  (``U.S.-based`` -> ``U.S. based``), English contractions split to the right (``dog's`` -> ``dog 's``);
* runs of spaces and of the Unicode spaces U+00A0, U+2000–U+200A, U+202F, U+205F, U+3000 become one
  space at the end;
* a token-final dot is split off unless the token is a listed non-breaking prefix (``Mr.``), is
  followed by a lower-case word, is a numeric-only prefix followed by a number, or is a dotted
  acronym (``U.S.`` -> ``US``, dots dropped).

Character classes follow Java's defaults (``\\p{Digit}`` and ``\\p{Lower}`` are ASCII, ``\\s`` is ASCII
whitespace), tokens split on ``StringTokenizer``'s delimiters, and ``trim`` strips every character up
to U+0020, so the output is the jar's, character for character (checked against the jar by the
parity tests). The non-breaking prefixes are read from the jar's ``nonbreaking/english.prefixes``.
"""
from __future__ import annotations

import re
from functools import lru_cache

from capeval.meteor.resources import jar_text

__all__ = ["normalize_line", "nonbreaking_prefixes"]

_ALPHA = "A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f"
_ALNUM = "0-9" + _ALPHA
_JAVA_SPACE = " \t\n\x0b\f\r"  # Java's \s without UNICODE_CHARACTER_CLASS

_SEP_OTHER = re.compile(f"([^{_ALNUM}{_JAVA_SPACE}.'`,\\-\u2018\u2019])")
_MULTI_DOT = re.compile(r"\.([.]+)")
_MULTI_DOT2 = re.compile(r"DOTMULTI\.([^.])")
#: (pattern, replacement) applied in this order after the dots are protected (commas, then quotes)
_COMMAS_QUOTES = tuple((re.compile(p), r) for p, r in (
    (r"([^0-9]),([^0-9])", r"\1 , \2"), (r"([0-9]),([^0-9])", r"\1 , \2"), (r"([^0-9]),([0-9])", r"\1 , \2"),
    ("([`\u2018\u2019])", "'"), ("([\u201c\u201d]|'')", ' " '),
))
#: then, after en dashes and double dashes became "-": dashes between words, English contractions split right
_DASHES_CONTRACTIONS = tuple((re.compile(p), r) for p, r in (
    (f"([{_ALNUM}.])-([{_ALNUM}])", r"\1 \2"),
    (f"([^{_ALPHA}])'([^{_ALPHA}])", r"\1 ' \2"), (f"([^{_ALPHA}0-9])'([{_ALPHA}])", r"\1 ' \2"),
    (f"([{_ALPHA}])'([^{_ALPHA}])", r"\1 ' \2"), (f"([{_ALPHA}])'([{_ALPHA}])", r"\1 '\2"),
    (r"([0-9])'([s])", r"\1 '\2"),
))
_HAS_ALPHA = re.compile(f"[{_ALPHA}]")
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")  # java.util.StringTokenizer's default delimiters
_SPACES = re.compile("[ \u2000-\u200a\u202f\u205f\u3000\u00a0]+")  # the jar's r_white: space and Unicode spaces
_JAVA_TRIM = "".join(chr(c) for c in range(33))  # String.trim() strips every char <= U+0020

_NBP_ANY, _NBP_NUMERIC_ONLY = 1, 2


@lru_cache(maxsize=1)
def nonbreaking_prefixes() -> dict[str, int]:
    """``prefix -> 1`` (always non-breaking) or ``2`` (only before a number), from the jar's English list."""
    prefixes: dict[str, int] = {}
    for line in jar_text("nonbreaking/english.prefixes").split("\n"):
        fields = [f for f in _TOKEN_SPLIT.split(line) if f]
        if not fields or fields[0].startswith("#"):
            continue
        kind = _NBP_NUMERIC_ONLY if len(fields) > 1 and fields[1] == "#NUMERIC_ONLY#" else _NBP_ANY
        prefixes[fields[0]] = kind
    return prefixes


_PLAIN = re.compile("[A-Za-z0-9 ]*")


def normalize_line(line: str) -> str:
    """The jar's ``-norm`` output for one line of English (punctuation kept, case unchanged)."""
    if _PLAIN.fullmatch(line):  # letters, digits and spaces only (tokenised captions): no rule applies
        return " ".join(line.split())
    work = _SEP_OTHER.sub(r" \1 ", f" {line} ")
    work = _MULTI_DOT.sub(r" DOTMULTI\1", work)
    while "DOTMULTI." in work:
        work = _MULTI_DOT2.sub(r"DOTDOTMULTI \1", work)
        work = work.replace("DOTMULTI.", "DOTDOTMULTI")
    for pattern, replacement in _COMMAS_QUOTES:
        work = pattern.sub(replacement, work)
    work = work.replace("\u2013", "-").replace("--", "-")
    for pattern, replacement in _DASHES_CONTRACTIONS:
        work = pattern.sub(replacement, work)

    words = [w for w in _TOKEN_SPLIT.split(work) if w]
    prefixes = nonbreaking_prefixes()
    out: list[str] = []
    last = len(words) - 1
    for i, word in enumerate(words):
        if len(word) > 1 and word.endswith("."):
            pre = word[:-1]
            kind = prefixes.get(pre)
            following = words[i + 1] if i < last else ""
            if "." in pre and _HAS_ALPHA.search(pre):
                out.append(word.replace(".", ""))  # U.S. -> US
            elif kind == _NBP_ANY or (i < last and following[:1].isascii() and following[:1].islower()):
                out.append(word)
            elif kind == _NBP_NUMERIC_ONLY and i < last and following[:1].isdigit() and following[:1].isascii():
                out.append(word)
            else:
                out.append(pre + " .")
        else:
            out.append(word)
    work = " ".join(out) + " "
    while "DOTDOTMULTI" in work:
        work = work.replace("DOTDOTMULTI", "DOTMULTI.")
    work = work.replace("DOTMULTI", ".")
    return _SPACES.sub(" ", work).strip(_JAVA_TRIM)
