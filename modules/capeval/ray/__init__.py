"""capeval on Ray: :func:`score` adds capeval's per-caption columns to a ``ray.data.Dataset`` (scorers that load
their models once per actor), :func:`corpus` gives the corpus values of a scored dataset (equal to
:func:`capeval.score` on the same rows). ``capeval.score_dataset(..., engine="ray")`` runs a whole
``score-dataset`` on a Ray cluster. Needs ``pip install "capeval[ray]"``; importing this package does not import Ray.
"""
from __future__ import annotations

from typing import Any

__all__ = ["corpus", "score"]


def score(ds: Any, metrics: Any = None, **options: Any):
    """See :func:`capeval.ray.pipeline.score`."""
    from capeval.ray.pipeline import score as _score

    return _score(ds, metrics, **options)


def corpus(scored: Any) -> dict[str, Any]:
    """See :func:`capeval.ray.pipeline.corpus`."""
    from capeval.ray.pipeline import corpus as _corpus

    return _corpus(scored)
