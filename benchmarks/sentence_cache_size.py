"""Disk size of the sentence-vector cache: a fresh store filled with N random 384-d vectors (the size depends on the
number of texts and their keys, not on the values), measured after a WAL checkpoint.

Usage: ``PYTHONPATH=modules python benchmarks/sentence_cache_size.py [--texts 34325]`` (34,325: the distinct texts
of the 20,000 Karpathy-test candidates and their references). To measure another commit's store, point PYTHONPATH
at that checkout's ``modules``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=34_325)
    args = parser.parse_args(argv)
    from capeval.models.sentence_cache import SentenceVectorStore, encoder_settings

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vectors.sqlite")
        store = SentenceVectorStore(encoder_settings(None, 256), 384, path)
        rng = np.random.default_rng(0)
        for lo in range(0, args.texts, 8192):
            n = min(8192, args.texts - lo)
            store.put_many([f"caption number {i}" for i in range(lo, lo + n)],
                           rng.normal(size=(n, 384)).astype(np.float32))
        store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = os.path.getsize(path)
        store.close()
    print(f"{args.texts:,} texts: {size / 1e6:.1f} MB, {size / args.texts / 1e3:.2f} KB a text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
