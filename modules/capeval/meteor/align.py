"""METEOR 1.5's aligner (``edu.cmu.meteor.aligner.Aligner``) for English: matchers, then a beam search.

Line 1 is the hypothesis, line 2 the reference (both already normalised, lower-cased and split on
``StringTokenizer``'s delimiters).

**Matching.** Four stages add candidate matches to the list of their reference start position, in
this order (``Stage.matches``), and count, per word, how many matches cover it (coverage):

1. exact: equal words — compared as the jar compares them, by ``String.hashCode`` (so two distinct
   words with one 32-bit hash match, as in the jar);
2. stem: equal Snowball English stems (``snowballstemmer`` < 3, the jar's algorithm), different words;
3. synonym: intersecting WordNet synset sets (:mod:`capeval.meteor.synonyms`), different words;
4. paraphrase: a table phrase of the reference found as one of its paraphrases in the hypothesis, then
   a table phrase of the hypothesis found as a paraphrase in the reference (:mod:`capeval.meteor.paraphrase`),
   in the jar's emission order (phrase length, then file order, then position).

Identical sentences use the exact stage only. **Resolution.** A match that is alone at its start and
whose words no other match starts on is fixed; the rest is a left-to-right beam search (beam 40) over
partial alignments, ranked by the weighted number of covered words (``int`` fields updated with the
search weights 1.0 / 0.5 / 0.5 / 0.5, truncated as Java's ``int += double`` truncates), then fewer
chunks, then smaller distance — including the jar's quirk of adding a chosen match's distance to the
*parent* path. Sorting is stable like ``Collections.sort``. The final alignment's chunks and matches are
recounted over the chosen matches, as ``getCountAndChunks`` does.

**Several references** (:func:`best_stats`): the jar keeps the statistics of the first reference with the highest
score. Their candidates bound what each can score (:func:`score_bound`: every coverable word matched, in one chunk
where possible), so the references are aligned from the highest bound down and the search stops where the bound falls
below the best score found: the same statistics, fewer beam searches.
"""
from __future__ import annotations

from itertools import compress
from operator import itemgetter
from typing import NamedTuple

from capeval.meteor.stats import N_STAGES, STAT_FIELDS, score
from capeval.meteor.stats import score_bound as stats_bound

__all__ = ["BEAM_SIZE", "BOUND_MARGIN", "Sentence", "align_stats", "best_stats", "candidates", "hypothesis_index",
           "java_hash", "score_bound", "stats_of"]

BEAM_SIZE = 40
EXACT, STEM, SYNONYM, PARAPHRASE = range(N_STAGES)


def java_hash(word: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units, as an unsigned 32-bit value)."""
    h = 0
    for ch in word:
        code = ord(ch)
        if code > 0xFFFF:  # a surrogate pair in Java's UTF-16
            code -= 0x10000
            h = (31 * h + (0xD800 + (code >> 10))) & 0xFFFFFFFF
            h = (31 * h + (0xDC00 + (code & 0x3FF))) & 0xFFFFFFFF
        else:
            h = (31 * h + code) & 0xFFFFFFFF
    return h


#: Bits per packed item: a paraphrase's place in a sentence (``start << 3 | length``, :attr:`Sentence.paraphrases`) and
#: an entry's rank + 1 (:meth:`capeval.meteor.paraphrase.ParaphraseTable.packed_groups`).
SPOT_BITS = 40
RANK_BITS = 32


class Sentence(NamedTuple):
    """Everything the matchers need about one normalised, lower-cased, tokenised line.

    ``phrases``: ``(start, length, id)`` of each table phrase among its n-grams (word positions, words); ``reach``:
    every paraphrase id of those phrases as the keys of a dict (a pair whose other sentence holds none of them has no
    paraphrase match in that direction); ``paraphrases``: ``{id: places}`` where a table paraphrase occurs, each place
    ``start << 3 | length`` packed :data:`SPOT_BITS` bits apart in one int. Only numbers, strings, tuples of them and
    dicts of numbers: the garbage collector stops tracking a sentence at its first pass (a tracked one would be
    scanned at each of its later passes while the sentence lives).
    """

    words: tuple[str, ...]
    hashes: tuple[int, ...]
    stem_hashes: tuple[int, ...]
    synsets: tuple[tuple[int, ...], ...]
    function: tuple[bool, ...]
    phrases: tuple[tuple[int, int, int], ...]
    reach: dict[int, None]
    paraphrases: dict[int, int]
    n_function: int


def hypothesis_index(s1: Sentence) -> tuple[dict, dict, dict]:
    """Positions of line 1's word hashes, stem hashes and synsets (built once per hypothesis, used for each
    of its references)."""
    by_hash: dict[int, list[int]] = {}
    by_stem: dict[int, list[int]] = {}
    by_synset: dict[int, set[int]] = {}
    for i, (h, stem, synsets) in enumerate(zip(s1.hashes, s1.stem_hashes, s1.synsets)):
        by_hash.setdefault(h, []).append(i)
        by_stem.setdefault(stem, []).append(i)
        for synset in synsets:
            by_synset.setdefault(synset, set()).add(i)
    return by_hash, by_stem, by_synset


# A match: (start in line 2, length in line 2, start in line 1, length in line 1, stage,
#           line-1 bit mask, line-2 bit mask, search weight (both lines' increments), distance |start 2 - start 1|,
#           end in line 2, end in line 1)
Match = tuple


def _match(start: int, length: int, mstart: int, mlength: int, stage: int) -> Match:
    # search weights 1.0 (exact) and 0.5 (others): int(m + l * 0.5) == m + l // 2 for int m >= 0
    weight = mlength + length if stage == EXACT else mlength // 2 + length // 2
    return (start, length, mstart, mlength, stage, ((1 << mlength) - 1) << mstart, ((1 << length) - 1) << start,
            weight, abs(start - mstart), start + length, mstart + mlength)


def _word_matches(s1: Sentence, s2: Sentence, index1, matches: list, cov1: list, cov2: list) -> bool:
    """The exact, stem and synonym stages into ``matches`` and the coverage arrays; ``True`` when the lines are
    identical (the exact stage only)."""
    h1, h2 = s1.hashes, s2.hashes
    positions, stems, by_synset = index1 if index1 is not None else hypothesis_index(s1)
    for j, h in enumerate(h2):
        found = positions.get(h)
        if found:
            for i in found:
                matches[j].append((j, 1, i, 1, EXACT, 1 << i, 1 << j, 2, abs(j - i), j + 1, i + 1))
                cov1[i] += 1
                cov2[j] += 1
    if len(h1) == len(h2) and h1 == h2:
        return True
    for j, stem in enumerate(s2.stem_hashes):
        found = stems.get(stem)
        if found:
            for i in found:
                if h1[i] != h2[j]:
                    matches[j].append((j, 1, i, 1, STEM, 1 << i, 1 << j, 0, abs(j - i), j + 1, i + 1))
                    cov1[i] += 1
                    cov2[j] += 1
    if by_synset:
        shared_keys = by_synset.keys()
        for j, synsets in enumerate(s2.synsets):
            if not synsets:
                continue
            common = shared_keys & synsets
            if not common:
                continue
            found: set[int] = set()
            for synset in common:
                found |= by_synset[synset]
            for i in sorted(found):
                if h1[i] != h2[j]:
                    matches[j].append((j, 1, i, 1, SYNONYM, 1 << i, 1 << j, 0, abs(j - i), j + 1, i + 1))
                    cov1[i] += 1
                    cov2[j] += 1
    return False


def candidates(s1: Sentence, s2: Sentence, groups, index1=None) -> tuple[list[list[Match]], list[int], list[int]]:
    """Every candidate match of hypothesis ``s1`` against reference ``s2`` (``Stage.matches``: per line-2 position, in
    the jar's order) and the two coverage arrays (per word, how many candidates cover it): the input of
    :func:`score_bound` and :func:`stats_of`. ``groups`` and ``index1`` as in :func:`align_stats`."""
    n1, n2 = len(s1.words), len(s2.words)
    matches: list[list[Match]] = [[] for _ in range(n2)]
    cov1 = [0] * n1
    cov2 = [0] * n2
    if _word_matches(s1, s2, index1, matches, cov1, cov2) or groups is None:
        return matches, cov1, cov2
    # reference phrases whose paraphrase is in the hypothesis: per j, ordered by (length, rank, i);
    # then hypothesis phrases whose paraphrase is in the reference: per j, ordered by (i, length, rank)
    found2 = _paraphrase_hits(s2, s1, groups)
    found1 = _paraphrase_hits(s1, s2, groups)
    if not found2 and not found1:
        return matches, cov1, cov2
    spans = [(j, length, i, mlength) for j, length, _, i, mlength in sorted(found2)]
    spans += [(j, length, i, mlength) for j, i, mlength, _, length in
              sorted((j, i, mlength, rank, length) for i, mlength, rank, j, length in found1)]
    for j, length, i, mlength in spans:
        matches[j].append(_match(j, length, i, mlength, PARAPHRASE))
        for k in range(i, i + mlength):  # a paraphrase covers every word of its span
            cov1[k] += 1
        for k in range(j, j + length):
            cov2[k] += 1
    return matches, cov1, cov2


def _paraphrase_hits(phrase_side: Sentence, paraphrase_side: Sentence, groups) -> list[tuple[int, int, int, int, int]]:
    """``(phrase start, phrase length, rank, paraphrase start, paraphrase length)`` for every table phrase of
    ``phrase_side`` whose paraphrase occurs in ``paraphrase_side`` (one row per table entry); ``groups``: each
    phrase's ``{paraphrase id: ranks + 1 packed}`` by phrase id (the packed groups)."""
    where = paraphrase_side.paraphrases
    if not where or phrase_side.reach.keys().isdisjoint(where.keys()):
        return []
    hits: list[tuple[int, int, int, int, int]] = []
    spot_mask, rank_mask = (1 << SPOT_BITS) - 1, (1 << RANK_BITS) - 1
    for start, length, pid in phrase_side.phrases:
        group = groups[pid]
        for qid in group.keys() & where.keys():
            spots = where[qid]
            while spots:
                spot = spots & spot_mask
                spots >>= SPOT_BITS
                ranks = group[qid]
                while ranks:
                    hits.append((start, length, (ranks & rank_mask) - 1, spot >> 3, spot & 7))
                    ranks >>= RANK_BITS
    return hits


def _resolve(matches: list[list[Match]], fixed: list, used1: int, used2: int, beam: int, n1: int) -> list:
    """The beam search; returns the best path.

    A path is a list ``[key, span_end, last_match_end, used1, used2, chosen]``: ``chosen`` is a linked list
    ``(match, rest)`` of the matches it picked, and ``key`` encodes the jar's ranking (more weighted matched
    words, then fewer chunks, then smaller distance) as one integer ``chunks * C - total * C**2 + distance``
    with ``C`` a power of two above any chunk count or distance this alignment can reach, so that a stable
    sort on ``key`` orders paths as ``Collections.sort`` with ``PARTIAL_COMPARE_TOTAL`` does. The jar's ``idx`` (the
    next line-2 position of a path) is the current position except inside a match, so a path keeps only the end of
    its last match (``span_end``); at a position with no match that no path is inside, the paths only end their open
    chunk, in place and in order.
    """
    n2 = len(matches)
    # distances add up to at most (candidate matches) x (longest line); chunks to at most n2
    bound = max(sum(map(len, matches)) * (max(n1, n2) + 1), n2) + 1
    c1 = 1 << bound.bit_length()
    c2 = c1 * c1
    first = itemgetter(0)
    inside = 0  # the line-2 words inside a match after its first: where a path's bit may be set at an empty position
    for here in matches:
        for m in here:
            if m[1] > 1:
                inside |= m[6] & ~(1 << m[0])
    next_paths = [[0, 0, -1, used1, used2, None]]
    for current in range(n2):
        paths = next_paths
        if len(paths) > 1:
            paths.sort(key=first)
            if len(paths) > beam:
                del paths[beam:]
        bit = 1 << current
        here = matches[current]
        if not here and not inside & bit:  # no match here, no path inside one: each path only ends its chunk
            for path in paths:
                if path[2] != -1:
                    path[0] += c1
                    path[2] = -1
            continue
        next_paths = []
        append = next_paths.append
        for path in paths:
            if path[4] & bit:
                if current < path[1]:
                    append(path)
                else:
                    m = fixed[current]  # the jar's fixed[idx]: idx is the position here
                    if m is not None:
                        path[0] += m[8] - m[7] * c2 + (c1 if path[2] != -1 and m[2] != path[2] else 0)
                        path[1] = m[9]
                        path[2] = m[10]
                        append(path)
                continue
            last = path[2]
            if here:
                u1, u2, chosen = path[3], path[4], path[5]
                for m in here:
                    if (u2 & m[6]) or (u1 & m[5]):
                        continue
                    append([path[0] - m[7] * c2 + (c1 if last != -1 and m[2] != last else 0), m[9], m[10], u1 | m[5],
                            u2 | m[6], (m, chosen)])
                    path[0] += m[8]  # the jar adds the distance to the parent path
            if last != -1:
                path[0] += c1
                path[2] = -1
            append(path)
        if not next_paths:  # the jar warns "unexpected conditions" and keeps the best path
            append(paths[0])
    if len(next_paths) > 1:
        next_paths.sort(key=first)
        del next_paths[beam:]
    for path in next_paths:  # the last position: an open chunk is closed
        if path[2] != -1:
            path[0] += c1
    next_paths.sort(key=first)
    return next_paths[0]


def _fixed_matches(matches: list[list[Match]], cov1: list[int], cov2: list[int]) -> tuple[list, int, int, bool]:
    """The matches alone at their start whose words no other match covers (``fixed``, per line-2 position), the bit
    masks of the words they cover, and whether any other candidate is left for the search."""
    fixed: list = [None] * len(matches)
    used1 = used2 = 0
    open_choices = False
    for i, here in enumerate(matches):
        if not here:
            continue
        if len(here) == 1:
            m = here[0]
            if m[1] == 1 and m[3] == 1:
                overlap = cov2[i] != 1 or cov1[m[2]] != 1
            else:
                overlap = any(cov2[i + k] != 1 for k in range(m[1])) or any(cov1[m[2] + k] != 1 for k in range(m[3]))
            if not overlap:
                fixed[i] = m
                used2 |= m[6]
                used1 |= m[5]
                continue
        open_choices = True
    return fixed, used1, used2, open_choices


def score_bound(s1: Sentence, s2: Sentence, found: tuple) -> float:
    """An upper bound on the METEOR score of any alignment of ``s1`` with ``s2`` that picks among the candidates
    ``found`` (:func:`candidates`): every word a candidate covers matched at full weight, in as few chunks as the
    covered words allow (:func:`capeval.meteor.stats.score_bound`). ``inf`` for an empty line."""
    _, cov1, cov2 = found
    n1, n2 = len(cov1), len(cov2)
    if not n1 or not n2:
        return float("inf")
    return stats_bound((n1, s1.n_function, n1 - cov1.count(0), sum(compress(s1.function, cov1))),
                       (n2, s2.n_function, n2 - cov2.count(0), sum(compress(s2.function, cov2))))


def stats_of(s1: Sentence, s2: Sentence, found: tuple, beam: int = BEAM_SIZE) -> list[float]:
    """The 23 METEOR statistics of the best alignment among the candidates ``found`` (:func:`candidates`): the fixed
    matches, then the beam search over the rest, counted as ``Aligner.align`` and ``getCountAndChunks`` count."""
    matches, cov1, cov2 = found
    fixed, used1, used2, open_choices = _fixed_matches(matches, cov1, cov2)
    final: list = list(fixed)
    if open_choices:  # else the search's one path takes the fixed matches and nothing else
        node = _resolve(matches, fixed, used1, used2, beam, len(cov1))[5]
        while node is not None:
            m, node = node
            final[m[0]] = m
    return _count(s1, s2, final)


def _count(s1: Sentence, s2: Sentence, final: list) -> list[float]:
    """The statistics of the chosen matches ``final`` (per line-2 start; ``None`` elsewhere): per-stage counts over
    every chosen match (``Aligner.align``), chunks over the line-2 walk (``getCountAndChunks``)."""
    n1, n2 = len(s1.words), len(s2.words)
    content1 = [0] * N_STAGES
    content2 = [0] * N_STAGES
    function1 = [0] * N_STAGES
    function2 = [0] * N_STAGES
    f1, f2 = s1.function, s2.function
    for m in final:
        if m is None:
            continue
        stage = m[4]
        for k in range(m[2], m[2] + m[3]):
            if f1[k]:
                function1[stage] += 1
            else:
                content1[stage] += 1
        for k in range(m[0], m[0] + m[1]):
            if f2[k]:
                function2[stage] += 1
            else:
                content2[stage] += 1
    chunks = 0
    idx = 0
    last_end = -1
    while idx < n2:
        m = final[idx]
        if m is None:
            if last_end != -1:
                chunks += 1
                last_end = -1
            idx += 1
            continue
        if last_end != -1 and m[2] != last_end:
            chunks += 1
        idx = m[0] + m[1]
        last_end = m[2] + m[3]
    if last_end != -1:
        chunks += 1
    matched1 = sum(content1) + sum(function1)
    matched2 = sum(content2) + sum(function2)

    stats = [float(n1), float(n2), float(s1.n_function), float(s2.n_function)]
    for stage in range(N_STAGES):
        stats += [float(content1[stage]), float(content2[stage]), float(function1[stage]), float(function2[stage])]
    stats += [float(chunks), float(matched1), float(matched2)]
    assert len(stats) == STAT_FIELDS
    return stats


def align_stats(s1: Sentence, s2: Sentence, groups, beam: int = BEAM_SIZE, index1=None) -> list[float]:
    """The 23 METEOR statistics of hypothesis ``s1`` against reference ``s2`` (``MeteorScorer.getMeteorStats``).

    ``groups``: the paraphrase table's packed groups of (at least) the two sentences' phrases, by phrase id
    (:meth:`capeval.meteor.paraphrase.ParaphraseTable.packed_groups`; ``None``: no paraphrase stage); ``index1``:
    :func:`hypothesis_index` of ``s1`` when it is already built.
    """
    return stats_of(s1, s2, candidates(s1, s2, groups, index1), beam)


#: Scores closer than this to the best so far are aligned, whatever their bound (float rounding of the bound is
#: far below it; scores lie in [0, 1]).
BOUND_MARGIN = 1e-9


def best_stats(s1: Sentence, references: list[Sentence], groups, beam: int = BEAM_SIZE, index1=None) -> list[float]:
    """The statistics of the first reference with the highest score (``MeteorScorer.getMeteorStats`` over several
    references), the same as aligning each: the references are aligned in order of :func:`score_bound`, highest
    first, and one whose bound is below the best score found (by more than :data:`BOUND_MARGIN`) is not aligned, as
    its score could neither beat nor tie it."""
    if index1 is None:
        index1 = hypothesis_index(s1)
    found = [candidates(s1, s2, groups, index1) for s2 in references]
    if len(references) == 1:
        return stats_of(s1, references[0], found[0], beam)
    bounds = [score_bound(s1, s2, f) for s2, f in zip(references, found)]
    best: list[float] | None = None
    best_score, best_at = -1.0, -1
    for k in sorted(range(len(references)), key=lambda k: -bounds[k]):
        if bounds[k] + BOUND_MARGIN < best_score:
            break  # the rest are bounded lower still
        stats = stats_of(s1, references[k], found[k], beam)
        value = score(stats)
        if value > best_score or (value == best_score and k < best_at):
            best, best_score, best_at = stats, value, k
    return best
