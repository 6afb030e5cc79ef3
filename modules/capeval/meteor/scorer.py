"""Pure-Python METEOR 1.5: pycocoevalcap's ``java -jar meteor-1.5.jar - - -stdio -l en -norm`` without a JVM.

:class:`PythonMeteorScorer` has the interface of the jar driver (:class:`capeval.meteor.jar.MeteorScorer`):
:meth:`~PythonMeteorScorer.statistics` gives the jar's statistics line per (hypothesis, references),
:meth:`~PythonMeteorScorer.evaluate` the segment scores and the corpus score from summed statistics as
the jar's ``EVAL`` computes them. Per caption, as ``MeteorScorer.getMeteorStats(test, references)``:
the texts are made safe as the jar driver makes them (:func:`capeval.meteor.jar.sanitize`) and trimmed,
normalised (:mod:`capeval.meteor.normalize`), lower-cased, split into words, aligned with each reference
(:mod:`capeval.meteor.align`), and the statistics of the first reference with the highest score kept.

The language data (function words, synonyms, paraphrase table, Snowball stemmer) loads on first use
(about 1 s with the paraphrase cache built; see :mod:`capeval.meteor.paraphrase`) and stays for the
process; identical requests are computed once.

What a call leaves behind is bounded and light for Python's garbage collector: statistics lines and prepared texts
(strings keyed by strings: dicts the collector does not track) and one entry per distinct word. The sentences a call
builds (the table phrases of each, looked up for a whole step at once) hold only numbers, strings, tuples and dicts
of numbers, which the collector stops tracking at its first pass, and are let go when the call returns. Held across
calls as objects the collector tracks, the sentence, n-gram and group caches of a 20,000-caption call were 0.7 M
objects, which it scanned at its next pass: after ``capeval.score`` (which pauses the collector during a call) the
next one-caption call took 0.44 s instead of about a millisecond (``benchmarks/meteor_speed.py``).

A large call's pairs are split over forked processes (:mod:`capeval.meteor.forked`).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from itertools import chain

from capeval.meteor.align import BEAM_SIZE, SPOT_BITS, Sentence, java_hash
from capeval.meteor.compiled import aligner
from capeval.meteor.forked import ForkedShares, can_fork, default_processes
from capeval.meteor.normalize import normalize_line
from capeval.meteor.stats import aggregate, format_stats, parse_stats, score

__all__ = ["PythonMeteorScorer", "pair_key", "prepare_text", "snowball_english"]

#: The best-reference search of :mod:`capeval.meteor.align`, compiled when it can be (:mod:`capeval.meteor.compiled`).
best_stats = aligner().best_stats
_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")
_JAVA_TRIM = "".join(chr(c) for c in range(33))
#: Pairs whose sentences are built together (their table n-grams looked up in one vectorised lookup per step). The
#: caches are bounded (emptied when full): 20,000 sentences within a call (and prepared texts), 100,000 statistics
#: lines, 100,000 words.
_STEP_PAIRS = 2048
_SENTENCE_CACHE_SIZE = 20_000
_STATS_CACHE_SIZE = 100_000
_WORD_CACHE_SIZE = 100_000
#: Pairs to compute per process of a call (fewer: fewer processes; under twice as many: this process alone).
_PAIRS_PER_PROCESS = 500


def snowball_english():
    """The Snowball English stemmer of the jar (``snowballstemmer`` 2.x; 3.x changed the algorithm)."""
    try:
        import snowballstemmer
    except ImportError as err:  # pragma: no cover - a declared dependency
        raise ImportError("METEOR's stem matcher needs snowballstemmer: pip install 'snowballstemmer>=2,<3'") from err
    version = getattr(snowballstemmer, "__version__", None)
    if version is None:
        from importlib.metadata import PackageNotFoundError, version as dist_version

        try:
            version = dist_version("snowballstemmer")
        except PackageNotFoundError:  # pragma: no cover
            version = "0"
    if int(str(version).split(".")[0]) >= 3:
        raise ImportError(
            f"snowballstemmer {version} stems English differently from METEOR 1.5's stemmer (e.g. 'added', "
            "'anthropologist'); install a 2.x release: pip install 'snowballstemmer>=2,<3'"
        )
    return snowballstemmer.stemmer("english")


def pair_key(hypothesis: str, references: Sequence[str]) -> str:
    """One string per (hypothesis, references) pair, different for different pairs (each text after its length):
    a cache key the garbage collector does not track, unlike a tuple."""
    return "".join([f"{len(text)}:{text}" for text in (hypothesis, *references)])


def prepare_text(text: str) -> str:
    """What the jar aligns for one field: sanitised and trimmed, ``-norm`` normalised, lower-cased."""
    from capeval.meteor.jar import sanitize

    return normalize_line(sanitize(text).strip(_JAVA_TRIM)).lower()


class PythonMeteorScorer:
    """METEOR 1.5 (``-l en -norm``) in Python; the interface of the jar driver. Thread-safe.

    Args:
        paraphrase: use the paraphrase stage (the jar's English default; ``False`` only for tests).
        beam: beam size of the alignment search (the jar's 40).
        processes: the most processes (this one included) a call's pairs are split over, one per
            :data:`_PAIRS_PER_PROCESS` pairs to compute (:mod:`capeval.meteor.forked`; where forking is not safe,
            one); ``None``: the CPUs this process may use, at most :data:`capeval.meteor.forked.MAX_PROCESSES`.
            The statistics do not depend on it.
    """

    def __init__(self, paraphrase: bool = True, beam: int = BEAM_SIZE, processes: int | None = None) -> None:
        if processes is not None and (not isinstance(processes, int) or isinstance(processes, bool) or processes < 1):
            raise ValueError(f"processes must be a positive integer or None, got {processes!r}.")
        self.beam = beam
        self.processes = processes
        self.use_paraphrase = paraphrase
        self._lock = threading.Lock()
        self._loaded = False
        self._words: dict[str, tuple] = {}
        self._sentences: dict[str, Sentence] = {}  # prepared line -> sentence, within a call
        self._groups: dict[int, dict[int, int]] = {}  # the cached sentences' phrases' packed paraphrase groups
        self._stats: dict[str, str] = {}  # pair_key(hypothesis, references) -> statistics line
        self._prepared: dict[str, str] = {}  # raw text -> prepared line
        self.computed = 0  # captions aligned (not answered from the cache), for tests and benchmarks

    # -- resources -------------------------------------------------------------------------------
    def load(self, progress: bool | None = None) -> None:
        """Load the language data now rather than at the first caption, so that a progress bar over the captions
        measures the captions only; the paraphrase table's one-time build shows a bar of its own (``progress``:
        as :func:`capeval.progress.progress`)."""
        with self._lock:
            self._load(progress)

    def _load(self, progress: bool | None = None) -> None:
        if self._loaded:
            return
        from capeval.meteor.resources import function_words
        from capeval.meteor.synonyms import default_synonyms

        self._stemmer = snowball_english()
        self._synonyms = default_synonyms()
        self._function_words = function_words()
        if self.use_paraphrase:
            from capeval.meteor.paraphrase import default_table

            self._table = default_table(progress=progress)
        else:
            self._table = None
        self._loaded = True

    def _word(self, word: str) -> tuple:
        """``(hash, stem hash, synsets, is a function word)`` of a word (kept; emptied when full)."""
        found = self._words.get(word)
        if found is None:
            synonyms = self._synonyms
            found = (
                java_hash(word),
                java_hash(self._stemmer.stemWord(word)),
                tuple(synonyms.word_synsets(word) | synonyms.stem_synsets(word)),
                word.lower() in self._function_words,
            )
            if len(self._words) >= _WORD_CACHE_SIZE:
                self._words.clear()
            self._words[word] = found
        return found

    def _prepare(self, text: str) -> str:
        found = self._prepared.get(text)
        if found is None:
            found = prepare_text(text)
            if len(self._prepared) >= _SENTENCE_CACHE_SIZE:
                self._prepared.clear()
            self._prepared[text] = found
        return found

    def _add_sentences(self, texts: Iterable[str]) -> None:
        """Build the aligner's view of every text among ``texts`` not built yet, the table phrases of all of them
        looked up at once (:meth:`capeval.meteor.paraphrase.ParaphraseTable.lookup`), and read their phrases'
        paraphrase groups."""
        cache = self._sentences
        wanted = dict.fromkeys(map(self._prepare, texts))
        lines = [line for line in wanted if line not in cache]
        if len(cache) + len(lines) > _SENTENCE_CACHE_SIZE:  # full: only the batch's sentences are kept
            kept = {line: cache[line] for line in wanted if line in cache}
            cache.clear()
            cache.update(kept)
            self._groups.clear()
            self._add_groups([sentence.phrases for sentence in kept.values()])
        words = [tuple(w for w in _TOKEN_SPLIT.split(line) if w) for line in lines]
        found = self._table.lookup(words) if self._table is not None else [([], [])] * len(lines)
        self._add_groups([phrases for phrases, _ in found])
        for line, sentence_words, (phrases, paraphrases) in zip(lines, words, found):
            cache[line] = self._sentence(sentence_words, phrases, paraphrases)

    def _add_groups(self, phrase_lists: Iterable) -> None:
        """Read the packed paraphrase groups (:meth:`capeval.meteor.paraphrase.ParaphraseTable.packed_groups`) of
        the phrases ``(start, length, id)`` in ``phrase_lists`` not read yet."""
        if self._table is None:
            return
        groups = self._groups
        missing = {pid for phrases in phrase_lists for _, _, pid in phrases if pid not in groups}
        if missing:
            groups.update(self._table.packed_groups(missing))

    def _sentence(self, words: tuple[str, ...], phrases: list, paraphrases: list) -> Sentence:
        """One line's :class:`Sentence` from its words and its table phrases and paraphrases ``(start, length,
        id)`` (the phrases' groups read already)."""
        known = self._words.get
        info = [known(w) or self._word(w) for w in words]
        hashes, stem_hashes, synsets, function = zip(*info) if info else ((), (), (), ())
        where: dict[int, int] = {}  # paraphrase id -> its places, packed (see Sentence)
        for start, length, pid in paraphrases:
            where[pid] = where.get(pid, 0) << SPOT_BITS | start << 3 | length
        groups = self._groups
        reach = dict.fromkeys(chain.from_iterable(groups[pid] for _, _, pid in phrases))
        return Sentence(words, hashes, stem_hashes, synsets, function, tuple(phrases), reach, where, sum(function))

    def sentence(self, line: str) -> Sentence:
        """The aligner's view of an already prepared line (see :func:`prepare_text`)."""
        found = self._sentences.get(line)
        if found is None:
            if len(self._sentences) >= _SENTENCE_CACHE_SIZE:
                self._sentences.clear()  # not the groups: a sentence being aligned may need them
            words = tuple(w for w in _TOKEN_SPLIT.split(line) if w)
            phrases, paraphrases = self._table.lookup([words])[0] if self._table is not None else ([], [])
            self._add_groups([phrases])
            found = self._sentences[line] = self._sentence(words, phrases, paraphrases)
        return found

    # -- scoring ---------------------------------------------------------------------------------
    def segment_stats(self, hypothesis: str, references: Sequence[str]) -> list[float]:
        """Statistics of the best reference for one caption (raw texts; prepared here)."""
        with self._lock:
            self._load()
            test = self.sentence(self._prepare(hypothesis))
            groups = self._groups if self._table is not None else None
            return best_stats(test, [self.sentence(self._prepare(reference)) for reference in references], groups,
                              self.beam)

    def statistics(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress=None) -> list[str]:
        """The jar's statistics line per (hypothesis, references) pair.

        Identical pairs are computed once, also across calls (up to 100,000 pairs are kept): METEOR and
        LCEval's METEOR feature in one ``capeval.score`` call align each caption once. The sentences built for
        the call are let go when it returns (see the module docstring).
        """
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists.")
        for i, refs in enumerate(references):
            if len(refs) == 0:
                raise ValueError(f"references[{i}] is empty; METEOR needs at least one reference.")
        try:
            return self._statistics(hypotheses, references, progress)
        finally:
            with self._lock:
                self._sentences.clear()
                self._groups.clear()

    def _statistics(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress) -> list[str]:
        done = self._stats
        keys = [pair_key(h, r) for h, r in zip(hypotheses, references)]
        lines = {key: done[key] for key in keys if key in done}
        first: dict[str, int] = {}  # each pair to compute, at its first place
        for i, key in enumerate(keys):
            if key not in lines:
                first.setdefault(key, i)
        todo = list(first.values())
        with self._lock:
            self._load()  # before a fork: the children share the loaded data
        shares = self._shares(todo)
        children = None
        if len(shares) > 1:
            children = ForkedShares(lambda share: self._compute(hypotheses, references, share), shares[1:])
        try:
            lines.update(zip((keys[i] for i in shares[0]), self._compute(hypotheses, references, shares[0], progress)))
            for share, found in children.results() if children is not None else ():
                if found is None:  # the child failed: its share is computed here (an error is raised here)
                    found = self._compute(hypotheses, references, share)
                elif progress is not None:
                    progress.update(len(share))
                lines.update(zip((keys[i] for i in share), found))
        finally:
            if children is not None:
                children.close()
        self.computed += len(todo)
        if progress is not None and len(keys) > len(todo):
            progress.update(len(keys) - len(todo))  # pairs answered from the cache or repeated in the call
        for key, line in lines.items():
            if key not in done:
                if len(done) >= _STATS_CACHE_SIZE:
                    done.clear()
                done[key] = line
        return [lines[key] for key in keys]

    def _shares(self, todo: list[int]) -> list[list[int]]:
        """Contiguous shares of the pairs to compute, the first for this process, one each for the children
        (:mod:`capeval.meteor.forked`): a share per :data:`_PAIRS_PER_PROCESS` pairs, up to :attr:`processes`."""
        processes = self.processes if self.processes is not None else default_processes()
        count = min(processes, len(todo) // _PAIRS_PER_PROCESS)
        if count < 2 or not can_fork():
            return [todo]
        bounds = [len(todo) * k // count for k in range(count + 1)]
        return [todo[bounds[k] : bounds[k + 1]] for k in range(count)]

    def _compute(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], indices: Sequence[int],
                 progress=None) -> list[str]:
        """The statistics lines of the pairs at ``indices``, in steps of :data:`_STEP_PAIRS` pairs whose sentences
        are built together (memory flat in the number of pairs)."""
        out: list[str] = []
        for start in range(0, len(indices), _STEP_PAIRS):
            step = indices[start : start + _STEP_PAIRS]
            with self._lock:
                self._add_sentences({t for i in step for t in (hypotheses[i], *references[i])})
            for i in step:
                out.append(format_stats(self.segment_stats(hypotheses[i], references[i])))
                if progress is not None:
                    progress.update(1)
        return out

    def evaluate(self, statistics: Sequence[str]) -> tuple[float, list[float]]:
        """``(corpus score, segment scores)`` of statistics lines, as the jar's ``EVAL`` answers them."""
        if not statistics:
            raise ValueError("No statistics to evaluate.")
        rows = [parse_stats(line) for line in statistics]
        return score(aggregate(rows)), [score(row) for row in rows]

    def score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress=None) -> tuple[float, list[float]]:
        """``(corpus METEOR, per-caption METEOR)`` exactly as pycocoevalcap's ``Meteor.compute_score``."""
        return self.evaluate(self.statistics(hypotheses, references, progress))

    def close(self) -> None:
        """Nothing to stop (kept for the jar driver's interface)."""

    def __enter__(self) -> PythonMeteorScorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
