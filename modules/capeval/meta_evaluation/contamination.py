"""Contamination: does a metric's training data overlap a benchmark's data?

:func:`contamination` resolves a result key and its options to the models the metric reads (the catalog's default,
or the model named by its option, its components included: :func:`capeval.catalog.training_sources`) and returns one
human-readable reason per overlap with the benchmark's data (:data:`capeval.provenance.BENCHMARK_DATA`, rule in
:func:`capeval.provenance.overlaps`). An empty list means clean. Rule-based metrics (BLEU, METEOR, ROUGE-L,
CIDEr-D, SPICE, SPICE-U) are never marked. A model capeval cannot name (a folder trained elsewhere, an encoder by
Hub id, an ``evaluate:`` module that is not a rule-based one) gets one reason beginning ``"unknown:"``: its training
data is not declared, so no claim of cleanness can be made.

>>> contamination("sentence_cosine", "flickr8k-expert")[0][:60]
'all-minilm-l6-v2 was trained on Flickr30k same-image caption'
>>> contamination("sentence_cosine", "pascal50s"), contamination("cider_d", "flickr8k-expert")
([], [])
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from capeval.meta_evaluation.blend import is_blend, parse_blend
from capeval.catalog import DEFAULTS, MODEL_OPTIONS, MODELS, canonical, training_sources
from capeval.provenance import SOURCES, UNDISCLOSED, benchmark_data, overlaps
from capeval.registry import metric_class, resolve

#: Metric families with nothing trained (document frequencies and uniqueness tables are corpus statistics).
def rule_based() -> frozenset[str]:
    """The registered metrics trained on nothing (:attr:`capeval.metric.CaptionMetric.trained_on_nothing`: BLEU,
    METEOR, ROUGE-L, CIDEr-D, SPICE, SPICE-U, SPIDEr, caption length; a plug-in that says so too)."""
    from capeval.registry import REGISTRY

    return frozenset(name for name in REGISTRY if getattr(metric_class(name), "trained_on_nothing", False))


def __getattr__(name: str):
    if name == "RULE_BASED":  # the set as a constant, as it was (read from the classes when asked)
        return rule_based()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
#: ``evaluate`` modules with nothing trained (``evaluate:<module>`` specs).
RULE_BASED_EVALUATE = frozenset({"bleu", "sacrebleu", "google_bleu", "rouge", "meteor", "chrf", "ter", "wer", "cer",
                                 "exact_match"})


def _model_name(metric: str, options: dict[str, Any]) -> str | None:
    """The catalog name of the model ``metric`` reads under ``options``, or ``None`` when it is not in the catalog."""
    value = options.get(MODEL_OPTIONS[metric])
    if value is None:
        return DEFAULTS[metric]
    if isinstance(value, (str, os.PathLike)):
        name = canonical(os.fspath(value))
        if name in MODELS:
            return name
        by_repo = [m.name for m in MODELS.values() if m.hub_id and m.hub_id == os.fspath(value)
                   and m.metric is not None and MODEL_OPTIONS.get(m.metric) == MODEL_OPTIONS[metric]]
        if by_repo:  # a Hub id of a catalog model (clip_model="BeichenZhang/LongCLIP-L")
            return by_repo[0]
        from capeval.model_store import catalog_name_of

        try:
            shipped = catalog_name_of(value) if Path(value).is_dir() else None
        except OSError:
            shipped = None
        if shipped in MODELS:
            return shipped
        declared = _declared_name(value)
        if declared is not None and MODELS[declared].metric == metric:
            return declared
    return None


def _declared_name(folder: str | os.PathLike) -> str | None:
    """The catalog name a trained model folder declares in its ``config.json`` (``catalog_name``: written by a
    training command that reads exactly that entry's training sources, e.g. ``capeval sentence-rank train`` ->
    ``sentence-rank-coco``), or ``None``."""
    import json

    try:
        name = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")).get("catalog_name")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name in MODELS else None


def metric_models(key: str, options: dict[str, Any] | None = None) -> list[str] | None:
    """The catalog names of the models result key ``key`` reads (``[]`` for a rule-based metric), ``None`` when a
    model is not in the catalog."""
    options = dict(options or {})
    if is_blend(key):
        parts = [metric_models(k, options) for _, k in parse_blend(key)]
        return None if any(p is None for p in parts) else list(dict.fromkeys(m for p in parts for m in p))
    if key.startswith("evaluate:"):
        module = key.split(":", 1)[1].split("@")[0].rstrip("/").split("/")[-1].lower()
        return [] if module in RULE_BASED_EVALUATE else None
    metric = next(iter(resolve([key])))
    if getattr(metric_class(metric), "trained_on_nothing", False):
        return []
    if metric not in MODEL_OPTIONS:
        return None
    name = _model_name(metric, options)
    return None if name is None else [name]


def contamination(key: str, benchmark: str, subset: str | None = None,
                  options: dict[str, Any] | None = None) -> list[str]:
    """Why result key ``key`` (with ``options``) is not clean on ``benchmark`` (``subset``: COMPOSITE's ``8k``,
    ``30k``, ``coco``): one reason per overlapping source, ``[]`` when clean (see the module docstring)."""
    data = benchmark_data(benchmark, subset)
    models = metric_models(key, options)
    if models is None:
        option = MODEL_OPTIONS.get(next(iter(resolve([key]))), "") if not (key.startswith("evaluate:") or is_blend(
            key)) else ""
        what = f"{option}={(options or {}).get(option)!r}" if option else key
        return [f"unknown: {what} is not in capeval's catalog, so its training data is not declared"]
    reasons: list[str] = []
    for name in models:
        for source, path in training_sources(name):
            if source.dataset == UNDISCLOSED:
                reasons.append(f"unknown: {' → '.join(path)} was trained on {source.description}")
                continue
            hits = [SOURCES[b] for b in data.sources if overlaps(source, SOURCES[b], data.name)]
            for hit in hits:
                reasons.append(f"{' → '.join(path)} was trained on {source.description}, which overlaps the "
                               f"benchmark's {hit.description}")
    return reasons


def mark_contamination(result, subset: str | None = None, options: dict[str, Any] | None = None) -> None:
    """Write ``results[<key>]["contamination"]`` (and each COMPOSITE subset entry's) into a ``BenchResult``, and
    ``results[<key>]["models"]``: the catalog names of the models the metric read (``[]`` rule-based, ``None``
    unknown), so that a result names its model even after a default changes."""
    for key, entry in result.results.items():
        entry["models"] = metric_models(key, options)
        entry["contamination"] = contamination(key, result.benchmark, subset, options)
        for name, sub in entry.get("subsets", {}).items():
            sub["contamination"] = contamination(key, result.benchmark, name, options)


__all__ = ["RULE_BASED", "contamination", "mark_contamination", "metric_models", "rule_based"]
