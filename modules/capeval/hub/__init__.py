"""Hub-ready benchmark datasets: build a folder of typed parquet files + card, and push it.

* :func:`capeval.hub.build.build_dataset` (``capeval hub build-dataset``)
* :func:`capeval.hub.push.push_dataset` (``capeval hub push``)

Card templates live in the repository's ``hub_cards/datasets/``.
"""
from __future__ import annotations

DATASETS = ("flickr8k", "composite", "pascal50s", "thumb")

__all__ = ["DATASETS"]
