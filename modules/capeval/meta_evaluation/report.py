"""Tables of ``capeval bench`` results next to the published numbers (text, markdown) and plots."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from capeval.meta_evaluation.harness import CORRELATIONS, BenchResult
from capeval.meta_evaluation.length_control import note as length_note
from capeval.render import fit_text, markdown_table, text_table
from capeval.signature import merged_signature_lines
from capeval.published import published

PAIR_CATEGORIES = {"pascal50s": ("HC", "HI", "HM", "MM", "avg"), "abstract50s": ("HC", "HI", "avg")}
THUMB_SYSTEMS = ("Human", "VinVL-large", "VinVL-base", "Unified-VLP", "Up-Down")
#: published statistic -> our result key ("tau": the papers do not name the variant; scipy's default is tau-b)
STAT_TO_KEY = {"tau": "tau_b", "tau_b": "tau_b", "tau_c": "tau_c", "pearson": "pearson", "spearman": "spearman"}


def _pub_key(metric: str) -> str:
    """Map a result key to the key used in the published tables (evaluate specs keep their name)."""
    return metric.split("@")[-1] if metric.startswith("evaluate:") else metric


def _matching_entries(result: BenchResult) -> list[dict]:
    s = result.settings
    entries = published(result.benchmark)
    if result.benchmark.startswith("flickr8k"):
        return [e for e in entries if e["protocol"] == s.get("protocol")]
    if result.benchmark == "pascal50s":
        want = {"expert": "expert-5-refs", "all": "all-50-refs"}.get(str(s.get("refs")), "random-refs")
        return [e for e in entries if e["protocol"] == want] + [
            e for e in entries if e["protocol"] != want and e["source"] != "pycocoevalcap-here"
        ]
    if result.benchmark == "nebula":  # Nebula's numbers were published on the original or the corrected scores
        want = s.get("scores", "original")
        return [e for e in entries if (e.get("settings") or {}).get("scores", "original") == want]
    return entries


def _name(result: BenchResult) -> str:
    """The benchmark as the titles name it: ``nebula (corrected scores)`` for Nebula's corrected scores."""
    scores = result.settings.get("scores")
    return f"{result.benchmark} ({scores} scores)" if scores == "corrected" else result.benchmark


def tables(result: BenchResult) -> list[tuple[str, list[str], list[list[Any]]]]:
    """``[(title, headers, rows), ...]`` for the result, each with the matching published numbers, then the paired
    bootstrap comparisons (:func:`comparison_table`) when there are any. With bootstrap intervals the agreement
    tables end with a headline column, ``value [low, high]`` (:func:`format_headline`)."""
    out = _agreement_tables(result)
    if result.comparisons:
        out.append(comparison_table(result))
    return out


def _caparena_tables(result: BenchResult) -> list[tuple[str, list[str], list[list[Any]]]]:
    """CapArena: caption-level agreement (overall, per level), model-level Spearman / Kendall, the published
    caption-level agreement, the length-matched agreement."""
    entries = [e for e in _matching_entries(result) if e["statistic"] == "agreement"]
    levels = ("level 1", "level 2", "level 3", "level 4")
    headers = ["metric", "agreement", *levels, "spearman", "kendall",
               *[f"{e['source']} {e['where']}" for e in entries], LENGTH_HEADER]
    rows = []
    for metric, r in result.results.items():
        pubs = [e["values"].get(_pub_key(metric)) for e in entries]
        rows.append([metric, r.get("agreement"), *(r.get("levels", {}).get(k) for k in levels), r.get("spearman"),
                     r.get("kendall"), *[None if v is None else v / e["scale"] for v, e in zip(pubs, entries)],
                     _length_cell(r)])
    return [("caparena: agreement with the human battles (caption level; model level: Elo ranking vs CapArena's)",
             headers, rows)]


def _agreement_tables(result: BenchResult) -> list[tuple[str, list[str], list[list[Any]]]]:
    if result.benchmark == "thumb":
        return _thumb_tables(result)
    if result.benchmark == "caparena":
        return _caparena_tables(result)
    entries = _matching_entries(result)
    if result.benchmark in PAIR_CATEGORIES:
        cats = PAIR_CATEGORIES[result.benchmark]
        rows = []
        for metric, r in result.results.items():
            rows.append([metric, "capeval", *(r.get(c) for c in cats), _length_cell(r), *_headline_cells(result, r)])
            for e in entries:
                v = e["values"].get(_pub_key(metric))
                if isinstance(v, dict):
                    rows.append(["", f"{e['source']} {e['where']} ({e['protocol']})", *(v.get(c) for c in cats),
                                 None, *_headline_cells(result, None)])
        return [(f"{result.benchmark}: pairwise accuracy (%)",
                 ["metric", "source", *cats, LENGTH_HEADER, *_headline_header(result)], rows)]
    corr = [e for e in entries if e["statistic"] in STAT_TO_KEY]
    keys, labels = _correlation_columns(result)
    headers = (["metric", *labels] + [f"{e['source']} {e['statistic']}" for e in corr] + [LENGTH_HEADER]
               + _headline_header(result))
    rows = []
    for metric, r in result.results.items():
        pubs = [e["values"].get(_pub_key(metric)) for e in corr]
        pubs = [None if v is None else v / e["scale"] for v, e in zip(pubs, corr)]
        rows.append([metric, *(r[k] for k in keys), *pubs, _length_cell(r), *_headline_cells(result, r)])
    out = [(f"{_name(result)}: correlation with human judgments", headers, rows)]
    if any("subsets" in r for r in result.results.values()):
        sub_rows = [[m, s, *(v[k] for k in keys), *_headline_cells(result, v)]
                    for m, r in result.results.items() for s, v in r.get("subsets", {}).items()]
        part = "aspect" if result.benchmark == "longcap-arena" else "subset"
        out.append((f"{result.benchmark}: per {part} (each scored on its own)",
                    ["metric", "subset", *labels, *_headline_header(result)], sub_rows))
    return out


#: The column of each metric's agreement with caption length held fixed (:mod:`capeval.meta_evaluation.length_control`).
LENGTH_HEADER = "length-controlled"


def _length_cell(entry: dict) -> float | None:
    """The ``length_controlled`` value of a metric's entry (``None``: the baseline itself, or not computed)."""
    controlled = entry.get("length_controlled") if isinstance(entry, dict) else None
    return controlled.get("value") if controlled else None


def _has_intervals(result: BenchResult) -> bool:
    return any(isinstance(r, dict) and (r.get("headline") or {}).get("ci") for r in result.results.values())


def _headline_header(result: BenchResult) -> list[str]:
    """``["<statistic> [95% CI]"]`` when the result has headline intervals (``--bootstrap``), else ``[]``."""
    if not _has_intervals(result):
        return []
    h = next(r["headline"] for r in result.results.values() if isinstance(r, dict) and r.get("headline"))
    what = "w/ Human total pearson" if result.benchmark == "thumb" else h["statistic"]
    return [f"{what} [{100 * h['confidence']:.0f}% CI]"]


def _headline_cells(result: BenchResult, entry: dict | None) -> list[str | None]:
    """The headline cell of ``entry`` (``[]`` when the table has no headline column; ``[None]`` for rows without)."""
    if not _has_intervals(result):
        return []
    return [format_headline(entry["headline"]) if entry and entry.get("headline") else None]


def _number(value: float, statistic: str, sign: bool = False) -> str:
    """Accuracy (``avg``, percent) with 1 decimal; correlations with 3 and no leading zero (``.472``, ``-.012``)."""
    if statistic == "avg":
        return f"{value:+.1f}" if sign else f"{value:.1f}"
    text = f"{value:+.3f}" if sign else f"{value:.3f}"
    return text.replace("0.", ".", 1) if text.lstrip("+-").startswith("0.") else text


def format_headline(headline: dict[str, Any], sign: bool = False) -> str:
    """``".472 [.455, .489]"`` (``"78.3 [76.1, 80.4]"`` for accuracy in percent); the value alone without ``ci``."""
    stat = headline["statistic"]
    text = _number(headline["value"], stat, sign)
    ci = headline.get("ci")
    if ci:
        text += f" [{_number(ci[0], stat, sign)}, {_number(ci[1], stat, sign)}]"
    return text


def verdict(comparison: dict[str, Any]) -> str:
    """``"A beats B"``, ``"B beats A"`` (with the metric names) or ``"no significant difference"``."""
    if comparison["a_beats_b"]:
        return f"{comparison['a']} beats {comparison['b']}"
    if comparison["b_beats_a"]:
        return f"{comparison['b']} beats {comparison['a']}"
    return "no significant difference"


def _p_value(comparison: dict[str, Any]) -> str:
    p = comparison["p_value"]
    return f"<{1 / comparison['n_resamples']:.2g}" if p == 0 else f"{p:.3f}"


def comparison_table(result: BenchResult) -> tuple[str, list[str], list[list[Any]]]:
    """The table of ``result.comparisons``: per pair (and subset), A's and B's statistic, the difference A − B with
    its interval (correlations in [-2, 2]; accuracy in percentage points), the two-sided p and the verdict."""
    comps = result.comparisons
    with_subset = any(c.get("subset") for c in comps)
    headers = ["A − B", *(["subset"] if with_subset else []), "statistic", "A", "B", "difference [95% CI]", "p",
               "verdict"]
    rows = []
    for c in comps:
        diff = format_headline({"statistic": c["statistic"], "value": c["difference"], "ci": c["ci"]}, sign=True)
        rows.append([f"{c['a']} − {c['b']}", *([c.get("subset") or "all"] if with_subset else []), c["statistic"],
                     _number(c["value_a"], c["statistic"]), _number(c["value_b"], c["statistic"]), diff,
                     _p_value(c), verdict(c)])
    n = sorted({c["n_resamples"] for c in comps})
    level = sorted({f"{100 * c['confidence']:.0f} %" for c in comps})
    title = (f"{_name(result)}: paired bootstrap: A − B ({', '.join(map(str, n))} resamples, {', '.join(level)} "
             "intervals, same resamples for A and B)")
    return title, headers, rows


def _correlation_columns(result: BenchResult) -> tuple[list[str], list[str]]:
    """``(result keys, header labels)`` of the correlation columns: the protocol's own statistic first, labelled
    ``"<key> (protocol)"`` (e.g. τ-c for Flickr8k-Expert's CLIPScore protocol), then the others in their usual order,
    so that a table is not read for the wrong variant of Kendall's τ."""
    usual = list(CORRELATIONS)  # tau_b, tau_c, pearson, spearman
    primaries = {r.get("primary") for r in result.results.values()}
    primary = primaries.pop() if len(primaries) == 1 else None
    if primary not in usual:
        return usual, usual
    keys = [primary, *(k for k in usual if k != primary)]
    return keys, [f"{primary} (protocol)", *keys[1:]]


def _thumb_tables(result: BenchResult) -> list[tuple[str, list[str], list[list[Any]]]]:
    t4 = {e["protocol"]: e for e in published("thumb", statistic="pearson") if e["source"] == "kasai2022"}
    rows4 = []
    for metric, r in result.results.items():
        rows4.append([metric, "capeval", *(r["without_human"][k] for k in ("P", "R", "total")),
                      *(r["with_human"][k] for k in ("P", "R", "total")),
                      r["with_human_no_leaked"]["total"], _length_cell(r), *_headline_cells(result, r)])
        pw, pwo = t4["with_human"]["values"].get(metric), t4["without_human"]["values"].get(metric)
        if pw or pwo:
            rows4.append(["", "Kasai et al. 2022, Table 4", *((pwo or {}).get(k) for k in ("P", "R", "total")),
                          *((pw or {}).get(k) for k in ("P", "R", "total")), None, None,
                          *_headline_cells(result, None)])
    h4 = ["metric", "source", "w/o Human P", "R", "total", "w/ Human P", "R", "total", "w/ Human, 39 leaked removed",
          LENGTH_HEADER, *_headline_header(result)]
    t2 = next(e for e in published("thumb", statistic="corpus_score") if e["source"] == "kasai2022")
    rows2 = []
    for metric, r in result.results.items():
        scale = 100.0
        rows2.append([metric, "capeval", *(_scaled(r["system"].get(s), scale) for s in THUMB_SYSTEMS),
                      _scaled(r["system_no_leaked"].get("Human"), scale)])
        pub = t2["values"].get(metric)
        if pub:
            rows2.append(["", "Kasai et al. 2022, Table 2", *(pub.get(s) for s in THUMB_SYSTEMS), None])
    h2 = ["metric", "source", *THUMB_SYSTEMS, "Human, 39 leaked removed"]
    return [("thumb: instance-level Pearson (Table 4 layout)", h4, rows4),
            ("thumb: system-level corpus scores ×100 (Table 2 layout)", h2, rows2)]


CONTAMINATION_MARK = "†"


def _mark_contaminated(result: BenchResult, headers: list[str], rows: list[list[Any]]) -> list[list[Any]]:
    """``rows`` with :data:`CONTAMINATION_MARK` after each metric whose training data overlaps the benchmark (the
    subset's own verdict on per-subset rows); published rows (empty metric cell) are left alone."""
    by_subset = len(headers) > 1 and headers[1] == "subset"
    out = []
    for row in rows:
        entry = result.results.get(row[0]) if row and isinstance(row[0], str) else None
        if isinstance(entry, dict):
            if by_subset:
                entry = entry.get("subsets", {}).get(row[1], {})
            if entry.get("contamination"):
                row = [f"{row[0]} {CONTAMINATION_MARK}", *row[1:]]
        out.append(row)
    return out


def contamination_notes(result: BenchResult) -> list[str]:
    """Lines explaining every :data:`CONTAMINATION_MARK` of ``result`` (one per metric and reason; subsets named)."""
    lines = []
    for key, entry in result.results.items():
        if not isinstance(entry, dict):
            continue
        scopes = [("", entry)] + [(f" (subset {name})", sub) for name, sub in entry.get("subsets", {}).items()]
        reasons = {}
        for scope, item in scopes:
            for reason in item.get("contamination") or ():
                reasons.setdefault(reason, []).append(scope)
        for reason, where in reasons.items():
            scope = "" if "" in where else "".join(where)
            lines.append(f"{CONTAMINATION_MARK} {key}{scope}: not clean on this benchmark: {reason}")
    return lines + ([""] if lines else [])


def _scaled(value: float | None, scale: float) -> float | None:
    """``value × scale``; ``None`` (not measured, or a blend, which has no corpus score) stays ``None``."""
    return None if value is None else scale * value


#: A cell without a number (not published, not measured), as ``capeval leaderboard`` prints it.
NOT_MEASURED = "—"


def without_empty_columns(headers: list[str], rows: list[list[Any]]) -> tuple[list[str], list[list[Any]]]:
    """``(headers, rows)`` less every column after the first with no value in any row (``None`` or ``""`` in all):
    a published source with none of the metrics shown, say, would print a column of dashes (or, when the table is
    split into blocks to fit the terminal, a block of them under a repeated header)."""
    keep = [0] + [i for i in range(1, len(headers)) if any(row[i] not in (None, "") for row in rows)]
    if len(keep) == len(headers) or not rows:
        return headers, rows
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def render(result: BenchResult, fmt: str = "text") -> str:
    table = text_table if fmt == "text" else markdown_table
    parts = []
    for title, headers, rows in tables(result):
        parts.append(f"## {title}" if fmt == "markdown" else title)
        headers, rows = without_empty_columns(headers, rows)
        rows = [[NOT_MEASURED if cell is None else cell for cell in row] for row in rows]
        parts.append(table(headers, _mark_contaminated(result, headers, rows), digits=3))
        parts.append("")
    parts += contamination_notes(result)
    settings = ", ".join(f"{k}={v}" for k, v in result.settings.items())
    parts.append(f"settings: {settings}")
    sigs = sorted({r.get("signature", "") for r in result.results.values() if isinstance(r, dict)})
    if fmt == "text":  # one line per metric, cut to the terminal (--wide: whole)
        parts += merged_signature_lines(sigs)
    else:
        parts += [f"signature: {s}" for s in sigs if s]
    parts += [f"note: {n}" for n in result.notes]
    if any(_length_cell(r) is not None for r in result.results.values()):
        kind = ("thumb" if result.benchmark == "thumb" else "caparena" if result.benchmark == "caparena" else
                "pairwise" if result.benchmark in PAIR_CATEGORIES else "correlation")
        parts.append(f"note: {length_note(kind)}")
    text = "\n".join(parts)
    return fit_text(text) if fmt == "text" else text


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (files only, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path, dpi: int = 120, tight: bool = True) -> Path:
    """Lay out ``fig`` (``tight``: matplotlib's tight layout; False: as the caller laid it out), write it as a PNG to
    ``path`` (creating its folder), close it; return the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    _palette(path)
    return path


def _palette(path: Path) -> None:
    """Re-save the PNG at ``path`` with a 256-colour palette when Pillow is installed (scatter figures shrink a
    lot, with no visible change; the docs' figures stay small)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    small.save(path, optimize=True)


def scatter_title(result: BenchResult, key: str) -> str:
    """A scatter panel's title: the metric, its headline statistic and the statistic's 95 % bootstrap interval
    (``cider_d: τ-c = .439 [.423, .455]``); no interval when the run had no bootstrap."""
    r = result.results[key]
    head = r.get("headline")
    if not head:  # an older payload or a run without a headline record
        label = r.get("primary", "pearson")
        head = {"statistic": label, "value": r[label] if label in r else r.get("with_human", {}).get("total")}
    names = {"tau_c": "τ-c", "tau_b": "τ-b", "pearson": "Pearson r", "spearman": "Spearman ρ"}
    return f"{key}: {names.get(head['statistic'], head['statistic'])} = {format_headline(head)}"


def bar_errors(result: BenchResult, key: str, categories: list[str]) -> tuple[list[float], list[float], str] | None:
    """The error bars of ``key``'s per-category accuracies (percent): ``(below, above, what)``. ``what`` says which
    interval they draw: the 95 % bootstrap interval of each category (one seed with ``--bootstrap N``) or ± one
    standard deviation over the seeds (several seeds); None when the run computed neither."""
    r = result.results[key]
    if isinstance(r.get("ci"), dict) and all(c in r["ci"] for c in categories):
        below = [max(r[c] - r["ci"][c][0], 0.0) for c in categories]
        above = [max(r["ci"][c][1] - r[c], 0.0) for c in categories]
        return below, above, "95 % bootstrap interval"
    if isinstance(r.get("std"), dict) and all(c in r["std"] for c in categories):
        sd = [r["std"][c] for c in categories]
        return sd, sd, f"± 1 s.d. over {len(r.get('per_seed', [])) or 'the'} seeds"
    return None


def plot(result: BenchResult, path: str | Path) -> Path:
    """A PNG: metric-vs-human scatter (correlations, THumB), each panel titled with the headline statistic and its
    95 % interval, or per-category accuracy bars (pairwise) with their intervals as error bars (the legend gives each
    metric's average and its interval)."""
    import numpy as np

    plt = pyplot()
    keys = list(result.plot_data)
    if not keys:
        raise ValueError("nothing to plot")
    kind = result.plot_data[keys[0]]["kind"]
    if kind == "bars":
        cats = list(result.plot_data[keys[0]]["values"])
        fig, ax = plt.subplots(figsize=(2.2 + 1.5 * len(cats), 4.2))
        width = 0.8 / len(keys)
        whats = set()
        for i, key in enumerate(keys):
            vals = [result.results[key][c] for c in cats]
            errors = bar_errors(result, key, cats)
            head = result.results[key].get("headline") or {"statistic": "avg", "value": result.results[key]["avg"]}
            label = f"{key} (avg {format_headline(head)})"
            yerr = None
            if errors is not None:
                yerr = [errors[0], errors[1]]
                whats.add(errors[2])
            ax.bar(np.arange(len(cats)) + i * width, vals, width, label=label, yerr=yerr, capsize=2,
                   error_kw={"elinewidth": 0.8})
        ax.set_xticks(np.arange(len(cats)) + 0.4 - width / 2, cats)
        ax.set_ylabel("accuracy (%)" + (f", bars: {sorted(whats)[0]}" if len(whats) == 1 else ""))
        ax.set_ylim(40, 100)
        ax.legend(fontsize=7, loc="lower left")
        ax.set_title(f"{result.benchmark}: agreement with human preference")
    else:
        n = len(keys)
        cols = min(3, n)
        rows = (n + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), squeeze=False)
        rng = np.random.default_rng(0)
        for ax, key in zip(axes.flat, keys):
            d = result.plot_data[key]
            jitter = rng.uniform(-0.15, 0.15, size=len(d["human"]))
            ax.scatter(d["human"] + jitter, d["metric"], s=3, alpha=0.25)
            ax.set_title(scatter_title(result, key), fontsize=9)
            ax.set_xlabel("human judgment")
            ax.set_ylabel(key)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        fig.suptitle(f"{_name(result)}: metric vs human (95 % bootstrap intervals)", fontsize=10)
    return save_figure(fig, path)


def plot_thumb_systems(path: str | Path, bootstrap: int = 1000, seed: int = 0) -> Path:
    """PNG of THumB per-system mean precision and recall with 90 % bootstrap intervals (images resampled)."""
    import numpy as np

    from capeval import thumb
    from capeval.judgments import load_benchmark

    plt = pyplot()
    bench = load_benchmark("thumb", include_human=True)
    recs = bench.records
    res = thumb.score([r.extra["P"] for r in recs], [r.extra["R"] for r in recs],
                      [r.extra["Fl"] for r in recs], [r.extra["Con"] for r in recs], [r.extra["Inc"] for r in recs],
                      systems=[r.system for r in recs], images=[r.image_id for r in recs],
                      bootstrap_samples=bootstrap, seed=seed, confidence_level=0.9)
    names = [s for s in THUMB_SYSTEMS if s in res["systems"]]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    x = np.arange(len(names))
    for offset, item, label in ((-0.15, "precision", "P"), (0.15, "recall", "R")):
        means = np.array([res["systems"][s][item] for s in names])
        ci = np.array([res["systems"][s][f"{item}_ci"] for s in names])
        ax.errorbar(x + offset, means, yerr=[means - ci[:, 0], ci[:, 1] - means], fmt="o", capsize=4, label=label)
    ax.set_xticks(x, names)
    ax.set_ylabel("mean score (1-5), 90 % CI")
    ax.set_title("THumB 1.0: precision and recall per system")
    ax.legend()
    return save_figure(fig, path)
