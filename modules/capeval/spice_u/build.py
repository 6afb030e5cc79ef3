"""Build a :class:`~capeval.spice_u.uniqueness.UniquenessTable` from any caption corpus.

The work is resumable: images are processed in chunks, and each chunk's image ids and concept
counts are committed to a SQLite checkpoint in one transaction, so an interrupted build (Ctrl-C,
a killed job) continues where it stopped. The checkpoint records the settings (corpus, parser
version, ...) and refuses to resume under different ones.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.progress import progress
from capeval.spice_u.uniqueness import UniquenessTable

#: ``texts -> one set of concept keys per text`` (e.g. SPICE scene-graph tuples).
ConceptExtractor = Callable[[Sequence[str]], list[set[str]]]


def _open_checkpoint(path: Path, meta: Mapping[str, str], restart: bool) -> sqlite3.Connection:
    if restart and path.exists():
        path.unlink()
    con = sqlite3.connect(path, timeout=60)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("CREATE TABLE IF NOT EXISTS done (image TEXT PRIMARY KEY)")
    con.execute("CREATE TABLE IF NOT EXISTS counts (concept TEXT PRIMARY KEY, n INTEGER NOT NULL)")
    stored = dict(con.execute("SELECT key, value FROM meta"))
    if stored and stored != dict(meta):
        con.close()
        raise with_words(ValueError, words(
            "restart", f"Checkpoint {path} was started with different settings {stored} (now {dict(meta)}); pass ",
            Setting(True), " to discard it."))
    if not stored:
        with con:
            con.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
    return con


def build_uniqueness_table(
    captions_by_image: Mapping[Hashable, Sequence[str]],
    extract: ConceptExtractor,
    *,
    checkpoint: str | Path,
    meta: Mapping[str, str] | None = None,
    chunk_images: int = 500,
    restart: bool = False,
    show_progress: bool | None = None,
) -> UniquenessTable:
    """Count, for every concept, the images whose captions contain it.

    Args:
        captions_by_image: ``{image id: [caption, ...]}``; every image counts in the denominator,
            also one whose captions yield no concept.
        extract: concept extractor applied to batches of captions.
        checkpoint: SQLite file for resuming (created if missing).
        meta: settings recorded in the table and the checkpoint (corpus, parser version, ...).
        chunk_images: images per committed chunk.
        restart: discard an existing checkpoint.

    Returns:
        The finished table (``n_images = len(captions_by_image)``).
    """
    if chunk_images <= 0:
        raise ValueError("chunk_images must be positive")
    meta = {k: str(v) for k, v in (meta or {}).items()}
    path = Path(checkpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _open_checkpoint(path, meta, restart)
    try:
        done = {row[0] for row in con.execute("SELECT image FROM done")}
        todo = [img for img in captions_by_image if str(img) not in done]
        bar = progress(range(len(captions_by_image)), desc="uniqueness table (images)", enabled=show_progress)
        bar.update(len(captions_by_image) - len(todo))
        for start in range(0, len(todo), chunk_images):
            chunk = todo[start : start + chunk_images]
            texts = [t for img in chunk for t in captions_by_image[img]]
            concept_sets = extract(texts)
            if len(concept_sets) != len(texts):
                raise RuntimeError(f"extractor returned {len(concept_sets)} results for {len(texts)} captions")
            chunk_counts: dict[str, int] = {}
            pos = 0
            for img in chunk:
                n = len(captions_by_image[img])
                image_concepts = set().union(*concept_sets[pos : pos + n]) if n else set()
                pos += n
                for c in image_concepts:
                    chunk_counts[c] = chunk_counts.get(c, 0) + 1
            with con:  # one transaction per chunk: resumable and never half-counted
                con.executemany(
                    "INSERT INTO counts VALUES (?, ?) ON CONFLICT(concept) DO UPDATE SET n = n + excluded.n",
                    list(chunk_counts.items()),
                )
                con.executemany("INSERT INTO done VALUES (?)", [(str(img),) for img in chunk])
            bar.update(len(chunk))
        bar.close()
        counts = dict(con.execute("SELECT concept, n FROM counts"))
    finally:
        con.close()
    return UniquenessTable(n_images=len(captions_by_image), counts=counts, meta=meta)
