"""What ``capeval verify`` needs to know about capeval's metrics, read from the registry and the metric classes
(:class:`capeval.metric.CaptionMetric`'s ``needs_images``, ``external_weights``, ``judge_models`` and the CLIP-based
metrics' ``family``), never kept by hand: a metric registered later, a plug-in included, is known here as soon as
it is registered. Each set is computed on first use (it imports the metric classes, which import nothing heavy)."""
from __future__ import annotations

from functools import lru_cache

from capeval.meta_evaluation.verify.reasons import KEY_OF, OWN_SCALE_PUBLISHED

#: The CLIP model families whose default weights ``capeval verify`` knows how to look for.
CLIP_FAMILIES = ("clip", "pac")


def _classes() -> list[tuple[tuple[str, ...], type]]:
    """``[(result keys, metric class)]`` of every registered metric whose class imports (a broken plug-in is left
    out: it has no published number)."""
    from capeval.registry import REGISTRY, metric_class

    out = []
    for name, spec in REGISTRY.items():
        try:
            out.append((spec.keys, metric_class(name)))
        except (ImportError, AttributeError):
            continue
    return out


@lru_cache(maxsize=1)
def image_metrics() -> frozenset[str]:
    """Result keys of the metrics that read images and weights the user fetches (``needs_images`` and
    ``external_weights``): the CLIP family, Polos and the LLaVA judges. Their rows need the weights and the images."""
    return frozenset(k for keys, cls in _classes() if cls.needs_images and cls.external_weights for k in keys)


@lru_cache(maxsize=1)
def clip_family() -> dict[str, str]:
    """``{result key: "clip" | "pac"}``: the image-reading metrics built on one of :data:`CLIP_FAMILIES`."""
    return {k: cls.family for keys, cls in _classes() if cls.needs_images
            and getattr(cls, "family", None) in CLIP_FAMILIES for k in keys}


@lru_cache(maxsize=1)
def judges() -> dict[str, tuple[str, ...]]:
    """``{result key: Hub repositories}``: the multimodal-LLM judges (``judge_models``) and the models their default
    (and published) numbers are measured with."""
    return {k: tuple(cls.judge_models) for keys, cls in _classes() if cls.judge_models for k in keys}


@lru_cache(maxsize=1)
def own_scale_metrics() -> frozenset[str]:
    """Names whose THumB system scores are printed on the metric's own scale, not × 100: capeval's image-reading
    metrics (``needs_images``: CLIP-S on its 0-2.5 scale ...) and the published-only names of
    :data:`~capeval.meta_evaluation.verify.reasons.OWN_SCALE_PUBLISHED`."""
    return frozenset(k for keys, cls in _classes() if cls.needs_images for k in keys) | OWN_SCALE_PUBLISHED


def capeval_key(name: str) -> str | None:
    """The capeval result key ``name`` (a published.json spelling) stands for, or ``None`` (no registered metric
    produces it)."""
    from capeval.registry import REGISTRY

    key = KEY_OF.get(name, name)
    return key if any(key in spec.keys for spec in REGISTRY.values()) else None


def clear() -> None:
    """Forget the sets (after registering a metric in this process)."""
    for fn in (image_metrics, clip_family, judges, own_scale_metrics):
        fn.cache_clear()
