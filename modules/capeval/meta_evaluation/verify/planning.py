"""The plan of ``capeval verify``: one :class:`~capeval.meta_evaluation.verify.records.Row` per published number, with its
tolerance, the measurement that serves it (a :class:`~capeval.meta_evaluation.verify.records.Job`) and where in that
measurement's result its value is; the numbers that are no target whatever is here get their reason now
(:func:`static_skip`). :func:`select` narrows the rows to ``--metrics`` / ``--benchmarks``."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from capeval.advice import about
from capeval.meta_evaluation.verify.metric_facts import capeval_key, own_scale_metrics
from capeval.meta_evaluation.verify.reasons import EXAMPLES, KEY_OF, NOT_IN_CAPEVAL, reason_for
from capeval.meta_evaluation.verify.records import Job, Row, Skip
from capeval.meta_evaluation.verify.tolerance import printed_decimals, tolerance_for

def _reads_no_references(key: str | None) -> bool:
    """Whether the capeval metric of result key ``key`` is reference-free (its class's ``reads_references``)."""
    from capeval.registry import REGISTRY, metric_class, resolve

    if key is None:
        return False
    try:
        (metric,) = resolve([key])
    except ValueError:
        return False
    return metric in REGISTRY and not metric_class(metric).reads_references


def _job(entry: Mapping[str, Any], key: str | None) -> Job | None:
    bench, proto = entry["benchmark"], str(entry.get("protocol"))
    if entry["statistic"] in ("rubric", "strictly_best_worst"):
        return Job("thumb-rubric", "thumb")
    if bench in EXAMPLES:
        return Job("example", bench)
    if bench.startswith("flickr8k"):
        return Job("bench", bench, (("protocol", proto),)) if proto in ("clipscore", "cui") else None
    if bench == "pascal50s":
        refs = (entry.get("settings") or {}).get("refs")
        if proto == "random-5-refs" and _reads_no_references(key):
            refs = "expert"  # a reference-free metric (CLIP-S): any reference setting measures it
        return Job("bench", bench, (("refs", refs),)) if refs in ("expert", "all") else None
    if bench == "nebula":  # published on the scores as released or on Pearl's corrected ones
        return Job("bench", bench, (("scores", _scores(entry)),))
    if bench in ("composite", "thumb", "polaris", "abstract50s", "detailcaps", "caparena"):
        return Job("bench", bench)
    return None  # coco2015: no scores to compute here


def _scores(entry: Mapping[str, Any]) -> str | None:
    """Which of Nebula's human scores a published number was measured on (``original`` / ``corrected``, the entry's
    ``settings["scores"]``; ``original`` for a Nebula entry without it), ``None`` for other benchmarks."""
    if entry["benchmark"] != "nebula":
        return None
    return str((entry.get("settings") or {}).get("scores", "original"))


def _lookup(entry: Mapping[str, Any], key: str, field_: str | None) -> tuple[tuple, float]:
    """Where a job's result holds the row's value, and the factor to the printed scale."""
    bench, stat, scale = entry["benchmark"], entry["statistic"], int(entry["scale"])
    if stat in ("rubric", "strictly_best_worst"):
        system, column = field_.split(" ", 1)  # type: ignore[union-attr]
        column = {"best": "strictly_best", "worst": "strictly_worst"}.get(column, column)
        return ("systems", system, column), 1.0
    if bench in EXAMPLES:
        return ((key, field_) if field_ else (key,)), 1.0
    if bench == "thumb":
        if stat == "corpus_score":
            return (key, "system", field_), (1.0 if key in own_scale_metrics() else float(scale))
        return (key, entry["protocol"], field_), 1.0
    if stat == "accuracy":
        return (key, field_), 1.0
    return (key, stat), float(scale)

def static_skip(entry: Mapping[str, Any], name: str, key: str | None, field_: str | None) -> Skip | None:
    """Why the published number ``entry["values"][name]`` (``field_``) is no target here whatever data and weights
    are present (a :class:`Skip` of kind ``not_in_capeval`` or ``irreproducible``), or ``None``: capeval has no such
    metric, or the published protocol cannot be replicated."""
    if name == "inter-human":
        return Skip("not_in_capeval", "not a metric: the agreement between Cui et al.'s annotators",
                    "inter-human agreement")
    if key is None:
        what = NOT_IN_CAPEVAL.get(name, name)
        return Skip("not_in_capeval", f"{what} is not a capeval metric", what.split(" (", 1)[0])
    reason = reason_for(entry, key, field_)
    return None if reason is None else reason.skip


def static_reason(entry: Mapping[str, Any], name: str, key: str | None, field_: str | None) -> str | None:
    """The text of :func:`static_skip` (``None``: the number is a target where the data and weights are here)."""
    skip = static_skip(entry, name, key, field_)
    return None if skip is None else skip.text



def plan(entries: Iterable[Mapping[str, Any]]) -> list[Row]:
    """One :class:`Row` per published number of ``entries`` (``published.json``'s order), with its tolerance, its
    job and, where the number is no target here, ``reason`` (status ``skipped``)."""
    rows: list[Row] = []
    for entry in entries:
        stat = entry["statistic"]
        items: list[tuple[str, str | None, Any]] = []
        if stat in ("rubric", "strictly_best_worst"):
            items = [("thumb", f"{system} {column}", value) for system, columns in entry["values"].items()
                     for column, value in columns.items()]
        else:
            for name, value in entry["values"].items():
                if isinstance(value, Mapping):
                    items += [(name, sub, v) for sub, v in value.items()]
                else:
                    items.append((name, None, value))
        for name, field_, value in items:
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            original = (entry.get("original") or {}).get(name) or {}
            source, where = original.get("source", entry["source"]), original.get("where", entry.get("where", ""))
            key = "thumb" if name == "thumb" else capeval_key(name)
            row = Row(metric=key or name, benchmark=entry["benchmark"], published=float(value), source=source,
                      where=where, statistic=stat, protocol=str(entry.get("protocol", "")), field=field_,
                      scale=int(entry.get("scale", 1)), via=entry["source"] if original else None,
                      published_as=name if key and key != name else None, scores=_scores(entry))
            row.decimals = printed_decimals(entry["source"], entry.get("where", ""), name, field_, value)
            row.tolerance, row.tolerance_rule = tolerance_for(row)
            row.skip_because(static_skip(entry, name, key, field_))
            row.job = _job(entry, key)
            if row.job is not None:
                row.lookup, row.factor = _lookup(entry, key or name, field_)
            if row.job is None and row.reason is None:
                row.skip_because(Skip("other", "capeval has no way to measure this number", "no way to measure"))
            rows.append(row)
    return rows


def select(rows: Sequence[Row], metrics: Sequence[str] | None = None,
           benchmarks: Sequence[str] | None = None) -> list[Row]:
    """The rows of ``metrics`` (result keys, aliases or published spellings) and ``benchmarks`` (``capeval bench``
    names, aliases or example names); ``ValueError`` for a name that matches no row."""
    out = list(rows)
    if metrics:
        from capeval.registry import ALIASES

        wanted = {ALIASES.get(m.strip().lower(), m.strip().lower()) for m in metrics if m.strip()}
        wanted |= {KEY_OF.get(m, m) for m in wanted}
        known = {r.metric for r in rows} | {r.published_as for r in rows if r.published_as}
        unknown = sorted(wanted - known - set(KEY_OF))
        if unknown:
            raise about(ValueError, "metrics", f"no published number for {', '.join(unknown)}; known: "
                                               f"{', '.join(sorted({r.metric for r in rows}))}.")
        out = [r for r in out if r.metric in wanted or r.published_as in wanted]
    if benchmarks:
        names = {_benchmark_name(b) for b in benchmarks if b.strip()}
        unknown = sorted(names - {r.benchmark for r in rows})
        if unknown:
            raise about(ValueError, "benchmarks", f"no published number for {', '.join(unknown)}; known: "
                                                  f"{', '.join(dict.fromkeys(r.benchmark for r in rows))}.")
        out = [r for r in out if r.benchmark in names]
    return out


def _benchmark_name(name: str) -> str:
    from capeval.judgments import canonical_name

    key = name.strip().lower().replace("_", "-")
    if key in EXAMPLES or key in ("coco2015",):
        return key
    try:
        return canonical_name(key)
    except ValueError:
        return key

