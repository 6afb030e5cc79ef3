"""The last step of :func:`capeval.score_dataset`: the shards merged in chunk order into ``result.json`` (BLEU's
counts and METEOR's statistics through the metrics' :meth:`~capeval.metric.CaptionMetric.merge_state`, every other
corpus value the exact mean of its per-caption values)."""
from __future__ import annotations

import math
import warnings
from typing import Any

from capeval.advice import Setting, with_words, words
from capeval.dataset_scoring import store
from capeval.dataset_scoring.chunks import ScoringRun


#: Skipped rows named in result.json (all of them are counted).
MAX_LISTED = 1000


class ExactSum:
    """A float sum kept exactly (Shewchuk's non-overlapping partials, as ``math.fsum`` keeps them): :meth:`value` is
    ``math.fsum`` of every value added, in memory that does not grow with their number."""

    def __init__(self) -> None:
        self._partials: list[float] = []
        self._special = 0.0  # inf / nan, which the partials cannot hold: added as floats are

    def add(self, x: float) -> None:
        x = float(x)
        if not math.isfinite(x):
            self._special += x
            return
        partials, i = self._partials, 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def value(self) -> float:
        total = math.fsum(self._partials)
        return total + self._special if self._special else total


class CorpusMerge:
    """Corpus values from chunks scored apart (:func:`~capeval.dataset_scoring.chunks.shard_of`'s records and
    per-caption columns), as :func:`capeval.score` gives them on all the rows: BLEU's counts and METEOR's statistics
    through the metrics' :meth:`~capeval.metric.CaptionMetric.merge_state` (in the order the chunks are added),
    every other corpus value the exact mean of its per-caption values; token coverage added up."""

    def __init__(self, selected: dict[str, list[str]]) -> None:
        self.selected = selected
        self.sums: dict[str, ExactSum] = {}
        self.merged: dict[str, Any] = {}  # per metric with a mergeable state: one chunk's state in memory at a time
        self.tokens: dict[str, list[int]] = {}
        self.rows = self.skipped_count = 0
        self.skipped: list[dict] = []
        self.nrefs: set[int] = set()
        self.non_english: list = []
        self.signature = self.record_fields = None

    def add(self, record: dict[str, Any], columns: dict[str, list] | None) -> None:
        """One chunk: its record and (when it scored rows) its per-caption columns by result key."""
        self.add_record(record)
        if record["rows"]:
            for keys in self.selected.values():
                for key in keys:
                    self.add_values(key, columns[key])

    def add_values(self, key: str, values: list[float]) -> None:
        """Per-caption values of result key ``key`` (of scored rows), in any grouping: their exact sum is kept."""
        self.sums.setdefault(key, ExactSum()).add(math.fsum(values))

    def add_record(self, record: dict[str, Any]) -> None:
        """A chunk's record (:func:`~capeval.dataset_scoring.chunks.shard_of`): rows, skipped rows, the metrics'
        states (merged in the order added), token counts, signature."""
        from capeval.registry import metric_class

        self.rows += record["rows"]
        self.skipped_count += len(record["skipped"])
        self.skipped.extend(record["skipped"][: max(0, MAX_LISTED - len(self.skipped))])
        self.nrefs.update(record["nrefs"])
        self.non_english.extend(record["non_english"][: max(0, 10 - len(self.non_english))])
        if self.signature is None and record["signature"]:
            self.signature = record["signature"]
            self.record_fields = [tuple(field) for field in record.get("signature_fields") or ()]
        if not record["rows"]:
            return
        for name, state in record["states"].items():
            self.merged[name] = metric_class(name).merge_state(self.merged.get(name), state)
        for name, (known, total) in record.get("coverage", {}).items():
            counts = self.tokens.setdefault(name, [0, 0])
            counts[0], counts[1] = counts[0] + known, counts[1] + total

    def result(self) -> dict[str, Any]:
        """Corpus values under :func:`capeval.score`'s keys, ``signature``, ``coverage`` / ``coverage_tokens`` (for
        metrics that read a fixed vocabulary), ``rows`` and ``skipped``; ``ValueError`` when no row was scored."""
        from capeval.registry import metric_class
        from capeval.signature import Signature

        if self.rows == 0:
            raise ValueError(f"score_dataset: no row of the input could be scored ({self.skipped_count} skipped).")
        result: dict[str, Any] = {}
        for name, keys in self.selected.items():
            if name in self.merged:  # the keys asked for, as capeval.score reports them
                corpus = metric_class(name).corpus_from_merged(self.merged[name])
                result.update({key: corpus[key] for key in keys})
            else:
                result.update({key: self.sums.get(key, ExactSum()).value() / self.rows for key in keys})
        # a chunk written before the signature's fields were kept: its signature parsed
        stored = self.record_fields or Signature.of(self.signature).fields
        nrefs = self.nrefs
        result["signature"] = Signature(stored).with_field("nrefs",
                                                           str(next(iter(nrefs))) if len(nrefs) == 1 else "var")
        if self.tokens:  # as capeval.score's result["coverage"]: the share of the prediction tokens read that it knows
            result["coverage"] = {name: known / total if total else None
                                  for name, (known, total) in self.tokens.items()}
            result["coverage_tokens"] = {name: {"known": known, "total": total}
                                         for name, (known, total) in self.tokens.items()}
        result["rows"] = self.rows
        result["skipped"] = {"count": self.skipped_count, "rows": self.skipped}
        return result


class InOrder:
    """The shards of a run merged in chunk order, from the first on: :meth:`catch_up` merges those written so far
    (the parent of the workers calls it while they score, so that :func:`finalize` merges only the last ones)."""

    def __init__(self, run: ScoringRun) -> None:
        self.run, self.merge, self.next = run, CorpusMerge(run.selected), 0

    def catch_up(self, chunks: int | None = None) -> None:
        """Merge the next shards while they are there and readable; with ``chunks``, all of them up to that count
        (``RuntimeError`` naming the first that is missing or unreadable)."""
        while chunks is None or self.next < chunks:
            path = store.shard_path(self.run.folder, self.next)
            record = store.read_record(path)
            if record is None:
                if chunks is None:  # not written yet (or a damaged one a worker writes again)
                    return
                raise RuntimeError(f"{path} is missing or unreadable: chunk {self.next} was not scored; run the same "
                                   "call again.")
            self.merge.add(record, store.read_columns(path) if record["rows"] else None)
            self.next += 1


def finalize(run: ScoringRun, merged: InOrder | None = None) -> dict[str, Any]:
    """Merge the shards in chunk order into ``result.json`` (those after the ones ``merged`` holds already)."""
    import json

    plan_path = run.folder / store.PLAN
    if not plan_path.is_file():
        raise RuntimeError(f"{run.folder}: no {store.PLAN}; the scoring did not reach the end of the input.")
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    if merged is None or merged.next > plan["chunks"]:  # shards past the input's end are none of its: merged anew
        merged = InOrder(run)
    merged.catch_up(plan["chunks"])
    merge = merged.merge
    result = merge.result()
    result["chunks"] = plan["chunks"]
    result["shards"] = f"{store.SHARDS}/part-*.parquet"
    if merge.non_english and run.language_check:
        warn_non_english(merge.non_english, stacklevel=4)
        result["non_english_ids"] = merge.non_english
    store.write_json(run.folder / store.RESULT, result)
    return result


def warn_non_english(ids: list, stacklevel: int = 3) -> None:
    """The one warning about rows (by id) whose captions do not look English."""
    from capeval.language import NonEnglishWarning

    warnings.warn(with_words(NonEnglishWarning, words(
        "language_check", f"rows with id(s) {', '.join(map(repr, ids))} hold captions that do not look "
        "English (script or function words); capeval's metrics were built for English captions. ", Setting(False),
        " silences this.")), stacklevel=stacklevel)
