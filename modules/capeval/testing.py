"""Seeded input generators for capeval's own tests and benchmark scripts (and for users' stress tests).

Deterministic for a given seed, pure Python, no optional dependency.
"""
from __future__ import annotations

import random
import string

#: Non-ASCII characters mixed into random strings: accents, CJK, dotless i, fractions, typographic
#: quotes and dashes, no-break / thin / zero-width spaces, an emoji and a control character.
UNICODE_SAMPLE = "éÉßΣΩ猫ı½²°©’‘“”«»…—–‐\u00a0\u2009\u200b\U0001F600\x01"

_LINE_BREAKS = "\x85\u2028\u2029"


def random_strings(
    n: int,
    seed: int = 0,
    *,
    unicode_chars: str = UNICODE_SAMPLE,
    any_codepoint_share: float = 0.0,
    max_chars: int = 25,
) -> list[str]:
    """``n`` random strings of 1..``max_chars`` characters, seeded.

    Each character is an ASCII letter or digit (45 %), a space (20 %), ASCII punctuation (27 %), one
    of ``unicode_chars`` (8 % minus ``any_codepoint_share``) or, with probability
    ``any_codepoint_share``, any code point of the BMP or the next plane (surrogates and Unicode line
    breaks replaced by ``x``). Strings never contain ``\\n`` or ``\\r``.
    """
    if not 0.0 <= any_codepoint_share <= 0.08:
        raise ValueError(f"any_codepoint_share={any_codepoint_share!r} must be in [0, 0.08].")
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    unicode_limit = 1.0 - any_codepoint_share
    out = []
    for _ in range(n):
        chars = []
        for _ in range(rng.randint(1, max_chars)):
            r = rng.random()
            if r < 0.45:
                chars.append(rng.choice(alnum))
            elif r < 0.65:
                chars.append(" ")
            elif r < 0.92:
                chars.append(rng.choice(string.punctuation))
            elif r < unicode_limit:
                chars.append(rng.choice(unicode_chars))
            else:
                code = rng.choice([rng.randint(0x80, 0xFFFF), rng.randint(0x10000, 0x1FFFF)])
                ch = chr(code)
                chars.append("x" if 0xD800 <= code <= 0xDFFF or ch in _LINE_BREAKS else ch)
        out.append("".join(chars))
    return out


__all__ = ["UNICODE_SAMPLE", "random_strings"]
