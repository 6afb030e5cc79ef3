"""Scene graphs as CAPTURE reads them: the FACTUAL parser's text, its facts, and a caption's objects, attributes and
relations (text → sentence graphs → one :class:`CaptionGraph`).

The parser writes one sentence's graph as ``( subject , relation , object ) , ( subject , is , attribute ) , ...``.
:func:`clean_graph_text` and :func:`graph_facts` are the reference's ``space_out_symbols_in_graph`` +
``clean_graph_string`` and ``SceneGraphParser.graph_string_to_object`` (factualscenegraph 0.7.3);
:func:`caption_graph` is CAPTURE's ``merge_sentence_results`` and the noun filter of its ``sample_to_parse_results``
(capture-metric 0.1.13): heads lemmatised as nouns, attributes as adjectives (those holding ``" of"`` dropped),
then only the objects (not stop words), attributes and relations whose heads are nouns of the caption.

Where the reference keeps sets (whose order depends on ``PYTHONHASHSEED``), a :class:`CaptionGraph` keeps sorted
tuples, so a score never depends on the process (see :mod:`capeval.capture.scores` on order).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: The parser's prompt, before the sentence.
PROMPT = "Generate Scene Graph: "


def space_out_symbols(text: str) -> str:
    """Spaces around ``(``, ``)`` and ``,``; runs of white space made one space."""
    return " ".join(text.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())


def clean_graph_string(text: str) -> str:
    """The reference's ``clean_graph_string``: a truncated last fact dropped, duplicates removed, facts sorted."""
    facts = text.strip().split(") ,")
    if not text.endswith(")") and len(facts) > 1:
        facts = facts[:-1]
    elif not text.endswith(")") and len(facts) == 1:
        facts = [facts[0].split(",")[0]]
    unique = sorted({fact.strip().strip("()").strip() for fact in facts} - {""})
    return " , ".join(f"( {fact} )" for fact in unique)


def clean_graph_text(generated: str) -> str:
    """The graph text of one decoded parser output (the prompt's words removed, symbols spaced, facts cleaned)."""
    return clean_graph_string(space_out_symbols(generated.replace(PROMPT.strip(), "").strip()))


@dataclass
class SentenceGraph:
    """One sentence's graph: entity heads (first-seen order), each one's attributes, relations as
    ``(subject index, relation, object index)``."""

    heads: list[str]
    attributes: list[set[str]]
    relations: list[tuple[int, str, int]]


def graph_facts(graph_text: str) -> SentenceGraph:
    """The reference's ``graph_string_to_object``: facts of three parts; ``is`` + digits a quantity (not kept),
    ``is`` + other an attribute, else a relation; a lone malformed fact an entity of its first part."""
    graph = SentenceGraph([], [], [])
    index: dict[str, int] = {}

    def entity(name: str) -> int:
        if name not in index:
            index[name] = len(graph.heads)
            graph.heads.append(name)
            graph.attributes.append(set())
        return index[name]

    facts = graph_text.strip().split(") ,")
    for fact in facts:
        parts = [part.strip() for part in fact.strip().strip("()").split(",")]
        if len(parts) != 3:
            if len(facts) == 1:
                entity(parts[0])
            continue
        subject, relation, obj = parts
        where = entity(subject)
        if relation != "is":
            graph.relations.append((where, relation, entity(obj)))
        elif not obj.isdigit():
            graph.attributes[where].add(obj)
    return graph


@dataclass(frozen=True)
class CaptionGraph:
    """A caption's visual elements: ``objects`` (lemmas), ``attributes`` (per object, as ``(object, attribute
    lemmas)`` pairs) and ``relations`` (``(subject, relation, object)``)."""

    objects: tuple[str, ...]
    attributes: tuple[tuple[str, tuple[str, ...]], ...]
    relations: tuple[tuple[str, str, str], ...]

    def attribute_words(self) -> list[str]:
        """Every object's attributes in one list (an attribute of two objects counts twice), as the reference
        flattens them before matching."""
        return [word for _, words in self.attributes for word in words]


def _is_noun(name: str, nouns: set[str]) -> bool:
    return name in nouns or all(piece in nouns for piece in name.split(" "))


def caption_graph(sentences: Iterable[SentenceGraph], nouns: set[str], lemmatize: Callable[[str, str], str],
                  stop_words: frozenset[str] | set[str]) -> CaptionGraph:
    """The caption's :class:`CaptionGraph` from its sentences' graphs, ``nouns`` (the lemmatised nouns of its text),
    ``lemmatize(word, pos)`` (WordNet, ``"n"`` / ``"a"``) and the ``stop_words`` objects are never."""
    objects: set[str] = set()
    attributes: dict[str, set[str]] = {}
    relations: set[tuple[str, str, str]] = set()
    for graph in sentences:
        heads = [lemmatize(head, "n") for head in graph.heads]
        for head, words in zip(heads, graph.attributes):
            objects.add(head)
            kept = {lemma for lemma in (lemmatize(word, "a") for word in words) if " of" not in lemma}
            attributes.setdefault(head, set()).update(kept)
        relations.update((heads[s], relation, heads[o]) for s, relation, o in graph.relations)
    return CaptionGraph(
        objects=tuple(sorted(o for o in objects if o not in stop_words and _is_noun(o, nouns))),
        attributes=tuple((head, tuple(sorted(words))) for head, words in sorted(attributes.items())
                         if words and _is_noun(head, nouns)),
        relations=tuple(sorted(r for r in relations if _is_noun(r[0], nouns) and _is_noun(r[2], nouns))),
    )


__all__ = ["CaptionGraph", "PROMPT", "SentenceGraph", "caption_graph", "clean_graph_string", "clean_graph_text",
           "graph_facts", "space_out_symbols"]
