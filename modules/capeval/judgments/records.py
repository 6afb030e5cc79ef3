"""The record types every benchmark loader yields, and the :class:`Benchmark` container.

* :class:`CaptionRecord`: one (image, candidate caption) with its references and human judgment(s).
  Used by Flickr8k-Expert / CrowdFlower, COMPOSITE, THumB and (without judgments) the COCO
  Karpathy test captions.
* :class:`PairRecord`: one image with two candidate captions and the human preference between them
  (PASCAL-50S, ABSTRACT-50S).

A :class:`Benchmark` holds the records of one benchmark under one protocol, the settings that
define that protocol (they go into the settings string, like a metric signature) and the statistic
the protocol reports. :meth:`Benchmark.evaluate` turns metric scores into that statistic, so a
``capeval bench`` command only has to score ``benchmark.candidates()`` against
``benchmark.references()``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Statistics a protocol can report (see :mod:`capeval.judgments.stats`).
CORRELATION_STATISTICS = ("kendall_b", "kendall_c", "pearson", "spearman")
STATISTICS = (*CORRELATION_STATISTICS, "accuracy", "none")


@dataclass(frozen=True)
class CaptionRecord:
    """One judged (image, candidate caption) item.

    Attributes:
        benchmark: benchmark name (``"flickr8k-expert"``, ...).
        source_id: identifier built from the original files, unique within the benchmark
            (e.g. ``"1056338697_4f7d7ce270.jpg|2549968784_39bfbe44f9.jpg#2"``).
        image_id: the image's file name in the original distribution (``"1000268201_693b08cb0e.jpg"``,
            ``"COCO_val2014_000000504341.jpg"``).
        image_path: the image file under the data directory, or ``None`` when it is not there.
        candidate: the caption being judged, as in the source file (surrounding whitespace stripped).
        references: the reference captions the protocol scores against (never containing the
            candidate where the protocol says to remove it).
        human_scores: the human judgment(s) of this item on the benchmark's scale, one entry per
            judgment that enters the correlation as its own row (3 expert scores for
            Flickr8k-Expert; one value elsewhere; empty for unjudged captions).
        category: a grouping label (COMPOSITE subset ``"8k"``/``"30k"``/``"coco"``), or ``None``.
        system: who wrote the candidate (THumB ``SYS``, COMPOSITE ``source_guess``, Karpathy
            ``"human"``/``"model_1"``...), or ``None`` when unknown.
        extra: further per-item fields from the source (raw sub-scores, original ids, flags).
    """

    benchmark: str
    source_id: str
    image_id: str
    image_path: Path | None
    candidate: str
    references: tuple[str, ...]
    human_scores: tuple[float, ...]
    category: str | None = None
    system: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def human_mean(self) -> float:
        """Mean of :attr:`human_scores` (``ValueError`` for unjudged items)."""
        if not self.human_scores:
            raise ValueError(f"{self.benchmark} item {self.source_id!r} has no human judgment.")
        return float(np.mean(self.human_scores))


@dataclass(frozen=True)
class PairRecord:
    """Two candidate captions of one image and which one humans preferred.

    Attributes:
        candidates: ``(a, b)`` in the order of the original pair file.
        preferred: ``0`` when humans preferred ``a``, ``1`` for ``b``, ``None`` for a tie
            (equal votes). Accuracy functions apply an explicit tie policy to ``None``.
        votes: ``(votes for a, votes for b)`` when the raw votes are known, else ``None``.
        category: ``"HC"``, ``"HI"``, ``"HM"`` or ``"MM"`` (human-correct, human-incorrect,
            human-machine, machine-machine).
        Other attributes as in :class:`CaptionRecord`.
    """

    benchmark: str
    source_id: str
    image_id: str
    image_path: Path | None
    candidates: tuple[str, str]
    references: tuple[str, ...]
    preferred: int | None
    votes: tuple[int, int] | None = None
    category: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_tie(self) -> bool:
        return self.preferred is None


@dataclass
class Benchmark:
    """The records of one benchmark under one protocol.

    Attributes:
        name: registry name (``"flickr8k-expert"``...).
        records: all :class:`CaptionRecord` or all :class:`PairRecord`.
        settings: every choice that changes the records or the statistic (protocol, references,
            seed, tau variant...), in a fixed order; :meth:`settings_string` renders it.
        statistic: what :meth:`evaluate` reports: one of :data:`STATISTICS`.
        files: the source files that were read.
        notes: facts worth printing with the results (dropped items, known caveats).
        embedded_images: for a benchmark whose files carry the images themselves (a Hugging Face dataset's
            ``Image`` column), a function returning one image per record in record order (a ``datasets.Image``
            value: ``{"bytes": ..., "path": ...}``); called once, by the first :meth:`images`. ``None``: the
            images are files, :attr:`CaptionRecord.image_path`.
    """

    name: str
    records: list[CaptionRecord] | list[PairRecord]
    settings: dict[str, Any]
    statistic: str
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    embedded_images: Callable[[], Sequence[Any]] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"unknown statistic {self.statistic!r}; choose from {STATISTICS}.")
        kinds = {type(r) for r in self.records}
        if len(kinds) > 1:
            raise ValueError(f"{self.name}: records mix {sorted(k.__name__ for k in kinds)}.")
        self._embedded: list[Any] | None = None

    # -- shape ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[CaptionRecord | PairRecord]:
        return iter(self.records)

    @property
    def is_pairwise(self) -> bool:
        return bool(self.records) and isinstance(self.records[0], PairRecord)

    def settings_string(self) -> str:
        """``name|key:value|...`` in the style of metric signatures."""
        return "|".join([f"bench:{self.name}", *(f"{k}:{v}" for k, v in self.settings.items())])

    def counts(self) -> dict[str, int]:
        """Basic counts: items, judgments (rows entering a correlation), images, images on disk."""
        images = {r.image_id for r in self.records}
        on_disk = images if self.embedded_images else {r.image_id for r in self.records if r.image_path is not None}
        out = {"items": len(self.records), "images": len(images), "images_available": len(on_disk)}
        if self.is_pairwise:
            out["ties"] = sum(r.is_tie for r in self.records)
        else:
            out["judgments"] = sum(len(r.human_scores) for r in self.records)
        return out

    # -- inputs for scoring --------------------------------------------------------------------
    def candidates(self) -> list[str]:
        """Captions to score, in record order (pairs: ``a`` then ``b`` of every pair, flattened)."""
        if self.is_pairwise:
            return [c for r in self.records for c in r.candidates]
        return [r.candidate for r in self.records]

    def references(self) -> list[list[str]]:
        """References aligned with :meth:`candidates`."""
        if self.is_pairwise:
            return [list(r.references) for r in self.records for _ in range(2)]
        return [list(r.references) for r in self.records]

    def images(self) -> list[Any] | None:
        """Images aligned with :meth:`candidates` (pairs: the pair's image twice): the files' paths, or the
        images the benchmark's files carry (:attr:`embedded_images`); ``None`` when some record has no image file
        (:attr:`CaptionRecord.image_path` is ``None``; see :meth:`missing_images`)."""
        repeat = 2 if self.is_pairwise else 1
        if self.embedded_images is not None:
            if self._embedded is None:
                values = list(self.embedded_images())
                if len(values) != len(self.records):
                    raise ValueError(f"{self.name}: {len(values)} embedded images for {len(self.records)} records.")
                self._embedded = values
            return [value for value in self._embedded for _ in range(repeat)]
        if self.missing_images():
            return None
        return [str(r.image_path) for r in self.records for _ in range(repeat)]

    def missing_images(self) -> list[str]:
        """The distinct image ids whose file was not found, in record order (empty when every image is there, or
        when the benchmark's files carry the images: :attr:`embedded_images`)."""
        if self.embedded_images is not None:
            return []
        return list(dict.fromkeys(r.image_id for r in self.records if r.image_path is None))

    # -- evaluation ----------------------------------------------------------------------------
    def judgment_rows(self, metric_scores: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Expand per-item metric scores to the protocol's correlation rows.

        Every human judgment of item ``i`` becomes one row ``(human, metric_scores[i])`` (Cui et
        al. 2018, eq. 12; CLIPScore's 3 rows per Flickr8k-Expert pair). Returns
        ``(human, metric, item_index)`` arrays of equal length.
        """
        if self.is_pairwise:
            raise ValueError(f"{self.name} is pairwise; use evaluate(scores_a, scores_b).")
        scores = _as_scores(metric_scores, len(self.records), "metric_scores")
        human, metric, item = [], [], []
        for i, rec in enumerate(self.records):
            if not rec.human_scores:
                raise ValueError(f"{self.name} item {i} ({rec.source_id!r}) has no human judgment.")
            for h in rec.human_scores:
                human.append(h)
                metric.append(scores[i])
                item.append(i)
        return np.asarray(human, float), np.asarray(metric, float), np.asarray(item, int)

    def evaluate(
        self,
        metric_scores: Sequence[float],
        metric_scores_b: Sequence[float] | None = None,
        *,
        bootstrap: int = 0,
        confidence: float = 0.95,
        seed: int = 0,
        metric_ties: str = "half",
        human_ties: str = "exclude",
    ) -> dict[str, Any]:
        """The protocol's statistic for one metric.

        Caption benchmarks: ``metric_scores`` has one score per record; the result holds the
        correlation (``value``, in [-1, 1]) between the expanded judgment rows.
        Pairwise benchmarks: ``metric_scores`` and ``metric_scores_b`` score candidates ``a`` and
        ``b``; the result holds the accuracy (in [0, 1]) per category and their mean
        (``value``), with the given tie policies.
        With ``bootstrap > 0`` a seeded percentile interval resampling *items* (not rows) is
        added as ``ci`` (and per category for pairs).
        """
        from capeval.judgments import stats

        if self.statistic == "none":
            raise ValueError(f"{self.name} has no human judgments to evaluate against.")
        if self.is_pairwise:
            if metric_scores_b is None:
                raise ValueError(f"{self.name} is pairwise: give scores for candidate a and for candidate b.")
            return stats.evaluate_pairs(
                self.records, metric_scores, metric_scores_b, metric_ties=metric_ties,
                human_ties=human_ties, bootstrap=bootstrap, confidence=confidence, seed=seed,
            )
        if metric_scores_b is not None:
            raise ValueError(f"{self.name} is not pairwise; give one score per record.")
        human, metric, item = self.judgment_rows(metric_scores)
        out: dict[str, Any] = {
            "statistic": self.statistic,
            "value": stats.correlation(human, metric, self.statistic),
            "rows": int(len(human)),
            "items": len(self.records),
        }
        if bootstrap:
            out["ci"] = stats.bootstrap_ci(
                lambda idx: stats.correlation(human[idx], metric[idx], self.statistic),
                groups=item, n_resamples=bootstrap, confidence=confidence, seed=seed,
            )
        return out


def _as_scores(values: Sequence[float], n: int, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{what}: expected {n} scores (one per record), got shape {arr.shape}.")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(f"{what}[{bad[0]}] is {arr[bad[0]]}; scores must be finite numbers.")
    return arr
