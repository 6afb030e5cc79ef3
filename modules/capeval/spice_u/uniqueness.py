"""Concept uniqueness (SPICE-U, Wang et al. 2020, Eqs. 2, 6 and 7).

A *concept* is a SPICE tuple written as its words joined by single spaces: an object ``"dog"``,
an attribute ``"dog brown"``, a relation ``"dog on grass"``.

* ``Un(c) = 1 - (# images containing c) / (# images)`` (Eq. 2), in [0, 1]; an image contains ``c`` if
  the scene graph of any of its captions has it; a concept never seen in the table has ``Un = 1``.
* ``Uniq(P; G) = (sum_{p in P} Un(p) - min_A) / (max_A - min_A)`` (Eq. 6), where ``max_A`` / ``min_A`` are
  the sums of the ``k = |P|`` largest / smallest ``Un`` values over the deduplicated concepts of
  ``P ∪ G``; ``Uniq = 1`` when ``max_A == min_A``. In [0, 1].
* ``SPICE-U = harmonic_mean(SPICE F, Uniq)`` (Eq. 7), and 0 when precision, recall or Uniq is 0.
"""
from __future__ import annotations

import gzip
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

TABLE_FORMAT = "capeval-uniqueness-1"


@dataclass
class UniquenessTable:
    """Image counts per concept over a caption corpus.

    Attributes:
        n_images: number of images in the corpus (the denominator of Eq. 2).
        counts: concept key -> number of images whose captions contain it (1..n_images).
        meta: provenance (``source``, ``parser``, ``text``...), written into the file header and
            into score signatures.
    """

    n_images: int
    counts: dict[str, int]
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n_images <= 0:
            raise ValueError(f"n_images must be positive, got {self.n_images}.")
        for concept, n in self.counts.items():
            if not 0 < n <= self.n_images:
                raise ValueError(f"count of {concept!r} is {n}, outside 1..{self.n_images}.")

    def un(self, concept: str) -> float:
        """Un(concept) in [0, 1]; 1.0 for a concept absent from the table."""
        n = self.counts.get(concept)
        return 1.0 if n is None else 1.0 - n / self.n_images

    def __len__(self) -> int:
        return len(self.counts)

    # --- storage: gzip'd TSV, header lines "#key<TAB>value", then "concept<TAB>count" -------------
    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        header = {"format": TABLE_FORMAT, "n_images": str(self.n_images), **self.meta}
        with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=9) as fh:
            for key, value in header.items():
                fh.write(f"#{key}\t{value}\n")
            for concept, n in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])):
                if "\t" in concept or "\n" in concept:
                    raise ValueError(f"concept {concept!r} contains a tab or newline")
                fh.write(f"{concept}\t{n}\n")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> UniquenessTable:
        path = Path(path)
        meta: dict[str, str] = {}
        counts: dict[str, int] = {}
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.rstrip("\n")
                if line.startswith("#"):
                    key, _, value = line[1:].partition("\t")
                    meta[key] = value
                    continue
                concept, sep, n = line.rpartition("\t")
                if not sep:
                    raise ValueError(f"{path}:{lineno}: expected 'concept<TAB>count'.")
                counts[concept] = int(n)
        if meta.pop("format", None) != TABLE_FORMAT:
            raise ValueError(f"{path}: not a capeval uniqueness table (format {TABLE_FORMAT}).")
        n_images = int(meta.pop("n_images"))
        return cls(n_images=n_images, counts=counts, meta=meta)

    @classmethod
    def from_image_concepts(cls, image_concepts: Iterable[Iterable[str]], meta: Mapping[str, str] | None = None):
        """Build from one iterable of concept keys per image."""
        counts: dict[str, int] = {}
        n_images = 0
        for concepts in image_concepts:
            n_images += 1
            for c in set(concepts):
                counts[c] = counts.get(c, 0) + 1
        return cls(n_images=n_images, counts=counts, meta=dict(meta or {}))


def caption_uniqueness(candidate: Iterable[str], references: Iterable[str], un) -> float:
    """Eq. 6: uniqueness of the candidate's concepts relative to the best/worst choice of as many.

    Args:
        candidate: concept keys of the candidate's scene graph (duplicates are ignored).
        references: concept keys of the merged reference graph.
        un: ``concept -> Un`` (e.g. :meth:`UniquenessTable.un`).

    Returns:
        Uniq in [0, 1]; 1.0 when the best and worst choices tie (including an empty candidate).
    """
    cand = list(dict.fromkeys(candidate))
    pool = dict.fromkeys(cand)
    pool.update(dict.fromkeys(references))
    values = sorted((un(c) for c in pool), reverse=True)
    k = len(cand)
    best = math.fsum(values[:k])
    worst = math.fsum(values[len(values) - k :]) if k else 0.0
    if math.isclose(best, worst, rel_tol=0.0, abs_tol=1e-12):
        return 1.0
    own = math.fsum(un(c) for c in cand)
    return min(1.0, max(0.0, (own - worst) / (best - worst)))


def spice_u_score(precision: float, recall: float, uniqueness: float) -> float:
    """Eq. 7: harmonic mean of SPICE F (from ``precision``, ``recall``) and ``uniqueness``; 0 if any is 0."""
    if precision <= 0.0 or recall <= 0.0 or uniqueness <= 0.0:
        return 0.0
    f = 2.0 * precision * recall / (precision + recall)
    return 2.0 * f * uniqueness / (f + uniqueness)
