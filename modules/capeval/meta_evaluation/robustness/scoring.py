"""Scoring one point of a robustness curve: the per-caption scores of one result key on the (transformed)
candidates, through the benchmark score cache; a metric that reads images gets one image per candidate."""
from __future__ import annotations

from typing import Any

import numpy as np

from capeval.meta_evaluation.score_cache import ScoreCache, data_fingerprint, file_fingerprint, make_key


def score_point(family: str, key: str, predictions: list[str], references: list[list[str]], images: list[str] | None,
           cache: ScoreCache | None, options: dict[str, Any], show_progress: bool | None) -> tuple[np.ndarray, str]:
    """Per-caption scores of ``key`` (cached) and the signature; ``images`` only for metrics that need them."""
    from capeval.meta_evaluation.scorers import _capeval_fingerprint, _valid_capeval_entry, score_items

    if images is None:
        items = score_items(key, predictions, references, cache=cache, options=options, show_progress=show_progress)
        return items[key].values, items[key].signature
    from capeval._version import __version__
    from capeval.meta_evaluation.scorers import raw_scale_options

    options = {**dict.fromkeys(raw_scale_options(family), "raw"), **(options or {})}
    cache_key = make_key(kind="capeval", metric=family, options=options, version=__version__,
                         code=_capeval_fingerprint(family), data=data_fingerprint(predictions, references),
                         images=list(images), image_content=file_fingerprint(sorted(set(images))))
    cached = cache.get(cache_key) if cache else None
    if cached is not None and not _valid_capeval_entry(cached, [key], len(predictions)):
        cached = None
    if cached is None:
        from capeval.api import score

        result = score(predictions, references, metrics=[family], progress=show_progress, images=images, **options)
        cached = {"per_caption": result["per_caption"], "signature": result["signature"]}
        if cache:
            cache.put(cache_key, cached)
    return np.asarray(cached["per_caption"][key], dtype=float), cached["signature"]

