"""A robustness run's report: the AUC table (:func:`auc_table`), as text or markdown with the settings underneath
(:func:`render`), and the figure (:func:`plot_robustness`: Fig. 6's layout)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from capeval.meta_evaluation.robustness.running import RobustnessResult
from capeval.meta_evaluation.robustness.settings import TRANSFORM_NAMES


def auc_table(result: RobustnessResult) -> tuple[list[str], list[list[Any]]]:
    """``(headers, rows)``: one row per metric, its human-caption mean and its AUC per transformation."""
    transforms = result.settings["transforms"]
    headers = ["metric", "human mean", *(f"AUC {t}" for t in transforms)]
    rows = [[m, result.metrics[m]["human_mean"], *(result.curves[m][t]["auc"] for t in transforms)]
            for m in result.curves]
    return headers, rows


def render(result: RobustnessResult, fmt: str = "text") -> str:
    """The AUC table (``fmt`` = ``"text"`` or ``"markdown"``) with the settings underneath."""
    from capeval.render import markdown_table, text_table

    headers, rows = auc_table(result)
    table = (text_table if fmt == "text" else markdown_table)(headers, rows, digits=3)
    s = result.settings
    lines = [f"robustness (Cui et al. 2018 §3.4): normalised mean score AUC over gamma, lower = more robust", table,
             f"data: {s['data']}, {s['n_images']} images, {s['n_candidates']} candidates (leave-one-out references)",
             f"gammas: {', '.join(f'{g:g}' for g in s['gammas'])}; seed {s['seed']}"]
    if s.get("feature_encoder"):
        lines.append(f"RC features: {s['feature_encoder']}")
    sigs = sorted({m['signature'] for m in result.metrics.values()})
    if fmt == "text":
        from capeval.render import fit_text
        from capeval.signature import merged_signature_lines

        lines += merged_signature_lines(sigs)
        lines += [f"note: {n}" for n in result.notes]
        return fit_text("\n".join(lines))
    lines += [f"signature: {sig}" for sig in sigs]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)


def plot_robustness(result: RobustnessResult, path: str | Path) -> Path:
    """PNG: one panel per transformation, one normalised curve per metric, the AUC in the legend (Fig. 6 layout)."""
    from capeval.meta_evaluation.report import pyplot, save_figure

    plt = pyplot()
    transforms = result.settings["transforms"]
    fig, axes = plt.subplots(1, len(transforms), figsize=(4.2 * len(transforms), 3.6), squeeze=False)
    for ax, t in zip(axes[0], transforms):
        for m, per in result.curves.items():
            c = per[t]
            ax.plot(c["gammas"], c["normalised"], marker="o", markersize=3, label=f"{m} ({c['auc']:.3f})")
        ax.set_title(f"T_{t}: {TRANSFORM_NAMES[t]}", fontsize=10)
        ax.set_xlabel("γ (fraction transformed)")
        ax.set_ylabel("normalised mean score")
        ax.set_xlim(0, max(1.0, result.settings["gammas"][-1]))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, title="metric (AUC)", title_fontsize=8)
    fig.suptitle(f"Robustness on {result.settings['n_images']} images (lower AUC = more robust)", fontsize=10)
    return save_figure(fig, path)

