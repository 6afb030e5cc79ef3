"""Caption clean-up for metrics that read caption *text*.

``thumb`` is the minimal post-processing of THumB 1.0 (Kasai et al. 2022, §2.2.3), capeval's default:

1. remove spaces at the start and end of the caption;
2. upper-case the first letter;
3. add a period at the end if there is none, and remove a space before that final period.

``none`` leaves the text untouched.

**The clean-up never reaches the PTB tokens.** Token-based metrics (BLEU, METEOR, ROUGE-L, CIDEr-D,
and SPICE / SPICE-U with their default ``spice_input="tokens"``) tokenise each caption *as written*,
exactly as pycocoevalcap does, so their scores are pycocoevalcap's whatever the clean-up. The THumB
changes are the ones PTB lower-casing and COCO punctuation removal are meant to discard, but fed to
the tokenizer they can create tokens the caption never had: the appended period glues onto a final
single letter or abbreviation (``... on top of a`` -> ``a.``, ``... Ave`` -> ``ave.``), and a
capital at the start of the next caption changes how the jar reads ``letter K.`` before it. The
cleaned text (:attr:`capeval.batch.CaptionBatch.predictions`) is what metrics reading raw text see
(``spice_input="raw"``) and what THumB annotation sheets show. A score signature therefore reads
``clean:thumb`` only when a metric of that call read the cleaned text, ``clean:none`` otherwise.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_SPACE_BEFORE_FINAL_PERIOD = re.compile(r"\s+\.$")


def thumb_cleanup(text: str) -> str:
    """THumB minimal post-processing of one caption (see module docstring)."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    if not text.endswith("."):
        text += "."
    return _SPACE_BEFORE_FINAL_PERIOD.sub(".", text)


def no_cleanup(text: str) -> str:
    return text


CLEANUPS: dict[str, Callable[[str], str]] = {"thumb": thumb_cleanup, "none": no_cleanup}


def get_cleanup(name: str | None) -> Callable[[str], str]:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"cleanup must be one of {sorted(CLEANUPS)} or None, got a {type(name).__name__} ({name!r:.60}).")
    key = "none" if name is None else name.lower()
    if key not in CLEANUPS:
        raise ValueError(f"Unknown cleanup {name!r}; choose one of {sorted(CLEANUPS)}.")
    return CLEANUPS[key]


def clean_all(texts: Sequence[str], name: str | None) -> list[str]:
    fn = get_cleanup(name)
    return [fn(t) for t in texts]
