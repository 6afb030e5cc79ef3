"""The figures: `capeval bench --plot` (τ's interval in each scatter panel's title, error bars on the pairwise accuracy
bars) and `capeval leaderboard --plot` (each metric's statistic with its interval per column, contamination marked),
drawn on synthetic results (matplotlib Agg); the drawn figure is inspected before it is written."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from capeval.meta_evaluation import report  # noqa: E402
from capeval.meta_evaluation.harness import BenchResult  # noqa: E402
from capeval.meta_evaluation.leaderboard import (Cell, build_leaderboard, cell_kind, plot_leaderboard,  # noqa: E402
                                            plot_title)
from capeval.cli import main  # noqa: E402
from support import FIXTURES, require_data  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def figures(monkeypatch):
    """The figures ``save_figure`` writes, kept open for inspection (it closes them after writing)."""
    drawn = []
    original = report.save_figure

    def keep(fig, path, *args, **kwargs):
        drawn.append(fig)
        out = original(fig, path, *args, **kwargs)
        return out

    monkeypatch.setattr(report, "save_figure", keep)
    return drawn


def _headline(statistic, value, ci):
    return {"statistic": statistic, "value": value, "ci": ci, "confidence": 0.95, "n_resamples": 1000, "seed": 0}


def _scatter_result():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 5, size=200).astype(float)
    result = BenchResult(benchmark="flickr8k-expert", settings={}, results={})
    for key, noise, ci in (("cider_d", 1.0, [0.423, 0.455]), ("bleu_4", 3.0, None)):
        metric = human + noise * rng.normal(size=200)
        result.results[key] = {"tau_c": 0.439, "primary": "tau_c", "headline": _headline("tau_c", 0.439, ci)}
        result.plot_data[key] = {"kind": "scatter", "human": human, "metric": metric}
    result.results["old"] = {"pearson": -0.006, "primary": "pearson"}  # no headline: the value alone
    result.plot_data["old"] = {"kind": "scatter", "human": human, "metric": -human}
    return result


def test_scatter_panels_carry_the_interval_of_their_statistic(tmp_path, figures):
    result = _scatter_result()
    assert report.scatter_title(result, "cider_d") == "cider_d: τ-c = .439 [.423, .455]"
    assert report.scatter_title(result, "bleu_4") == "bleu_4: τ-c = .439"  # no bootstrap: no interval
    assert report.scatter_title(result, "old") == "old: Pearson r = -.006"
    png = report.plot(result, tmp_path / "f8k.png")
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 5_000
    titles = [ax.get_title() for ax in figures[0].axes if ax.get_title()]
    assert titles == ["cider_d: τ-c = .439 [.423, .455]", "bleu_4: τ-c = .439", "old: Pearson r = -.006"]


def _bars_result(per_category_ci: bool = True):
    cats = ["HC", "HI", "HM", "MM"]
    result = BenchResult(benchmark="pascal50s", settings={}, results={})
    for key, base in (("cider_d", 70.0), ("spice", 65.0)):
        entry = {c: base + i for i, c in enumerate(cats)}
        entry["avg"] = float(np.mean([entry[c] for c in cats]))
        if per_category_ci:
            entry["ci"] = {c: [entry[c] - 2.0, entry[c] + 1.0] for c in cats}
        else:  # several seeds: the spread over them
            entry["std"] = {c: 0.5 for c in cats + ["avg"]}
            entry["per_seed"] = [{}, {}, {}]
        entry["headline"] = _headline("avg", entry["avg"], [entry["avg"] - 1.1, entry["avg"] + 1.2])
        result.results[key] = entry
        result.plot_data[key] = {"kind": "bars", "values": {c: entry[c] for c in cats}}
    return result


def _error_bar_lengths(ax):
    """Per bar container, the lengths of its vertical error segments."""
    out = []
    for container in ax.containers:
        if getattr(container, "errorbar", None) is None:
            continue
        segments = container.errorbar.lines[2][0].get_segments()
        out.append([round(float(s[1][1] - s[0][1]), 6) for s in segments])
    return out


def test_accuracy_bars_have_their_intervals_as_error_bars(tmp_path, figures):
    result = _bars_result()
    below, above, what = report.bar_errors(result, "cider_d", ["HC", "HI", "HM", "MM"])
    assert below == [2.0] * 4 and above == [1.0] * 4 and what == "95 % bootstrap interval"
    png = report.plot(result, tmp_path / "pascal.png")
    assert png.read_bytes()[:8] == PNG
    ax = figures[0].axes[0]
    assert _error_bar_lengths(ax) == [[3.0] * 4, [3.0] * 4]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("cider_d (avg 71.5 [70.4, 72.7])")
    assert "95 % bootstrap interval" in ax.get_ylabel()


def test_several_seeds_draw_their_standard_deviation(tmp_path, figures):
    result = _bars_result(per_category_ci=False)
    assert report.bar_errors(result, "spice", ["HC", "HI"])[2] == "± 1 s.d. over 3 seeds"
    report.plot(result, tmp_path / "seeds.png")
    assert _error_bar_lengths(figures[0].axes[0]) == [[1.0] * 4, [1.0] * 4]
    result.results["spice"].pop("std")
    assert report.bar_errors(result, "spice", ["HC"]) is None


def _payloads():
    def entry(stat, value, ci, contamination):
        return {stat: value, "primary": stat, "headline": _headline(stat, value, ci), "contamination": contamination}

    return [
        {"benchmark": "flickr8k-expert", "settings": {"protocol": "clipscore"}, "notes": [], "results": {
            "cider_d": entry("tau_c", .439, [.423, .455], []),
            "sentence_cosine": entry("tau_c", .551, [.538, .565], ["trained on Flickr30k captions"]),
            "clip_s": entry("tau_c", .50, None, ["unknown: CLIP's training data is not disclosed"])}},
        {"benchmark": "pascal50s", "settings": {"refs": "expert"}, "notes": [], "results": {
            "cider_d": entry("avg", 79.9, [78.8, 81.0], []),
            "sentence_cosine": entry("avg", 85.2, [84.1, 86.3], [])}},
    ]


def test_cell_kinds():
    assert cell_kind(Cell(.4, contamination=[])) == "clean"
    assert cell_kind(Cell(.4, contamination=["overlaps"])) == "contaminated"
    assert cell_kind(Cell(.4, contamination=["unknown: not declared"])) == "unknown"
    assert cell_kind(Cell(.4, contamination=None)) == "unknown"


def test_leaderboard_plot_draws_each_statistic_with_its_interval(tmp_path, figures):
    board = build_leaderboard(_payloads())
    png = plot_leaderboard(board, tmp_path / "board.png")
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 5_000
    fig = figures[0]
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["Flickr8k-Expert (clipscore) τ-c", "PASCAL-50S (refs: expert) avg %"]
    # every capeval cell with an interval has a horizontal error bar from its low to its high end
    spans = sorted(tuple(round(float(x), 3) for x in seg[:, 0]) for ax in panels for coll in ax.collections
                   for seg in coll.get_segments())
    assert spans == [(.423, .455), (.538, .565), (78.8, 81.0), (84.1, 86.3)]
    # colours mark contamination: the overlapping cell red, the undeclared one grey, the clean ones blue
    colours = {}
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    for line in panels[0].lines:
        if len(line.get_xdata()) == 1 and line.get_marker() not in ("|", "_"):
            colours[labels[int(line.get_ydata()[0])]] = (line.get_color(), line.get_marker())
    assert colours["sentence_cosine"] == ("tab:red", "X")
    assert colours["clip_s"] == ("tab:gray", "s")
    assert colours["cider_d"] == ("tab:blue", "o")
    assert any(m == "D" for c, m in colours.values())  # the published anchors, black diamonds
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("† training data overlaps" in t for t in legend) and any("? training" in t for t in legend)


def test_leaderboard_plot_title_promises_intervals_only_where_the_files_have_them(tmp_path, figures):
    """``capeval bench --json`` computes no interval by default (``--bootstrap 0``): the title then says so; with
    intervals on some cells only, it says where; with all, it names their level."""
    def strip(payloads, keep=()):
        for payload in payloads:
            for key, entry in payload["results"].items():
                if key not in keep:
                    entry["headline"]["ci"] = None
        return payloads

    titles = []
    for i, payloads in enumerate([strip(_payloads()), strip(_payloads(), keep=("cider_d",)), _payloads()]):
        board = build_leaderboard(payloads)
        plot_leaderboard(board, tmp_path / f"board{i}.png")
        titles.append(figures[-1]._suptitle.get_text())
        assert titles[-1] == plot_title(board)
    assert titles[0] == ("capeval leaderboard: each metric's statistic (no bootstrap intervals in these files: "
                         "capeval bench --bootstrap N computes them)")
    assert "interval" not in titles[0].split("(")[0]
    # clip_s has no interval in _payloads() itself: the title says the intervals are only where a file has one
    assert titles[1] == titles[2] == ("capeval leaderboard: each metric's statistic with its 95 % bootstrap "
                                      "interval where the file has one")
    every = _payloads()
    every[0]["results"]["clip_s"]["headline"]["ci"] = [.48, .52]
    assert plot_title(build_leaderboard(every)) == ("capeval leaderboard: each metric's statistic with its 95 % "
                                                    "bootstrap interval")
    every[1]["results"]["cider_d"]["headline"]["confidence"] = 0.9
    assert "with its 90 % / 95 % bootstrap interval" in plot_title(build_leaderboard(every))


def test_leaderboard_cli_plot(tmp_path, capsys):
    files = []
    for i, payload in enumerate(_payloads()):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(json.dumps(payload), encoding="utf-8")
    png = tmp_path / "figs" / "board.png"
    assert main(["leaderboard", *map(str, files), "--plot", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().err
    assert png.read_bytes()[:8] == PNG


def test_leaderboard_plot_refuses_an_empty_board(tmp_path):
    board = build_leaderboard([{"benchmark": "pascal50s", "settings": {}, "notes": [],
                                "results": {"m": {"avg": float("nan"), "contamination": []}}}])
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_leaderboard(board, tmp_path / "x.png")


# -- on the real benchmark files (skipped without them) -----------------------------------------------------------

MODULE = "evaluate:" + str(FIXTURES / "evaluate_modules" / "token_overlap")


@pytest.fixture
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_bench_plot_on_pascal50s_draws_the_bootstrap_intervals(tmp_path, figures, _isolated_cache):
    from capeval.meta_evaluation.harness import run_benchmark

    require_data("pascal50s", "expert-processed", "pascal_50s.json")
    result = run_benchmark("pascal50s", [MODULE], bootstrap=50, length_baseline=False)  # one metric's bars
    entry = result.results[MODULE]
    report.plot(result, tmp_path / "p.png")
    cats = list(result.plot_data[MODULE]["values"])
    lengths = _error_bar_lengths(figures[0].axes[0])
    assert lengths == [[round(entry["ci"][c][1] - entry["ci"][c][0], 6) for c in cats]]
    assert all(length > 0 for length in lengths[0])


def test_bench_plot_on_flickr8k_expert_titles_carry_the_interval(tmp_path, figures, _isolated_cache):
    from capeval.meta_evaluation.harness import run_benchmark

    require_data("flickr8k")
    result = run_benchmark("flickr8k-expert", [MODULE], bootstrap=50)
    low, high = result.results[MODULE]["headline"]["ci"]
    report.plot(result, tmp_path / "f.png")
    title = figures[0].axes[0].get_title()
    assert title.startswith(f"{MODULE}: τ-c = ") and title.endswith(f"[{low:.3f}, {high:.3f}]".replace("0.", "."))
