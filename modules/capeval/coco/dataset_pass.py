"""CIDEr-D's document frequencies over a whole dataset: the first pass of scoring it chunk by chunk.

With ``cider_df="references"`` (pycocoevalcap's choice) CIDEr-D weighs each n-gram by its document frequency over the
references of every row of the call, one document per row. :func:`capeval.score_dataset` scores a dataset in chunks,
so it first counts those frequencies over all rows (:class:`DatasetDocumentFrequencyCount`, one per process, each
over its share of the chunks, on disk: :mod:`capeval.coco.disk_df`), merges the shares (:func:`merge_shares`), and
scores every chunk with the one table (:func:`open_table`). The runner decides which rows are counted and where the
files go; what is counted, and how a table is checked and opened, is CIDEr-D's and lives here.
"""
from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["DatasetDocumentFrequencyCount", "forget_checked_tables", "merge_shares", "open_legacy_parquet_table",
           "open_table", "table_is_whole"]

#: (path, size, modification time) of the tables that passed their check in this process: checked once each.
_WHOLE_TABLES: set[tuple] = set()


class DatasetDocumentFrequencyCount:
    """Counts CIDEr-D's reference document frequencies chunk by chunk into a table file, in bounded memory (sorted
    runs spilled to ``spill_dir``, merged by :meth:`write`)."""

    def __init__(self, spill_dir: str | Path) -> None:
        from capeval.coco.disk_df import DiskDocumentFrequencyCounter

        self._counter = DiskDocumentFrequencyCounter(spill_dir)

    def add(self, predictions: list[str], references: list[list[str]], *, cleanup: str, tokenizer: str) -> None:
        """Count the references of one chunk's rows (one document per row), tokenised as the scoring will tokenise
        them (``cleanup``, ``tokenizer``: :func:`capeval.score`'s)."""
        from capeval.batch import CaptionBatch
        from capeval.coco.document_frequency import reference_document_frequency
        from capeval.coco.ngrams import batch_ngrams

        # the predictions take no part in the references' frequencies: each row's first reference stands in for its
        # prediction (the same object: tokenised and counted once), so that only the references are read
        stand_ins = [refs[0] if len(refs) else prediction for prediction, refs in zip(predictions, references)]
        tokens = CaptionBatch(stand_ins, references, cleanup=cleanup, tokenizer=tokenizer, progress=False)
        ng = batch_ngrams(tokens, 4)
        df, n_docs = reference_document_frequency(ng)
        self._counter.add(ng.table.gram_strings(), df.astype(np.int64), documents=n_docs)

    def write(self, path: str | Path) -> None:
        """Write the counted table to ``path`` (atomically) and free the counter."""
        self._counter.write(path)
        self._counter = None


def _table_key(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def table_is_whole(path: str | Path) -> bool:
    """Whether the table file at ``path`` opens and passes its check (:meth:`capeval.coco.disk_df.DiskDocumentFrequency
    .open`: damaged anywhere, cut short); a damaged one is deleted with one ``RuntimeWarning``, so that it is counted
    again (the count is deterministic: what was scored with the old table stays right)."""
    from capeval.coco.disk_df import DiskDocumentFrequency

    path = Path(path)
    key = _table_key(path)
    if key in _WHOLE_TABLES:
        return True
    try:
        table = DiskDocumentFrequency.open(path)
    except (ValueError, OSError) as err:
        warnings.warn(f"{path} is damaged ({' '.join(str(err).split())[:200]}); counting CIDEr-D's document "
                      "frequencies again", RuntimeWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return False
    close = getattr(table, "close", None)
    if close is not None:
        close()
    _WHOLE_TABLES.add(key)
    return True


def forget_checked_tables() -> None:
    """Check every table again when next opened (as a new process would)."""
    _WHOLE_TABLES.clear()


def merge_shares(parts: Sequence[str | Path], path: str | Path, spill_dir: str | Path) -> None:
    """The table at ``path`` from the tables ``parts``, counted over disjoint rows (one per process)."""
    from capeval.coco.disk_df import merge_tables

    merge_tables(list(parts), path, spill_dir=spill_dir)


def open_table(path: str | Path):
    """The table at ``path`` for :class:`capeval.coco.cider.CiderD` (``cider_df=``), read block by block; its check
    runs once per process and file."""
    from capeval.coco.disk_df import DiskDocumentFrequency

    path = Path(path)
    return DiskDocumentFrequency.open(path, verify=_table_key(path) not in _WHOLE_TABLES)


def open_legacy_parquet_table(path: str | Path, meta_key: bytes | str):
    """A table of the earlier parquet format (``documents`` in the schema's metadata under ``meta_key``; n-gram
    strings in a ``gram`` column, or their keys in ``key_high`` / ``key_low``), in memory."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capeval.coco.compact_df import CompactDocumentFrequency, DocumentFrequencyCounter, keys_from_words

    table = pq.read_table(path)
    documents = json.loads(table.schema.metadata[meta_key])["documents"]
    counts = np.array(table.column("df").to_numpy(), dtype=np.int64)  # its own copy: the table is freed below
    if "gram" in table.column_names:  # the first parquet table held the n-gram strings
        counter = DocumentFrequencyCounter()
        counter.add(table.column("gram").to_pylist(), counts)
        keys, counts = counter.table()
    else:
        keys = keys_from_words(table.column("key_high").to_numpy(), table.column("key_low").to_numpy())
    del table
    pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed pages unless asked
    return CompactDocumentFrequency({}, documents, {"source": "references", "rows": documents}, keys, counts)
