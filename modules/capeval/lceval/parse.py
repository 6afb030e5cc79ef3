"""Dependency parses for HWCM, from the same spaCy pass (and model) as capeval's SPICE, cached.

:class:`DependencyParser` turns caption texts into lists of :data:`~capeval.lceval.hwcm.DependencyRow`
(``lemma, label, head index``). Texts parsed before (by this class) come from a SQLite cache under
``capeval.paths.cache_dir("lceval")`` keyed by this module's version and the spaCy model; a text that must be
parsed also gets its SPICE tuples stored in SPICE's parse cache, so LCEval's SPICE feature never parses it again.
"""
from __future__ import annotations

from collections.abc import Sequence

from capeval.lceval.hwcm import DependencyRow
from capeval.progress import progress

__all__ = ["DependencyParser", "doc_rows"]

PARSE_VERSION = "1"


def doc_rows(doc) -> list[DependencyRow]:
    """``(lemma, dependency label, head index)`` of every token of a spaCy ``Doc`` (a root is its own head)."""
    return [(t.lemma_, t.dep_, str(t.head.i)) for t in doc]


class DependencyParser:
    """Caption texts -> dependency rows, sharing the parser (spaCy model, batch size, workers) of a SPICE metric.

    Args:
        spice_parser: a :class:`capeval.spice.parser.SceneGraphParser` (e.g. ``Spice().parser``).
        use_cache: read and write the dependency cache.
    """

    def __init__(self, spice_parser, *, use_cache: bool = True) -> None:
        self.spice = spice_parser
        self.key = f"lceval-deps-{PARSE_VERSION}|{spice_parser.model_version}"
        self.cache = None
        if use_cache:
            from capeval.paths import cache_file
            from capeval.spice.cache import ParseCache

            self.cache = ParseCache(self.key, cache_file("lceval", "parses.sqlite"))

    def parse(self, texts: Sequence[str], show_progress: bool | None = None) -> list[list[DependencyRow]]:
        """The rows of each text (deduplicated; cached texts are not parsed again)."""
        from capeval.spice.parser import doc_to_tuples

        unique = list(dict.fromkeys(texts))
        table: dict[str, list] = self.cache.get_many(unique) if self.cache is not None else {}
        todo = [t for t in unique if t not in table]
        if todo:
            spice_cache = self.spice.cache
            have_tuples = spice_cache.get_many(todo) if spice_cache is not None else {}
            nlp = self.spice.nlp
            docs = nlp.pipe(todo, batch_size=self.spice.batch_size, n_process=self.spice.n_process)
            fresh, fresh_tuples = [], []
            for text, doc in zip(todo, progress(docs, total=len(todo), desc="LCEval parsing", enabled=show_progress)):
                rows = doc_rows(doc)
                table[text] = rows
                fresh.append((text, rows))
                if spice_cache is not None and text not in have_tuples:
                    fresh_tuples.append((text, doc_to_tuples(doc, self.spice._verbs)))
            if self.cache is not None:
                self.cache.put_many(fresh)
            if spice_cache is not None:
                spice_cache.put_many(fresh_tuples)
        return [[tuple(r) for r in table[t]] for t in texts]

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
