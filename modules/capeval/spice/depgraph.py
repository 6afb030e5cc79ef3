"""A small dependency graph in the style SPICE's rules expect (Stanford CoreNLP 3.6 UD, collapsed, CC-processed).

Official SPICE parses each caption with the Stanford PCFG parser and converts the tree to *collapsed,
CC-processed* Universal Dependencies with extra dependencies (``depparse.extradependencies=MAXIMAL``).
That representation differs from the ClearNLP-style labels spaCy's English models emit, so
:func:`from_spacy` rewrites a spaCy parse into it:

========================  ===============================================================================
spaCy                     CoreNLP 3.6 collapsed UD (what SPICE's Semgrex patterns match)
========================  ===============================================================================
``prep`` + ``pobj``       ``nmod:<prep>(head, object)`` and ``case(object, prep)``; the multi-word
                          prepositions of CoreNLP's lists (``next to``, ``in front of``, ``on top of``,
                          ...) become ``nmod:next_to`` etc. with ``mwe`` children on the first word
``agent`` + ``pobj``      ``nmod:agent``
copula ``be`` + ``attr``  the predicate heads the clause: ``nsubj(pred, subj)``, ``cop(pred, be)``; a
/ ``acomp`` / ``prep``    PP predicate (``is on the table``) makes the prepositional object the head
``expl`` + ``attr``       ``nsubj(be, attr)`` (existential *there is*; no copula restructuring)
``poss``                  ``nmod:poss``
``prt``                   ``compound:prt``
``relcl``                 ``acl:relcl``; the relative pronoun's edge is redirected to the antecedent
                          (CoreNLP's collapsed referent: ``nsubj(riding, man)`` in *a man who is riding*)
``conj`` / ``cc``         ``conj:<cc word>``, all conjuncts attached to the first; the first
                          conjunct's governor edge is copied to each conjunct and a subject is copied
                          to conjoined predicates that lack one (CC-processing)
``npadvmod``              ``nmod:npmod``
========================  ===============================================================================

Nodes are numbered from 1 like CoreNLP's ``IndexedWord.index()``. The graph is a multigraph of
``(governor, dependent, relation)`` edges, kept in insertion order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: CoreNLP's multi-word prepositions (UniversalEnglishGrammaticalStructure), as word tuples.
TWO_WORD_PREPS = frozenset(
    tuple(p.split("_"))
    for p in (
        "across_from along_with alongside_of apart_from as_for as_from as_of as_per as_to aside_from based_on "
        "close_by close_to contrary_to compared_to compared_with depending_on except_for exclusive_of far_from "
        "followed_by inside_of irrespective_of next_to near_to off_of out_of outside_of owing_to preliminary_to "
        "preparatory_to previous_to prior_to pursuant_to regardless_of subsequent_to thanks_to together_with "
        "away_from"
    ).split()
)
THREE_WORD_PREPS = frozenset(
    tuple(p.split("_"))
    for p in (
        "by_means_of in_accordance_with in_addition_to in_case_of in_front_of in_lieu_of in_place_of "
        "in_spite_of on_account_of on_behalf_of on_top_of with_regard_to with_respect_to"
    ).split()
)

_SIMPLE_LABELS = {
    "nsubj": "nsubj", "nsubjpass": "nsubjpass", "csubj": "csubj", "csubjpass": "csubjpass",
    "dobj": "dobj", "iobj": "iobj", "amod": "amod", "nummod": "nummod", "compound": "compound",
    "det": "det", "predet": "det:predet", "case": "case", "acl": "acl", "advcl": "advcl",
    "xcomp": "xcomp", "ccomp": "ccomp", "appos": "appos", "advmod": "advmod", "neg": "neg",
    "aux": "aux", "auxpass": "auxpass", "mark": "mark", "expl": "expl", "punct": "punct",
    "cc": "cc", "preconj": "cc:preconj", "prt": "compound:prt", "poss": "nmod:poss",
    "npadvmod": "nmod:npmod", "quantmod": "advmod", "intj": "discourse", "parataxis": "parataxis",
    "oprd": "xcomp", "attr": "xcomp", "acomp": "xcomp", "dative": "iobj", "nmod": "compound",
    "relcl": "acl:relcl", "meta": "dep", "dep": "dep", "pcomp": "dep", "pobj": "dep", "prep": "dep",
    "agent": "dep", "conj": "conj",
}  # fmt: skip

_RELATIVIZERS = frozenset({"WDT", "WP", "WP$"})
_RELATIVE_THAT = "that"


@dataclass
class Node:
    """One token: 1-based ``index``, lower-cased ``word``, ``lemma``, Penn ``tag``."""

    index: int
    word: str
    lemma: str
    tag: str


@dataclass
class DepGraph:
    """Nodes by index, ``(gov, dep, rel)`` edges, and root indices (first root = sentence head)."""

    nodes: dict[int, Node] = field(default_factory=dict)
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)

    # -- queries -------------------------------------------------------------------------------
    def children(self, gov: int, rel: str | None = None) -> list[tuple[int, str]]:
        """``(dependent, relation)`` pairs of ``gov`` sorted by dependent index (optionally one relation)."""
        out = [(d, r) for g, d, r in self.edges if g == gov and (rel is None or r == rel)]
        return sorted(out)

    def child(self, gov: int, rel: str) -> int | None:
        kids = self.children(gov, rel)
        return kids[0][0] if kids else None

    def has_child(self, gov: int, rel: str) -> bool:
        return any(g == gov and r == rel for g, _, r in self.edges)

    def parents(self, dep: int) -> list[tuple[int, str]]:
        return [(g, r) for g, d, r in self.edges if d == dep]

    def parent(self, dep: int) -> int | None:
        """First governor of ``dep`` (CoreNLP ``getParent``), or ``None`` for roots."""
        for g, d, _ in self.edges:
            if d == dep:
                return g
        return None

    # -- edits ---------------------------------------------------------------------------------
    def add(self, gov: int, dep: int, rel: str) -> None:
        if gov != dep and (gov, dep, rel) not in self.edges:
            self.edges.append((gov, dep, rel))

    def remove(self, gov: int, dep: int, rel: str | None = None) -> None:
        self.edges = [e for e in self.edges if not (e[0] == gov and e[1] == dep and (rel is None or e[2] == rel))]

    def relabel(self, gov: int, dep: int, old: str, new: str) -> None:
        self.edges = [(g, d, new if (g, d, r) == (gov, dep, old) else r) for g, d, r in self.edges]

    def replace_root(self, old: int, new: int) -> None:
        self.roots = [new if r == old else r for r in self.roots]

    def describe(self) -> str:
        """Readable ``rel(gov-i, dep-j)`` lines, for debugging and tests."""
        def name(i: int) -> str:
            return "ROOT-0" if i == 0 else f"{self.nodes[i].word}-{i}"

        lines = [f"root(ROOT-0, {name(r)})" for r in self.roots]
        lines += [f"{r}({name(g)}, {name(d)})" for g, d, r in sorted(self.edges, key=lambda e: (e[1], e[0]))]
        return "\n".join(lines)


def from_spacy(doc, lemmas: list[str] | None = None) -> DepGraph:
    """Convert a parsed spaCy ``Doc`` into a CoreNLP-style collapsed, CC-processed UD graph.

    ``lemmas`` (optional) overrides ``token.lemma_`` per token (see :mod:`capeval.spice.lemmas`).
    Punctuation tokens are dropped, as CoreNLP drops punctuation dependencies.
    """
    g = DepGraph()
    idx = {}  # spaCy token index -> 1-based node index
    for tok in doc:
        idx[tok.i] = tok.i + 1
        lemma = (lemmas[tok.i] if lemmas is not None else tok.lemma_) or tok.text
        g.nodes[tok.i + 1] = Node(tok.i + 1, tok.text.lower(), lemma.lower(), tok.tag_)

    # 1. plain relabelling (prepositions are handled afterwards, from the spaCy tree)
    for tok in doc:
        if tok.is_punct or tok.dep_ == "punct":
            continue
        if tok.head.i == tok.i or tok.dep_ == "ROOT":
            g.roots.append(idx[tok.i])
            continue
        label = _SIMPLE_LABELS.get(tok.dep_, "dep")
        if label == "dep" and tok.dep_ in ("prep", "agent", "pobj", "pcomp"):
            continue  # rebuilt below
        g.add(idx[tok.head.i], idx[tok.i], label)

    _prepositions(doc, g, idx)
    _copulas(doc, g)
    _relative_clauses(doc, g)
    _conjunctions(g)
    return g


def _prep_object(prep) -> object | None:
    for child in prep.children:
        if child.dep_ == "pobj":
            return child
    return None


def _prepositions(doc, g: DepGraph, idx: dict[int, int]) -> None:
    """``X -prep-> P -pobj-> N`` -> ``nmod:p(X, N)``, ``case(N, P)``, with multi-word prepositions."""
    consumed: set[int] = set()
    for prep in doc:
        if prep.dep_ not in ("prep", "agent") or prep.i in consumed:
            continue
        head = prep.head
        obj = _prep_object(prep)
        words = [prep]
        # three-word: P1 N(front/top) P2 X  (spaCy: P1 -pobj-> N -prep-> P2 -pobj-> X)
        if obj is not None and obj.i == prep.i + 1:
            for inner in obj.children:
                if inner.dep_ == "prep" and inner.i == obj.i + 1:
                    trigram = (prep.text.lower(), obj.text.lower(), inner.text.lower())
                    inner_obj = _prep_object(inner)
                    if trigram in THREE_WORD_PREPS and inner_obj is not None:
                        words = [prep, obj, inner]
                        consumed.update({obj.i, inner.i})
                        # the middle noun's other dependents (rare) move to the real object
                        for extra in obj.children:
                            if extra.i != inner.i and not extra.is_punct:
                                g.remove(idx[obj.i], idx[extra.i])
                                g.add(idx[inner_obj.i], idx[extra.i], _SIMPLE_LABELS.get(extra.dep_, "dep"))
                        obj = inner_obj
                        break
        # two-word, preposition-headed: W1 -prep-> P2 (e.g. "next -prep-> to", "out -prep-> of")
        if len(words) == 1 and prep.i > 0:
            prev = doc[prep.i - 1]
            bigram = (prev.text.lower(), prep.text.lower())
            if bigram in TWO_WORD_PREPS and prev.i == head.i and prev.dep_ in ("advmod", "prep", "amod", "prt", "acomp"):
                words = [prev, prep]
                consumed.add(prev.i)
                g.remove(idx[prev.head.i], idx[prev.i])
                head = prev.head
                if prev.dep_ == "ROOT" or prev.head.i == prev.i:  # "next to a dog" as a fragment
                    head = None
            elif bigram in TWO_WORD_PREPS and prev.head.i == head.i and prev.dep_ in ("advmod", "prep", "prt"):
                # siblings: X -advmod-> next, X -prep-> to
                words = [prev, prep]
                consumed.add(prev.i)
                g.remove(idx[head.i], idx[prev.i])
        if obj is None:
            # a preposition without object (pcomp, stranded): keep a plain attachment
            for child in prep.children:
                if child.dep_ == "pcomp":
                    g.add(idx[head.i] if head is not None else idx[prep.i], idx[child.i], "advcl")
                    g.add(idx[child.i], idx[prep.i], "mark")
            if not any(c.dep_ == "pcomp" for c in prep.children) and head is not None:
                g.add(idx[head.i], idx[prep.i], "advmod")
            continue
        name = "_".join(w.text.lower() for w in words)
        rel = "nmod:agent" if prep.dep_ == "agent" else f"nmod:{name}"
        first = idx[words[0].i]
        for w in words:
            g.remove(idx[w.head.i], idx[w.i])
        g.remove(idx[prep.i], idx[obj.i])
        g.add(idx[obj.i], first, "case")
        for w in words[1:]:
            g.add(first, idx[w.i], "mwe")
        if head is None or head.i == words[0].i:
            g.replace_root(first, idx[obj.i])
            if idx[obj.i] not in g.roots:
                g.roots.append(idx[obj.i])
        else:
            g.add(idx[head.i], idx[obj.i], rel)
        # dependents of the preposition other than its object (e.g. "right" in "right next to") stay on it


def _copulas(doc, g: DepGraph) -> None:
    """Make the predicate of ``be`` (attr / acomp / PP) the head, as UD does; ``there is`` -> nsubj."""
    for node in sorted(g.nodes.values(), key=lambda n: n.index):
        if node.lemma != "be" or not node.tag.startswith("VB"):
            continue
        v = node.index
        kids = g.children(v)
        labels = [r for _, r in kids]
        if "aux" in [r for _, r in g.parents(v)] or "auxpass" in [r for _, r in g.parents(v)]:
            continue
        spacy_tok = doc[v - 1]
        attr = [c for c in spacy_tok.children if c.dep_ in ("attr", "acomp") and (v, c.i + 1, "xcomp") in g.edges]
        if "expl" in labels:
            for c in attr:
                g.relabel(v, c.i + 1, "xcomp", "nsubj")
            continue
        pred: int | None = None
        if attr:
            pred = attr[0].i + 1
            g.remove(v, pred)
        else:
            nmods = [(d, r) for d, r in kids if r.startswith("nmod:") and r not in ("nmod:agent", "nmod:poss", "nmod:npmod")]
            if nmods and any(r in ("nsubj", "csubj") for r in labels):
                pred = nmods[0][0]
                g.remove(v, pred)
        if pred is None:
            continue
        # move the copula's governor and dependents to the predicate
        for gov, rel in g.parents(v):
            g.remove(gov, v, rel)
            g.add(gov, pred, rel)
        if v in g.roots:
            g.replace_root(v, pred)
        for dep, rel in g.children(v):
            g.remove(v, dep, rel)
            g.add(pred, dep, rel)
        g.add(pred, v, "cop")


def _relative_clauses(doc, g: DepGraph) -> None:
    """Collapse referents: ``acl:relcl(N, V)`` + ``nsubj(V, who)`` -> ``nsubj(V, N)`` (CoreNLP extras)."""
    for gov, verb, rel in list(g.edges):
        if rel != "acl:relcl":
            continue
        for dep, drel in g.children(verb):
            node = g.nodes[dep]
            if node.tag in _RELATIVIZERS or (node.word == _RELATIVE_THAT and node.tag in ("WDT", "IN", "DT")):
                if drel in ("nsubj", "nsubjpass", "dobj", "iobj") or drel.startswith("nmod:"):
                    g.remove(verb, dep, drel)
                    g.add(verb, gov, drel)
                    g.add(gov, dep, "ref")


def _conjunctions(g: DepGraph) -> None:
    """CC-processing: flatten chains, name ``conj:<cc>``, propagate governors and subjects."""
    # flatten: conj of a conjunct attaches to the first conjunct
    changed = True
    while changed:
        changed = False
        for gov, dep, rel in list(g.edges):
            if rel != "conj":
                continue
            up = [(g2, r2) for g2, r2 in g.parents(gov) if r2 == "conj"]
            if up:
                g.remove(gov, dep, rel)
                g.add(up[0][0], dep, "conj")
                changed = True
    for gov, dep, rel in list(g.edges):
        if rel != "conj":
            continue
        ccs = [g.nodes[d].word for d, r in g.children(gov, "cc")] + [g.nodes[d].word for d, r in g.children(dep, "cc")]
        name = f"conj:{ccs[0]}" if ccs else "conj"
        if name in ("conj:&", "conj:plus"):
            name = "conj:and"
        g.relabel(gov, dep, "conj", name)
    for first, other, rel in list(g.edges):
        if not rel.startswith("conj"):
            continue
        for gov, grel in g.parents(first):
            if grel.startswith("conj") or grel in ("cop", "case", "mwe", "ref"):
                continue
            g.add(gov, other, grel)
        first_tag, other_tag = g.nodes[first].tag, g.nodes[other].tag
        if first_tag[:2] in ("VB", "JJ") and other_tag[:2] in ("VB", "JJ"):
            subjects = [(d, r) for d, r in g.children(first) if r in ("nsubj", "nsubjpass")]
            own = [r for _, r in g.children(other) if r in ("nsubj", "nsubjpass", "expl", "csubj")]
            if subjects and not own:
                for d, r in subjects:
                    g.add(other, d, "nsubj" if other_tag != "VBN" or r == "nsubj" else r)
