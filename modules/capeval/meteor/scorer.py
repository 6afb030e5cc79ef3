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
process; words and sentences are cached, identical requests computed once.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Sequence

from capeval.meteor.align import BEAM_SIZE, Sentence, align_stats, hypothesis_index, java_hash
from capeval.meteor.normalize import normalize_line
from capeval.meteor.stats import aggregate, format_stats, parse_stats, score

__all__ = ["PythonMeteorScorer", "prepare_text", "snowball_english"]

_TOKEN_SPLIT = re.compile("[ \t\n\r\f]+")
_JAVA_TRIM = "".join(chr(c) for c in range(33))
#: Pairs whose table n-grams are looked up together (one vectorised lookup per step), so the pending lookups a call
#: holds do not grow with its number of captions. The sentence and statistics caches are bounded too (emptied when
#: full): the memory they hold stops growing at 20,000 sentences / 100,000 pairs (the paraphrase table's own caches:
#: :data:`capeval.meteor.paraphrase.GRAM_CACHE_SIZE`).
_STEP_PAIRS = 2048
_SENTENCE_CACHE_SIZE = 20_000
_STATS_CACHE_SIZE = 100_000


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


def prepare_text(text: str) -> str:
    """What the jar aligns for one field: sanitised and trimmed, ``-norm`` normalised, lower-cased."""
    from capeval.meteor.jar import sanitize

    return normalize_line(sanitize(text).strip(_JAVA_TRIM)).lower()


class PythonMeteorScorer:
    """METEOR 1.5 (``-l en -norm``) in Python; the interface of the jar driver. Thread-safe.

    Args:
        paraphrase: use the paraphrase stage (the jar's English default; ``False`` only for tests).
        beam: beam size of the alignment search (the jar's 40).
    """

    def __init__(self, paraphrase: bool = True, beam: int = BEAM_SIZE) -> None:
        self.beam = beam
        self.use_paraphrase = paraphrase
        self._lock = threading.Lock()
        self._loaded = False
        self._words: dict[str, tuple] = {}
        self._sentences: dict[str, Sentence] = {}
        self._stats: dict[tuple[str, tuple[str, ...]], str] = {}  # (hypothesis, references) -> statistics line
        self._prepared: dict[str, str] = {}  # raw text -> prepared line
        self._pending_grams: dict[str, list] = {}  # prepared line -> its resolved table n-grams (until built)
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
        found = self._words.get(word)
        if found is None:
            synonyms = self._synonyms
            found = (
                java_hash(word),
                java_hash(self._stemmer.stemWord(word)),
                synonyms.word_synsets(word) | synonyms.stem_synsets(word),
                word.lower() in self._function_words,
            )
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

    def _lookup_batch(self, texts) -> None:
        """Look up the table n-grams of every new sentence among ``texts`` at once (one vectorised lookup)."""
        if self._table is None:
            return
        grams: set[str] = set()
        pending = self._pending_grams
        if len(pending) >= _SENTENCE_CACHE_SIZE:
            pending.clear()
        for text in texts:
            line = self._prepare(text)
            if line not in self._sentences and line not in pending:
                found = self._table.grams([w for w in _TOKEN_SPLIT.split(line) if w])
                pending[line] = found
                grams.update(g[2] for g in found)
        self._table.resolve(grams)

    def sentence(self, line: str) -> Sentence:
        """The aligner's view of an already prepared line (see :func:`prepare_text`)."""
        found = self._sentences.get(line)
        if found is not None:
            return found
        words = tuple(w for w in _TOKEN_SPLIT.split(line) if w)
        info = [self._word(w) for w in words]
        if self._table is not None:
            phrases, paraphrases = self._table.sentence_phrases(words, self._pending_grams.pop(line, None))
        else:
            phrases, paraphrases = [], []
        function = tuple(x[3] for x in info)
        where: dict[int, tuple[tuple[int, int], ...]] = {}
        for start, length, pid in paraphrases:
            where[pid] = where.get(pid, ()) + ((start, length),)
        found = Sentence(
            words=words,
            hashes=tuple(x[0] for x in info),
            stem_hashes=tuple(x[1] for x in info),
            synsets=tuple(x[2] for x in info),
            function=function,
            phrases=tuple(phrases),
            paraphrases=where,
            n_function=sum(function),
        )
        if len(self._sentences) >= _SENTENCE_CACHE_SIZE:
            self._sentences.clear()
        self._sentences[line] = found
        return found

    # -- scoring ---------------------------------------------------------------------------------
    def segment_stats(self, hypothesis: str, references: Sequence[str]) -> list[float]:
        """Statistics of the best reference for one caption (raw texts; prepared here)."""
        with self._lock:
            self._load()
            test = self.sentence(self._prepare(hypothesis))
            index = hypothesis_index(test)
            best: list[float] | None = None
            best_score = -1.0
            for reference in references:
                stats = align_stats(test, self.sentence(self._prepare(reference)), self._table, self.beam, index)
                value = score(stats)
                if value > best_score:
                    best, best_score = stats, value
            return best

    def statistics(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]], progress=None) -> list[str]:
        """The jar's statistics line per (hypothesis, references) pair.

        Identical pairs are computed once, also across calls (up to 100,000 pairs are kept): METEOR and
        LCEval's METEOR feature in one ``capeval.score`` call align each caption once.
        """
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists.")
        for i, refs in enumerate(references):
            if len(refs) == 0:
                raise ValueError(f"references[{i}] is empty; METEOR needs at least one reference.")
        done = self._stats
        out: list[str] = []
        for start in range(0, len(hypotheses), _STEP_PAIRS):  # steps: memory flat in the number of captions
            step = range(start, min(start + _STEP_PAIRS, len(hypotheses)))
            with self._lock:
                self._load()
                todo = [i for i in step if (hypotheses[i], tuple(references[i])) not in done]
                self._lookup_batch({t for i in todo for t in (hypotheses[i], *references[i])})
            for i in step:
                hypothesis, refs = hypotheses[i], references[i]
                key = (hypothesis, tuple(refs))
                line = done.get(key)
                if line is None:
                    line = format_stats(self.segment_stats(hypothesis, refs))
                    self.computed += 1
                    if len(done) >= _STATS_CACHE_SIZE:
                        done.clear()
                    done[key] = line
                out.append(line)
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
