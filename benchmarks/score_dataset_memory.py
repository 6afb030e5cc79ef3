"""Where score-dataset's memory goes (BENCHMARKS.md, "Scoring a dataset"): the resident memory of one process
scoring COCO chunks one after another, and the time of CIDEr-D's document-frequency lookups on disk against the
same table in memory.

    python benchmarks/score_dataset_memory.py growth --data /tmp/coco-train2014.parquet --table DIR/cider-df.bin \
        [--metrics bleu,rouge_l,cider_d,meteor] [--chunks 110] [--chunk-size 2000]
    python benchmarks/score_dataset_memory.py lookup --data /tmp/coco-train2014.parquet --table DIR/cider-df.bin

``--data``: the parquet file of ``score_dataset_coco.py prepare``; ``--table``: a ``cider-df.bin`` that a
``score_dataset_coco.py run`` with CIDEr-D wrote (its first pass over the same data). ``growth`` prints the process's
RSS every 10 chunks (after a garbage collection); ``lookup`` times the first chunk's n-grams looked up in the table on
disk and in the same table held in memory (:class:`capeval.coco.compact_df.CompactDocumentFrequency`), twice each.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time


def _chunks(data: str, size: int):
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(data).iter_batches(batch_size=size, columns=["prediction", "references"]):
        yield batch.to_pydict()


def growth(args) -> int:
    import psutil

    import capeval
    from capeval.coco.disk_df import DiskDocumentFrequency

    metrics = args.metrics.split(",")
    options = {"cider_df": DiskDocumentFrequency.open(args.table)} if "cider_d" in metrics else {}
    process, start = psutil.Process(), time.perf_counter()
    for k, chunk in enumerate(_chunks(args.data, args.chunk_size)):
        if k >= args.chunks:
            break
        capeval.score(chunk["prediction"], chunk["references"], metrics=metrics, progress=False,
                      language_check=False, **options)
        if k % 10 == 0 or k == args.chunks - 1:
            gc.collect()
            print(f"chunk {k}: {process.memory_info().rss / 2**20:.0f} MB after {time.perf_counter() - start:.0f} s",
                  flush=True)
    return 0


def lookup(args) -> int:
    import numpy as np

    from capeval.batch import CaptionBatch
    from capeval.coco.compact_df import CompactDocumentFrequency
    from capeval.coco.disk_df import KEY_BYTES, DiskDocumentFrequency, read_header
    from capeval.coco.ngrams import batch_ngrams

    on_disk = DiskDocumentFrequency.open(args.table)
    header = read_header(args.table)
    with open(args.table, "rb") as handle:
        handle.seek(header["keys_at"])
        keys = np.frombuffer(handle.read(header["entries"] * KEY_BYTES), dtype=f"S{KEY_BYTES}")
        counts = np.frombuffer(handle.read(header["entries"] * 8), dtype="<i8")
    in_memory = CompactDocumentFrequency({}, on_disk.n_documents, {}, keys, counts)
    chunk = next(_chunks(args.data, args.chunk_size))
    grams = batch_ngrams(CaptionBatch(chunk["prediction"], chunk["references"], progress=False), 4).table.gram_strings()
    print(f"{len(grams):,} n-grams of the first chunk; table of {header['entries']:,} entries")
    for name, table in (("disk", on_disk), ("memory", in_memory)) * 2:
        start = time.perf_counter()
        table.lookup(grams)
        print(f"{name}: {time.perf_counter() - start:.3f} s")
    print("equal:", bool((on_disk.lookup(grams) == in_memory.lookup(grams)).all()))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("growth", "lookup"):
        p = sub.add_parser(name)
        p.add_argument("--data", required=True)
        p.add_argument("--table", required=True)
        p.add_argument("--chunk-size", type=int, default=2000)
        if name == "growth":
            p.add_argument("--metrics", default="bleu,rouge_l,cider_d,meteor")
            p.add_argument("--chunks", type=int, default=110)
    args = parser.parse_args(argv)
    return growth(args) if args.command == "growth" else lookup(args)


if __name__ == "__main__":
    sys.exit(main())
