"""The functional core: ``capeval.score(predictions, references, metrics=...)``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from capeval.batch import CaptionBatch
from capeval.registry import REGISTRY, available_metrics, metric_class, resolve
from capeval.signature import build_signature, nrefs_field
from capeval.text import Tokenizer
from capeval.validation import check_finite, normalize_inputs

__all__ = ["available_metrics", "score"]


def _split_options(selected: dict[str, list[str]], options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Route each keyword option to every selected metric that declares it.

    Options of metrics that were not selected are accepted and ignored, so one set of keyword
    arguments can serve several calls (as ``evaluate.combine`` does); any other name is a typo and raises.
    """
    declared = {name: set(metric_class(name).options) for name in selected}
    known = set().union(*declared.values()) | {k for name in REGISTRY if name not in declared
                                               for k in _declared_options(name)}
    unknown = sorted(set(options) - known)
    if unknown:
        valid = sorted(set().union(*declared.values()))
        raise ValueError(f"Unknown option(s) {unknown} for metrics {list(selected)}; valid options: {valid}.")
    return {name: {k: v for k, v in options.items() if k in keys} for name, keys in declared.items()}


def _declared_options(name: str) -> set[str]:
    try:
        return set(metric_class(name).options)
    except ImportError:  # optional dependency missing: it cannot own the option anyway
        return set()


def score(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    metrics: Sequence[str] | str | None = None,
    *,
    cleanup: str | None = "thumb",
    tokenizer: str | Tokenizer = "ptb",
    progress: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Score captions with any subset of capeval's metrics in one call.

    Args:
        predictions: one caption per item.
        references: per item, one reference string or a non-empty list of them.
        metrics: metric names or result keys (``"bleu"`` = ``bleu_1``..``bleu_4``, ``"bleu_4"``,
            ``"meteor"``, ``"rouge_l"``, ``"cider_d"``, ``"spice"``, ``"spice_u"``), a list or a
            comma-separated string. Default: BLEU, METEOR, ROUGE-L, CIDEr-D.
        cleanup: ``"thumb"`` (default; THumB minimal post-processing) or ``"none"``.
        tokenizer: ``"ptb"`` (pure Python, default) or ``"ptb-java"``.
        progress: show progress bars (``None``: only on a terminal, after one second).
        **options: metric options, e.g. ``cider_df="coco-val2014"``, ``meteor_jvms=2``.

    Returns:
        ``{key: corpus float, ..., "per_caption": {key: [float per prediction]}, "signature": str}``
        plus metric-specific extras. Scores are in [0, 1] except CIDEr-D (0 to 10; ×10 as in pycocoevalcap).

    Raises:
        ValueError: on bad input, naming the index and the problem.
    """
    preds, refs = normalize_inputs(predictions, references)
    selected = resolve(metrics)
    routed = _split_options(selected, options)
    batch = CaptionBatch(preds, refs, cleanup=cleanup, tokenizer=tokenizer, progress=progress)

    result: dict[str, Any] = {}
    per_caption: dict[str, list[float]] = {}
    extras: dict[str, Any] = {}
    fields: list[tuple[str, str]] = []
    uses_tokens = False
    for name, keys in selected.items():
        metric = metric_class(name)(**routed[name])
        try:
            out = metric.compute(batch)
        finally:
            metric.close()
        uses_tokens |= metric.uses_tokens
        for key in keys:
            check_finite([out.corpus[key]], key)
            check_finite(out.per_caption[key], f"per_caption[{key!r}]")
            result[key] = out.corpus[key]
            per_caption[key] = out.per_caption[key]
        extras.update(out.extra)
        fields.append((name, out.signature))

    common = {"nrefs": nrefs_field(refs), "clean": batch.cleanup}
    if uses_tokens:
        common["tok"] = batch.tokenizer.name
    result["per_caption"] = per_caption
    result.update(extras)
    result["signature"] = build_signature(common, fields)
    return result
