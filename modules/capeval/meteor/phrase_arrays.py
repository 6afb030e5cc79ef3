"""Many byte strings at once as numpy arrays: the vectorised half of :mod:`capeval.meteor.paraphrase`'s table build.

METEOR's English paraphrase file holds 15.8 M lines (272 MB uncompressed); turning each line into a Python string
and a dict entry took about 17 s. Here the lines stay where they are, in one ``uint8`` array of the file's bytes, as
``(start, length)`` slices: :func:`hash_slices` gives every slice a 64-bit hash in a few numpy passes (eight bytes
per pass, longest slices first), :func:`unique_slices` numbers the distinct strings by hash (every slice compared
byte for byte with its group's first one, so two different strings never share an id), :func:`gather` copies the
chosen slices into one buffer and :func:`words_of` splits phrase strings at single spaces.

The hash (:func:`hash_bytes` for a few strings, the same numbers) is a fixed function of the bytes: the length
times a constant, each little-endian 8-byte word (the last one zero-padded) xor-ed in and multiplied by an odd
constant, then splitmix64's finaliser; for strings of at most 8 bytes it is a bijection of the bytes at a given
length, so equal lengths and hashes there mean equal strings. :func:`word_bits` / :func:`word_bit` mark words in
a bitmap (a filter: a word not marked is in no string). It
is part of the cached table's format: the lookups of :class:`capeval.meteor.paraphrase.ParaphraseTable` hash the
n-grams of sentences the same way.
"""
from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["PAD", "WORD_BITS", "LineScan", "NGrams", "gather", "hash_bytes", "hash_slices", "index_dtype", "ngrams",
           "padded", "phrase_word_bits", "slices_equal", "unique_slices", "word_bit", "word_bits", "words_of"]

#: Zero bytes a buffer needs after its last slice (a pass reads eight bytes at a time).
PAD = 8
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
#: log2 of the word bitmap's size (2 MB of bits): about 43,000 words mark 0.3 % of it.
WORD_BITS = 24


def padded(data: bytes | bytearray | memoryview) -> np.ndarray:
    """``data`` as a ``uint8`` array followed by :data:`PAD` zero bytes (one copy)."""
    out = np.zeros(len(data) + PAD, dtype=np.uint8)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def _positions(values) -> np.ndarray:
    """Byte positions or lengths as an integer array (``int32`` or ``int64`` kept: half the memory for files under
    2 GB, see :func:`index_dtype`)."""
    values = np.asarray(values)
    return values if values.dtype in (np.int32, np.int64) else values.astype(np.int64)


def index_dtype(size: int) -> type:
    """``int32`` for positions in a buffer of ``size`` bytes under 2 GB (half the memory of ``int64``), else
    ``int64``."""
    return np.int32 if size + 2 * PAD < 2**31 else np.int64


def _words(buffer: np.ndarray) -> np.ndarray:
    """``view[i]`` = the little-endian 64-bit word of ``buffer[i : i + 8]`` (an unaligned view, no copy)."""
    if buffer.dtype != np.uint8 or buffer.ndim != 1 or not buffer.flags.c_contiguous:
        raise ValueError("expected a contiguous uint8 buffer")
    return np.ndarray(shape=(max(0, len(buffer) - 7),), dtype="<u8", buffer=buffer, strides=(1,))


def _mix(h: np.ndarray) -> None:
    """splitmix64's finaliser, in place."""
    h ^= h >> _S30
    h *= _M1
    h ^= h >> _S27
    h *= _M2
    h ^= h >> _S31


#: ``_TAIL[r]``: the mask of a word's first ``r`` bytes (``r`` = 0 .. 8).
_TAIL = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def _tail_mask(remaining: np.ndarray) -> np.ndarray:
    """Per slice, the mask of its last word's ``remaining`` bytes (8 and more: the whole word)."""
    return _TAIL[np.minimum(remaining, 8)]


def _rounds(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slices longest first: ``(order, counts)`` where ``counts[j]`` is how many slices have more than ``j`` 8-byte
    words (the first ``counts[j]`` in ``order``). Sorted by word count with a radix sort (no comparison sort)."""
    n_words = (lengths + 7) // 8
    top = int(n_words.max()) if len(n_words) else 0
    if top < 255:
        order = np.argsort((255 - n_words).astype(np.uint8), kind="stable")
    else:
        order = np.argsort(-n_words, kind="stable")
    per_count = np.bincount(n_words, minlength=top + 1)
    counts = (len(n_words) - np.cumsum(per_count))[:top]  # slices with more than j words, j = 0 .. top - 1
    return order, counts


def _threads() -> int:
    """Threads for the long passes (numpy releases the GIL in them): the CPUs this process may use, at most 4."""
    from capeval.workers import usable_cpus

    return max(1, min(4, usable_cpus()))


def _in_parts(function, *arrays: np.ndarray, part: int = 1 << 19) -> np.ndarray:
    """``function(*arrays)`` computed on consecutive parts of at most ``part`` items, several at a time in threads,
    the parts' results concatenated: the temporary arrays stay small (fresh memory is what a pass pays most for)."""
    size = len(arrays[0])
    if size <= part:
        return function(*arrays)
    bounds = list(range(0, size, part)) + [size]

    first = function(*(a[bounds[0] : bounds[1]] for a in arrays))
    out = np.empty(size, dtype=first.dtype)  # every part's result has the first's type
    out[: bounds[1]] = first

    def one(i: int) -> None:
        out[bounds[i] : bounds[i + 1]] = function(*(a[bounds[i] : bounds[i + 1]] for a in arrays))

    with ThreadPoolExecutor(_threads()) as pool:
        list(pool.map(one, range(1, len(bounds) - 1)))
    return out


def hash_slices(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """64-bit hashes (``uint64``) of ``buffer[starts[i] : starts[i] + lengths[i]]``; equal bytes, equal hash.

    ``buffer``: ``uint8`` with :data:`PAD` readable bytes after the last slice (:func:`padded`); ``starts`` and
    ``lengths``: integer arrays (bytes, lengths >= 0).
    """
    starts, lengths = _positions(starts), _positions(lengths)
    if len(starts) and int((starts + lengths).max()) + PAD > len(buffer):  # no overflow: positions in the buffer
        raise ValueError(f"slices reach past the buffer less its {PAD} padding bytes")
    return _in_parts(lambda s, n: _hash_part(buffer, s, n), starts, lengths)


def _hash_part(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    words = _words(buffer)
    order, counts = _rounds(lengths)
    s = starts[order]
    h = lengths[order].astype(np.uint64) * _GOLDEN
    for j, k in enumerate(counts.tolist()):
        w = words[s[:k] + 8 * j]
        last = int(counts[j + 1]) if j + 1 < len(counts) else 0  # slices [last, k) end in this word
        if last < k:
            w[last:k] &= _tail_mask(lengths[order[last:k]] - 8 * j)
        part = h[:k]
        part ^= w
        part *= _M1
    _mix(h)
    out = np.empty_like(h)
    out[order] = h
    return out


def hash_bytes(items: Sequence[bytes]) -> np.ndarray:
    """:func:`hash_slices` of each byte string of ``items`` (``uint64``, one per item)."""
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    starts = np.zeros(len(items), dtype=np.int64)
    if len(items) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    return hash_slices(padded(b"".join(items)), starts, lengths)


def slices_equal(buffer: np.ndarray, starts_a: np.ndarray, starts_b: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per ``i``, whether ``buffer[starts_a[i]:][:lengths[i]] == buffer[starts_b[i]:][:lengths[i]]`` (``bool``)."""
    return _in_parts(lambda a, b, n: _equal_part(buffer, a, b, n), _positions(starts_a), _positions(starts_b),
                     _positions(lengths))


def _equal_part(buffer: np.ndarray, starts_a: np.ndarray, starts_b: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    words = _words(buffer)
    order, counts = _rounds(lengths)
    a, b = starts_a[order], starts_b[order]
    same = np.ones(len(order), dtype=bool)
    for j, k in enumerate(counts.tolist()):
        diff = words[a[:k] + 8 * j] ^ words[b[:k] + 8 * j]
        last = int(counts[j + 1]) if j + 1 < len(counts) else 0
        if last < k:
            diff[last:k] &= _tail_mask(lengths[order[last:k]] - 8 * j)
        same[:k] &= diff == 0
    out = np.empty_like(same)
    out[order] = same
    return out


def unique_slices(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct strings among the slices, numbered by hash: ``(hashes, first, ids)`` with ``hashes`` sorted
    (``uint64``), ``first[i]`` a slice holding string ``i`` and ``ids[k]`` the number of slice ``k``'s string.

    ``ValueError`` when two different strings share a 64-bit hash (each slice is compared with its string's first).
    """
    h = hash_slices(buffer, starts, lengths)
    order = np.argsort(h).astype(index_dtype(len(h)))
    sorted_h = np.sort(h)  # the same order (a plain sort is several times faster than gathering h[order])
    del h
    head = np.empty(len(sorted_h), dtype=bool)
    head[:1] = True
    np.not_equal(sorted_h[1:], sorted_h[:-1], out=head[1:])
    hashes = sorted_h[head]
    del sorted_h
    group = np.cumsum(head, dtype=index_dtype(len(head))) - 1
    first = order[head]
    ids = np.empty(len(order), dtype=index_dtype(len(order)))
    ids[order] = group
    # every other slice of a group is compared with the group's first; up to 8 bytes, equal lengths and hashes mean
    # equal bytes (the hash is a bijection of the one word for a length), so only the lengths are compared there
    np.logical_not(head, out=head)
    slices, reps = order[head], first[group[head]]
    del order, group, head
    slice_lengths = lengths[slices]
    if not np.array_equal(slice_lengths, lengths[reps]):
        raise ValueError("two different strings share a 64-bit hash")
    long = slice_lengths > 8
    slices, reps, slice_lengths = slices[long], reps[long], slice_lengths[long]
    if len(slices) and not slices_equal(buffer, starts[slices], starts[reps], slice_lengths).all():
        raise ValueError("two different strings share a 64-bit hash")
    return hashes, first, ids


def gather(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray, block: int = 1 << 22,
           pad: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The slices one after the other: ``(texts, offsets)``, slice ``i`` = ``texts[offsets[i]:offsets[i + 1]]``
    (``uint8``, ``int64``); copied ``block`` bytes at a time (bounded index memory). ``pad=True``: ``texts`` has
    :data:`PAD` zero bytes more after its strings (as :func:`padded` makes it), ``offsets[-1]`` still its strings'
    end."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    texts = np.empty(int(offsets[-1]) + (PAD if pad else 0), dtype=np.uint8)
    texts[int(offsets[-1]) :] = 0
    bounds = [0]
    while bounds[-1] < len(lengths):
        j = int(np.searchsorted(offsets, offsets[bounds[-1]] + block, side="right")) - 1
        bounds.append(max(j, bounds[-1] + 1))

    def copy(part: int) -> None:
        i, j = bounds[part], bounds[part + 1]
        lo, hi = int(offsets[i]), int(offsets[j])
        texts[lo:hi] = buffer[np.repeat(starts[i:j] - offsets[i:j], lengths[i:j]) + np.arange(lo, hi)]

    with ThreadPoolExecutor(_threads()) as pool:
        list(pool.map(copy, range(len(bounds) - 1)))
    return texts, offsets


def words_of(texts: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, lengths)`` of the words of the strings ``texts[offsets[i]:offsets[i + 1]]`` split at single spaces
    (empty words left out), in order."""
    size = len(texts)
    if size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    word = texts != 32
    boundary = np.zeros(size + 1, dtype=bool)  # where a string starts (and the end)
    boundary[offsets] = True
    before = boundary[:size].copy()  # a word starts at p: a string starts there or a space precedes it
    before[1:] |= ~word[:-1]
    after = boundary[1:].copy()  # a word ends at p: a string ends after it or a space follows it
    after[:-1] |= ~word[1:]
    starts = np.flatnonzero(word & before)
    ends = np.flatnonzero(word & after) + 1
    return starts, ends - starts


def _word_keys(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Per word, its bitmap position: splitmix64 of its length times a constant xor its first 8 bytes, top
    :data:`WORD_BITS` bits (:func:`word_bit` for one word)."""
    w = _words(buffer)[starts]
    w &= _tail_mask(np.minimum(lengths, 8))
    w ^= lengths.astype(np.uint64) * _GOLDEN
    _mix(w)
    return (w >> np.uint64(64 - WORD_BITS)).astype(np.int64)


def word_bits(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A bitmap (``bool``, ``2 ** WORD_BITS``) with the bit of every word ``buffer[starts[i]:][:lengths[i]]`` set
    (lengths > 0); a word whose bit is clear is none of them, a set bit may be another word's (0.3 % of words)."""
    bits = np.zeros(1 << WORD_BITS, dtype=bool)
    bits[_word_keys(buffer, _positions(starts), _positions(lengths))] = True
    return bits


def phrase_word_bits(texts: np.ndarray, offsets: np.ndarray, block: int = 1 << 22) -> np.ndarray:
    """:func:`word_bits` of every word of the strings ``texts[offsets[i]:offsets[i + 1]]`` (split at single spaces),
    ``block`` bytes of strings at a time (bounded temporary memory); ``texts`` needs :data:`PAD` readable bytes
    after its last string (:func:`padded`)."""
    bits = np.zeros(1 << WORD_BITS, dtype=bool)
    i = 0
    while i < len(offsets) - 1:
        j = max(int(np.searchsorted(offsets, offsets[i] + block, side="right")) - 1, i + 1)
        lo = int(offsets[i])
        starts, lengths = words_of(texts[lo : int(offsets[j])], offsets[i : j + 1] - lo)
        bits[_word_keys(texts, starts + lo, lengths)] = True
        i = j
    return bits



class NGrams:
    """The n-grams of many sentences as slices of one byte buffer (:func:`ngrams`).

    Attributes:
        data: the sentences' UTF-8 bytes (words joined by one space, sentences by ``\\n``); ``buffer``: the same
            followed by :data:`PAD` zero bytes.
        sentence, start, length: per n-gram, its sentence (index in the list given), first word and number of words
            (``int64``), ordered by sentence, then start, then length.
        byte_start, byte_length: per n-gram, its bytes in ``buffer`` (``int64``).
    """

    def __init__(self, data: bytes, buffer: np.ndarray, columns: tuple[np.ndarray, ...]) -> None:
        self.data, self.buffer = data, buffer
        self.sentence, self.start, self.length, self.byte_start, self.byte_length = columns


def ngrams(sentences: Sequence[Sequence[str]], max_words: int, known_bits: bytes) -> NGrams:
    """Every n-gram of 1 to ``max_words`` words of each sentence (a sequence of words without spaces or line ends)
    whose words all have their bit set in ``known_bits`` (a :func:`word_bits` bitmap, packed big-endian as
    ``np.packbits`` packs it), all sentences at once: the n-grams a sentence's table phrases can be among."""
    data = "\n".join(" ".join(words) for words in sentences).encode("utf-8")
    buffer = padded(data)
    body = buffer[: len(data)]
    cuts = np.flatnonzero((body == 32) | (body == 10))
    starts = np.r_[0, cuts + 1]
    ends = np.r_[cuts, len(data)]
    sentence = np.r_[0, np.cumsum(body[cuts] == 10)]
    token = np.arange(len(starts))
    first = np.r_[0, np.flatnonzero(np.diff(sentence)) + 1]  # each line's first token (an empty line has one)
    position = token - first[sentence]
    keep = ends > starts  # an empty line's one empty token is no word
    starts, ends, sentence, position = starts[keep], ends[keep], sentence[keep], position[keep]
    bits = np.frombuffer(known_bits, dtype=np.uint8)
    keys = _word_keys(buffer, starts, ends - starts) if len(starts) else np.zeros(0, dtype=np.int64)
    valid = ((bits[keys >> 3] >> (7 - (keys & 7)).astype(np.uint8)) & 1).astype(bool)
    columns: list[list[np.ndarray]] = [[], [], [], [], []]
    for words in range(1, max_words + 1):
        if words > 1:  # an n-gram of k words: one of k - 1 words, then a known word of the same sentence
            valid = valid[:-1] & valid_word[words - 1 :] & (sentence[words - 1 :] == sentence[: 1 - words])
        else:
            valid_word = valid
        at = np.flatnonzero(valid)
        for column, values in zip(columns, (sentence[at], position[at], np.full(len(at), words),
                                            starts[at], ends[at + words - 1] - starts[at])):
            column.append(values.astype(np.int64))
    merged = [np.concatenate(c) for c in columns]
    order = np.lexsort((merged[2], merged[1], merged[0]))
    return NGrams(data, buffer, tuple(c[order] for c in merged))


_MASK = (1 << 64) - 1


def word_bit(word: bytes) -> int:
    """The bitmap position of one word (as :func:`word_bits` computes it), in plain Python."""
    length = len(word)
    h = (int.from_bytes(word[:8], "little") ^ (length * 0x9E3779B97F4A7C15)) & _MASK
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & _MASK
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & _MASK
    h ^= h >> 31
    return h >> (64 - WORD_BITS)


class LineScan:
    """A text file's bytes in one padded ``uint8`` array (:data:`PAD` zero bytes after them) with its line ends,
    scanned piece by piece while it is read (each piece while it is in the CPU's cache).

    Attributes:
        buffer: the bytes, then :data:`PAD` zeros; ``size``: how many bytes the file has.
        ends: the position of every ``\\n`` (:func:`index_dtype`), then ``size`` when the last line has no line end.
        plain: no tab, form feed, carriage return or NUL byte.
        ascii: every byte is below 128.

    Spaces are checked on the phrase strings (:meth:`capeval.meteor.paraphrase.ParaphraseTable.from_scan`).
    """

    def __init__(self, capacity: int = 0) -> None:
        self.buffer = np.zeros(capacity + PAD, dtype=np.uint8)
        self.size = 0
        self._ends: list[np.ndarray] = []
        self.plain = True
        self.ascii = True

    def add(self, piece: bytes) -> None:
        """Append ``piece`` (bytes; and scan it)."""
        if not piece:
            return
        part = np.frombuffer(piece, dtype=np.uint8)
        end = self.size + len(part)
        if end + PAD > len(self.buffer):
            grown = np.zeros(max(end + PAD, 2 * len(self.buffer)), dtype=np.uint8)
            grown[: self.size] = self.buffer[: self.size]
            self.buffer = grown
        self.buffer[self.size : end] = part
        self._ends.append((np.flatnonzero(part == 10) + self.size).astype(index_dtype(end), copy=False))
        if self.plain and any(bad in piece for bad in (b"\t", b"\f", b"\r", b"\x00")):  # memchr: cheap
            self.plain = False
        if self.ascii and not piece.isascii():
            self.ascii = False
        self.size = end

    def finish(self) -> LineScan:
        """Close the scan: ``ends`` gets the last line's end when it has none."""
        ends = np.concatenate(self._ends) if self._ends else np.zeros(0, dtype=np.int64)
        if self.size and self.buffer[self.size - 1] != 10:
            ends = np.append(ends, self.size)
        self.ends = ends.astype(index_dtype(self.size), copy=False)
        self.buffer[self.size : self.size + PAD] = 0
        self._ends = []
        return self

    @classmethod
    def of_bytes(cls, data: bytes, piece: int = 1 << 20) -> LineScan:
        scan = cls(len(data))
        for lo in range(0, len(data), piece):
            scan.add(data[lo : lo + piece])
        return scan.finish()

    @classmethod
    def of_gzip(cls, compressed: bytes, piece: int = 1 << 18) -> LineScan:
        """The uncompressed bytes of a gzip file (every member), decompressed piece by piece into the buffer."""
        import queue
        import threading
        import zlib

        size_hint = int.from_bytes(compressed[-4:], "little") if len(compressed) >= 4 else 0  # ISIZE (mod 2**32)
        scan = cls(size_hint)
        pieces: queue.Queue = queue.Queue(maxsize=8)

        def decompress() -> None:  # in a thread (zlib releases the GIL) while this one scans
            try:
                data = memoryview(compressed)
                while len(data):
                    stream = zlib.decompressobj(wbits=31)
                    lo = 0
                    while lo < len(data) and not stream.eof:
                        pieces.put(stream.decompress(data[lo : lo + piece]))
                        lo += piece
                    pieces.put(stream.flush())
                    if not stream.eof:
                        raise EOFError("the gzip file is cut short")
                    rest = bytes(stream.unused_data) + bytes(data[lo:])  # another member follows (or zero padding)
                    data = memoryview(rest.lstrip(b"\x00"))
                pieces.put(None)
            except BaseException as err:  # handed to the scanning thread
                pieces.put(err)

        worker = threading.Thread(target=decompress, name="capeval-gunzip", daemon=True)
        worker.start()
        try:
            while True:
                item = pieces.get()
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                scan.add(item)
        finally:
            while worker.is_alive():  # an error here: let the thread finish instead of blocking on a full queue
                try:
                    pieces.get(timeout=0.1)
                except queue.Empty:
                    pass
            worker.join()
        return scan.finish()
