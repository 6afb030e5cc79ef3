"""``capeval bench``: score a human-judgment benchmark with any metrics and compute agreement.

Protocol choices that change numbers are explicit here and recorded in ``settings``:

* **Scoring groups.** Corpus-dependent metrics (CIDEr-D's document frequencies) depend on which
  items are scored together. Each benchmark set is scored in one call — all candidates of
  Flickr8k / COMPOSITE / a Nebula or Polaris split, the ``a`` and ``b`` candidates of all pairs for
  PASCAL-50S / ABSTRACT-50S, the 2,500 (with Human) or 2,000 (without Human) THumB captions — and THumB's
  system-level scores are computed per system. With pycocoevalcap's CIDEr-D these groupings reproduce the published
  Flickr8k-Expert τ-c, PASCAL-50S accuracies and THumB Pearson / system values exactly.
* **Images.** Metrics that read images (``needs_images``, e.g. ``critic``) get each candidate's image
  file (:meth:`Benchmark.images`: the pair's image for both candidates of a pair); a benchmark with any
  image missing under the data directory refuses them with a ``ValueError`` naming both.
* **Units.** Correlations (``tau_b``, ``tau_c``, ``pearson``, ``spearman``) in [-1, 1]; pairwise
  accuracies (``HC`` ... ``avg``) in percent; THumB system scores as the metric's corpus score
  (CIDEr-D on its 0-10 scale).
* **Headline.** Every metric's entry (and every COMPOSITE subset's) holds ``headline``: the benchmark's own
  statistic with a 95 % percentile-bootstrap interval when ``bootstrap`` > 0 (:func:`headline_statistic`). Resampled
  units: Flickr8k / COMPOSITE / Nebula / Polaris candidate items (all rows of an item together), PASCAL-50S /
  ABSTRACT-50S pairs within their category, THumB captions. Seeded by the first of ``seeds``.
* **Comparisons.** ``compare=[(A, B), ...]``: a paired bootstrap of headline(A) − headline(B) on the same resamples
  (:func:`capeval.judgments.stats.paired_bootstrap_difference`), in :attr:`BenchResult.comparisons`.
* **Items without a score.** Only a metric whose class sets ``unscored_items`` (:attr:`capeval.metric.CaptionMetric.
  unscored_items`: ``fleur``, ``ref_fleur``, ``expert``, whose judge may answer without a usable number) may give an
  item ``NaN``; a ``NaN`` from any other metric (or an ``evaluate:`` module, or a blend) raises ``ValueError`` as before
  (:func:`scored_items`). For such a metric, never silently:

  - *Correlation benchmarks* (Flickr8k, COMPOSITE, Nebula, Polaris): its statistics (and their bootstrap intervals,
    which resample the same kept items) are over the items it scored; an unscored item is left out *for that metric
    only* (every judgment row of the item), the others keep all items. Its entry (and each COMPOSITE subset's) holds
    ``unscored``: the number of items left out; a note names it when it is > 0. A comparison of two metrics uses the
    items both scored (``unscored`` in the comparison: the items left out), so its ``value_a`` / ``value_b`` may differ
    from the two metrics' own headlines.
  - *Pairwise benchmarks* (PASCAL-50S, ABSTRACT-50S): a pair where either caption has no score is the metric's tie
    (it earns what a tie earns, ½ here) and stays in its category's count. The reference scripts keep every pair in
    the denominator too (Yebin46/FLEUR ``fleur_pascal.py``: accuracy = correct pairs / all pairs; a failed parse
    reuses the previous caption's score, an out-of-range number fails its pair assert; hjkim811/EXPERT ``expert.py``:
    correct / (correct + wrong + ties), a failed parse raises), but count a tie as wrong: with ``unscored_pairs`` (a
    list, one count per seed) and the per-category counts in the note, a category's ties-wrong accuracy is the
    reported one minus 50 / (its pairs) points per such pair.
  - *THumB*: Pearson correlations over the scored captions (``unscored`` in each block); system-level scores are the
    mean over each system's scored captions of the per-item scores (which is such a metric's corpus value), with
    ``system_unscored`` (and ``system_no_leaked_unscored``) counting the captions left out; a system with no scored
    caption has no system score (``None``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from capeval.advice import OPTION, Setting, with_words, words
from capeval.meta_evaluation.score_cache import ScoreCache
from capeval.meta_evaluation.scorers import ItemScores, needs_images, raw_scale_options, score_items
from capeval.judgments import Benchmark, canonical_name, load_benchmark
from capeval.judgments import stats
from capeval.meta_evaluation.blend import is_blend
from capeval.meta_evaluation.contamination import mark_contamination
from capeval.meta_evaluation.length_control import (LENGTH_KEY, constant_note, correlation_controlled, informative,
                                               pairwise_controlled)
from capeval.registry import judged_benchmarks, metric_class, resolve

#: Benchmarks ``capeval bench`` accepts: those with human judgments (:data:`capeval.registry.BENCHMARKS`).
BENCH_NAMES = judged_benchmarks()
CORRELATIONS = {"tau_b": "kendall_b", "tau_c": "kendall_c", "pearson": "pearson", "spearman": "spearman"}
COMPOSITE_SUBSETS = ("8k", "30k", "coco")
#: Benchmarks whose report adds one block per part, each scored on its own: COMPOSITE's subsets, LongCap-Arena's
#: aspects (its main entry is descriptiveness, the loader's default), and the loader setting that names the part.
PER_SUBSET = {"composite": COMPOSITE_SUBSETS, "longcap-arena": ("desc", "rel", "flu")}
SUBSET_SETTING = {"longcap-arena": "aspect"}
#: Confidence of the ``headline`` and ``comparisons`` intervals (THumB's ``total_ci`` keeps the paper's 0.90).
HEADLINE_CONFIDENCE = 0.95
#: Bootstrap resamples when comparisons are asked for and ``bootstrap`` is not given.
COMPARE_RESAMPLES = 1000
#: Headline statistic (a :data:`CORRELATIONS` key) where it is not the protocol's own (``Benchmark.statistic``):
#: COMPOSITE is compared on Kendall τ-b, the τ the LCEval paper reports, though its table leads with τ-c (CLIPScore).
HEADLINE_KEYS = {"composite": "tau_b"}
#: ``Benchmark.statistic`` -> result key
_KEY_OF = {stat: key for key, stat in CORRELATIONS.items()}


@dataclass
class BenchResult:
    """Everything one ``capeval bench`` run produced (``to_json`` is the ``--json`` payload)."""

    benchmark: str
    settings: dict[str, Any]
    results: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    #: per metric key, what the plots need (human and metric arrays, categories, systems)
    plot_data: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    #: paired bootstrap comparisons of two metrics' headline statistics (:func:`run_benchmark` ``compare=``)
    comparisons: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "settings": self.settings, "results": self.results, "notes": self.notes,
                "comparisons": self.comparisons}


class _Scorer:
    """Scores lists of items for every requested metric spec, through the score cache."""

    def __init__(self, metrics: Sequence[str], cache: ScoreCache | None, options: dict[str, Any], progress):
        self.metrics, self.cache, self.options, self.progress = list(metrics), cache, options, progress
        self.image_metrics = [spec for spec in self.metrics if needs_images(spec)]

    def check_images(self, bench: Benchmark) -> list[str] | None:
        """``bench``'s images (:meth:`Benchmark.images`: file paths, or the images a Hub dataset carries), ``None``
        when no metric reads images (nothing is read then); ``ValueError`` naming the benchmark and the metrics when
        a metric reads images and some record has no image file."""
        if not self.image_metrics:
            return None
        images = bench.images()
        if images is None:
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
               images: list[str] | None = None) -> float | None:
        """Corpus-level score of one result key (capeval: the metric's own corpus score; ``None`` for a blend)."""
        if is_blend(spec_key):  # z-scored within the set scored: no corpus score
            return None
        if spec_key.startswith("evaluate:"):  # an evaluate module: mean of its per-item scores
            items = score_items(spec_key, predictions, references, cache=self.cache, options=self.options,
                                show_progress=self.progress)
            return float(items[spec_key].values.mean())
        from capeval.api import score

        extra = {"images": images} if needs_images(spec_key) else {}
        ((family, _),) = resolve([spec_key]).items()
        options = {**dict.fromkeys(raw_scale_options(family), "raw"), **self.options}
        return float(score(predictions, references, metrics=[spec_key], progress=self.progress, **options,
                           **extra)[spec_key])


def headline_statistic(statistic: str, value: float, ci: dict[str, Any] | None, seed: int) -> dict[str, Any]:
    """The ``headline`` record: ``{"statistic", "value", "ci": [low, high] | None, "confidence", "n_resamples",
    "seed"}``, ``value`` and ``ci`` in the statistic's units (correlations in [-1, 1], accuracy ``avg`` in percent),
    ``ci`` from :func:`stats.bootstrap_ci`'s result (``None``: no bootstrap, ``n_resamples`` 0)."""
    return {"statistic": statistic, "value": float(value),
            "ci": None if ci is None else [float(ci["low"]), float(ci["high"])],
            "confidence": HEADLINE_CONFIDENCE, "n_resamples": 0 if ci is None else int(ci["n_resamples"]), "seed": seed}


def may_leave_unscored(key: str) -> bool:
    """Whether result key ``key`` comes from a metric that may leave items without a score (``NaN``): a capeval metric
    whose class sets ``unscored_items``. Never an ``evaluate:`` module or a blend."""
    if key.startswith("evaluate:") or is_blend(key):
        return False
    try:
        ((family, _),) = resolve([key]).items()
        return bool(getattr(metric_class(family), "unscored_items", False))
    except (ImportError, ValueError):
        return False


def scored_items(key: str, values: np.ndarray) -> np.ndarray:
    """The mask of the items ``key`` scored (not ``NaN``); ``ValueError`` when a metric that may not leave items
    without a score (:func:`may_leave_unscored`) gave one ``NaN``."""
    missing = np.isnan(np.asarray(values, dtype=float))
    if missing.any() and not may_leave_unscored(key):
        raise ValueError(f"{key} gave item {int(np.flatnonzero(missing)[0])} no score (NaN); only a metric that may "
                         "leave items unscored (a judge metric such as fleur) may do that.")
    return ~missing


def _unscored_note(key: str, left_out: int, total: int, what: str, where: str = "") -> str | None:
    """The note on ``key``'s items without a score (``None`` when there are none)."""
    if not left_out:
        return None
    return (f"{key}{where}: {left_out} of {total} {what} have no score (the judge gave no usable number); its "
            f"statistics{where and ' there'} are over the other {total - left_out}")


def _comparison(a: str, b: str, statistic: str, subset: str | None, paired: dict[str, Any]) -> dict[str, Any]:
    """One ``comparisons`` entry from :func:`stats.paired_bootstrap_difference`'s result."""
    return {"a": a, "b": b, "statistic": statistic, "subset": subset, **paired}


def _scored_rows(bench: Benchmark, values: np.ndarray, scored: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``bench``'s judgment rows ``(human, metric, item)`` of the items ``scored`` marks (all rows of each)."""
    human, metric, item = bench.judgment_rows(np.where(scored, values, 0.0))
    keep = scored[item]
    return human[keep], metric[keep], item[keep]


def _correlations(bench: Benchmark, values: np.ndarray, bootstrap: int, seed: int, headline: str | None = None,
                  primary_ci: bool = True, key: str = "") -> dict[str, Any]:
    """The correlations of ``bench``'s judgment rows with ``values``; with ``bootstrap`` the protocol statistic's
    95 % interval (``ci``, unless ``primary_ci`` is false) and the ``headline`` (key ``headline``, default the
    protocol's statistic) with its interval. Items result key ``key`` left without a score are left out (counted in
    ``unscored`` for a metric that may leave some)."""
    scored = scored_items(key, values)
    if scored.sum() < 2:
        raise ValueError(f"{key} scored {int(scored.sum())} of the {len(scored)} items of {bench.name}; a correlation "
                         "needs at least 2.")
    human, metric, item = _scored_rows(bench, values, scored)
    out: dict[str, Any] = {name: stats.correlation(human, metric, stat) for name, stat in CORRELATIONS.items()}
    out["rows"] = int(len(human))
    if may_leave_unscored(key):
        out["unscored"] = int((~scored).sum())
    primary = bench.statistic
    if bootstrap and primary_ci:
        out["ci"] = stats.bootstrap_ci(lambda idx: stats.correlation(human[idx], metric[idx], primary),
                                       groups=item, n_resamples=bootstrap, confidence=0.95, seed=seed)
        out["ci"]["statistic"] = primary
    key = headline or _KEY_OF[primary]
    ci = None
    if bootstrap:
        if "ci" in out and CORRELATIONS[key] == primary and out["ci"]["confidence"] == HEADLINE_CONFIDENCE:
            ci = out["ci"]
        else:
            ci = stats.bootstrap_ci(lambda idx: stats.correlation(human[idx], metric[idx], CORRELATIONS[key]),
                                    groups=item, n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE, seed=seed)
    out["headline"] = headline_statistic(key, out[key], ci, seed)
    return out


def _compare_correlations(bench: Benchmark, scores: dict[str, ItemScores], compare, key: str, bootstrap: int,
                          seed: int, subset: str | None) -> list[dict[str, Any]]:
    """Paired bootstraps of correlation ``key`` on ``bench`` (candidate items resampled, their rows together)."""
    out = []
    for a, b in compare:  # over the items both scored
        scored = scored_items(a, scores[a].values) & scored_items(b, scores[b].values)
        human, va, item = _scored_rows(bench, scores[a].values, scored)
        _, vb, _ = _scored_rows(bench, scores[b].values, scored)
        stat = CORRELATIONS[key]
        paired = stats.paired_bootstrap_difference(lambda v, idx: stats.correlation(human[idx], v[idx], stat), va, vb,
                                                   groups=item, n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE,
                                                   seed=seed)
        entry = _comparison(a, b, key, subset, paired)
        if may_leave_unscored(a) or may_leave_unscored(b):
            entry["unscored"] = int((~scored).sum())
        out.append(entry)
    return out


def _run_correlation(name, metrics, scorer, settings, bootstrap, seed, result: BenchResult, compare=()) -> None:
    loader_settings = {k: v for k, v in settings.items() if k in ("protocol", "subset", "scores")}
    bench = load_benchmark(name, **loader_settings)
    result.settings.update(bench.settings)
    result.notes += bench.notes
    scores = scorer.bench(bench)
    headline = HEADLINE_KEYS.get(name, _KEY_OF[bench.statistic])
    result.comparisons += _compare_correlations(bench, scores, compare, headline, bootstrap, seed,
                                                settings.get("subset"))
    lengths = scores[LENGTH_KEY].values if LENGTH_KEY in scores else None
    if lengths is not None and not informative(lengths):
        result.notes.append(constant_note(lengths))
        scores, lengths = {k: v for k, v in scores.items() if k != LENGTH_KEY}, None
    for key, item_scores in scores.items():
        entry = _correlations(bench, item_scores.values, bootstrap, seed, headline, key=key)
        entry["primary"] = {"kendall_b": "tau_b", "kendall_c": "tau_c"}.get(bench.statistic, bench.statistic)
        entry["signature"] = item_scores.signature
        result.results[key] = entry
        note = _unscored_note(key, entry.get("unscored", 0), len(bench), "items")
        result.notes += [note] if note else []
        human, metric, _ = _scored_rows(bench, item_scores.values, scored_items(key, item_scores.values))
        result.plot_data[key] = {"kind": "scatter", "human": human, "metric": metric}
        if lengths is not None and key != LENGTH_KEY:
            _, length, _ = _scored_rows(bench, lengths, scored_items(key, item_scores.values))
            entry["length_controlled"] = correlation_controlled(human, metric, length, bench.statistic)
    _notes_of_comparisons(result, len(result.comparisons) - len(compare), len(bench), "items")
    if name in PER_SUBSET and "subset" not in settings:
        for subset in PER_SUBSET[name]:
            sub = load_benchmark(name, **{SUBSET_SETTING.get(name, "subset"): subset})
            sub_scores = scorer.bench(sub)
            if LENGTH_KEY in sub_scores and not informative(sub_scores[LENGTH_KEY].values):
                result.notes.append(constant_note(sub_scores[LENGTH_KEY].values, f" of subset {subset}"))
                sub_scores = {k: v for k, v in sub_scores.items() if k != LENGTH_KEY}
            for key, item_scores in sub_scores.items():
                entry = _correlations(sub, item_scores.values, bootstrap, seed, headline, primary_ci=False, key=key)
                result.results[key].setdefault("subsets", {})[subset] = entry
                note = _unscored_note(key, entry.get("unscored", 0), len(sub), "items", f" (subset {subset})")
                result.notes += [note] if note else []
            result.comparisons += _compare_correlations(sub, sub_scores, compare, headline, bootstrap, seed, subset)
            _notes_of_comparisons(result, len(result.comparisons) - len(compare), len(sub), "items")


def _notes_of_comparisons(result: BenchResult, start: int, sizes: int | dict[str, int], what: str) -> None:
    """A note for each comparison from ``result.comparisons[start]`` on that left items out (items not both scored);
    ``sizes``: the number of items compared (per ``subset`` of the comparison when a dict)."""
    for c in result.comparisons[start:]:
        if c.get("unscored"):
            n = sizes[c["subset"]] if isinstance(sizes, dict) else sizes
            subset = c.get("subset") or ""
            label = subset.replace("_", " ") if subset.startswith("with") else f"subset {subset}"
            where = f" ({label})" if subset else ""
            result.notes.append(f"comparison {c['a']} − {c['b']}{where}: over the {n - c['unscored']} of {n} {what} "
                                f"both scored ({c['unscored']} left out)")


def _category_average(categories: np.ndarray) -> Callable[[np.ndarray, np.ndarray], float]:
    """``stat(credit, rows)``: the unweighted mean over categories of the per-category mean credit of ``rows``, in
    percent (the ``avg`` of a pairwise benchmark); ``categories`` holds each pair's category code (0, 1, ...)."""
    n_cats = int(categories.max()) + 1

    def stat(credit: np.ndarray, rows: np.ndarray) -> float:
        codes = categories[rows]
        counts = np.bincount(codes, minlength=n_cats)
        if not counts.all():
            raise ValueError("a category has no pair in this resample")
        return 100.0 * float(np.mean(np.bincount(codes, weights=credit[rows], minlength=n_cats) / counts))

    return stat


def _pair_credit(bench: Benchmark, a: np.ndarray, b: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(credit, category codes)`` of the pairs that count, with :meth:`Benchmark.evaluate`'s default tie policies
    (metric ties ½, human ties excluded)."""
    credit, mask = stats.pairwise_credit(a, b, [r.preferred for r in bench.records], seed=seed)
    _, codes = np.unique(np.array([r.category or "all" for r in bench.records]), return_inverse=True)
    return credit[mask], codes[mask]


def _run_pairwise(name, metrics, scorer, settings, seeds, bootstrap, result: BenchResult, compare=()) -> None:
    refs = settings.get("refs")
    per_seed: dict[str, list[dict[str, float]]] = {}
    credit_sum: dict[str, np.ndarray] = {}  # per-pair credit summed over the seeds: headline intervals, comparisons
    categories = None
    without_length = False
    for seed in seeds:
        kwargs = {"seed": seed}
        if refs is not None:
            kwargs["references"] = refs
        bench = load_benchmark(name, **kwargs)
        if seed == seeds[0]:
            result.settings.update({k: v for k, v in bench.settings.items() if k != "seed"})
            result.notes += bench.notes
        scores = scorer.bench(bench)
        if LENGTH_KEY in scores and seed == seeds[0] and not informative(scores[LENGTH_KEY].values):
            result.notes.append(constant_note(scores[LENGTH_KEY].values))
            without_length = True
        if without_length:  # decided on the first seed, for every seed alike
            scores = {k: v for k, v in scores.items() if k != LENGTH_KEY}
        for key, item_scores in scores.items():
            a, b = item_scores.values[0::2], item_scores.values[1::2]
            scored = scored_items(key, item_scores.values)
            unscored = ~(scored[0::2] & scored[1::2])  # a pair with a caption left without a score: a metric tie
            a, b = np.where(unscored, 0.0, a), np.where(unscored, 0.0, b)
            if may_leave_unscored(key):
                result.results.setdefault(key, {}).setdefault("unscored_pairs", []).append(int(unscored.sum()))
                if unscored.any():
                    cats = np.array([r.category or "all" for r in bench.records])[unscored]
                    counts = ", ".join(f"{c} {int((cats == c).sum())}" for c in dict.fromkeys(cats))
                    result.notes.append(f"{key} (seed {seed}): {int(unscored.sum())} of {len(a)} pairs have a caption "
                                        f"without a score (the judge gave no usable number; {counts}); each counts "
                                        "as the metric's tie (½ point)")
            if seed == seeds[0] and LENGTH_KEY in scores and key != LENGTH_KEY:
                lengths = scores[LENGTH_KEY].values
                result.results.setdefault(key, {})["length_controlled"] = pairwise_controlled(
                    a, b, [r.preferred for r in bench.records], lengths[0::2], lengths[1::2], seed)
            ev = bench.evaluate(a, b, bootstrap=bootstrap, seed=seed)
            credit, categories = _pair_credit(bench, a, b, seed)  # the same pairs and categories for every seed
            credit_sum[key] = credit_sum[key] + credit if key in credit_sum else credit
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
    if not per_seed:
        result.settings["seeds"] = list(seeds)
        return
    # avg is linear in the credit, so the mean over seeds of avg is avg of the per-pair credit averaged over seeds:
    # the intervals resample pairs (within their category) of that seed-averaged credit, around the reported value.
    mean_credit = {key: total / len(seeds) for key, total in credit_sum.items()}
    average = _category_average(categories)
    for key, credit in mean_credit.items():
        ci = None
        if bootstrap:  # pairs resampled within their category
            ci = stats.bootstrap_ci(lambda idx, credit=credit: average(credit, idx), n_items=len(credit),
                                    strata=categories, n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE,
                                    seed=seeds[0])
        result.results[key]["headline"] = headline_statistic("avg", result.results[key]["avg"], ci, seeds[0])
    for a, b in compare:
        paired = stats.paired_bootstrap_difference(average, mean_credit[a], mean_credit[b], strata=categories,
                                                   n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE, seed=seeds[0])
        result.comparisons.append(_comparison(a, b, "avg", None, paired))
    result.settings["seeds"] = list(seeds)


def _thumb_block(bench: Benchmark, values: np.ndarray, bootstrap: int, seed: int, key: str = "",
                 keep: np.ndarray | None = None) -> dict[str, Any]:
    """Pearson of ``values`` with P, R and total over the captions ``key`` scored (among ``keep``, a mask: default
    all); ``unscored`` counts those left out for a metric that may leave some."""
    scored = scored_items(key, values)
    base = np.ones(len(values), dtype=bool) if keep is None else keep
    idx = np.flatnonzero(base & scored)
    kept = values[idx]
    out: dict[str, Any] = {}
    for target in ("P", "R", "total"):
        human = np.array([bench.records[i].extra[target] for i in idx])
        out[target] = stats.pearson(human, kept)
    if bootstrap:
        human = np.array([bench.records[i].extra["total"] for i in idx])
        ci = stats.bootstrap_ci(lambda rows: stats.pearson(human[rows], kept[rows]), n_items=len(kept),
                                n_resamples=bootstrap, confidence=0.90, seed=seed)
        out["total_ci"] = [ci["low"], ci["high"]]
    if may_leave_unscored(key):
        out["unscored"] = int((base & ~scored).sum())
    return out


def _pick(items: list[str] | None, indices: list[int]) -> list[str] | None:
    return None if items is None else [items[i] for i in indices]


def _run_thumb(metrics, scorer, bootstrap, seed, result: BenchResult, compare=()) -> None:
    with_h = load_benchmark("thumb", include_human=True)
    without_h = load_benchmark("thumb", include_human=False)
    result.notes += with_h.notes
    # THumB's caveat: after the 2022 data fix 39 *Human* captions sit verbatim in their own references.
    leaked = np.array([r.system == "Human" and bool(r.extra.get("candidate_in_references")) for r in with_h.records])
    s_with = scorer.bench(with_h)
    s_without = scorer.bench(without_h)
    for scores in (s_with, s_without):
        if LENGTH_KEY in scores and not informative(scores[LENGTH_KEY].values):
            if LENGTH_KEY in s_with:
                result.notes.append(constant_note(scores[LENGTH_KEY].values))
            s_with.pop(LENGTH_KEY, None)
            s_without.pop(LENGTH_KEY, None)
    images = with_h.images()
    systems = list(dict.fromkeys(r.system for r in with_h.records))
    for key in s_with:
        values = s_with[key].values
        entry: dict[str, Any] = {
            "with_human": _thumb_block(with_h, values, bootstrap, seed, key),
            "without_human": _thumb_block(without_h, s_without[key].values, bootstrap, seed, key),
            "with_human_no_leaked": _thumb_block(with_h, values, 0, seed, key, keep=~leaked),
        }
        unscored = may_leave_unscored(key)
        scored = scored_items(key, values)
        for block, bench in (("with_human", with_h), ("without_human", without_h)):
            note = _unscored_note(key, entry[block].get("unscored", 0), len(bench), "captions",
                                  f" ({block.replace('_', ' ')})")
            result.notes += [note] if note else []
        entry["system"], entry["system_no_leaked"] = {}, {}
        if unscored:
            entry["system_unscored"], entry["system_no_leaked_unscored"] = {}, {}
        for system in systems:
            idx = [i for i, r in enumerate(with_h.records) if r.system == system]
            clean = [i for i in idx if not leaked[i]]
            if unscored:  # the mean of the system's scored captions: such a metric's corpus value, without rescoring
                entry["system"][system] = _scored_mean(values[idx])
                entry["system_unscored"][system] = int((~scored[idx]).sum())
                if len(clean) != len(idx):
                    entry["system_no_leaked"][system] = _scored_mean(values[clean])
                    entry["system_no_leaked_unscored"][system] = int((~scored[clean]).sum())
                continue
            preds = [with_h.records[i].candidate for i in idx]
            refs = [list(with_h.records[i].references) for i in idx]
            entry["system"][system] = scorer.corpus(key, preds, refs, _pick(images, idx))
            if len(clean) != len(idx):
                entry["system_no_leaked"][system] = scorer.corpus(
                    key, [with_h.records[i].candidate for i in clean],
                    [list(with_h.records[i].references) for i in clean], _pick(images, clean),
                )
        if unscored and any(entry["system_unscored"].values()):
            counts = ", ".join(f"{s} {n}" for s, n in entry["system_unscored"].items() if n)
            result.notes.append(f"{key}: system scores are the means over each system's scored captions ({counts} "
                                "left out)")
        entry["signature"] = s_with[key].signature
        entry["headline"] = _thumb_headline(with_h, values, bootstrap, seed, key)
        if LENGTH_KEY in s_with and key != LENGTH_KEY:
            human = np.array([r.extra["total"] for r in with_h.records])[scored]
            entry["length_controlled"] = correlation_controlled(human, values[scored],
                                                                s_with[LENGTH_KEY].values[scored], "pearson")
        result.results[key] = entry
        result.plot_data[key] = {"kind": "scatter",
                                 "human": np.array([r.extra["total"] for r in with_h.records])[scored],
                                 "metric": values[scored]}
    result.settings.update({"leaked_human_captions": int(leaked.sum()), "system_scores": "per-system corpus call"})
    for a, b in compare:  # captions resampled (those both scored); with Human (the headline) first
        for block, bench, scores in (("with_human", with_h, s_with), ("without_human", without_h, s_without)):
            both = scored_items(a, scores[a].values) & scored_items(b, scores[b].values)
            human = np.array([r.extra["total"] for r in bench.records])[both]
            paired = stats.paired_bootstrap_difference(lambda v, idx: stats.pearson(human[idx], v[idx]),
                                                       scores[a].values[both], scores[b].values[both],
                                                       n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE,
                                                       seed=seed)
            result.comparisons.append(_comparison(a, b, "pearson", block, paired))
            if may_leave_unscored(a) or may_leave_unscored(b):
                result.comparisons[-1]["unscored"] = int((~both).sum())
        _notes_of_comparisons(result, len(result.comparisons) - 2,
                              {"with_human": len(with_h), "without_human": len(without_h)}, "captions")


def _scored_mean(values: np.ndarray) -> float | None:
    """The mean of the scored (not ``NaN``) ``values``; ``None`` when none is scored."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else None


def _thumb_headline(bench: Benchmark, values: np.ndarray, bootstrap: int, seed: int, key: str = "") -> dict[str, Any]:
    """Pearson of ``values`` with THumB's human ``total`` (with Human: the primary number) and its 95 % interval,
    captions resampled (those ``key`` scored)."""
    scored = scored_items(key, values)
    human = np.array([r.extra["total"] for r in bench.records])[scored]
    values = values[scored]
    ci = None
    if bootstrap:
        ci = stats.bootstrap_ci(lambda idx: stats.pearson(human[idx], values[idx]), n_items=len(values),
                                n_resamples=bootstrap, confidence=HEADLINE_CONFIDENCE, seed=seed)
    return headline_statistic("pearson", stats.pearson(human, values), ci, seed)


def _result_keys(spec: str) -> list[str]:
    """The result keys metric spec ``spec`` yields (``ValueError`` for an unknown metric)."""
    if spec.startswith("evaluate:") or is_blend(spec):
        return [spec]
    return [key for keys in resolve([spec]).values() for key in keys]


def _about(option: str, *parts: Any) -> ValueError:
    """A ``ValueError`` that starts with ``option``'s name (``compare``; the CLI: ``--compare``), as data."""
    return with_words(ValueError, words(option, OPTION, *parts))


def plan_comparisons(compare: Sequence[str | Sequence[str]], metrics: Sequence[str]
                     ) -> tuple[list[tuple[str, str]], list[str]]:
    """``(pairs, metrics)``: the ``compare`` pairs as result keys, and ``metrics`` plus every compared key that no
    spec of ``metrics`` yields (it is scored too, and reported like the others).

    ``compare`` items are ``"A,B"`` strings (the CLI's ``--compare``) or ``(A, B)`` tuples; A and B are result keys
    (``cider_d``, ``bleu_4``, ``spice``), capeval metric aliases (``cider``) or ``evaluate:`` specs. ``ValueError``
    for an item that is not two names, a name capeval does not know, a metric family with several result keys
    (``bleu``) and a metric compared with itself; repeated pairs are kept once.
    """
    metrics = list(metrics)
    if not compare:
        return [], metrics
    known = [key for spec in metrics for key in _result_keys(spec)]
    pairs: list[tuple[str, str]] = []
    for item in compare:
        parts = item.split(",") if isinstance(item, str) else list(item)
        names = [str(p).strip() for p in parts]
        if len(names) != 2 or not all(names):
            raise _about("compare", " needs two result keys separated by a comma (e.g. ", Setting("lceval,cider_d"),
                         f"), got {','.join(map(str, parts)) if not isinstance(item, str) else item!r}.")
        keys = []
        for name in names:
            if name in known:
                keys.append(name)
                continue
            try:
                produced = _result_keys(name)
            except ValueError:
                raise _about("compare", f" {','.join(names)}: {name!r} is neither a result key of ",
                             Setting(shown="", option="metrics"), f" ({', '.join(known)}) nor a metric capeval knows.") \
                    from None
            if name not in produced and len(produced) != 1:
                raise _about("compare", f" {','.join(names)}: {name!r} is a metric family with the result keys "
                             f"{', '.join(produced)}; compare one of them.")
            key = name if name in produced else produced[0]
            if key not in known:
                metrics.append(key)
                known += _result_keys(key)
            keys.append(key)
        if keys[0] == keys[1]:
            raise _about("compare", f" {','.join(names)}: compares {keys[0]} with itself.")
        if (keys[0], keys[1]) not in pairs:
            pairs.append((keys[0], keys[1]))
    return pairs, metrics


def _check_settings(name: str, metrics: Sequence[str], protocol: str | None, subset: str | None,
                    scores: str | None, refs: str | int | None) -> None:
    """``ValueError`` naming the setting that does not apply to benchmark ``name`` (or no metrics at all)."""
    if name not in BENCH_NAMES:
        raise ValueError(f"{name} has no human judgments; benchmark one of {', '.join(BENCH_NAMES)}.")
    if not metrics:
        raise with_words(ValueError, words("metrics", "no metrics given (e.g. ", Setting("bleu_4,cider_d"), ")"))
    if protocol is not None and not name.startswith("flickr8k"):
        raise _about("protocol", f" applies to Flickr8k benchmarks only, not {name}.")
    if subset is not None and (name != "composite" or subset not in COMPOSITE_SUBSETS):
        raise _about("subset", f" applies to composite only, one of {', '.join(COMPOSITE_SUBSETS)}; got {subset!r} "
                     f"for {name}.")
    if scores is not None and name != "nebula":
        raise _about("scores", f" applies to nebula only, not {name}.")
    if scores is not None:
        from capeval.judgments.nebula import check_scores

        check_scores(scores)
    if refs is not None and name not in ("pascal50s", "abstract50s"):
        raise _about("refs", f" applies to pascal50s and abstract50s only, not {name}.")


def _resamples(bootstrap: int | None, comparing: bool) -> int:
    """The number of bootstrap resamples: ``bootstrap``, or (``None``) :data:`COMPARE_RESAMPLES` with comparisons and
    0 without; ``ValueError`` for a negative or fractional count, or comparisons with 0."""
    if bootstrap is None:
        bootstrap = COMPARE_RESAMPLES if comparing else 0
    if int(bootstrap) != bootstrap or bootstrap < 0:
        raise _about("bootstrap", f" must be a whole number of resamples >= 0, got {bootstrap!r}.")
    if comparing and not bootstrap:
        raise with_words(ValueError, words(
            "bootstrap", Setting(shown="", option="compare"), " needs bootstrap resamples, but ", Setting(0),
            "; leave it out (", Setting(shown="", option="compare"), f" then uses {COMPARE_RESAMPLES}) or give ",
            Setting(shown="N"), " with N > 0."))
    return int(bootstrap)


def run_benchmark(
    benchmark: str,
    metrics: Sequence[str],
    *,
    protocol: str | None = None,
    refs: str | int | None = None,
    subset: str | None = None,
    seeds: Sequence[int] = (0,),
    bootstrap: int | None = None,
    use_cache: bool = True,
    metric_options: dict[str, Any] | None = None,
    show_progress: bool | None = None,
    compare: Sequence[str | Sequence[str]] = (),
    scores: str | None = None,
    length_baseline: bool = True,
) -> BenchResult:
    """Score ``benchmark`` with ``metrics`` and compare with its human judgments.

    Args:
        benchmark: one of :data:`BENCH_NAMES` (aliases such as ``flickr8k-cf`` accepted).
        metrics: capeval metric names / result keys or ``evaluate:<module>[@key]`` specs.
        protocol: Flickr8k ``clipscore`` (default) or ``cui``.
        refs: PASCAL-50S ``expert`` (default), ``all`` or k; ABSTRACT-50S ``all`` (default) or k.
        subset: COMPOSITE only: score one subset (``8k``, ``30k``, ``coco``) instead of all three and each of them
            (e.g. ``8k``, whose images are all Flickr8k test images, for metrics that read images).
        seeds: reference-sampling seeds (several: mean and standard deviation are reported). The first one seeds
            the bootstraps; with several, the pairwise benchmarks' headline (the mean over seeds of ``avg``) and
            comparisons resample pairs of the per-pair credit averaged over the seeds (pairs do not depend on the
            seed, only their references do).
        bootstrap: resamples for confidence intervals (0: none; ``None``: 0, or :data:`COMPARE_RESAMPLES` with
            ``compare``). Fills ``ci`` of each ``headline`` (95 %), besides the older ``ci`` fields.
        metric_options: passed to ``capeval.score`` (``cleanup``, ``tokenizer``, ``cider_df``...).
        compare: pairs ``(A, B)`` or ``"A,B"`` of result keys: a paired bootstrap of the headline statistic's
            difference A − B (:func:`plan_comparisons`; keys not among ``metrics`` are scored too), in
            :attr:`BenchResult.comparisons`; needs ``bootstrap`` > 0 (``ValueError`` for 0).
        scores: Nebula only: ``original`` (default, the files' human scores) or ``corrected`` (Pearl's corrections
            of the test split, :mod:`capeval.judgments.nebula`); recorded in ``settings["scores"]``.
        length_baseline: also score ``caption_length`` (words per caption) and give every metric's entry its
            agreement with length held fixed (``length_controlled``; :mod:`capeval.meta_evaluation.length_control`).
    """
    name = canonical_name(benchmark, BENCH_NAMES)
    _check_settings(name, metrics, protocol, subset, scores, refs)
    pairs, metrics = plan_comparisons(compare, metrics)
    if length_baseline and LENGTH_KEY not in metrics:
        metrics = [*metrics, LENGTH_KEY]
    bootstrap = _resamples(bootstrap, bool(pairs))
    seeds = list(seeds) or [0]
    cache = ScoreCache() if use_cache else None
    scorer = _Scorer(metrics, cache, dict(metric_options or {}), show_progress)
    result = BenchResult(benchmark=name, settings={}, results={})
    if metric_options:
        result.settings["metric_options"] = dict(metric_options)
    if bootstrap:
        result.settings["bootstrap"] = int(bootstrap)
    try:
        if name == "thumb":
            _run_thumb(metrics, scorer, bootstrap, seeds[0], result, pairs)
        elif name == "caparena":
            from capeval.meta_evaluation.caparena_bench import run_caparena

            if pairs:
                raise ValueError("caparena: --compare is not available (its statistics are not resampled).")
            run_caparena(metrics, scorer, result)
        elif name in ("pascal50s", "abstract50s"):
            _run_pairwise(name, metrics, scorer, {"refs": refs}, seeds, bootstrap, result, pairs)
        else:
            settings = {"protocol": protocol} if protocol else {}
            if subset is not None:
                settings["subset"] = subset
            if scores is not None:
                settings["scores"] = scores
            _run_correlation(name, metrics, scorer, settings, bootstrap, seeds[0], result, pairs)
    finally:
        if cache:
            cache.close()
    if length_baseline:
        result.settings["length_baseline"] = LENGTH_KEY
        result.results.get(LENGTH_KEY, {})["baseline"] = True
    mark_contamination(result, subset, metric_options)
    return result
