"""Score a dataset, not a list: :func:`score_dataset` (``capeval score-dataset``) reads a Hugging Face dataset or
parquet / JSON-lines shards where they live, scores them chunk by chunk into parquet shards and ``result.json``,
resumes after any crash, and splits the chunks over processes (``processes=N``), over GPUs and machines
(``accelerate launch -m capeval score-dataset``) or over a Ray cluster's actors (``engine="ray"``). The numbers are
:func:`capeval.score`'s on the whole data.

Modules: :mod:`~capeval.dataset_scoring.sources` (the inputs), :mod:`~capeval.dataset_scoring.store` (the output
folder), :mod:`~capeval.dataset_scoring.chunks` (a chunk scored into its shard),
:mod:`~capeval.dataset_scoring.first_pass` (CIDEr-D's document frequencies), :mod:`~capeval.dataset_scoring.merge` (the corpus values),
:mod:`~capeval.dataset_scoring.run` (the passes and the local engine), :mod:`~capeval.dataset_scoring.ray_engine`.
"""
from capeval.dataset_scoring.run import DEFAULT_CHUNK_SIZE, ENGINES, ON_ERROR, distributed_state, score_dataset

__all__ = ["DEFAULT_CHUNK_SIZE", "ENGINES", "ON_ERROR", "distributed_state", "score_dataset"]
