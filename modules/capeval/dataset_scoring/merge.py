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


#: Metrics that cannot be scored chunk by chunk, and why.
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


def finalize(run: ScoringRun) -> dict[str, Any]:
    """Merge the shards in chunk order into ``result.json``."""
    import json

    from capeval.registry import metric_class

    plan_path = run.folder / store.PLAN
    if not plan_path.is_file():
        raise RuntimeError(f"{run.folder}: no {store.PLAN}; the scoring did not reach the end of the input.")
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    sums: dict[str, ExactSum] = {}
    merged: dict[str, Any] = {}  # per metric with a mergeable state: merge_state over the chunks, in order
    tokens: dict[str, list[int]] = {}
    rows, skipped_count, skipped, nrefs, non_english = 0, 0, [], set(), []
    signature = record_fields = None
    for k in range(plan["chunks"]):
        path = store.shard_path(run.folder, k)
        record = store.read_record(path)
        if record is None:
            raise RuntimeError(f"{path} is missing or unreadable: chunk {k} was not scored; run the same call again.")
        rows += record["rows"]
        skipped_count += len(record["skipped"])
        skipped.extend(record["skipped"][: max(0, MAX_LISTED - len(skipped))])
        nrefs.update(record["nrefs"])
        non_english.extend(record["non_english"][: max(0, 10 - len(non_english))])
        if signature is None and record["signature"]:
            signature = record["signature"]
            record_fields = [tuple(field) for field in record.get("signature_fields") or ()]
        if record["rows"]:
            columns = store.read_columns(path)
            for keys in run.selected.values():
                for key in keys:
                    sums.setdefault(key, ExactSum()).add(math.fsum(columns[key]))
            for name, state in record["states"].items():
                merged[name] = metric_class(name).merge_state(merged.get(name), state)
            for name, (known, total) in record.get("coverage", {}).items():
                counts = tokens.setdefault(name, [0, 0])
                counts[0], counts[1] = counts[0] + known, counts[1] + total
    if rows == 0:
        raise ValueError(f"score_dataset: no row of the input could be scored ({skipped_count} skipped).")
    result: dict[str, Any] = {}
    for name, keys in run.selected.items():
        if name in merged:  # merged chunk by chunk: one chunk's state in memory at a time; the keys asked for (as
            # capeval.score reports them, and the shards hold them per caption)
            corpus = metric_class(name).corpus_from_merged(merged[name])
            result.update({key: corpus[key] for key in keys})
        else:
            result.update({key: sums[key].value() / rows for key in keys})
    from capeval.signature import Signature

    stored = record_fields or Signature.of(signature).fields  # a chunk written before the fields were kept: parsed
    result["signature"] = Signature(stored).with_field("nrefs", str(next(iter(nrefs))) if len(nrefs) == 1 else "var")
    if tokens:  # as capeval.score's result["coverage"]: the share of the prediction tokens read that it knows
        result["coverage"] = {name: known / total if total else None for name, (known, total) in tokens.items()}
        result["coverage_tokens"] = {name: {"known": known, "total": total} for name, (known, total) in tokens.items()}
    result["rows"] = rows
    result["skipped"] = {"count": skipped_count, "rows": skipped}
    result["chunks"] = plan["chunks"]
    result["shards"] = f"{store.SHARDS}/part-*.parquet"
    if non_english and run.language_check:
        from capeval.language import NonEnglishWarning

        warnings.warn(with_words(NonEnglishWarning, words(
            "language_check", f"rows with id(s) {', '.join(map(repr, non_english))} hold captions that do not look "
            "English (script or function words); capeval's metrics were built for English captions. ", Setting(False),
            " silences this.")), stacklevel=3)
        result["non_english_ids"] = non_english
    store.write_json(run.folder / store.RESULT, result)
    return result
