"""METEOR 1.5's English paraphrase table as compact arrays, built once from the jar's ``paraphrase-en.gz``.

The table holds 5,274,084 entries ``(phrase, paraphrase)`` of 1–7 words each (430,639 distinct phrases,
entries of one phrase contiguous, 43,139 words). METEOR's ``ParaphraseTransducer`` keeps, per phrase,
its paraphrases in file order; ``ParaphraseMatcher`` matches a phrase of one sentence with a paraphrase
found in the other, in both directions.

Here every distinct phrase string (either side, 2.6 M; tokens joined by one space, split on
``StringTokenizer``'s delimiters as the jar splits them) gets an id (its rank among the phrases'
64-bit BLAKE2b hashes, a hit confirmed on the string), and each entry becomes one key
``phrase_id << 22 | paraphrase_id``, sorted (stably, so equal keys keep file order) beside its *rank*:
the entry's position among its phrase's paraphrases in the file. A sentence's n-grams are looked up
together (cached across sentences); a phrase's paraphrases become a dict ``{paraphrase id: ranks}`` on
first use, so matching a sentence pair is a few dict lookups, and the rank restores the jar's
emission order.

The arrays are cached under ``<cache>/meteor/`` (about 150 MB; written atomically, keyed by the source
file's size and modification time and a format version); building them takes about 20 s, once. An
unwritable cache folder keeps them in memory for the process (with a warning).
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from capeval.meteor.resources import paraphrase_file
from capeval.paths import cache_dir, quarantine_cache_file
from capeval.progress import working
from capeval.validation import warn_at_caller

__all__ = ["MAX_PHRASE_WORDS", "ParaphraseTable", "ParaphraseCacheWarning", "default_table"]

#: Longest phrase (words) on either side of the English table.
MAX_PHRASE_WORDS = 7
#: Bounds of the per-process caches (emptied when full), so the memory a long run holds stops growing: looked-up
#: n-grams (about 150 bytes each) and phrases' paraphrase groups (built from the table on first use).
GRAM_CACHE_SIZE = 300_000
GROUP_CACHE_SIZE = 20_000
_FORMAT = 1
_TOKENS = re.compile("[ \t\n\r\f]+")  # java.util.StringTokenizer's delimiters


class ParaphraseCacheWarning(UserWarning):
    """The paraphrase cache could not be written; the table is kept in memory for this process."""


def phrase_hash(phrase: str) -> int:
    """Stable 64-bit hash of a phrase string (BLAKE2b, 8 bytes, little-endian)."""
    return int.from_bytes(hashlib.blake2b(phrase.encode("utf-8"), digest_size=8).digest(), "little")


class ParaphraseTable:
    """Phrase ids and sorted (phrase, paraphrase) keys; see the module docstring.

    Phrase ids are positions in ``hashes`` (the sorted 64-bit hashes of every distinct phrase string);
    ``texts`` / ``offsets`` hold the strings in the same order, so a hash hit is confirmed by comparing
    the string.

    Attributes:
        vocabulary: every word of the table (a phrase with another word cannot be in it).
        hashes, offsets, texts: sorted phrase hashes (uint64), string offsets (int64), UTF-8 strings (uint8).
        is_phrase / is_paraphrase: per id, whether it occurs on the left / right side of an entry.
        keys: sorted ``phrase_id << shift | paraphrase_id`` of every entry (int64); ``shift`` bits per id.
        ranks: per key, the entry's position among its phrase's paraphrases in the file (int32).
    """

    def __init__(self, vocabulary: frozenset[str], hashes: np.ndarray, offsets: np.ndarray, texts: np.ndarray,
                 is_phrase: np.ndarray, is_paraphrase: np.ndarray, keys: np.ndarray, ranks: np.ndarray, shift: int) -> None:
        if not (len(hashes) == len(is_phrase) == len(is_paraphrase) == len(offsets) - 1) or len(keys) != len(ranks):
            raise ValueError("inconsistent paraphrase table arrays")
        if len(hashes) >= 1 << shift or 2 * shift > 62:
            raise ValueError(f"{len(hashes)} phrases do not fit {shift}-bit ids.")
        self.vocabulary = vocabulary
        self.hashes = hashes
        self.offsets = offsets
        self.texts = texts
        self._text_bytes = texts.tobytes()
        self.is_phrase = is_phrase
        self.is_paraphrase = is_paraphrase
        self.keys = keys
        self.ranks = ranks
        self.shift = shift
        self._gram_ids: dict[str, tuple[int, bool, bool] | None] = {}  # n-gram -> (id, phrase?, paraphrase?) / None
        self._groups: dict[int, dict[int, tuple[int, ...]]] = {}  # phrase id -> {paraphrase id: ranks}

    def __len__(self) -> int:
        return len(self.keys)

    # -- building --------------------------------------------------------------------------------
    @classmethod
    def from_lines(cls, lines: list[str], canonical: bool = False) -> ParaphraseTable:
        """Build from the table's lines (probability, phrase, paraphrase, repeated), as the jar reads them.

        ``canonical=True`` promises that every phrase line is already its words joined by single spaces.
        """
        if len(lines) % 3:
            raise ValueError(f"a METEOR paraphrase table has 3 lines per entry; got {len(lines)} lines.")
        n = len(lines) // 3
        left_text, right_text = lines[1::3], lines[2::3]
        if not canonical:
            for side in (left_text, right_text):
                for k, text in enumerate(side):
                    if "  " in text or text[:1] == " " or text[-1:] == " " or "\t" in text or "\f" in text:
                        side[k] = " ".join(t for t in _TOKENS.split(text) if t)
        unique = dict.fromkeys(left_text)
        unique.update(dict.fromkeys(right_text))
        phrases = list(unique)
        del unique
        first_ids = {p: i for i, p in enumerate(phrases)}
        left = np.fromiter(map(first_ids.__getitem__, left_text), dtype=np.int64, count=n)
        right = np.fromiter(map(first_ids.__getitem__, right_text), dtype=np.int64, count=n)
        del first_ids, left_text, right_text
        encoded = [p.encode("utf-8") for p in phrases]
        digests = b"".join([hashlib.blake2b(e, digest_size=8).digest() for e in encoded])
        raw_hashes = np.frombuffer(digests, dtype="<u8").astype(np.uint64)  # == phrase_hash(p)
        order = np.argsort(raw_hashes, kind="stable")
        hashes = raw_hashes[order]
        if len(hashes) > 1 and bool((hashes[1:] == hashes[:-1]).any()):
            raise ValueError("two phrases of the paraphrase table share a 64-bit hash")
        new_id = np.empty(len(phrases), dtype=np.int64)
        new_id[order] = np.arange(len(phrases))
        left, right = new_id[left], new_id[right]
        encoded = [encoded[i] for i in order.tolist()]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        texts = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        del encoded
        vocabulary = frozenset(" ".join(phrases).split(" ")) - {""}
        is_phrase = np.zeros(len(phrases), dtype=bool)
        is_phrase[left] = True
        is_paraphrase = np.zeros(len(phrases), dtype=bool)
        is_paraphrase[right] = True
        # rank of each entry among its phrase's entries, in file order (the jar appends as it reads)
        by_phrase = np.argsort(left, kind="stable")
        sorted_left = left[by_phrase]
        starts = np.r_[0, np.flatnonzero(sorted_left[1:] != sorted_left[:-1]) + 1]
        group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
        ranks = np.empty(n, dtype=np.int32)
        ranks[by_phrase] = np.arange(n) - group_start
        shift = max(1, len(phrases).bit_length())
        keys = (left << shift) | right
        by_key = np.argsort(keys, kind="stable")
        return cls(vocabulary, hashes, offsets, texts, is_phrase, is_paraphrase, keys[by_key], ranks[by_key], shift)

    @classmethod
    def from_file(cls, path: str | Path) -> ParaphraseTable:
        """Read ``paraphrase-en.gz`` (or an uncompressed copy) the way ``ParaphraseTransducer`` does."""
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        canonical = not any(bad in text for bad in ("\t", "\f", "  ", " \n", "\n ", "\r")) and text[:1] != " "
        lines = text.split("\n") if "\r" not in text else re.split("\r\n|\r|\n", text)  # readLine's line ends
        del text
        if lines and lines[-1] == "":
            lines.pop()
        lines = lines[: len(lines) - len(lines) % 3]  # a trailing partial entry is never read by the jar's loop
        return cls.from_lines(lines, canonical=canonical)

    # -- cache -----------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """Write the arrays to ``path`` (``.npz``) atomically."""
        vocabulary = np.frombuffer("\n".join(sorted(self.vocabulary)).encode("utf-8"), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, vocabulary=vocabulary, hashes=self.hashes, offsets=self.offsets, texts=self.texts,
                         is_phrase=self.is_phrase, is_paraphrase=self.is_paraphrase, keys=self.keys,
                         ranks=self.ranks, meta=np.array([_FORMAT, self.shift]))
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    @classmethod
    def load(cls, path: Path) -> ParaphraseTable:
        with np.load(path, allow_pickle=False) as data:
            version, shift = (int(x) for x in data["meta"])
            if version != _FORMAT:
                raise ValueError(f"format {version}, expected {_FORMAT}")
            vocabulary = frozenset(data["vocabulary"].tobytes().decode("utf-8").split("\n"))
            return cls(vocabulary, data["hashes"], data["offsets"], data["texts"], data["is_phrase"],
                       data["is_paraphrase"], data["keys"], data["ranks"], shift)

    # -- lookups ---------------------------------------------------------------------------------
    def phrase_id(self, phrase: str) -> int | None:
        """The id of a phrase string (words joined by single spaces), ``None`` when it is not in the table."""
        h = phrase_hash(phrase)
        k = int(np.searchsorted(self.hashes, np.uint64(h)))
        if k < len(self.hashes) and int(self.hashes[k]) == h:
            if self._text_bytes[self.offsets[k] : self.offsets[k + 1]] == phrase.encode("utf-8"):
                return k
        return None

    def grams(self, words: Sequence[str]) -> list[tuple[int, int, str]]:
        """``(start, length, text)`` of every n-gram of ``words`` (1 to 7 words) made of table words only."""
        vocabulary = self.vocabulary
        grams: list[tuple[int, int, str]] = []
        n = len(words)
        for start in range(n):
            for length in range(1, min(MAX_PHRASE_WORDS, n - start) + 1):
                if words[start + length - 1] not in vocabulary:
                    break  # no phrase of the table contains an unknown word
                grams.append((start, length, " ".join(words[start : start + length])))
        return grams

    def resolve(self, grams: Iterable[str]) -> None:
        """Look up the n-grams not seen before, all at once (one ``searchsorted``), into the n-gram cache."""
        known = self._gram_ids
        wanted_grams = set(grams)
        if len(known) + len(wanted_grams) > GRAM_CACHE_SIZE:
            known.clear()  # before looking up: every gram asked for is in the cache afterwards
        new = [g for g in wanted_grams if g not in known]
        if not new:
            return
        wanted = np.array([phrase_hash(g) for g in new], dtype=np.uint64)
        where = np.searchsorted(self.hashes, wanted)
        where[where >= len(self.hashes)] = 0
        hit = (self.hashes[where] == wanted).tolist()
        texts, offsets = self._text_bytes, self.offsets
        is_phrase, is_paraphrase = self.is_phrase, self.is_paraphrase
        for gram, k, ok in zip(new, where.tolist(), hit):
            # a hash hit is confirmed on the string (a 64-bit collision is never taken for a phrase)
            if ok and texts[offsets[k] : offsets[k + 1]] == gram.encode("utf-8"):
                known[gram] = (k, bool(is_phrase[k]), bool(is_paraphrase[k]))
            else:
                known[gram] = None

    def sentence_phrases(self, words: Sequence[str], grams: list[tuple[int, int, str]] | None = None
                         ) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
        """The n-grams of ``words`` that are table phrases and those that are paraphrases.

        Returns two lists of ``(start, length, id)``, ordered by start then length. N-grams are answered from
        a cache (:meth:`resolve` fills it, for many sentences at once when the caller knows them; ``grams``:
        :meth:`grams` of ``words`` when already computed and resolved).
        """
        known = self._gram_ids
        if grams is None:
            grams = self.grams(words)
        if any(g[2] not in known for g in grams):  # not resolved yet, or the bounded cache was emptied since
            self.resolve(g[2] for g in grams)
        phrases: list[tuple[int, int, int]] = []
        paraphrases: list[tuple[int, int, int]] = []
        for start, length, gram in grams:
            found = known.get(gram)
            if found is None:
                continue
            k, left, right = found
            if left:
                phrases.append((start, length, k))
            if right:
                paraphrases.append((start, length, k))
        return phrases, paraphrases

    def group(self, phrase_id: int) -> dict[int, tuple[int, ...]]:
        """A phrase's paraphrases: ``{paraphrase id: ranks}`` (ranks: positions in the file among the phrase's
        entries; two when an entry is listed twice). Built on first use and kept."""
        found = self._groups.get(phrase_id)
        if found is None:
            lo, hi = np.searchsorted(self.keys, [phrase_id << self.shift, (phrase_id + 1) << self.shift])
            mask = (1 << self.shift) - 1
            found = {}
            for key, rank in zip((self.keys[lo:hi] & mask).tolist(), self.ranks[lo:hi].tolist()):
                found[key] = found.get(key, ()) + (rank,)
            if len(self._groups) >= GROUP_CACHE_SIZE:  # bounded: the whole table as dicts would take gigabytes
                self._groups.clear()
            self._groups[phrase_id] = found
        return found


_LOCK = threading.Lock()
_DEFAULT: ParaphraseTable | None = None


def _cache_path(source: Path) -> Path:
    stat = source.stat()
    return cache_dir("meteor") / f"paraphrase-en-v{_FORMAT}-{stat.st_size}-{stat.st_mtime_ns}.npz"


#: The bar shown while the table is built from pycocoevalcap's file (once per cache folder: the next runs read the
#: cached arrays in about a second).
BUILD_DESC = "building METEOR's paraphrase table (once, ~20 s; cached for later runs)"


def default_table(progress: bool | None = None) -> ParaphraseTable:
    """The process-wide English table: from the cache, else built from pycocoevalcap's file (and cached), under a
    :data:`BUILD_DESC` bar (``progress``: as :func:`capeval.progress.progress`; no count, rate or ETA)."""
    global _DEFAULT
    with _LOCK:
        if _DEFAULT is not None:
            return _DEFAULT
        source = paraphrase_file()
        try:
            path = _cache_path(source)
        except OSError as err:
            path = None
            reason = str(err)
        if path is not None and path.is_file():
            try:
                _DEFAULT = ParaphraseTable.load(path)
                return _DEFAULT
            except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as err:
                quarantine_cache_file(path, f"could not be read ({err})")
        with working(BUILD_DESC, enabled=progress):
            table = ParaphraseTable.from_file(source)
            if path is not None:
                try:
                    table.save(path)
                except OSError as err:
                    path, reason = None, str(err)
        if path is None:
            warn_at_caller(f"METEOR's paraphrase cache could not be written ({reason}); the table is kept in memory "
                           "for this process and rebuilt in the next one. Set CAPEVAL_CACHE_DIR to a writable folder.",
                           ParaphraseCacheWarning)
        _DEFAULT = table
        return table
