"""``capeval verify``'s run: plan the rows, ask the probe which targets can be measured here, run each job once with
every metric its rows need, and compare (:func:`verify`, which returns a :class:`Report`)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from capeval.meta_evaluation.verify import availability, measuring
from capeval.meta_evaluation.verify.messages import one_line
from capeval.meta_evaluation.verify.planning import plan, select
from capeval.meta_evaluation.verify.reasons import FAST
from capeval.meta_evaluation.verify.records import SKIP_KINDS, STATUSES, Job, Row, Skip
from capeval.meta_evaluation.verify.tolerance import compare
from capeval.published import entries as published_entries


@dataclass
class Report:
    """What :func:`verify` returns: the rows in ``published.json``'s order, and the jobs run with their time."""

    rows: list[Row]
    jobs: list[dict[str, Any]] = dc_field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Rows per status (:data:`STATUSES`)."""
        return {s: sum(r.status == s for r in self.rows) for s in STATUSES}

    def skip_counts(self) -> dict[str, int]:
        """Skipped rows per kind (:data:`SKIP_KINDS`, every kind, in that order); they sum to the skipped count."""
        return {k: sum(r.skip_kind == k for r in self.rows) for k in SKIP_KINDS}

    @property
    def ok(self) -> bool:
        """No row differs and no measurement failed (the exit code of ``capeval verify``)."""
        return not any(r.status == "differs" or r.error for r in self.rows)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rows]


def verify(
    metrics: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    *,
    fast: bool = False,
    use_cache: bool = True,
    show_progress: bool | None = None,
    entries: Iterable[Mapping[str, Any]] | None = None,
    probe: Callable[[Job, str], Skip | str | None] | None = None,
    measure_job: Callable[[Job, Sequence[str]], Mapping[str, Any]] | None = None,
) -> Report:
    """Re-measure the published numbers (all of ``data/published.json``, or ``entries``) restricted to ``metrics`` /
    ``benchmarks``, and classify each (:class:`Row`).

    ``probe(job, key)`` says why ``key`` cannot be measured by ``job`` here, as a :class:`Skip` (default
    :class:`~capeval.meta_evaluation.verify.availability.Probe`: benchmark files, the vision-language weights without
    downloading, the images; a bare string is a skip of kind ``other``); ``measure_job(job, keys)`` returns the job's
    result (default :func:`~capeval.meta_evaluation.verify.measuring.measure`). A job that raises marks its rows
    ``skipped`` with ``error`` set and the message in ``reason`` (and :attr:`Report.ok` false). ``fast``: SPICE is
    not measured.
    """
    rows = select(plan(published_entries() if entries is None else entries), metrics, benchmarks)
    if measure_job is None:
        def measure_job(job: Job, keys: Sequence[str]) -> Mapping[str, Any]:
            return measuring.measure(job, keys, use_cache=use_cache, show_progress=show_progress)
    by_job = probe_rows(rows, probe or availability.Probe(), fast=fast)
    report = Report(rows)
    run_jobs(report, by_job, measure_job, show_progress=show_progress)
    for row in rows:
        if row.status == "skipped" and row.reason is None:
            row.skip_because(Skip("other", "not measured", "not measured"))
    return report


def probe_rows(rows: Sequence[Row], probe: Callable[[Job, str], Skip | str | None], *,
               fast: bool = False) -> dict[Job, list[Row]]:
    """The rows by job, each target row asked of ``probe`` (its answer, if any, is why the row is skipped); under
    ``fast`` SPICE rows are skipped first."""
    by_job: dict[Job, list[Row]] = {}
    for row in rows:
        if row.job is None:
            continue
        if row.reason is None and fast and row.metric == "spice":
            row.skip_because(Skip("other", FAST, "SPICE (--fast)", "leave --fast out"))
        if row.reason is None:
            row.skip_because(probe(row.job, row.metric))
        by_job.setdefault(row.job, []).append(row)
    return by_job


def run_jobs(report: Report, by_job: Mapping[Job, list[Row]],
             measure_job: Callable[[Job, Sequence[str]], Mapping[str, Any]], *,
             show_progress: bool | None = None) -> None:
    """Run each job that has a target row, with the metrics of its target rows, recording each run in
    ``report.jobs`` and each value in its rows (:func:`fill`); a job that raises marks its target rows failed."""
    from capeval.progress import progress

    # a job runs when some row of it is a target; it then also measures the non-target rows of the same metrics
    # (their measured value is shown for information, their status stays skipped)
    plans = [(job, list(dict.fromkeys(r.metric for r in job_rows if r.reason is None)))
             for job, job_rows in by_job.items()]
    plans = [(job, keys) for job, keys in plans if keys]
    for job, keys in progress(plans, desc="capeval verify", enabled=show_progress):
        start = time.perf_counter()
        try:
            result = measure_job(job, keys)
        except Exception as err:  # noqa: BLE001 - one failed run must not hide the others' results
            for row in by_job[job]:
                if row.reason is None:
                    row.skip_because(Skip("other", f"measurement failed: {type(err).__name__}: {one_line(err)}",
                                          f"{job.label}: measurement failed"))
                    row.error = True
            report.jobs.append({"job": job.label, "metrics": keys, "seconds": round(time.perf_counter() - start, 3),
                                "error": one_line(err)})
            continue
        report.jobs.append({"job": job.label, "metrics": keys, "seconds": round(time.perf_counter() - start, 3)})
        fill(job, [row for row in by_job[job] if row.metric in keys], result)


def fill(job: Job, rows: Iterable[Row], result: Mapping[str, Any]) -> None:
    """Each row's ``measured`` from the job's ``result`` (× its printed scale) and, for a target, its status; a
    target the run gave no value for is a failure, not a pass."""
    for row in rows:
        value = measuring.extract(result, row.lookup)
        row.measured = None if value is None else value * row.factor
        if row.reason is None:
            if row.measured is None:  # a target the run did not produce: a failure, not a pass
                row.skip_because(Skip("other", f"{job.label} gave no value at {'/'.join(map(str, row.lookup))}",
                                      f"{job.label}: no value"))
                row.error = True
            compare(row)
