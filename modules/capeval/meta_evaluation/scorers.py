"""Per-item scores from any capeval metric or any Hugging Face ``evaluate`` module, cached.

Metric specs (the same names as ``capeval score``):

* a capeval metric name or result key: ``bleu_4``, ``cider_d``, ``meteor``, ``spice``, ``spice_u`` ...;
* ``evaluate:<name-or-path>[@<result key>]``: an ``evaluate`` module (Hub name or local folder). Its
  per-item scores are taken from a result list of the same length as the input when the module
  returns one (e.g. BERTScore's ``f1``), otherwise the module is called once per item.

Images: a capeval metric whose class sets ``needs_images`` (:func:`needs_images`) gets the items' images
(``images=``, one per item) and its cache key holds their :func:`~capeval.meta_evaluation.score_cache.image_fingerprint`;
every other metric never sees them, and its cache key is unchanged.
"""
from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from capeval._version import __version__
from capeval.meta_evaluation.blend import combine, is_blend, parse_blend, signature as blend_signature
from capeval.meta_evaluation.score_cache import ScoreCache, data_fingerprint, file_fingerprint, image_fingerprint, make_key
from capeval.registry import REGISTRY, metric_class, resolve
from capeval.progress import progress


@dataclass
class ItemScores:
    """Scores of one metric key for every item; ``signature`` records the settings."""

    key: str
    values: np.ndarray
    signature: str


def _capeval_fingerprint(metric: str) -> str:
    module = importlib.import_module(REGISTRY[metric].module)
    files = [inspect.getsourcefile(module)]
    pkg = Path(files[0]).parent
    if pkg.name != "metrics":  # a metric package (spice, spiceu): fingerprint the whole package
        files = sorted(str(p) for p in pkg.glob("*.py"))
    text_dir = Path(inspect.getsourcefile(importlib.import_module("capeval.text"))).parent
    files += sorted(str(p) for p in text_dir.glob("*.py"))
    for name in metric_class(metric).code_packages:  # other packages' code its scores depend on (its class says)
        files += sorted(str(p) for p in Path(inspect.getsourcefile(importlib.import_module(name))).parent.glob("*.py"))
    return file_fingerprint(files)


def needs_images(spec: str) -> bool:
    """Whether metric spec ``spec`` reads images: a capeval metric whose class sets ``needs_images``.

    ``False`` for ``evaluate:`` specs and for a metric whose optional dependencies are missing (scoring it
    then raises the ``ImportError`` naming the fix).
    """
    if spec.startswith("evaluate:"):
        return False
    if is_blend(spec):
        return any(needs_images(key) for _, key in parse_blend(spec))
    ((metric, _),) = resolve([spec]).items()
    try:
        return bool(getattr(metric_class(metric), "needs_images", False))
    except ImportError:
        return False


def raw_scale_options(metric: str) -> list[str]:
    """``metric``'s readable-scale options (:mod:`capeval.scales`: ``critic_scale``, ``lceval_scale``, ...): the
    benchmarks score on the raw scale unless the caller names one. The readable scale is strictly increasing, so rank
    statistics (Kendall τ, pairwise accuracy) would not move, but Pearson's r would."""
    try:
        return [k for k in metric_class(metric).options if k.endswith("_scale")]
    except ImportError:
        return []


def score_items(
    spec: str,
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    images: Sequence[Any] | None = None,
    cache: ScoreCache | None = None,
    options: dict[str, Any] | None = None,
    show_progress: bool | None = None,
) -> dict[str, ItemScores]:
    """Return ``{result key: ItemScores}`` for ``spec`` on the items (cached).

    For a capeval metric family (``bleu``) every key is returned; for a single key (``bleu_4``) only it.
    ``options`` are passed to ``capeval.score`` (``cleanup``, ``tokenizer``, metric options; a learned metric's
    ``*_scale`` defaults to ``"raw"`` here, :func:`raw_scale_options`). ``images``: one
    per item (image file paths, for the cache key; see :func:`capeval.score` for the other kinds, which are
    scored but not cached), passed only to a metric that reads images (:func:`needs_images`); ``ValueError``
    naming the metric when it is ``None`` for one.
    """
    options = dict(options or {})
    if spec.startswith("evaluate:"):
        return _score_evaluate(spec, predictions, references, cache, options, show_progress)
    if is_blend(spec):
        return {spec: _score_blend(spec, predictions, references, images, cache, options, show_progress)}
    selected = resolve([spec])
    ((metric, keys),) = selected.items()
    for option in raw_scale_options(metric):
        options.setdefault(option, "raw")
    parts: dict[str, Any] = {}
    if needs_images(metric):
        if images is None:
            raise ValueError(f"{metric} reads images: give score_items images= (one image path per item).")
        options["images"] = list(images)
        parts["images"] = image_fingerprint(options["images"])
    token = _weights_token(metric, options)
    if token:  # learned weights: a retrained model must not hit the old model's scores
        parts["weights"] = token
    key = make_key(
        kind="capeval",
        metric=metric,
        options={k: v for k, v in options.items() if k != "images"},
        version=__version__,
        code=_capeval_fingerprint(metric),
        data=data_fingerprint(predictions, references),
        **parts,
    )
    use_cache = None if "images" in parts and parts["images"] is None else cache  # in-memory images: not cached
    cached = use_cache.get(key) if use_cache else None
    if cached is not None and not _valid_capeval_entry(cached, keys, len(predictions)):
        cached = None  # damaged entry: recompute and replace it
    if cached is None:
        from capeval.api import score

        result = score(list(predictions), [list(r) for r in references], metrics=[metric], progress=show_progress, **options)
        cached = {"per_caption": result["per_caption"], "signature": result["signature"]}
        if use_cache:
            use_cache.put(key, cached)
    return {k: ItemScores(k, np.asarray(cached["per_caption"][k], dtype=float), cached["signature"]) for k in keys}


def _score_blend(spec, predictions, references, images, cache, options, show_progress) -> ItemScores:
    """A ``blend:`` spec (:mod:`capeval.meta_evaluation.blend`): its components scored (and cached) one by one."""
    parts = {}
    for _, key in parse_blend(spec):
        if key.startswith("evaluate:") or is_blend(key):
            raise ValueError(f"{spec!r}: blend components are capeval result keys, not {key!r}.")
        ((_, keys),) = resolve([key]).items()
        if key not in keys and len(keys) != 1:
            raise ValueError(f"{spec!r}: {key!r} is a metric family ({', '.join(keys)}); blend one of its keys.")
        items = score_items(key, predictions, references, images=images if needs_images(key) else None,
                            cache=cache, options=options, show_progress=show_progress)
        parts[key] = items[key] if key in items else next(iter(items.values()))
    values = combine(spec, {key: item.values for key, item in parts.items()})
    return ItemScores(spec, values, blend_signature(spec, {key: item.signature for key, item in parts.items()}))


def _weights_token(metric: str, options: dict[str, Any]) -> str:
    """The metric's :meth:`~capeval.metric.CaptionMetric.cache_token` for ``options`` ("" when it has none)."""
    from capeval.registry import metric_class

    return metric_class(metric).cache_token(options)


def _score_evaluate(spec, predictions, references, cache, options, show_progress) -> dict[str, ItemScores]:
    target, _, result_key = spec[len("evaluate:") :].partition("@")
    path = Path(target)
    code = file_fingerprint(sorted(path.rglob("*.py"))) if path.exists() else target
    key = make_key(kind="evaluate", target=target, result_key=result_key, options=options, code=code,
                   data=data_fingerprint(predictions, references))
    cached = cache.get(key) if cache else None
    if cached is not None and not (_numbers(cached.get("values"), len(predictions)) and isinstance(cached.get("signature"), str)):
        cached = None  # damaged entry: recompute and replace it
    if cached is None:
        import evaluate

        module = evaluate.load(str(path.resolve()) if path.exists() else target)
        preds, refs = list(predictions), [list(r) for r in references]
        result = module.compute(predictions=preds, references=refs, **options)
        values = _per_item(result, result_key, len(preds))
        if values is None:  # corpus-level module: one call per item
            values = []
            for p, r in progress(zip(preds, refs), total=len(preds), desc=f"{target} per item", enabled=show_progress):
                values.append(_scalar(module.compute(predictions=[p], references=[r], **options), result_key, target))
        cached = {"values": [float(v) for v in values], "signature": f"evaluate:{target}|key:{result_key or 'auto'}"}
        if cache:
            cache.put(key, cached)
    name = spec
    return {name: ItemScores(name, np.asarray(cached["values"], dtype=float), cached["signature"])}


def _numbers(values, n: int) -> bool:
    return isinstance(values, list) and len(values) == n and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
    )


def _valid_capeval_entry(cached: dict, keys, n: int) -> bool:
    per = cached.get("per_caption")
    return isinstance(per, dict) and isinstance(cached.get("signature"), str) and all(
        _numbers(per.get(k), n) for k in keys
    )


def _per_item(result: dict, result_key: str, n: int):
    if result_key:
        value = result.get(result_key)
        return value if isinstance(value, (list, tuple)) and len(value) == n else None
    lists = {k: v for k, v in result.items() if isinstance(v, (list, tuple)) and len(v) == n}
    if len(lists) == 1:
        return next(iter(lists.values()))
    for preferred in ("f1", "score", "scores"):
        if preferred in lists:
            return lists[preferred]
    return None


def _scalar(result: dict, result_key: str, target: str) -> float:
    if result_key:
        if result_key not in result:
            raise ValueError(f"evaluate module {target!r} has no result key {result_key!r}; keys: {sorted(result)}.")
        value = result[result_key]
    else:
        floats = {k: v for k, v in result.items() if isinstance(v, (int, float))}
        if len(floats) != 1:
            raise ValueError(
                f"evaluate module {target!r} returns several numbers {sorted(floats)}; pick one with "
                f"'evaluate:{target}@KEY'."
            )
        value = next(iter(floats.values()))
    if isinstance(value, (list, tuple)):
        value = value[0]
    return float(value)
