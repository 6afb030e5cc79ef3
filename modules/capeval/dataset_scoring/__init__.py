"""Score a dataset, not a list: :func:`score_dataset` (``capeval score-dataset``) reads a Hugging Face dataset or
parquet / JSON-lines shards where they live, scores them chunk by chunk into parquet shards and ``result.json``,
resumes after any crash, and splits the chunks over processes (``processes=N``) or over GPUs and machines
(``accelerate launch -m capeval score-dataset``). The numbers are :func:`capeval.score`'s on the whole data.

Modules: :mod:`~capeval.dataset_scoring.sources` (the inputs), :mod:`~capeval.dataset_scoring.store` (the output
folder), :mod:`~capeval.dataset_scoring.run` (the passes, the chunks, the merge).
"""
from capeval.dataset_scoring.run import DEFAULT_CHUNK_SIZE, ON_ERROR, distributed_state, score_dataset

__all__ = ["DEFAULT_CHUNK_SIZE", "ON_ERROR", "distributed_state", "score_dataset"]
