"""SPICE scene graphs: concepts with synsets, synonym merging, and the tuples that get scored.

Mirrors ``edu.anu.spice.{SemanticConcept, SceneGraphNode, SceneGraphRelation, SceneGraph, TupleSet}``:

* a **concept** is a set of words (``{"man"}``, after merging maybe ``{"man", "adult male"}``) with the
  union of their WordNet synsets; two concepts are *similar* when they share a word or a synset;
* adding an object merges it into the existing node with the same concept, else into the node of
  highest similarity (shared word = 1, else Jaccard overlap of synsets) when that is > 0, else makes a
  new node; attributes and relations are merged into a *similar* existing one (relations only between
  the same two nodes); exact duplicates are dropped. ``merge=False`` (SPICE's ``-noSynsets``) keeps only
  exact-duplicate removal;
* the tuples of a graph are ``(object)``, ``(object, attribute)`` and ``(subject, relation, object)``.

A tuple's **concept key** (what SPICE-U counts) is its words joined by spaces, first word of each
concept: ``("man", "ride", "horse") -> "man ride horse"``; :meth:`SpiceTuple.keys` enumerates every
combination when concepts were merged (Java ``SemanticTuple.enumerateTuples``).
"""
from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

from capeval.meteor.synonyms import SynonymDictionary

_LEADING_BE = re.compile(r"^be ")


class Concept:
    """A set of words (insertion-ordered) and their synsets."""

    __slots__ = ("words", "synsets")

    def __init__(self, words: Iterable[str], synsets: frozenset[int]) -> None:
        self.words: dict[str, None] = dict.fromkeys(words)
        self.synsets: frozenset[int] = frozenset(synsets)  # replaced, never mutated (shared with the memo)

    def same(self, other: Concept) -> bool:
        """Java ``equals``: identical word sets and synset sets."""
        return self.words.keys() == other.words.keys() and self.synsets == other.synsets

    def similar(self, other: Concept) -> bool:
        """Share a synset or a word."""
        return not self.synsets.isdisjoint(other.synsets) or not self.words.keys().isdisjoint(other.words.keys())

    def similarity(self, other: Concept) -> float:
        """1 if a word is shared, else |synsets ∩| / |synsets ∪| (0 when both have none)."""
        if not self.words.keys().isdisjoint(other.words.keys()):
            return 1.0
        union = len(self.synsets | other.synsets)
        return len(self.synsets & other.synsets) / union if union else 0.0

    def merge(self, other: Concept) -> None:
        self.words.update(other.words)
        self.synsets = self.synsets | other.synsets

    def text(self) -> str:
        """Java ``toString``: the words joined by ``/``."""
        return "/".join(self.words)

    def __repr__(self) -> str:
        return f"Concept({self.text()!r})"


class Node:
    __slots__ = ("obj", "attributes")

    def __init__(self, obj: Concept) -> None:
        self.obj = obj
        self.attributes: list[Concept] = []


class Relation:
    __slots__ = ("source", "target", "rel")

    def __init__(self, source: Node, target: Node, rel: Concept) -> None:
        self.source, self.target, self.rel = source, target, rel


class SpiceTuple:
    """One scored tuple: 1 (object), 2 (object, attribute) or 3 (subject, relation, object) concepts.

    ``words[i]`` holds the words of concept ``i`` (several after synonym merging); ``matched`` is set by
    scoring (whether a similar tuple exists on the other side).
    """

    __slots__ = ("concepts", "matched")

    def __init__(self, concepts: tuple[Concept, ...], matched: bool = False) -> None:
        self.concepts = concepts
        self.matched = matched

    @property
    def words(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(c.words) for c in self.concepts)

    def __repr__(self) -> str:
        return f"SpiceTuple({self.text()!r}, matched={self.matched})"

    @property
    def kind(self) -> str:
        return ("object", "attribute", "relation")[len(self.words) - 1]

    @property
    def key(self) -> str:
        """Concept key: the first word of each concept joined by spaces (SPICE-U's rule)."""
        return " ".join(w[0] for w in self.words)

    def keys(self) -> list[str]:
        """Every concept key the tuple stands for (all word combinations of merged concepts)."""
        return [" ".join(combo) for combo in itertools.product(*self.words)]

    def similar(self, other: SpiceTuple) -> bool:
        if len(self.concepts) != len(other.concepts):
            return False
        for a, b in zip(self.concepts, other.concepts):
            if a.synsets.isdisjoint(b.synsets) and a.words.keys().isdisjoint(b.words.keys()):
                return False
        return True

    def exact(self, other: SpiceTuple) -> bool:
        return len(self.concepts) == len(other.concepts) and all(a.same(b) for a, b in zip(self.concepts, other.concepts))

    def text(self) -> tuple[str, ...]:
        """Java-style element strings (merged words joined by ``/``)."""
        return tuple(c.text() for c in self.concepts)

    def as_dict(self) -> dict:
        return {"tuple": list(self.text()), "key": self.key, "truth_value": self.matched}


class SceneGraph:
    """A scene graph built from proposed tuples, merging synonyms as official SPICE does."""

    def __init__(self, synonyms: SynonymDictionary, merge: bool = True) -> None:
        self.synonyms = synonyms
        self.merge = merge
        self.nodes: list[Node] = []
        self.relations: list[Relation] = []

    def _concept(self, word: str) -> Concept:
        return Concept((word,), self.synonyms.concept_synsets(word))

    def _node(self, word: str) -> Node:
        # A concept's synsets are always the union of its words' synsets, so "equal to the new
        # one-word concept" is "has exactly this one word"; similarity is 1 for a shared word.
        synsets = self.synonyms.concept_synsets(word)
        best: Node | None = None
        best_sim = 0.0
        for node in self.nodes:
            words = node.obj.words
            if word in words:
                if len(words) == 1:
                    return node
                sim = 1.0
            elif synsets.isdisjoint(node.obj.synsets):
                continue
            else:
                sim = len(synsets & node.obj.synsets) / len(synsets | node.obj.synsets)
            if sim > best_sim:
                best_sim, best = sim, node
        new = Concept((word,), synsets)
        if self.merge and best is not None:
            best.obj.merge(new)
            return best
        node = Node(new)
        self.nodes.append(node)
        return node

    def add_object(self, obj: str) -> None:
        self._node(obj)

    def add_attribute(self, obj: str, attr: str) -> None:
        node = self._node(obj)
        concept = self._concept(attr)
        if any(concept.same(a) for a in node.attributes):
            return
        if self.merge:
            for existing in node.attributes:
                if concept.similar(existing):
                    existing.merge(concept)
                    return
        node.attributes.append(concept)

    def add_relation(self, subj: str, obj: str, rel: str) -> None:
        source = self._node(subj)
        target = self._node(obj)
        concept = self._concept(_LEADING_BE.sub("", rel))
        for r in self.relations:
            if r.source is source and r.target is target and r.rel.same(concept):
                return
        if self.merge:
            for r in self.relations:
                if r.source is source and r.target is target and r.rel.similar(concept):
                    r.rel.merge(concept)
                    return
        self.relations.append(Relation(source, target, concept))

    def add_tuple(self, raw: Sequence[str]) -> None:
        """Add one proposed tuple: ``(obj,)``, ``(obj, attr)`` or ``(subj, obj, relation)``."""
        if len(raw) == 1:
            self.add_object(raw[0])
        elif len(raw) == 2:
            self.add_attribute(raw[0], raw[1])
        elif len(raw) == 3:
            self.add_relation(raw[0], raw[1], raw[2])
        else:
            raise ValueError(f"A proposed SPICE tuple has 1 to 3 elements, got {raw!r}.")

    @classmethod
    def from_tuples(
        cls, proposals: Iterable[Sequence[Sequence[str]]], synonyms: SynonymDictionary, merge: bool = True
    ) -> SceneGraph:
        """One graph from the proposed tuples of one or several captions (references are merged)."""
        graph = cls(synonyms, merge)
        for caption_tuples in proposals:
            for raw in caption_tuples:
                graph.add_tuple(raw)
        return graph

    def tuples(self) -> list[SpiceTuple]:
        """Objects, then each object's attributes, then relations (Java ``TupleSet`` order, unsorted)."""
        out: list[SpiceTuple] = []
        for node in self.nodes:
            out.append(_make(node.obj))
            for attr in node.attributes:
                out.append(_make(node.obj, attr))
        for r in self.relations:
            out.append(_make(r.source.obj, r.rel, r.target.obj))
        return out


def _make(*concepts: Concept) -> SpiceTuple:
    return SpiceTuple(concepts)
