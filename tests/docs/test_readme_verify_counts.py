"""The counts README.md prints for ``capeval verify`` are the ones verify computes.

README shows the first two lines of ``capeval verify`` "with ../shared/data and no vision-language weights":
``N published numbers: R reproduced, D differ, S skipped`` and ``skipped by kind: W weights, ...``. The rows and
their data-independent skips (``irreproducible``, ``not_in_capeval``) come from verify's plan of
``data/published.json`` and are checked everywhere; the ``weights`` and ``data`` skips come from verify's probe of
the data directory (skipped without it), with every vision-language weight reported missing as README assumes. The
rows left are the ones verify measures, so ``reproduced + differ + other`` must equal their number; whether each of
them reproduces takes the measurements themselves (``capeval verify``, tens of minutes) and is not re-run here.
"""
from __future__ import annotations

import re

from capeval.meta_evaluation import verify as v
from capeval.meta_evaluation.verify.running import probe_rows
from capeval.published import entries as published_entries

from support import ROOT

STATIC_KINDS = ("irreproducible", "not_in_capeval")


def readme_counts() -> tuple[dict[str, int], dict[str, int]]:
    """``({status: count, "total": N}, {skip kind: count})`` as README.md's verify example prints them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head = re.search(r"^(\d+) published numbers: (\d+) reproduced, (\d+) differ, (\d+) skipped$", readme, re.M)
    kinds = re.search(r"^skipped by kind: (.+)$", readme, re.M)
    assert head and kinds, "README.md no longer shows capeval verify's first two lines"
    total, reproduced, differs, skipped = map(int, head.groups())
    by_kind = {kind: int(n) for n, kind in re.findall(r"(\d+) (\w+)", kinds.group(1))}
    return {"total": total, "reproduced": reproduced, "differs": differs, "skipped": skipped}, by_kind


def test_readme_counts_add_up():
    counts, by_kind = readme_counts()
    assert list(by_kind) == list(v.SKIP_KINDS)
    assert counts["reproduced"] + counts["differs"] + counts["skipped"] == counts["total"]
    assert sum(by_kind.values()) == counts["skipped"]


def test_readme_rows_and_static_skips_are_verify_s():
    """Needs no data: the rows of the plan and the skips decided whatever data and weights are here."""
    counts, by_kind = readme_counts()
    rows = v.plan(published_entries())
    assert len(rows) == counts["total"], "README.md's verify counts are stale: rerun `capeval verify` and update them"
    for kind in STATIC_KINDS:
        assert sum(r.skip is not None and r.skip.kind == kind for r in rows) == by_kind[kind], kind


def test_readme_weights_and_data_skips_are_verify_s(shared_data, monkeypatch):
    """With the data directory: verify's probe, every vision-language weight missing (README's setting)."""
    from capeval.meta_evaluation.verify import availability

    counts, by_kind = readme_counts()
    monkeypatch.setattr(availability, "weights_skip", lambda key: v.Skip("weights", f"{key}: no weights", key))
    rows = v.plan(published_entries())
    by_job = probe_rows(rows, availability.Probe())
    found = {kind: sum(r.skip is not None and r.skip.kind == kind for r in rows) for kind in ("weights", "data")}
    assert found == {kind: by_kind[kind] for kind in found}, found
    measured = sum(r.reason is None for job_rows in by_job.values() for r in job_rows)
    assert measured == counts["reproduced"] + counts["differs"] + by_kind["other"]
