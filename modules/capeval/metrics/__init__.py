"""Registry of capeval metrics.

Each entry maps a metric name to ``(module, class, result keys)`` so that names and keys are known
without importing heavy modules. ``bleu`` selects ``bleu_1``..``bleu_4``; a single key such as
``bleu_4`` selects that key of its metric.
"""
from __future__ import annotations

import importlib

from capeval.metrics.base import CaptionMetric, MetricOutput

REGISTRY: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "bleu": ("capeval.metrics.bleu", "Bleu", ("bleu_1", "bleu_2", "bleu_3", "bleu_4")),
    "meteor": ("capeval.metrics.meteor", "Meteor", ("meteor",)),
    "rouge_l": ("capeval.metrics.rouge", "RougeL", ("rouge_l",)),
    "cider_d": ("capeval.metrics.cider", "CiderD", ("cider_d",)),
    "spice": ("capeval.spice.metric", "Spice", ("spice", "spice_precision", "spice_recall")),
    "spice_u": ("capeval.spiceu.metric", "SpiceU", ("spice_u", "uniqueness")),
}

#: Metrics computed when ``metrics=None`` (those needing no optional dependency).
DEFAULT_METRICS = ("bleu", "meteor", "rouge_l", "cider_d")

ALIASES = {"cider": "cider_d", "rouge": "rouge_l"}


def available_metrics() -> list[str]:
    """Names accepted by ``metrics=`` (metric names and their individual result keys)."""
    names = set(REGISTRY) | set(ALIASES)
    for _, _, keys in REGISTRY.values():
        names.update(keys)
    return sorted(names)


def resolve(names: list[str] | tuple[str, ...] | str | None) -> dict[str, list[str]]:
    """Map requested names to ``{metric name: [result keys]}`` in request order."""
    if names is None:
        names = list(DEFAULT_METRICS)
    elif isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    elif isinstance(names, (list, tuple)):
        for i, raw in enumerate(names):
            if not isinstance(raw, str):
                raise TypeError(
                    f"metrics[{i}] is a {type(raw).__name__} ({raw!r:.60}), not a metric name; "
                    f"choose from {available_metrics()}."
                )
    else:
        raise TypeError(
            f"metrics must be a list of metric names, a comma-separated string or None, got a "
            f"{type(names).__name__} ({names!r:.60})."
        )
    if not names:
        raise ValueError(f"No metrics requested; choose from {available_metrics()}.")
    selected: dict[str, list[str]] = {}
    for raw in names:
        name = ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if name in REGISTRY:
            keys = list(REGISTRY[name][2])
            metric = name
        else:
            metric = next((m for m, (_, _, ks) in REGISTRY.items() if name in ks), None)
            if metric is None:
                raise ValueError(f"Unknown metric {raw!r}; choose from {available_metrics()}.")
            keys = [name]
        bucket = selected.setdefault(metric, [])
        bucket.extend(k for k in keys if k not in bucket)
    return selected


def metric_class(name: str) -> type[CaptionMetric]:
    module, cls, _ = REGISTRY[name]
    return getattr(importlib.import_module(module), cls)


__all__ = ["REGISTRY", "CaptionMetric", "MetricOutput", "available_metrics", "metric_class", "resolve"]
