"""``capeval bench``: score a human-judgment benchmark with any metrics and compute agreement.

Protocol choices that change numbers are explicit here and recorded in ``settings``:

* **Scoring groups.** Corpus-dependent metrics (CIDEr-D's document frequencies) depend on which
  items are scored together. Each benchmark set is scored in one call — all candidates of
  Flickr8k / COMPOSITE, the ``a`` and ``b`` candidates of all pairs for PASCAL-50S / ABSTRACT-50S,
  the 2,500 (with Human) or 2,000 (without Human) THumB captions — and THumB's system-level scores
  are computed per system. With pycocoevalcap's CIDEr-D these groupings reproduce the published
  Flickr8k-Expert τ-c, PASCAL-50S accuracies and THumB Pearson / system values exactly.
* **Images.** Metrics that read images (``needs_images``, e.g. ``critic``) get each candidate's image
  file (:meth:`Benchmark.images`: the pair's image for both candidates of a pair); a benchmark with any
  image missing under the data directory refuses them with a ``ValueError`` naming both.
* **Units.** Correlations (``tau_b``, ``tau_c``, ``pearson``, ``spearman``) in [-1, 1]; pairwise
  accuracies (``HC`` ... ``avg``) in percent; THumB system scores as the metric's corpus score
  (CIDEr-D on its 0-10 scale).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from capeval.benchmarks.score_cache import ScoreCache
from capeval.benchmarks.scorers import ItemScores, needs_images, score_items
from capeval.benchmarks import Benchmark, canonical_name, load_benchmark
from capeval.benchmarks import stats
from capeval.benchmarks.contamination import mark_contamination
from capeval.registry import judged_benchmarks

#: Benchmarks ``capeval bench`` accepts: those with human judgments (:data:`capeval.registry.BENCHMARKS`).
BENCH_NAMES = judged_benchmarks()
CORRELATIONS = {"tau_b": "kendall_b", "tau_c": "kendall_c", "pearson": "pearson", "spearman": "spearman"}
COMPOSITE_SUBSETS = ("8k", "30k", "coco")


@dataclass
class BenchResult:
    """Everything one ``capeval bench`` run produced (``to_json`` is the ``--json`` payload)."""

    benchmark: str
    settings: dict[str, Any]
    results: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    #: per metric key, what the plots need (human and metric arrays, categories, systems)
    plot_data: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "settings": self.settings, "results": self.results, "notes": self.notes}


class _Scorer:
    """Scores lists of items for every requested metric spec, through the score cache."""

    def __init__(self, metrics: Sequence[str], cache: ScoreCache | None, options: dict[str, Any], progress):
        self.metrics, self.cache, self.options, self.progress = list(metrics), cache, options, progress
        self.image_metrics = [spec for spec in self.metrics if needs_images(spec)]

    def check_images(self, bench: Benchmark) -> list[str] | None:
        """``bench``'s image paths (:meth:`Benchmark.images`); ``ValueError`` naming the benchmark and the
        metrics when a metric reads images and some record has no image file."""
        images = bench.images()
        if images is None and self.image_metrics:
            missing = bench.missing_images()
            raise ValueError(
                f"{', '.join(self.image_metrics)} read images, but {len(missing)} image(s) of benchmark {bench.name} "
                f"are not under the data directory (e.g. {missing[0]!r}); add them there, or benchmark "
                "metrics that read no image."
            )
        return images

    def bench(self, bench: Benchmark) -> dict[str, ItemScores]:
        """Every requested metric on ``bench``'s candidates, references and (for image metrics) images."""
        return self(bench.candidates(), bench.references(), self.check_images(bench))

    def __call__(self, predictions: list[str], references: list[list[str]],
                 images: list[str] | None = None) -> dict[str, ItemScores]:
        out: dict[str, ItemScores] = {}
        for spec in self.metrics:
            out.update(score_items(spec, predictions, references, images=images, cache=self.cache,
                                   options=self.options, show_progress=self.progress))
        return out

    def corpus(self, spec_key: str, predictions: list[str], references: list[list[str]],
               images: list[str] | None = None) -> float:
        """Corpus-level score of one result key (capeval: the metric's own corpus score)."""
        if spec_key.startswith("evaluate:"):  # an evaluate module: mean of its per-item scores
            items = score_items(spec_key, predictions, references, cache=self.cache, options=self.options,
                                show_progress=self.progress)
            return float(items[spec_key].values.mean())
        from capeval.api import score

        extra = {"images": images} if needs_images(spec_key) else {}
        return float(score(predictions, references, metrics=[spec_key], progress=self.progress, **self.options,
                           **extra)[spec_key])


def _correlations(bench: Benchmark, values: np.ndarray, bootstrap: int, seed: int) -> dict[str, Any]:
    human, metric, item = bench.judgment_rows(values)
    out: dict[str, Any] = {name: stats.correlation(human, metric, stat) for name, stat in CORRELATIONS.items()}
    out["rows"] = int(len(human))
    if bootstrap:
        primary = bench.statistic
        out["ci"] = stats.bootstrap_ci(lambda idx: stats.correlation(human[idx], metric[idx], primary),
                                       groups=item, n_resamples=bootstrap, confidence=0.95, seed=seed)
        out["ci"]["statistic"] = primary
    return out


def _run_correlation(name, metrics, scorer, settings, bootstrap, seed, result: BenchResult) -> None:
    loader_settings = {k: v for k, v in settings.items() if k in ("protocol", "subset")}
    bench = load_benchmark(name, **loader_settings)
    result.settings.update(bench.settings)
    result.notes += bench.notes
    scores = scorer.bench(bench)
    for key, item_scores in scores.items():
        entry = _correlations(bench, item_scores.values, bootstrap, seed)
        entry["primary"] = {"kendall_b": "tau_b", "kendall_c": "tau_c"}.get(bench.statistic, bench.statistic)
        entry["signature"] = item_scores.signature
        result.results[key] = entry
        human, metric, _ = bench.judgment_rows(item_scores.values)
        result.plot_data[key] = {"kind": "scatter", "human": human, "metric": metric}
    if name == "composite" and "subset" not in settings:
        for subset in COMPOSITE_SUBSETS:
            sub = load_benchmark(name, subset=subset)
            sub_scores = scorer.bench(sub)
            for key, item_scores in sub_scores.items():
                result.results[key].setdefault("subsets", {})[subset] = _correlations(sub, item_scores.values, 0, seed)


def _run_pairwise(name, metrics, scorer, settings, seeds, bootstrap, result: BenchResult) -> None:
    refs = settings.get("refs")
    per_seed: dict[str, list[dict[str, float]]] = {}
    for seed in seeds:
        kwargs = {"seed": seed}
        if refs is not None:
            kwargs["references"] = refs
        bench = load_benchmark(name, **kwargs)
        if seed == seeds[0]:
            result.settings.update({k: v for k, v in bench.settings.items() if k != "seed"})
            result.notes += bench.notes
        scores = scorer.bench(bench)
        for key, item_scores in scores.items():
            a, b = item_scores.values[0::2], item_scores.values[1::2]
            ev = bench.evaluate(a, b, bootstrap=bootstrap, seed=seed)
            row = {cat: 100 * e["value"] for cat, e in ev["categories"].items()}
            row["avg"] = 100 * ev["value"]
            if bootstrap:
                row["ci"] = {cat: [100 * e["ci"]["low"], 100 * e["ci"]["high"]] for cat, e in ev["categories"].items()}
            per_seed.setdefault(key, []).append(row)
            result.plot_data[key] = {"kind": "bars", "values": {c: v for c, v in row.items() if c not in ("avg", "ci")}}
            result.results.setdefault(key, {})["signature"] = item_scores.signature
    for key, rows in per_seed.items():
        cats = [c for c in rows[0] if c != "ci"]
        entry = result.results[key]
        for cat in cats:
            entry[cat] = float(np.mean([r[cat] for r in rows]))
        if len(rows) > 1:
            entry["std"] = {cat: float(np.std([r[cat] for r in rows], ddof=1)) for cat in cats}
            entry["per_seed"] = rows
        elif "ci" in rows[0]:
            entry["ci"] = rows[0]["ci"]
    result.settings["seeds"] = list(seeds)


def _thumb_block(bench: Benchmark, values: np.ndarray, bootstrap: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for target in ("P", "R", "total"):
        human = np.array([r.extra[target] for r in bench.records])
        out[target] = stats.pearson(human, values)
    if bootstrap:
        human = np.array([r.extra["total"] for r in bench.records])
        ci = stats.bootstrap_ci(lambda idx: stats.pearson(human[idx], values[idx]), n_items=len(values),
                                n_resamples=bootstrap, confidence=0.90, seed=seed)
        out["total_ci"] = [ci["low"], ci["high"]]
    return out


def _pick(items: list[str] | None, indices: list[int]) -> list[str] | None:
    return None if items is None else [items[i] for i in indices]


def _run_thumb(metrics, scorer, bootstrap, seed, result: BenchResult) -> None:
    with_h = load_benchmark("thumb", include_human=True)
    without_h = load_benchmark("thumb", include_human=False)
    result.notes += with_h.notes
    # THumB's caveat: after the 2022 data fix 39 *Human* captions sit verbatim in their own references.
    leaked = np.array([r.system == "Human" and bool(r.extra.get("candidate_in_references")) for r in with_h.records])
    s_with = scorer.bench(with_h)
    s_without = scorer.bench(without_h)
    images = with_h.images()
    systems = list(dict.fromkeys(r.system for r in with_h.records))
    for key in s_with:
        entry: dict[str, Any] = {
            "with_human": _thumb_block(with_h, s_with[key].values, bootstrap, seed),
            "without_human": _thumb_block(without_h, s_without[key].values, bootstrap, seed),
        }
        keep = np.flatnonzero(~leaked)
        sub = Benchmark("thumb", [with_h.records[i] for i in keep], with_h.settings, with_h.statistic)
        entry["with_human_no_leaked"] = _thumb_block(sub, s_with[key].values[keep], 0, seed)
        entry["system"], entry["system_no_leaked"] = {}, {}
        for system in systems:
            idx = [i for i, r in enumerate(with_h.records) if r.system == system]
            preds = [with_h.records[i].candidate for i in idx]
            refs = [list(with_h.records[i].references) for i in idx]
            entry["system"][system] = scorer.corpus(key, preds, refs, _pick(images, idx))
            clean = [i for i in idx if not leaked[i]]
            if len(clean) != len(idx):
                entry["system_no_leaked"][system] = scorer.corpus(
                    key, [with_h.records[i].candidate for i in clean],
                    [list(with_h.records[i].references) for i in clean], _pick(images, clean),
                )
        entry["signature"] = s_with[key].signature
        result.results[key] = entry
        result.plot_data[key] = {"kind": "scatter", "human": np.array([r.extra["total"] for r in with_h.records]),
                                 "metric": s_with[key].values}
    result.settings.update({"leaked_human_captions": int(leaked.sum()), "system_scores": "per-system corpus call"})


def run_benchmark(
    benchmark: str,
    metrics: Sequence[str],
    *,
    protocol: str | None = None,
    refs: str | int | None = None,
    subset: str | None = None,
    seeds: Sequence[int] = (0,),
    bootstrap: int = 0,
    use_cache: bool = True,
    metric_options: dict[str, Any] | None = None,
    show_progress: bool | None = None,
) -> BenchResult:
    """Score ``benchmark`` with ``metrics`` and compare with its human judgments.

    Args:
        benchmark: one of :data:`BENCH_NAMES` (aliases such as ``flickr8k-cf`` accepted).
        metrics: capeval metric names / result keys or ``evaluate:<module>[@key]`` specs.
        protocol: Flickr8k ``clipscore`` (default) or ``cui``.
        refs: PASCAL-50S ``expert`` (default), ``all`` or k; ABSTRACT-50S ``all`` (default) or k.
        subset: COMPOSITE only: score one subset (``8k``, ``30k``, ``coco``) instead of all three and each of them
            (e.g. ``8k``, whose images are all Flickr8k test images, for metrics that read images).
        seeds: reference-sampling seeds (several: mean and standard deviation are reported).
        bootstrap: resamples for confidence intervals (0: none).
        metric_options: passed to ``capeval.score`` (``cleanup``, ``tokenizer``, ``cider_df``...).
    """
    name = canonical_name(benchmark, BENCH_NAMES)
    if name not in BENCH_NAMES:
        raise ValueError(f"{name} has no human judgments; benchmark one of {', '.join(BENCH_NAMES)}.")
    if not metrics:
        raise ValueError("no metrics given (e.g. --metrics bleu_4,cider_d)")
    if protocol is not None and not name.startswith("flickr8k"):
        raise ValueError(f"--protocol applies to Flickr8k benchmarks only, not {name}.")
    if subset is not None and (name != "composite" or subset not in COMPOSITE_SUBSETS):
        raise ValueError(f"--subset applies to composite only, one of {', '.join(COMPOSITE_SUBSETS)}; got {subset!r} "
                         f"for {name}.")
    if refs is not None and name not in ("pascal50s", "abstract50s"):
        raise ValueError(f"--refs applies to pascal50s and abstract50s only, not {name}.")
    seeds = list(seeds) or [0]
    cache = ScoreCache() if use_cache else None
    scorer = _Scorer(metrics, cache, dict(metric_options or {}), show_progress)
    result = BenchResult(benchmark=name, settings={}, results={})
    if metric_options:
        result.settings["metric_options"] = dict(metric_options)
    try:
        if name == "thumb":
            _run_thumb(metrics, scorer, bootstrap, seeds[0], result)
        elif name in ("pascal50s", "abstract50s"):
            _run_pairwise(name, metrics, scorer, {"refs": refs}, seeds, bootstrap, result)
        else:
            settings = {"protocol": protocol} if protocol else {}
            if subset is not None:
                settings["subset"] = subset
            _run_correlation(name, metrics, scorer, settings, bootstrap, seeds[0], result)
    finally:
        if cache:
            cache.close()
    mark_contamination(result, subset, metric_options)
    return result
