"""WordNet synonym sets of METEOR 1.5's synonym module, as METEOR's synonym matcher and official SPICE use them.

METEOR's ``SynonymMatcher`` matches two different words whose synset sets intersect, each word's set being
:meth:`SynonymDictionary.word_synsets` | :meth:`SynonymDictionary.stem_synsets`. Official SPICE builds an ``edu.cmu.meteor.aligner.SynonymDictionary`` from the ``synonym/`` folder of
METEOR 1.5 (``english.exceptions``, ``english.synsets``; ``english.relations`` is read but never used,
its loading flag is off) and gives every concept string the union of

* the synsets listed for the concept itself (``english.synsets``: a word line, then a line of
  integer synset ids), and
* its *stem* synsets: the synsets of every base form that ``english.exceptions`` lists for the concept
  (irregular inflections such as ``men -> man``), or, when it lists none, the synsets of the first
  form produced by METEOR's suffix-stripping ``morph`` that is itself in ``english.synsets``.

Multi-word concepts are looked up with spaces replaced by ``_`` (``"in front of"`` -> ``in_front_of``).

The data is read from the ``meteor-1.5.jar`` that pycocoevalcap 1.2 ships (byte-identical to the copy
inside ``spice/lib/Meteor-1.5.jar``); nothing is downloaded and NLTK is not used. Ids are parsed
lazily, so loading takes well under a second.
"""
from __future__ import annotations

import io
import threading
import zipfile
from functools import lru_cache
from pathlib import Path

from capeval.paths import meteor_jar

#: Signature value naming the synonym data.
SYNONYM_SOURCE = "meteor-1.5-wordnet"

# METEOR's morph(): 20 (suffix, replacement) rules tried in this order; the first candidate that has
# synsets wins. Duplicated entries are kept as in the original table (they are harmless).
_SUFFIX_RULES: tuple[tuple[str, str], ...] = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"), ("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
    ("ing", "e"), ("ing", ""), ("er", ""), ("est", ""), ("er", "e"), ("est", "e"),
)  # fmt: skip


class SynonymDictionary:
    """Word -> WordNet synset ids, with METEOR 1.5's exception list and stemming rules."""

    def __init__(self, synsets_text: str, exceptions_text: str) -> None:
        self._raw_synsets: dict[str, str] = _pairs(synsets_text)
        self._bases: dict[str, list[str]] = {}
        for base, forms in _pairs(exceptions_text).items():
            for form in forms.split():
                self._bases.setdefault(form, []).append(base)
        self._parsed: dict[str, frozenset[int]] = {}
        self._concepts: dict[str, frozenset[int]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_jar(cls, jar: str | Path | None = None) -> SynonymDictionary:
        """Load ``synonym/english.synsets`` and ``english.exceptions`` from METEOR's jar."""
        path = Path(jar) if jar is not None else meteor_jar()
        if not path.is_file():
            raise FileNotFoundError(
                f"METEOR 1.5 jar not found at {path}; SPICE's synonym data comes from it: pip install pycocoevalcap==1.2"
            )
        with zipfile.ZipFile(path) as zf:
            synsets = zf.read("synonym/english.synsets").decode("utf-8")
            exceptions = io.TextIOWrapper(zf.open("synonym/english.exceptions"), encoding="utf-8").read()
        return cls(synsets, exceptions)

    def __len__(self) -> int:
        return len(self._raw_synsets)

    def word_synsets(self, word: str) -> frozenset[int]:
        """Synset ids listed for ``word`` itself (empty when it has none)."""
        found = self._parsed.get(word)
        if found is None:
            raw = self._raw_synsets.get(word)
            found = frozenset(int(x) for x in raw.split()) if raw else frozenset()
            self._parsed[word] = found
        return found

    def morph(self, word: str) -> str:
        """METEOR's suffix stripper: the first de-suffixed form that has synsets, else ``""``.

        Reproduces the original's quirks: words ending in ``ss`` or of length <= 2 are returned
        unchanged, and a word ending in ``ful`` gets ``ful`` appended to the form found.
        """
        suffix = "ful" if word.endswith("ful") else ""
        if word.endswith("ss") or len(word) <= 2:
            return word
        for old, new in _SUFFIX_RULES:
            if word.endswith(old):
                candidate = word[: len(word) - len(old)] + new
                if candidate in self._raw_synsets:
                    return candidate + suffix
        return ""

    def stem_synsets(self, word: str) -> frozenset[int]:
        """Synsets of the base forms of ``word`` (exception list first, else :meth:`morph`)."""
        bases = self._bases.get(word)
        if bases is not None:
            out: set[int] = set()
            for base in bases:
                out |= self.word_synsets(base)
            return frozenset(out)
        return self.word_synsets(self.morph(word))

    def concept_synsets(self, concept: str) -> frozenset[int]:
        """All synsets SPICE attaches to a concept string (word or phrase); memoised, thread-safe."""
        found = self._concepts.get(concept)
        if found is None:
            key = concept.strip().lower().replace(" ", "_")
            with self._lock:
                found = self.word_synsets(key) | self.stem_synsets(key)
                self._concepts[concept] = found
        return found


def _pairs(text: str) -> dict[str, str]:
    """Two-line records (key line, value line) -> dict; later duplicates win, as in Java's Hashtable."""
    lines = text.split("\n")
    out: dict[str, str] = {}
    for i in range(0, len(lines) - 1, 2):
        out[lines[i]] = lines[i + 1]
    return out


@lru_cache(maxsize=1)
def default_synonyms() -> SynonymDictionary:
    """The process-wide dictionary from pycocoevalcap's METEOR jar."""
    return SynonymDictionary.from_jar()
