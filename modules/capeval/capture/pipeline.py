"""CAPTURE from captions to scores: texts → sentences → parser inputs → sentence graphs → caption graphs → F-scores.

Each distinct text (a candidate or a reference) is split into sentences, parsed and filtered once
(:func:`caption_graphs`); all sentences of all texts go through the parser in batches. With soft matching, every
distinct element of every graph is encoded once, in batches, before the matching reads its vectors
(:class:`PhraseVectors`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from capeval.capture.graphs import CaptionGraph, caption_graph, graph_facts
from capeval.capture.scores import FScores, MatchSettings, f_scores, mean_f_scores


def caption_graphs(texts: Sequence[str], parser, tools, stop_words: frozenset[str], *, batch_size: int = 32,
                   progress: Any = None) -> dict[str, CaptionGraph]:
    """``{text: its CaptionGraph}`` for the distinct ``texts`` (parser: :class:`~capeval.capture.parser.FactualParser`,
    tools: :class:`~capeval.capture.language.NltkTools`)."""
    unique = list(dict.fromkeys(texts))
    sentences = [tools.sentences(text) for text in unique]
    inputs = parser.prompt_ids(sentences)
    flat = [ids for per_text in inputs for ids in per_text]
    graph_texts = iter(parser.graphs(flat, batch_size=batch_size, progress=progress))
    graphs = {}
    for text, per_text in zip(unique, inputs):
        facts = [graph_facts(next(graph_texts)) for _ in per_text]
        graphs[text] = caption_graph(facts, tools.nouns(text), tools.lemmatize, stop_words)
    return graphs


def graph_phrases(graph: CaptionGraph) -> list[str]:
    """Every phrase soft matching may compare of ``graph``: objects, attribute words, relations as text."""
    return [*graph.objects, *graph.attribute_words(), *(" ".join(r) for r in graph.relations)]


class PhraseVectors:
    """Unit phrase vectors, each distinct phrase encoded once (``encoder``: an object with
    ``encode(texts, batch_size=, progress_bar=)``, as :class:`capeval.models.sentence_encoder.SentenceEncoder`)."""

    def __init__(self, encoder, *, batch_size: int = 32) -> None:
        self.encoder, self.batch_size = encoder, batch_size
        self._rows: dict[str, np.ndarray] = {}

    def add(self, phrases: Sequence[str], progress: Any = None) -> None:
        """Encode the phrases not seen yet, in batches."""
        new = [p for p in dict.fromkeys(phrases) if p not in self._rows]
        if new:
            vectors = np.asarray(self.encoder.encode(new, batch_size=self.batch_size, progress_bar=progress),
                                 dtype=np.float32)
            # the reference normalises sentence-transformers' unit vectors once more (float32)
            vectors = vectors / np.sqrt(np.sum(vectors ** 2, axis=1, keepdims=True))
            self._rows.update(zip(new, vectors))

    def __call__(self, phrases: Sequence[str]) -> np.ndarray:
        self.add(phrases)
        return np.stack([self._rows[p] for p in phrases])


@dataclass(frozen=True)
class CaptureResult:
    """Per prediction: its :class:`~capeval.capture.scores.FScores`, the mean over its references."""

    per_caption: list[FScores]

    @property
    def scores(self) -> list[float]:
        return [f.capture for f in self.per_caption]


def capture_scores(predictions: Sequence[str], references: Sequence[Sequence[str]], *, parser, tools,
                   encoder=None, settings: MatchSettings = MatchSettings(), stop_words: frozenset[str] = frozenset(),
                   batch_size: int = 32, progress: Any = None) -> CaptureResult:
    """CAPTURE of each prediction against its references (``encoder`` is read only with soft matching)."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists.")
    texts = [*predictions, *(r for refs in references for r in refs)]
    graphs = caption_graphs(texts, parser, tools, stop_words, batch_size=batch_size, progress=progress)
    vectors = None
    if settings.soft_matching:
        if encoder is None:
            raise ValueError("soft matching needs a phrase encoder.")
        vectors = PhraseVectors(encoder, batch_size=batch_size)
        vectors.add([p for g in graphs.values() for p in graph_phrases(g)], progress=progress)
    per = [mean_f_scores([f_scores(graphs[ref], graphs[pred], settings, tools.synonyms, vectors) for ref in refs])
           for pred, refs in zip(predictions, references)]
    return CaptureResult(per)


__all__ = ["CaptureResult", "PhraseVectors", "capture_scores", "caption_graphs", "graph_phrases"]
