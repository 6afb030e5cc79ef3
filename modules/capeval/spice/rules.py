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
    """Enhance ``g`` in place and return SPICE's proposed tuples for it (see module docstring)."""
    process_quantificational_modifiers(g)
    resolve_pronouns(g)
    nodes = g.nodes
    order = sorted(nodes)
    out: list[RawTuple] = []

    def lem(i: int) -> str:
        return nodes[i].lemma.strip().lower()

    def noun(i: int) -> bool:
        return _is_noun(nodes[i].tag)

    children = {i: g.children(i) for i in order}

    # subject - predicate - object
    for pred in order:
        kids = children[pred]
        if any(r == "cop" for _, r in kids):
            continue
        subjects = [d for d, r in kids if r == "nsubj" and noun(d)]
        objects = [(d, r) for d, r in kids if _OBJ_REL.fullmatch(r) and noun(d)]
        for s in subjects:
            for o, r in objects:
                out.append((lem(s), lem(o), _predicate(g, pred) + _relation_suffix(r)))
    # clausal modifiers: X -acl-> V(erb) -obj-> O
    for subj in order:
        for pred, r in children[subj]:
            if r != "acl" or not nodes[pred].tag.startswith("V"):
                continue
            for o, orel in children[pred]:
                if _OBJ_REL.fullmatch(orel) and noun(o):
                    out.append((lem(subj), lem(o), _predicate(g, pred) + _relation_suffix(orel)))
    # subject - predicate pairs (no noun object, no copula), then copulas
    for copular in (False, True):
        for pred in order:
            kids = children[pred]
            has_cop = any(r == "cop" for _, r in kids)
            if has_cop != copular:
                continue
            if not copular and any(_OBJ_REL.fullmatch(r) and noun(d) for d, r in kids):
                continue
            for s in (d for d, r in kids if r == "nsubj" and noun(d)):
                case = g.child(pred, "case")
                if case is not None:
                    prep = nodes[case].word
                    for extra, _ in g.children(case, "mwe"):
                        prep += " " + nodes[extra].word
                    out.append((lem(s), lem(pred), prep))
                elif lem(pred) != "be":
                    out.append((lem(s), lem(pred)))
    # adjectival modifiers and adjectival predicates
    for obj in order:
        for adj, r in children[obj]:
            if r == "amod":
                out.append((lem(obj), lem(adj)))
    for adj in order:
        if not nodes[adj].tag.startswith("J"):
            continue
        for obj, r in children[adj]:
            if r == "nsubj":
                out.append((lem(obj), lem(adj)))
    # prepositional modifiers of nouns
    for gov in order:
        if not noun(gov):
            continue
        for mod, r in children[gov]:
            if r.startswith("nmod:"):
                predicate = r.replace("nmod:", "").replace("_", " ")
                if predicate in ("poss", "agent"):
                    continue
                out.append((lem(gov), lem(mod), predicate))
    # possessives
    for gov in order:
        if not noun(gov):
            continue
        for mod, r in children[gov]:
            if r == "nmod:poss" and noun(mod):
                out.append((lem(mod), lem(gov), "have"))
    # passive agents
    for pred in order:
        if not nodes[pred].tag.startswith("V"):
            continue
        kids = children[pred]
        agents = [d for d, r in kids if r == "nmod:agent" and noun(d)]
        patients = [d for d, r in kids if r == "nsubjpass" and noun(d)]
        for s in agents:
            for o in patients:
                out.append((lem(s), lem(o), _predicate(g, pred)))
    # numbers on plural nouns (the three plural patterns between them cover every plural noun but a
    # case-less nmod object of a predicate with a plural subject, which does not occur in practice)
    for word in order:
        if _PLURAL.fullmatch(nodes[word].tag):
            nummod = g.child(word, "nummod")
            if nummod is not None:
                if nummod < word:
                    out.append((lem(word), lem(nummod)))
            else:
                qmod = g.child(word, QMOD)
                if qmod is not None:
                    out.append((lem(word), lem(qmod)))
    # compounds
    compound_nouns: set[int] = set()
    for tail in order:
        if not noun(tail):
            continue
        for head, r in children[tail]:
            if r == "compound" and noun(head):
                compound_nouns.update((tail, head))
                out.append((lem(tail), lem(head)))
    # remaining nouns
    for word in order:
        if noun(word) and word not in compound_nouns:
            out.append((lem(word),))
    return out
