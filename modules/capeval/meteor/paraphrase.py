"""METEOR 1.5's English paraphrase table as compact arrays, built once from the jar's ``paraphrase-en.gz``.

The table holds 5,274,084 entries ``(phrase, paraphrase)`` of 1–7 words each (430,639 distinct phrases,
entries of one phrase contiguous, 43,139 words). METEOR's ``ParaphraseTransducer`` keeps, per phrase,
its paraphrases in file order; ``ParaphraseMatcher`` matches a phrase of one sentence with a paraphrase
found in the other, in both directions.

Here every distinct phrase string (either side, 2.6 M; tokens joined by one space, split on
``StringTokenizer``'s delimiters as the jar splits them) gets an id (its rank among the phrases'
64-bit hashes, :mod:`capeval.meteor.phrase_arrays`; a hit confirmed on the string), and each entry becomes one key
``phrase_id << 22 | paraphrase_id``, sorted (stably, so equal keys keep file order) beside its *rank*:
the entry's position among its phrase's paraphrases in the file. A sentence's n-grams are looked up
together (cached across sentences); a phrase's paraphrases become a dict ``{paraphrase id: ranks}`` on
first use, so matching a sentence pair is a few dict lookups, and the rank restores the jar's
emission order.

Building: :meth:`ParaphraseTable.from_file` reads pycocoevalcap's canonical file with numpy alone (the lines stay
slices of one byte array, hashed, numbered and checked byte for byte in a few vectorised passes, some in threads:
about 4 s on one core of the project's machine, where a Python string and dict entry per line took 17–21 s); a file
that is not canonical is read line by line (:meth:`ParaphraseTable.from_lines`), the same table.

The arrays are cached under ``<cache>/meteor/`` (about 150 MB; written atomically with the umask's permissions,
keyed by a format version and the SHA-256 of the installed file's content, so environments with the same
pycocoevalcap file share one copy; ``capeval cache clear meteor`` removes them). An unwritable cache folder keeps
them in memory for the process (with a warning).
"""
from __future__ import annotations

import codecs
import gzip
import re
import threading
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from capeval.meteor.align import RANK_BITS
from capeval.meteor.phrase_arrays import (WORD_BITS, LineScan, gather, hash_bytes, hash_slices, ngrams, phrase_word_bits,
                                          slices_equal, unique_slices, word_bit)
from capeval.meteor.resources import paraphrase_file
from capeval.paths import atomic_write, cache_dir, file_digest, quarantine_cache_file
from capeval.progress import working
from capeval.validation import warn_at_caller

__all__ = ["MAX_PHRASE_WORDS", "ParaphraseTable", "ParaphraseCacheWarning", "default_table"]

#: Longest phrase (words) on either side of the English table.
MAX_PHRASE_WORDS = 7
#: Bound of :class:`KnownWords`' answers kept per word (emptied when full), so the memory a long run holds stops
#: growing. The table keeps nothing else per lookup: a batch of sentences is looked up at once (:meth:`ParaphraseTable.lookup`).
KNOWN_WORDS_CACHE_SIZE = 300_000
#: Hashes whose top 24 bits no phrase's hash has are not looked up (:meth:`ParaphraseTable.lookup`).
_FILTER_SHIFT = np.uint64(40)
_FORMAT = 2  # 2: phrase ids by phrase_arrays' hash (1: BLAKE2b)
_TOKENS = re.compile("[ \t\n\r\f]+")  # java.util.StringTokenizer's delimiters


class ParaphraseCacheWarning(UserWarning):
    """The paraphrase cache could not be written; the table is kept in memory for this process."""


def phrase_hash(phrase: str) -> int:
    """Stable 64-bit hash of a phrase string's UTF-8 bytes (:func:`capeval.meteor.phrase_arrays.hash_bytes`)."""
    return int(hash_bytes([phrase.encode("utf-8")])[0])


def _canonical(texts: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether no phrase string (``texts[offsets[i]:offsets[i + 1]]``) starts or ends with a space or holds two in a
    row: the strings are then as the jar's ``StringTokenizer`` re-joins them."""
    nonempty = offsets[1:] > offsets[:-1]
    if (texts[offsets[:-1][nonempty]] == 32).any() or (texts[offsets[1:][nonempty] - 1] == 32).any():
        return False
    space = texts == 32
    return not bool((space[1:] & space[:-1]).any())


def _utf8(data: np.ndarray) -> bool:
    """Whether the bytes are UTF-8 (the jar reads the file as UTF-8; other bytes are read line by line)."""
    try:
        codecs.utf_8_decode(memoryview(data), "strict", True)
    except UnicodeDecodeError:
        return False
    return True


class KnownWords:
    """The table's words as a bitmap filter (:func:`capeval.meteor.phrase_arrays.word_bits`): ``word in known`` is
    ``False`` only for a word no phrase contains (n-grams with it are not looked up); ``True`` for every table word
    and, rarely, another (its n-grams are then looked up and not found: the same matches, a little more work).
    Answers are kept per word."""

    def __init__(self, bits: np.ndarray | bytes) -> None:
        if isinstance(bits, np.ndarray):
            if bits.dtype == bool:
                bits = np.packbits(bits)
            bits = bits.tobytes()
        if len(bits) != 1 << (WORD_BITS - 3):
            raise ValueError(f"a word bitmap holds {1 << (WORD_BITS - 3)} bytes, not {len(bits)}")
        self.bits = bits
        self._seen: dict[str, bool] = {}

    @classmethod
    def of(cls, words: Iterable[str]) -> KnownWords:
        bits = np.zeros(1 << WORD_BITS, dtype=bool)
        bits[[word_bit(w.encode("utf-8")) for w in words]] = True
        return cls(bits)

    def __contains__(self, word: str) -> bool:
        found = self._seen.get(word)
        if found is None:
            k = word_bit(word.encode("utf-8"))
            found = self._seen[word] = bool(self.bits[k >> 3] >> (7 - (k & 7)) & 1)
            if len(self._seen) > KNOWN_WORDS_CACHE_SIZE:
                self._seen.clear()
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KnownWords) and self.bits == other.bits

    __hash__ = None  # type: ignore[assignment]


#: The arrays a saved table holds and their types.
_ARRAY_DTYPES = {"vocabulary": np.uint8, "hashes": np.uint64, "offsets": np.int64, "texts": np.uint8,
                 "is_phrase": np.bool_, "is_paraphrase": np.bool_, "keys": np.int64, "ranks": np.int32}


def check_arrays(arrays: dict[str, np.ndarray], shift: int) -> None:
    """Raise ``ValueError`` naming the first array of a saved table that is not what :meth:`ParaphraseTable.save`
    writes: its type, one dimension, the lengths that go together, ``hashes`` and ``keys`` sorted (lookups bisect
    them), ``offsets`` rising from 0 to the length of ``texts``, ids within ``shift`` bits, ranks not negative."""
    for name, dtype in _ARRAY_DTYPES.items():
        array = arrays[name]
        if array.dtype != dtype or array.ndim != 1:
            raise ValueError(f"array {name!r} is {array.dtype}{list(array.shape)}, expected one-dimensional "
                             f"{np.dtype(dtype)}")
    if not 0 < shift <= 31:
        raise ValueError(f"id width {shift} is out of range")
    hashes, offsets, keys, ranks = arrays["hashes"], arrays["offsets"], arrays["keys"], arrays["ranks"]
    phrases = len(hashes)
    if len(offsets) != phrases + 1 or len(arrays["is_phrase"]) != phrases or len(arrays["is_paraphrase"]) != phrases:
        raise ValueError("arrays 'hashes', 'offsets', 'is_phrase', 'is_paraphrase' have inconsistent lengths")
    if len(keys) != len(ranks):
        raise ValueError("arrays 'keys' and 'ranks' have different lengths")
    if offsets[0] != 0 or offsets[-1] != len(arrays["texts"]) or np.any(np.diff(offsets) < 0):
        raise ValueError("array 'offsets' does not rise from 0 to the length of 'texts'")
    if np.any(hashes[1:] < hashes[:-1]):
        raise ValueError("array 'hashes' is not sorted")
    if len(keys) and (np.any(keys[1:] < keys[:-1]) or keys[0] < 0 or keys[-1] >> shift >= phrases
                      or np.any((keys & ((1 << shift) - 1)) >= phrases)):
        raise ValueError("array 'keys' is not sorted or names phrases the table does not hold")
    if len(ranks) and ranks.min() < 0:
        raise ValueError("array 'ranks' holds a negative rank")


class ParaphraseTable:
    """Phrase ids and sorted (phrase, paraphrase) keys; see the module docstring.

    Phrase ids are positions in ``hashes`` (the sorted 64-bit hashes of every distinct phrase string);
    ``texts`` / ``offsets`` hold the strings in the same order, so a hash hit is confirmed by comparing
    the string.

    Attributes:
        vocabulary: the table's words (:class:`KnownWords`: a phrase with another word cannot be in it).
        hashes, offsets, texts: sorted phrase hashes (uint64), string offsets (int64), UTF-8 strings (uint8).
        is_phrase / is_paraphrase: per id, whether it occurs on the left / right side of an entry.
        keys: sorted ``phrase_id << shift | paraphrase_id`` of every entry (int64); ``shift`` bits per id.
        ranks: per key, the entry's position among its phrase's paraphrases in the file (int32).
    """

    def __init__(self, vocabulary: KnownWords, hashes: np.ndarray, offsets: np.ndarray, texts: np.ndarray,
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
        self._hash_filter = np.zeros(1 << (64 - int(_FILTER_SHIFT)), dtype=bool)  # 16 MB: 14 % of it set
        self._hash_filter[hashes >> _FILTER_SHIFT] = True  # whether some phrase's hash has these top 24 bits

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
        raw_hashes = hash_bytes(encoded)  # == phrase_hash(p)
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
        vocabulary = KnownWords.of(set(" ".join(phrases).split(" ")) - {""})
        return cls._from_ids(vocabulary, hashes, offsets, texts, left, right)

    @classmethod
    def from_bytes(cls, data: bytes) -> ParaphraseTable | None:
        """Build from the uncompressed file's bytes with numpy alone (:mod:`capeval.meteor.phrase_arrays`: no Python
        string per line; about 8x :meth:`from_lines`), the same table. ``None`` when the file is not canonical
        (a line with tabs, form feeds, carriage returns, NUL bytes, doubled, leading or trailing spaces, or bytes
        that are not UTF-8): :meth:`from_file` then reads it line by line as the jar does."""
        return cls.from_scan(LineScan.of_bytes(data))

    @classmethod
    def from_scan(cls, scan: LineScan) -> ParaphraseTable | None:
        """:meth:`from_bytes` of a file already read into a :class:`~capeval.meteor.phrase_arrays.LineScan`."""
        if not scan.plain:
            return None
        buffer, ends = scan.buffer, scan.ends
        scan.buffer = scan.ends = None  # freed as soon as the phrase strings are copied out (a lower peak)
        n = len(ends) // 3  # a trailing partial entry is never read by the jar's loop
        # entry k: probability line 3k, phrase line 3k + 1 (starts after line 3k's end), paraphrase line 3k + 2
        side_starts = np.concatenate([ends[0 : 3 * n : 3], ends[1 : 3 * n : 3]]) + 1
        side_lengths = np.concatenate([ends[1 : 3 * n : 3], ends[2 : 3 * n : 3]]) - side_starts
        del ends
        left_starts, left_lengths = side_starts[:n], side_lengths[:n]
        # a phrase's entries are contiguous in pycocoevalcap's file: its repeats are found by comparing neighbours,
        # and only the first of each run is numbered with the paraphrases
        run = np.ones(n, dtype=bool)
        if n > 1:
            same = np.flatnonzero(left_lengths[1:] == left_lengths[:-1])
            equal = slices_equal(buffer, left_starts[same + 1], left_starts[same], left_lengths[same + 1])
            run[same[equal] + 1] = False
            del same, equal
        run_of = np.cumsum(run, dtype=np.int32 if n < 2**31 else np.int64)
        run_of -= 1
        heads = np.flatnonzero(run)
        candidates_starts = np.concatenate([left_starts[heads], side_starts[n:]])
        candidates_lengths = np.concatenate([left_lengths[heads], side_lengths[n:]])
        del side_starts, side_lengths, left_starts, left_lengths
        try:
            hashes, first, ids = unique_slices(buffer, candidates_starts, candidates_lengths)
        except ValueError:
            raise ValueError("two phrases of the paraphrase table share a 64-bit hash") from None
        text_buffer, offsets = gather(buffer, candidates_starts[first], candidates_lengths[first], pad=True)
        del buffer, candidates_starts, candidates_lengths, first
        texts = text_buffer[: int(offsets[-1])]
        if not _canonical(texts, offsets) or (not scan.ascii and not _utf8(texts)):  # texts: every phrase string
            return None
        vocabulary = KnownWords(phrase_word_bits(text_buffer, offsets))
        return cls._from_ids(vocabulary, hashes, offsets, texts, ids[: len(heads)][run_of], ids[len(heads) :])

    @classmethod
    def _from_ids(cls, vocabulary: KnownWords, hashes: np.ndarray, offsets: np.ndarray, texts: np.ndarray,
                  left: np.ndarray, right: np.ndarray) -> ParaphraseTable:
        """The table from its phrase strings (ids = positions in sorted ``hashes``) and each entry's phrase and
        paraphrase ids in file order."""
        n, phrases = len(left), len(hashes)
        is_phrase = np.zeros(phrases, dtype=bool)
        is_phrase[left] = True
        is_paraphrase = np.zeros(phrases, dtype=bool)
        is_paraphrase[right] = True
        # rank of each entry among its phrase's entries, in file order (the jar appends as it reads)
        run = np.ones(n, dtype=bool)
        run[1:] = left[1:] != left[:-1]
        heads = np.flatnonzero(run)
        run_phrases = np.sort(left[heads])
        if not (run_phrases[1:] == run_phrases[:-1]).any():  # each phrase's entries in one run (pycocoevalcap's file)
            ranks = (np.arange(n) - np.repeat(heads, np.diff(np.r_[heads, n]))).astype(np.int32)
        else:
            ranks = cls._ranks(left)
        shift = max(1, phrases.bit_length())
        keys = (left.astype(np.int64) << shift) | right
        rank_bits = 64 - 2 * shift
        if n and int(ranks.max()) < 1 << rank_bits:
            # (phrase, paraphrase, rank) in one word: a plain sort is the stable sort by key (equal keys in file
            # order, which is rank order), several times faster than argsort
            both = np.sort((keys.astype(np.uint64) << np.uint64(rank_bits)) | ranks.astype(np.uint64))
            keys = (both >> np.uint64(rank_bits)).astype(np.int64)
            ranks = (both & np.uint64((1 << rank_bits) - 1)).astype(np.int32)
        else:
            by_key = np.argsort(keys, kind="stable")
            keys, ranks = keys[by_key], ranks[by_key]
        return cls(vocabulary, hashes, offsets, texts, is_phrase, is_paraphrase, keys, ranks, shift)

    @staticmethod
    def _ranks(left: np.ndarray) -> np.ndarray:
        """Per entry, how many entries of its phrase come before it in the file (``int32``)."""
        n = len(left)
        by_phrase = np.argsort(left, kind="stable")
        sorted_left = left[by_phrase]
        starts = np.r_[0, np.flatnonzero(sorted_left[1:] != sorted_left[:-1]) + 1] if n else np.zeros(0, np.int64)
        group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
        ranks = np.empty(n, dtype=np.int32)
        ranks[by_phrase] = np.arange(n) - group_start
        return ranks

    @classmethod
    def from_file(cls, path: str | Path) -> ParaphraseTable:
        """Read ``paraphrase-en.gz`` (or an uncompressed copy) the way ``ParaphraseTransducer`` does: with numpy
        (:meth:`from_bytes`) when its lines are canonical, as pycocoevalcap's are, else line by line."""
        path = Path(path)
        raw = path.read_bytes()
        scan = LineScan.of_gzip(raw) if path.suffix == ".gz" else LineScan.of_bytes(raw)
        del raw
        table = cls.from_scan(scan)
        if table is not None:
            return table
        del scan
        raw = path.read_bytes()  # not canonical: read again, line by line
        data = gzip.decompress(raw) if path.suffix == ".gz" else raw
        del raw
        text = data.decode("utf-8", "replace")
        del data
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
        vocabulary = np.frombuffer(self.vocabulary.bits, dtype=np.uint8)
        with atomic_write(path, fsync=False, prefix=path.name + ".", suffix=".tmp") as f:
            np.savez(f, vocabulary=vocabulary, hashes=self.hashes, offsets=self.offsets, texts=self.texts,
                     is_phrase=self.is_phrase, is_paraphrase=self.is_paraphrase, keys=self.keys,
                     ranks=self.ranks, meta=np.array([_FORMAT, self.shift]))

    @classmethod
    def load(cls, path: Path) -> ParaphraseTable:
        """The table saved by :meth:`save` at ``path``; ``ValueError`` naming what is wrong when an array has another
        type, shape or order than :meth:`save` writes (:func:`check_arrays`), so that a damaged or foreign file
        that still unpacks is rebuilt, never used."""
        with np.load(path, allow_pickle=False) as data:
            version, shift = (int(x) for x in data["meta"])
            if version != _FORMAT:
                raise ValueError(f"format {version}, expected {_FORMAT}")
            arrays = {name: data[name] for name in _ARRAY_DTYPES}
        check_arrays(arrays, shift)
        vocabulary = KnownWords(arrays.pop("vocabulary").tobytes())
        return cls(vocabulary, **arrays, shift=shift)

    # -- lookups ---------------------------------------------------------------------------------
    def phrase_id(self, phrase: str) -> int | None:
        """The id of a phrase string (words joined by single spaces), ``None`` when it is not in the table."""
        h = phrase_hash(phrase)
        k = int(np.searchsorted(self.hashes, np.uint64(h)))
        if k < len(self.hashes) and int(self.hashes[k]) == h:
            if self._text_bytes[self.offsets[k] : self.offsets[k + 1]] == phrase.encode("utf-8"):
                return k
        return None

    def lookup(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]]:
        """Per sentence (a sequence of words), its n-grams that are table phrases and those that are paraphrases.

        Returns, per sentence, two lists of ``(start, length, id)`` (word positions, words), ordered by start then
        length. Every sentence's n-grams made of table words are hashed and looked up together (one ``searchsorted``);
        a hash hit is confirmed on the string (a 64-bit collision is never taken for a phrase). Nothing is kept.
        """
        grams = ngrams(sentences, MAX_PHRASE_WORDS, self.vocabulary.bits)
        wanted = hash_slices(grams.buffer, grams.byte_start, grams.byte_length)
        maybe = np.flatnonzero(self._hash_filter[wanted >> _FILTER_SHIFT])  # about 1 in 2.5 n-grams
        wanted = wanted[maybe]
        order = np.argsort(wanted)
        where = np.empty(len(wanted), dtype=np.int64)
        where[order] = np.searchsorted(self.hashes, wanted[order])  # sorted queries: each search starts at the last
        where[where >= len(self.hashes)] = 0
        found = np.flatnonzero(self.hashes[where] == wanted)
        hit, ids = maybe[found], where[found]
        unique, first, back = np.unique(ids, return_index=True, return_inverse=True)
        texts, offsets, data = self._text_bytes, self.offsets, grams.data
        byte_start, byte_length = grams.byte_start[hit[first]].tolist(), grams.byte_length[hit[first]].tolist()
        same = np.fromiter((texts[offsets[k] : offsets[k + 1]] == data[b : b + n]
                            for k, b, n in zip(unique.tolist(), byte_start, byte_length)), dtype=bool, count=len(unique))
        confirmed = same[back.reshape(-1)]
        hit, ids = hit[confirmed], ids[confirmed]
        sentence, start, length = grams.sentence[hit], grams.start[hit], grams.length[hit]
        everyone = np.arange(len(sentences) + 1)

        def per_sentence(side: np.ndarray) -> list[list[tuple[int, int, int]]]:
            rows = list(zip(start[side].tolist(), length[side].tolist(), ids[side].tolist()))
            bounds = np.searchsorted(sentence[side], everyone).tolist()
            return [rows[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

        return list(zip(per_sentence(self.is_phrase[ids]), per_sentence(self.is_paraphrase[ids])))

    def sentence_phrases(self, words: Sequence[str]) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
        """:meth:`lookup` of one sentence."""
        return self.lookup([words])[0]

    def packed_groups(self, phrase_ids: Iterable[int]) -> dict[int, dict[int, int]]:
        """Each phrase's paraphrases: ``{phrase id: {paraphrase id: ranks}}``, read from the sorted keys for all the
        phrases at once; ``ranks``: each of the entry's positions in the file among the phrase's entries (two when an
        entry is listed twice) plus 1, packed :data:`capeval.meteor.align.RANK_BITS` bits apart in one int (dicts of
        ints: nothing for the garbage collector to track)."""
        wanted = np.fromiter(set(phrase_ids), dtype=np.int64)
        if not len(wanted):
            return {}
        lo = np.searchsorted(self.keys, wanted << self.shift)
        hi = np.searchsorted(self.keys, (wanted + 1) << self.shift)
        sizes = hi - lo
        at = np.repeat(lo - np.r_[0, np.cumsum(sizes)[:-1]], sizes) + np.arange(int(sizes.sum()))
        paraphrases = (self.keys[at] & ((1 << self.shift) - 1)).tolist()
        ranks = (self.ranks[at].astype(np.int64) + 1).tolist()
        out: dict[int, dict[int, int]] = {}
        k = 0
        for phrase, size in zip(wanted.tolist(), sizes.tolist()):
            found: dict[int, int] = {}
            for j in range(k, k + size):
                key = paraphrases[j]
                found[key] = found.get(key, 0) << RANK_BITS | ranks[j]
            out[phrase] = found
            k += size
        return out

    def group(self, phrase_id: int) -> dict[int, tuple[int, ...]]:
        """One phrase's paraphrases: ``{paraphrase id: ranks}`` (ranks: positions in the file among the phrase's
        entries, in file order; two when an entry is listed twice)."""
        out = {}
        for key, packed in self.packed_groups([phrase_id]).get(phrase_id, {}).items():
            ranks = []
            while packed:
                ranks.append((packed & ((1 << RANK_BITS) - 1)) - 1)
                packed >>= RANK_BITS
            out[key] = tuple(reversed(ranks))
        return out


_LOCK = threading.Lock()
_DEFAULT: ParaphraseTable | None = None


def _cache_path(source: Path) -> Path:
    """``<cache>/meteor/paraphrase-en-v<format>-<sha256 prefix of the source file>.npz``: keyed by the installed file's
    content, so every environment with the same pycocoevalcap file shares one copy."""
    return cache_dir("meteor") / f"{CACHE_PREFIX}{_FORMAT}-{file_digest(source)[:16]}.npz"


#: The cache files' name prefix (``capeval cache`` counts them as METEOR's).
CACHE_PREFIX = "paraphrase-en-v"
#: The line said while the table is built from pycocoevalcap's file (once per installed file: later runs, in any
#: environment with the same file, read the cached arrays in a fraction of a second).
BUILD_DESC = "building METEOR's paraphrase table (once per installation, about 5 s; cached for later runs)"


def _remove_older_formats(folder: Path) -> None:
    """Delete tables of older formats (``paraphrase-en-v1-*``: keyed by a file's size and time stamp, one copy per
    environment) once a current one is written: no reader of this version uses them."""
    for old in folder.glob(f"{CACHE_PREFIX}*.npz"):
        version = old.name[len(CACHE_PREFIX) :].split("-", 1)[0]
        if version.isdigit() and int(version) < _FORMAT:
            old.unlink(missing_ok=True)


def default_table(progress: bool | None = None) -> ParaphraseTable:
    """The process-wide English table: from the cache, else built from pycocoevalcap's file (and cached), announced
    by :data:`BUILD_DESC` (:func:`capeval.progress.working`: a line on stderr, also off a terminal; ``progress=False``
    says nothing)."""
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
                    _remove_older_formats(path.parent)
                except OSError as err:
                    path, reason = None, str(err)
        if path is None:
            warn_at_caller(f"METEOR's paraphrase cache could not be written ({reason}); the table is kept in memory "
                           "for this process and rebuilt in the next one. Set CAPEVAL_CACHE_DIR to a writable folder.",
                           ParaphraseCacheWarning)
        _DEFAULT = table
        return table
