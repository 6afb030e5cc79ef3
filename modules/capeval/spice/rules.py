"""SPICE's scene-graph rules (``edu.anu.spice.SpiceParser`` + the Stanford scene-graph parser's
``SemanticGraphEnhancer``), reimplemented on :class:`~capeval.spice.depgraph.DepGraph`.

:func:`extract_tuples` returns the *proposed tuples* of one caption in the order SpiceParser proposes
them: ``(object,)``, ``(object, attribute)`` or ``(subject, object, relation)`` — note the relation is
last here, as in the Java ``ProposedTuples``; :class:`capeval.spice.graph.SceneGraph` turns them into
``(subject, relation, object)`` edges. Every string is a lower-cased lemma.

Steps, in the original order:

1. quantificational modifiers (``a lot of``, ``lots of``, ``two of the``) become ``det:qmod`` MWEs and
   the quantified noun is promoted to head;
2. pronoun resolution (Hobbs-like breadth-first search for the first earlier noun from the root);
3. subject-predicate-object triplets (``nsubj`` + ``dobj``/``iobj``/``nmod:*``, no copula);
4. ``acl`` triplets (*a cat sitting on a chair*);
5. subject-predicate pairs and copulas (``nsubj`` without noun object; a PP copula gives a relation,
   an intransitive verb or adjective/noun predicate gives an attribute);
6. adjectival modifiers (``amod``) and adjectival predicates;
7. prepositional modifiers of nouns (``nmod:*`` other than ``poss``/``agent``);
8. possessives (``nmod:poss`` -> ``have``);
9. passive agents (``nmod:agent`` + ``nsubjpass``);
10. numeric / quantificational modifiers of plural nouns -> count attributes;
11. compound nouns -> attribute of the head (both words are then no longer plain objects);
12. (noun conjunctions: the Java loop compares a string with a word object and never fires; so no-op)
13. every other noun (tag ``NN``, ``NNS``, ``NNP``, ``NNPS``) -> object.
"""
from __future__ import annotations

import re

from capeval.spice.depgraph import DepGraph

RawTuple = tuple[str, ...]

_NOUN = re.compile(r"NNP?S?")
_PLURAL = re.compile(r"NNP?S")
_NOMINAL_OR_PRONOUN = re.compile(r"(NN.*|PRP.*)")
_OBJ_REL = re.compile(r"(iobj|dobj|nmod:.*)")

_QMOD_3W = re.compile(
    r"(?i:lot|assortment|number|couple|bunch|handful|litany|sheaf|slew|dozen|series|variety|multitude|wad|"
    r"clutch|wave|mountain|array|spate|string|ton|range|plethora|heap|sort|form|kind|type|version|bit|pair|"
    r"triple|total)"
)
_QMOD_2W = re.compile(
    r"(?i:lots|many|several|plenty|tons|dozens|multitudes|mountains|loads|pairs|tens|hundreds|thousands|"
    r"millions|billions|trillions|[0-9]+s)"
)
_QMOD_PARTITIVE = re.compile(
    r"(?i:some|all|both|neither|everyone|nobody|one|two|three|four|five|six|seven|eight|nine|ten|hundred|"
    r"thousand|million|billion|trillion|[0-9]+)"
)
_A_AN = re.compile(r"(?i:an?)")
_OF = re.compile(r"(?i:of)")

#: dcoref's singular pronouns (``Dictionaries.singularPronouns``), used to pick an antecedent.
SINGULAR_PRONOUNS = frozenset(
    "i me myself mine my yourself he him himself his she her herself hers it its itself one oneself one's".split()
)

QMOD = "det:qmod"


def _is_noun(tag: str) -> bool:
    return _NOUN.fullmatch(tag) is not None


# ----------------------------------------------------------------------------- enhancer steps
def _promote(g: DepGraph, old_head: int, gov: int) -> None:
    """``gov`` takes ``old_head``'s place (its governor edge or its root slot); the old edge goes."""
    if old_head in g.roots:
        g.replace_root(old_head, gov)
    else:
        parents = g.parents(old_head)
        if not parents:
            return
        parent, rel = parents[0]
        g.remove(parent, old_head, rel)
        g.add(parent, gov, rel)
    g.remove(old_head, gov)


def _multi_word(g: DepGraph, gov: int, words: list[int]) -> None:
    """CoreNLP ``createMultiWordExpression``: first word -> ``det:qmod`` of ``gov``, the rest ``mwe``."""
    words = sorted(words)
    for w in words:
        for p, r in g.parents(w):
            g.remove(p, w, r)
    head = words[0]
    g.add(gov, head, QMOD)
    for w in words[1:]:
        g.add(head, w, "mwe")


def process_quantificational_modifiers(g: DepGraph) -> None:
    """``a lot of X``, ``lots of X``, ``two of the X`` -> X heads, quantifier words as a ``det:qmod`` MWE."""
    nodes = g.nodes

    def nmod_of_children(w: int, gov_tag: re.Pattern) -> list[tuple[int, int]]:
        out = []
        for gov, rel in g.children(w):
            if not rel.startswith("nmod") or not gov_tag.fullmatch(nodes[gov].tag):
                continue
            for case, crel in g.children(gov, "case"):
                if _OF.fullmatch(nodes[case].word) and case == w + 1:
                    out.append((gov, case))
        return out

    # pattern 1: "a lot of", "a couple of", "a pair of" ...
    for w2 in sorted(nodes):
        if not _QMOD_3W.fullmatch(nodes[w2].word):
            continue
        dets = [d for d, _ in g.children(w2, "det") if _A_AN.fullmatch(nodes[d].word)]
        matches = nmod_of_children(w2, _NOMINAL_OR_PRONOUN)
        if not dets or not matches:
            continue
        gov, w3 = matches[0]
        _promote(g, w2, gov)
        words = [dets[0], w2, w3] + [c for c, _ in g.children(w2, "amod") if c < w2]
        _multi_word(g, gov, words)
    # pattern 2: "lots of", "dozens of", "several of" ...
    for w1 in sorted(nodes):
        if not _QMOD_2W.fullmatch(nodes[w1].word):
            continue
        matches = nmod_of_children(w1, _NOMINAL_OR_PRONOUN)
        if not matches:
            continue
        gov, w2 = matches[0]
        _promote(g, w1, gov)
        words = [w1, w2] + [c for c, _ in g.children(w1) if c < w1]
        _multi_word(g, gov, words)
    # pattern 3: "some of the", "two of the", "all of them"
    for w1 in sorted(nodes):
        if not _QMOD_PARTITIVE.fullmatch(nodes[w1].word):
            continue
        found = None
        for gov, rel in g.children(w1):
            if not rel.startswith("nmod"):
                continue
            tag = nodes[gov].tag
            cases = [c for c, _ in g.children(gov, "case") if _OF.fullmatch(nodes[c].word) and c == w1 + 1]
            if not cases:
                continue
            if re.fullmatch(r"NN.*", tag):
                det_ids = {d for d, _ in g.children(gov, "det")}
                siblings = sorted(d for d, _ in g.children(gov))
                pos = siblings.index(cases[0])
                if pos + 1 < len(siblings) and siblings[pos + 1] in det_ids:
                    found = (gov, cases[0])
            elif re.fullmatch(r"PRP.*", tag):
                found = (gov, cases[0])
            if found:
                break
        if found is None:
            continue
        gov, w2 = found
        _promote(g, w1, gov)
        words = [w1, w2] + [c for c, _ in g.children(w1) if c < w1]
        _multi_word(g, gov, words)


def _bfs_noun(g: DepGraph, start: int, singular: bool) -> int | None:
    seen: set[int] = set()
    current_start: int | None = start
    while current_start is not None and current_start not in seen:
        queue = [current_start]
        visited: set[int] = set()
        while queue:
            cur = queue.pop(0)
            if cur in visited:
                continue
            visited.add(cur)
            tag = g.nodes[cur].tag
            if re.fullmatch(r"NNP?", tag) or (not singular and re.fullmatch(r"NNP?S?", tag)):
                return cur
            queue.extend(d for d, _ in g.children(cur))
        seen.add(current_start)
        current_start = g.parent(current_start)
    return None


def resolve_pronouns(g: DepGraph) -> None:
    """SimplePronounResolution: each non-initial pronoun with a governor is replaced by the first noun a
    breadth-first search from the root finds, when that noun comes earlier in the sentence."""
    if not g.roots:
        return
    pairs: dict[int, int] = {}
    for idx in sorted(g.nodes):
        node = g.nodes[idx]
        if idx <= 1 or not node.tag.startswith("PRP") or g.parent(idx) is None:
            continue
        antecedent = _bfs_noun(g, g.roots[0], node.word in SINGULAR_PRONOUNS)
        if antecedent is not None and antecedent < idx:
            pairs[idx] = antecedent
    for pronoun, mention in pairs.items():
        if pronoun in g.roots:
            g.replace_root(pronoun, mention)
        else:
            for gov, rel in sorted(g.parents(pronoun)):
                g.remove(gov, pronoun, rel)
                g.add(gov, mention, rel)
        for dep, rel in g.children(pronoun):
            g.remove(pronoun, dep, rel)
            g.add(mention, dep, rel)


# ----------------------------------------------------------------------------- tuple proposal
def _predicate(g: DepGraph, pred: int) -> str:
    """The verb lemma, with its particle attached (``pick up``; ``be`` is dropped as in the original)."""
    lemma = g.nodes[pred].lemma
    particle = g.child(pred, "compound:prt")
    if particle is not None:
        return f"{'' if lemma == 'be' else lemma} {g.nodes[particle].word}"
    return lemma


def _relation_suffix(rel: str) -> str:
    if rel.startswith("nmod:") and rel not in ("nmod:poss", "nmod:agent"):
        return rel.replace("nmod:", " ").replace("_", " ")
    return ""


def extract_tuples(g: DepGraph) -> list[RawTuple]:
    """Enhance ``g`` in place and return SPICE's proposed tuples for it (see module docstring).

    The tuples come rule by rule, in this order: subject - predicate - object, clausal modifiers, subject -
    predicate pairs and copulas, adjectives, prepositional modifiers of nouns, possessives, passive agents, numbers
    on plural nouns, compounds, then the remaining nouns.
    """
    process_quantificational_modifiers(g)
    resolve_pronouns(g)
    s = _Sentence(g)
    out: list[RawTuple] = []
    for rule in (_subject_predicate_object, _clausal_modifiers, _subject_predicates, _adjectives,
                 _noun_prepositions, _possessives, _passive_agents, _plural_numbers):
        out += rule(s)
    compounds, compound_nouns = _compounds(s)
    out += compounds
    out += [(s.lem(word),) for word in s.order if s.noun(word) and word not in compound_nouns]  # remaining nouns
    return out


class _Sentence:
    """An enhanced dependency graph as the tuple rules read it: its node ids in token order, each node's children
    (``(dependent, relation)``), lemmas (stripped, lower-cased) and whether a node is a noun."""

    def __init__(self, g: DepGraph):
        self.g, self.nodes = g, g.nodes
        self.order = sorted(self.nodes)
        self.children = {i: g.children(i) for i in self.order}

    def lem(self, i: int) -> str:
        return self.nodes[i].lemma.strip().lower()

    def noun(self, i: int) -> bool:
        return _is_noun(self.nodes[i].tag)


def _subject_predicate_object(s: _Sentence) -> list[RawTuple]:
    """(subject, object, predicate) of each non-copular predicate with a noun subject and noun object(s)."""
    out: list[RawTuple] = []
    for pred in s.order:
        kids = s.children[pred]
        if any(r == "cop" for _, r in kids):
            continue
        subjects = [d for d, r in kids if r == "nsubj" and s.noun(d)]
        objects = [(d, r) for d, r in kids if _OBJ_REL.fullmatch(r) and s.noun(d)]
        for subj in subjects:
            for o, r in objects:
                out.append((s.lem(subj), s.lem(o), _predicate(s.g, pred) + _relation_suffix(r)))
    return out


def _clausal_modifiers(s: _Sentence) -> list[RawTuple]:
    """Clausal modifiers: X -acl-> V(erb) -obj-> O gives (X, O, V)."""
    out: list[RawTuple] = []
    for subj in s.order:
        for pred, r in s.children[subj]:
            if r != "acl" or not s.nodes[pred].tag.startswith("V"):
                continue
            for o, orel in s.children[pred]:
                if _OBJ_REL.fullmatch(orel) and s.noun(o):
                    out.append((s.lem(subj), s.lem(o), _predicate(s.g, pred) + _relation_suffix(orel)))
    return out


def _subject_predicates(s: _Sentence) -> list[RawTuple]:
    """Subject - predicate pairs (no noun object, no copula), then copulas: (subject, predicate, preposition) when
    the predicate has a case marker, else (subject, predicate) unless the predicate is 'be'."""
    g, nodes, out = s.g, s.nodes, []
    for copular in (False, True):
        for pred in s.order:
            kids = s.children[pred]
            has_cop = any(r == "cop" for _, r in kids)
            if has_cop != copular:
                continue
            if not copular and any(_OBJ_REL.fullmatch(r) and s.noun(d) for d, r in kids):
                continue
            for subj in (d for d, r in kids if r == "nsubj" and s.noun(d)):
                case = g.child(pred, "case")
                if case is not None:
                    prep = nodes[case].word
                    for extra, _ in g.children(case, "mwe"):
                        prep += " " + nodes[extra].word
                    out.append((s.lem(subj), s.lem(pred), prep))
                elif s.lem(pred) != "be":
                    out.append((s.lem(subj), s.lem(pred)))
    return out


def _adjectives(s: _Sentence) -> list[RawTuple]:
    """Adjectival modifiers (noun, adjective), then adjectival predicates (subject, adjective)."""
    out: list[RawTuple] = []
    for obj in s.order:
        for adj, r in s.children[obj]:
            if r == "amod":
                out.append((s.lem(obj), s.lem(adj)))
    for adj in s.order:
        if not s.nodes[adj].tag.startswith("J"):
            continue
        for obj, r in s.children[adj]:
            if r == "nsubj":
                out.append((s.lem(obj), s.lem(adj)))
    return out


def _noun_prepositions(s: _Sentence) -> list[RawTuple]:
    """Prepositional modifiers of nouns: (noun, modifier, preposition), possessives and agents aside."""
    out: list[RawTuple] = []
    for gov in s.order:
        if not s.noun(gov):
            continue
        for mod, r in s.children[gov]:
            if r.startswith("nmod:"):
                predicate = r.replace("nmod:", "").replace("_", " ")
                if predicate in ("poss", "agent"):
                    continue
                out.append((s.lem(gov), s.lem(mod), predicate))
    return out


def _possessives(s: _Sentence) -> list[RawTuple]:
    """Possessives: (owner, owned, 'have')."""
    out: list[RawTuple] = []
    for gov in s.order:
        if not s.noun(gov):
            continue
        for mod, r in s.children[gov]:
            if r == "nmod:poss" and s.noun(mod):
                out.append((s.lem(mod), s.lem(gov), "have"))
    return out


def _passive_agents(s: _Sentence) -> list[RawTuple]:
    """Passive agents: (agent, patient, verb) of each verb with a noun agent and a noun passive subject."""
    out: list[RawTuple] = []
    for pred in s.order:
        if not s.nodes[pred].tag.startswith("V"):
            continue
        kids = s.children[pred]
        agents = [d for d, r in kids if r == "nmod:agent" and s.noun(d)]
        patients = [d for d, r in kids if r == "nsubjpass" and s.noun(d)]
        for agent in agents:
            for o in patients:
                out.append((s.lem(agent), s.lem(o), _predicate(s.g, pred)))
    return out


def _plural_numbers(s: _Sentence) -> list[RawTuple]:
    """Numbers on plural nouns: (noun, number) of a number before it, else (noun, quantifier) of its qmod."""
    # the three plural patterns between them cover every plural noun but a case-less nmod object of a predicate
    # with a plural subject, which does not occur in practice
    g, out = s.g, []
    for word in s.order:
        if _PLURAL.fullmatch(s.nodes[word].tag):
            nummod = g.child(word, "nummod")
            if nummod is not None:
                if nummod < word:
                    out.append((s.lem(word), s.lem(nummod)))
            else:
                qmod = g.child(word, QMOD)
                if qmod is not None:
                    out.append((s.lem(word), s.lem(qmod)))
    return out


def _compounds(s: _Sentence) -> tuple[list[RawTuple], set[int]]:
    """Noun compounds (tail, head), and the node ids of the nouns in them."""
    out: list[RawTuple] = []
    compound_nouns: set[int] = set()
    for tail in s.order:
        if not s.noun(tail):
            continue
        for head, r in s.children[tail]:
            if r == "compound" and s.noun(head):
                compound_nouns.update((tail, head))
                out.append((s.lem(tail), s.lem(head)))
    return out, compound_nouns
