"""``capeval verify``'s output for a reader (:func:`render`): the counts first (:func:`summary_lines`), then the
differing rows, the reproduced rows one line each and the skipped rows one line per group (:func:`skip_groups`), or
the rows ``--show`` names one by one; markdown: every row in one table (:func:`table_rows`). The JSON output is
:meth:`~capeval.meta_evaluation.verify.running.Report.to_json`."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from capeval.advice import about
from capeval.meta_evaluation.verify.records import SKIP_KINDS, STATUSES, Row, Skip
from capeval.meta_evaluation.verify.running import Report
from capeval.published import citations

#: What ``capeval verify --show`` lists row by row: a status (:data:`STATUSES`) or ``all`` (every row).
SHOW_CHOICES = ("differs", "reproduced", "skipped", "all")
#: Skip kinds whose rows cannot be made to run here: the summary gives each one line, whatever its reasons.
_NO_FIX_KINDS = ("irreproducible", "not_in_capeval")


def _number(value: float | None, decimals: int, sign: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.{decimals}f}" if sign else f"{value:.{decimals}f}"


def _source(row: Row, with_where: bool = True) -> str:
    """``hessel2021 Table 1 (via capevalkit)``: the citation key, the table (``with_where``) and the transcription."""
    text = f"{row.source} {row.where}".strip() if with_where else row.source
    return text + (f" (via {row.via})" if row.via else "")


def table_rows(report: Report) -> tuple[list[str], list[list[str]], list[str]]:
    """``(headers, rows, footnotes)`` of the full table (every row, ``--markdown``): skip reasons are numbered
    footnotes (each reason once), the status of a skipped row names its kind."""
    notes: dict[str, int] = {}
    body = []
    for r in report.rows:
        extra = r.decimals + 2
        status = r.status
        if r.reason and r.status == "skipped":
            number = notes.setdefault(r.reason, len(notes) + 1)
            status = f"skipped: {r.skip_kind} [{number}]"
        body.append([r.metric, r.benchmark, r.what, _number(r.published, r.decimals),
                     _number(r.measured, extra), _number(r.delta, extra, sign=True),
                     "—" if r.tolerance is None else f"±{r.tolerance:g}", status, _source(r)])
    headers = ["metric", "benchmark", "what", "published", "measured", "Δ", "tolerance", "status", "source"]
    return headers, body, [f"[{n}] {reason}" for reason, n in notes.items()]


def summary_lines(report: Report) -> list[str]:
    """The first lines of every rendering: the rows per status, then the skipped rows per kind (each under 100
    columns)."""
    counts, kinds = report.counts(), report.skip_counts()
    return [f"{len(report.rows)} published numbers: {counts['reproduced']} reproduced, {counts['differs']} differ, "
            f"{counts['skipped']} skipped",
            "skipped by kind: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items())]


def skip_groups(report: Report) -> list[tuple[str, int, str]]:
    """The skipped rows one line per group, ``(kind, rows, what is missing: the fix)``, in :data:`SKIP_KINDS` order:
    rows that can be made to run (``weights``, ``data``, ``other``) grouped by what is missing and its fix (each
    group names them); the others one group per kind, naming what is missing or why, most rows first."""
    out: list[tuple[str, int, str]] = []
    for kind in SKIP_KINDS:
        rows = [r for r in report.rows if r.skip_kind == kind]
        if not rows:
            continue
        skips = [r.skip or Skip("other", r.reason or "not measured", r.reason or "not measured") for r in rows]
        if kind in _NO_FIX_KINDS:
            labels: dict[str, int] = {}
            for skip in skips:
                labels[skip.missing or skip.text] = labels.get(skip.missing or skip.text, 0) + 1
            ordered = sorted(labels, key=lambda k: -labels[k])
            what = (f"{len(ordered)} reasons: " if kind == "irreproducible" and len(ordered) > 1 else "") + \
                "; ".join(ordered)
            out.append((kind, len(rows), what))
            continue
        groups: dict[tuple[str, str | None], int] = {}
        for skip in skips:
            key = (skip.missing or skip.text, skip.fix)
            groups[key] = groups.get(key, 0) + 1
        for (missing, fix), n in groups.items():
            out.append((kind, n, f"{missing}: {fix}" if fix else missing))
    return out


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    from capeval.render import text_table

    return text_table(headers, rows, width=width)


def _skip_group_table(report: Report, width: int) -> str:
    """:func:`skip_groups` as a table within ``width``: a group that can be made to run wraps its line, one that
    cannot (:data:`_NO_FIX_KINDS`) is cut to one line (``--show skipped`` lists its reasons)."""
    from capeval.render import cut, wrap

    groups = skip_groups(report)
    headers = ["kind", "rows", "what is missing: how to get it"]
    kind_width = max([len(headers[0]), *(len(k) for k, _, _ in groups)])
    rows_width = max([len(headers[1]), *(len(str(n)) for _, n, _ in groups)])
    room = max(width - kind_width - rows_width - 4, 20) if width else 0
    body: list[list[str]] = []
    for kind, n, what in groups:
        if not room:
            body.append([kind, str(n), what])
        elif kind in _NO_FIX_KINDS:
            body.append([kind, str(n), cut(what, room)])
        else:
            lines = wrap(what, room, indent="  ")
            body += [[kind, str(n), lines[0]], *(["", "", line] for line in lines[1:])]
    return _table(headers, body, width)


def _wrapped(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` within ``width`` columns (0: one line), its leading spaces kept, later lines indented by ``indent``."""
    from capeval.render import wrap

    body = text.lstrip(" ")
    return wrap(body, width, first=text[:len(text) - len(body)], indent=indent)


def _group_title(row: Row) -> str:
    """``thumb · kasai2022 Table 2 (THumB 1.0)``: a benchmark and the published table its rows come from."""
    return f"{row.benchmark} · {_source(row)}"


def _grouped_table(rows: Sequence[Row], headers: Sequence[str], cells: Callable[[Row], list[str]],
                   width: int) -> list[str]:
    """``rows`` one line each under a title per benchmark and published table (:func:`_group_title`), in one
    table whose columns line up across the groups; where that does not fit ``width``, one table with the benchmark
    and the source as columns (which :func:`capeval.render.text_table` wraps)."""
    from capeval.render import display_width

    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(_group_title(row), []).append(row)
    ordered = [r for group in groups.values() for r in group]
    lines = _table(headers, [cells(r) for r in ordered], 0).split("\n")
    if not width or max(display_width(line) for line in lines) + 2 <= width:
        out = ["  " + lines[0], "  " + lines[1]]
        body = iter(lines[2:])
        for title, group in groups.items():
            out += _wrapped(title, width, indent="    ")
            out += ["  " + next(body) for _ in group]
        return out
    flat = [[cells(r)[0], r.benchmark, *cells(r)[1:], _source(r, with_where=False)] for r in ordered]
    return _table([headers[0], "benchmark", *headers[1:], "source"], flat, width).split("\n")


def _differs_lines(rows: Sequence[Row], width: int) -> list[str]:
    return _grouped_table(rows, ["metric", "what", "published", "measured", "Δ", "tolerance"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2),
        _number(r.delta, r.decimals + 2, sign=True), "—" if r.tolerance is None else f"±{r.tolerance:g}"], width)


def _reproduced_lines(rows: Sequence[Row], width: int) -> list[str]:
    return _grouped_table(rows, ["metric", "what", "published", "measured"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2)], width)


def _skipped_lines(rows: Sequence[Row], width: int) -> list[str]:
    """Every skipped row, one line each (``--show skipped``) with its kind and the number of its reason, then the
    numbered reasons."""
    notes: dict[str, int] = {}
    for r in rows:
        notes.setdefault(r.reason or "not measured", len(notes) + 1)
    out = _grouped_table(rows, ["metric", "what", "published", "measured", "why"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2),
        f"{r.skip_kind} [{notes[r.reason or 'not measured']}]"], width)
    out.append("")
    for reason, n in notes.items():
        out += _wrapped(f"[{n}] {reason}", width, indent="    ")
    return out


def show_set(show: str | Iterable[str] | None) -> set[str] | None:
    """The statuses ``--show`` names (``None``: the default view); ``ValueError`` naming the closest valid value for
    an unknown one."""
    if show is None:
        return None
    names = [s.strip() for s in show.split(",")] if isinstance(show, str) else [s.strip() for s in show]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in SHOW_CHOICES]
    if unknown or not names:
        from capeval.suggest import did_you_mean

        valid = f"; valid: {', '.join(SHOW_CHOICES)} (comma-separated)"
        if not unknown:
            raise about(ValueError, "show", f"nothing given{valid}")
        raise about(ValueError, "show", f"unknown {unknown[0]!r}" + (did_you_mean(unknown[0], SHOW_CHOICES) or valid))
    return set(STATUSES) if "all" in names else set(names)


def render(report: Report, fmt: str = "text", show: str | Iterable[str] | None = None,
           width: int | None = None) -> str:
    """``report`` for a reader.

    ``fmt="text"`` (the terminal, within ``width`` columns: default :func:`capeval.render.terminal_width`, 0 no
    limit): first the counts (:func:`summary_lines`: rows per status, skipped rows per kind), then by default the
    differing rows, the reproduced rows one short line each and the skipped rows one line per group
    (:func:`skip_groups`); ``show`` (statuses of :data:`SHOW_CHOICES`, a list or comma-separated) lists those rows one
    by one instead (``skipped``: every skipped row, with its kind and numbered reason). Then how to make skipped rows
    run, the tolerance rules, the runs and the references cited by the rows listed.

    ``fmt="markdown"``: the counts, then every row in one table with its numbered reason, the rules and references.
    """
    from capeval.render import terminal_width

    if fmt not in ("text", "markdown"):
        raise ValueError(f"fmt must be 'text' or 'markdown', got {fmt!r}")
    listed = show_set(show)
    width = terminal_width() if width is None else width
    md = fmt == "markdown"
    out, shown = _markdown_body(report) if md else _text_body(report, listed, width)
    return "\n".join(out + _closing_lines(report, shown, md, width))


def _markdown_body(report: Report) -> tuple[list[str], list[Row]]:
    """The counts, then every row in one table with its numbered reason, and the reasons; with the rows shown."""
    from capeval.render import markdown_table

    out = summary_lines(report)
    headers, body, notes = table_rows(report)
    out = [out[0] + ".", "", out[1] + ".", "", markdown_table(headers, body)]
    if notes:
        out += ["", "Skipped because:", *("- " + n for n in notes)]
    return out, list(report.rows)


def _text_body(report: Report, listed: set[str] | None, width: int) -> tuple[list[str], list[Row]]:
    """The counts, then the sections of the statuses listed (default: differs and reproduced, then the skipped rows
    one line per group) and how to make skipped rows run; with the rows shown one by one."""
    out = summary_lines(report)
    sections = ["differs", "reproduced"] if listed is None else [s for s in STATUSES if s in listed]
    shown: list[Row] = []
    for status in sections:
        rows = [r for r in report.rows if r.status == status]
        shown += rows
        out.append("")
        out += _section(status, rows, width)
    skipped = report.counts()["skipped"]
    if listed is None and skipped:
        out += ["", f"Skipped ({skipped}), one line per group; every row: --show skipped",
                _skip_group_table(report, width)]
    if skipped and (listed is None or "skipped" in listed):
        from capeval.paths import data_dir

        root = data_dir()
        out += [""] + _wrapped(
            "To run skipped rows: fetch the weights named (the command shown), put the benchmark files and "
            "images under the data directory (" + (f"now {root}; " if root else "none now: ") + "CAPEVAL_DATA_DIR "
            "sets it) and leave --fast out; irreproducible and not_in_capeval rows cannot run here. More: "
            "README.md, 'Reproducing published numbers'.", width)
    return out, shown


def _section(status: str, rows: Sequence[Row], width: int) -> list[str]:
    """The title of the rows of ``status`` and the rows one line each (the title alone says ``none``)."""
    if status == "differs":
        return ([f"Differs ({len(rows)}): measured further from the published number than its tolerance",
                 *_differs_lines(rows, width)] if rows else ["Differs: none"])
    if status == "reproduced":
        return ([f"Reproduced ({len(rows)}): within the tolerance, by published table",
                 *_reproduced_lines(rows, width)] if rows else ["Reproduced: none"])
    return ([f"Skipped ({len(rows)}), by published table: the kind of why and the reason [n]",
             *_skipped_lines(rows, width)] if rows else ["Skipped: none"])


def _closing_lines(report: Report, shown: Sequence[Row], md: bool, width: int) -> list[str]:
    """The tolerance rules of the compared rows shown, the failed measurements, the runs and the references cited by
    the rows shown."""
    out: list[str] = []
    rules = list(dict.fromkeys(r.tolerance_rule for r in shown if r.tolerance_rule and r.status != "skipped"))
    if rules:
        out += [""] + (["Tolerance rules: " + "; ".join(rules) + "."] if md else
                       _wrapped("Tolerance rules: " + "; ".join(rules) + ".", width))
    failed = [r for r in report.rows if r.error]
    if failed:
        out += _wrapped(f"{len(failed)} row(s) could not be measured: 'measurement failed' in their reasons "
                        "(--show skipped).", 0 if md else width)
    if report.jobs:
        runs = "; ".join(f"{j['job']} [{', '.join(j['metrics'])}] {j['seconds']:.0f} s" +
                         (" (failed)" if "error" in j else "") for j in report.jobs)
        out += _wrapped(f"Runs ({sum(j['seconds'] for j in report.jobs):.0f} s): {runs}.", 0 if md else width)
    cites = citations()
    used = list(dict.fromkeys(k for r in shown for k in (r.source, r.via) if k))
    if used:
        out += ["", "References:"]
        for key in used:
            out += [f"- {key}: {cites.get(key, key)}"] if md else \
                _wrapped(f"  {key}: {cites.get(key, key)}", width, indent="      ")
    return out
