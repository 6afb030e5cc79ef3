"""The registry of capeval metrics and benchmarks: the one place where their names (and result keys) are declared.

Each :class:`MetricSpec` names the module and class that implement a metric family and the result
keys it produces, so names and keys are known without importing heavy modules (spaCy, Java, torch).
``bleu`` selects ``bleu_1``..``bleu_4``; a single key such as ``bleu_4`` selects that key of its
metric. Metric classes read their keys from here (:attr:`capeval.metric.CaptionMetric.keys`).

A new metric is one :class:`MetricSpec` line below (see ``docs/architecture.md``). The benchmark names
(:data:`BENCHMARKS`) live here too, so that ``capeval --help``, the errors and the README list the same names
without importing the loaders.
"""
from __future__ import annotations

import importlib
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass


@dataclass(frozen=True)
class MetricSpec:
    """Where a metric family lives and which result keys it produces (corpus floats, per caption); ``source``: the
    distribution of a plug-in metric (``"capeval-word-count==0.1.0"``), ``""`` for capeval's own."""

    name: str
    module: str
    cls: str
    keys: tuple[str, ...]
    source: str = ""


_SPECS = (
    MetricSpec("bleu", "capeval.coco.bleu", "Bleu", ("bleu_1", "bleu_2", "bleu_3", "bleu_4")),
    MetricSpec("meteor", "capeval.coco.meteor", "Meteor", ("meteor",)),
    MetricSpec("rouge_l", "capeval.coco.rouge", "RougeL", ("rouge_l",)),
    MetricSpec("cider_d", "capeval.coco.cider", "CiderD", ("cider_d",)),
    MetricSpec("spice", "capeval.spice.metric", "Spice", ("spice", "spice_precision", "spice_recall")),
    MetricSpec("spice_u", "capeval.spice_u.metric", "SpiceU", ("spice_u", "uniqueness")),
    MetricSpec("spider", "capeval.spider.metric", "Spider", ("spider",)),
    MetricSpec("critic", "capeval.critic.metric", "Critic", ("critic",)),
    MetricSpec("critic_ref", "capeval.critic.metric", "CriticRef", ("critic_ref",)),
    MetricSpec("critic_img", "capeval.critic.metric", "CriticImg", ("critic_img",)),
    MetricSpec("critic_plus", "capeval.critic.metric", "CriticPlus", ("critic_plus",)),
    MetricSpec("lceval", "capeval.lceval.metric", "LCEval", ("lceval",)),
    MetricSpec("lceval_released", "capeval.lceval.metric", "LCEvalReleased", ("lceval_released",)),
    MetricSpec("lceval_plus", "capeval.lceval.metric", "LCEvalPlus", ("lceval_plus",)),
    MetricSpec("sentence_cosine", "capeval.sentence_cosine.metric", "SentenceCosine", ("sentence_cosine",)),
    MetricSpec("sentence_rank", "capeval.sentence_rank.metric", "SentenceRank", ("sentence_rank",)),
    MetricSpec("clip_s", "capeval.vision_language.metric", "ClipS", ("clip_s",)),
    MetricSpec("ref_clip_s", "capeval.vision_language.metric", "RefClipS", ("ref_clip_s",)),
    MetricSpec("pac_s", "capeval.vision_language.metric", "PacS", ("pac_s",)),
    MetricSpec("ref_pac_s", "capeval.vision_language.metric", "RefPacS", ("ref_pac_s",)),
    MetricSpec("polos", "capeval.vision_language.metric", "Polos", ("polos",)),
    MetricSpec("fleur", "capeval.judges.metric", "Fleur", ("fleur",)),
    MetricSpec("ref_fleur", "capeval.judges.metric", "RefFleur", ("ref_fleur",)),
    MetricSpec("expert", "capeval.judges.metric", "Expert", ("expert",)),
    MetricSpec("caption_length", "capeval.length.metric", "CaptionLength", ("caption_length",)),
    MetricSpec("capture", "capeval.capture.metric", "Capture",
               ("capture", "capture_object_f1", "capture_attribute_f1", "capture_relation_f1")),
)

class _Registry(MutableMapping):
    """``{metric name: MetricSpec}``: capeval's own metrics in declaration order, then the plug-ins
    (:mod:`capeval.plugins`), found on first use (never while capeval is being imported). An entry set here (a test's
    stand-in metric) lasts until :meth:`reload`."""

    def __init__(self, specs: tuple[MetricSpec, ...]) -> None:
        self._builtin = {spec.name: spec for spec in specs}
        self._all: dict[str, MetricSpec] | None = None

    def _specs(self) -> dict[str, MetricSpec]:
        if self._all is None:
            self._all = dict(self._builtin)  # meanwhile (a plug-in module importing capeval): the built-ins
            from capeval.plugins import load_plugins

            taken = set(self._builtin) | set(ALIASES) | {k for spec in self._builtin.values() for k in spec.keys}
            found = load_plugins(self._builtin, taken)
            self._all = {**self._builtin, **{name: MetricSpec(name, **fields) for name, fields in found.items()}}
        return self._all

    def reload(self) -> None:
        """Look for plug-ins again at the next use (after installing one in this process)."""
        self._all = None

    def __getitem__(self, name: str) -> MetricSpec:
        return self._specs()[name]

    def __setitem__(self, name: str, spec: MetricSpec) -> None:
        self._specs()[name] = spec

    def __delitem__(self, name: str) -> None:
        del self._specs()[name]

    def __iter__(self):
        return iter(self._specs())

    def __len__(self) -> int:
        return len(self._specs())


#: ``{metric name: MetricSpec}``: the built-ins in declaration order, then the plug-ins.
REGISTRY: MutableMapping[str, MetricSpec] = _Registry(_SPECS)

#: Metrics computed when ``metrics=None`` (those needing no optional dependency).
DEFAULT_METRICS = ("bleu", "meteor", "rouge_l", "cider_d")

#: Other spellings accepted in ``metrics=`` and on the command line.
ALIASES = {"cider": "cider_d", "rouge": "rouge_l", "clipscore": "clip_s", "refclipscore": "ref_clip_s",
           "pacscore": "pac_s", "refpacscore": "ref_pac_s"}


#: Benchmark loader names (:func:`capeval.judgments.load_benchmark`) and whether the benchmark has human
#: judgments, i.e. whether ``capeval bench`` can correlate metrics with it.
BENCHMARKS = {
    "flickr8k-expert": True,
    "flickr8k-crowdflower": True,
    "composite": True,
    "pascal50s": True,
    "abstract50s": True,
    "thumb": True,
    "nebula": True,
    "polaris": True,
    "detailcaps": True,
    "caparena": True,
    "longcap-arena": True,
    "coco-karpathy-test": False,
}

#: Other spellings of benchmark names (after lower-casing and ``_`` -> ``-``).
BENCHMARK_ALIASES = {"pascal-50s": "pascal50s", "abstract-50s": "abstract50s", "flickr8k-cf": "flickr8k-crowdflower",
                     "coco-karpathy": "coco-karpathy-test", "detailcaps-4870": "detailcaps",
                     "longcaparena": "longcap-arena"}


def judged_benchmarks() -> tuple[str, ...]:
    """The benchmarks ``capeval bench`` accepts: those with human judgments."""
    return tuple(name for name, judged in BENCHMARKS.items() if judged)


def metric_list() -> str:
    """``"bleu (bleu_1/bleu_2/bleu_3/bleu_4), meteor, ..."``: every metric with its result keys, for help texts."""
    return ", ".join(name if spec.keys == (name,) else f"{name} ({'/'.join(spec.keys)})"
                     for name, spec in REGISTRY.items())


def result_keys(name: str) -> tuple[str, ...]:
    """The result keys of metric family ``name`` (``KeyError`` if it is not registered)."""
    return REGISTRY[name].keys


def available_metrics() -> list[str]:
    """Names accepted by ``metrics=`` (metric names, their individual result keys and aliases)."""
    names = set(REGISTRY) | set(ALIASES)
    for spec in REGISTRY.values():
        names.update(spec.keys)
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
            keys = list(REGISTRY[name].keys)
            metric = name
        else:
            metric = next((m for m, spec in REGISTRY.items() if name in spec.keys), None)
            if metric is None:
                from capeval.suggest import did_you_mean

                hint = did_you_mean(raw.strip(), available_metrics())
                raise ValueError(f"Unknown metric {raw!r}" + (hint or f"; choose from {', '.join(available_metrics())}."))
            keys = [name]
        bucket = selected.setdefault(metric, [])
        bucket.extend(k for k in keys if k not in bucket)
    return selected


def metric_options(name: str) -> dict:
    """The options of the metric ``name`` (any name :func:`resolve` takes: built-in or plug-in), as
    :class:`capeval.Option` declarations by keyword, in declaration order."""
    from capeval.options import declared

    (family,) = resolve([name])
    return declared(metric_class(family).options)


def metric_class(name: str) -> type:
    """The :class:`~capeval.metric.CaptionMetric` subclass implementing ``name`` (imported on first use).

    The registry never imports the base class: :mod:`capeval.metric` imports this module, not the reverse.
    """
    spec = REGISTRY[name]
    return getattr(importlib.import_module(spec.module), spec.cls)


__all__ = [
    "ALIASES", "BENCHMARKS", "BENCHMARK_ALIASES", "DEFAULT_METRICS", "REGISTRY", "MetricSpec", "available_metrics",
    "judged_benchmarks", "metric_class", "metric_list", "metric_options", "resolve", "result_keys",
]
