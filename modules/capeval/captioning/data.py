"""Image features joined to captions: what the captioner trains and decodes on.

:class:`FeatureTable` and :func:`check_disjoint` live in :mod:`capeval.models.feature_table` (the critic uses
them too) and are re-exported here. The Flickr8k splits are read with
:func:`capeval.rerank.corpora.flickr8k_captions`.
"""
from __future__ import annotations

import os

from capeval.models.feature_table import FeatureTable, check_disjoint

__all__ = ["FeatureTable", "check_disjoint", "flickr8k_split"]


def flickr8k_split(split: str, root: str | os.PathLike | None = None) -> dict[str, list[str]]:
    """``{image file: [5 captions]}`` of a Flickr8k split (train, dev, test)."""
    from capeval.rerank.corpora import flickr8k_captions

    return flickr8k_captions(split, root)
