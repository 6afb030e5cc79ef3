"""The captioner's word-level tokenizer: a ``tokenizers`` WordLevel model saved as a ``PreTrainedTokenizerFast``.

Captions are first reduced to the tokens the metrics see (capeval's PTB tokenizer: lower-cased, punctuation
removed, :func:`normalise_captions`), then split on spaces and looked up in the vocabulary. Ids:
``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3, then the words seen at least ``min_count`` times in
the training captions, by decreasing count (ties alphabetical). ``decode`` joins words with single spaces.

>>> tok = build_caption_tokenizer(["A dog runs.", "A dog sits."], min_count=1)
>>> tok.convert_ids_to_tokens(tok("a dog runs")["input_ids"])
['a', 'dog', 'runs']
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from capeval.dependencies import require
from capeval.models.caption_lm import check_captions
from capeval.text import get_tokenizer

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)


def normalise_captions(captions: Sequence[str]) -> list[str]:
    """Each caption as the metrics tokenise it: PTB tokens (lower-cased, no punctuation) joined by spaces."""
    return [" ".join(tokens) for tokens in get_tokenizer("ptb").tokenize(check_captions(captions))]


def build_caption_tokenizer(captions: Sequence[str], min_count: int = 5):
    """A ``PreTrainedTokenizerFast`` whose vocabulary holds the words seen ≥ ``min_count`` times in ``captions``."""
    if min_count < 1:
        raise ValueError(f"min_count must be >= 1, got {min_count}.")
    counts = Counter(w for line in normalise_captions(captions) for w in line.split())
    if not counts:
        raise ValueError("No words in the training captions.")
    words = sorted((w for w, c in counts.items() if c >= min_count and w not in SPECIAL_TOKENS),
                   key=lambda w: (-counts[w], w))
    return tokenizer_from_words(words)


def tokenizer_from_words(words: Sequence[str]):
    """The tokenizer of a word list (ids 4.. in the given order, after the four special tokens)."""
    tokenizers, transformers = require("tokenizers", "transformers", what="the captioner tokenizer")
    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for w in words:
        vocab.setdefault(w, len(vocab))
    core = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token=UNK))
    core.normalizer = tokenizers.normalizers.Lowercase()
    core.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, bos_token=BOS,
                                                eos_token=EOS, unk_token=UNK, model_max_length=64)


def encode_captions(tokenizer, captions: Sequence[str], max_words: int | None = None) -> list[list[int]]:
    """Token ids ``<bos> w_1 .. w_n <eos>`` of each caption (PTB-normalised first; at most ``max_words`` words)."""
    out = []
    for line in normalise_captions(captions):
        ids = tokenizer(line, add_special_tokens=False)["input_ids"]
        if max_words is not None:
            ids = ids[:max_words]
        out.append([tokenizer.bos_token_id, *ids, tokenizer.eos_token_id])
    return out


def caption_labels(tokenizer, captions: Sequence[str], max_words: int | None = None) -> list[list[int]]:
    """The captioner's ``labels`` of each caption: :func:`encode_captions` without the leading ``<bos>``
    (``w_1 .. w_n <eos>``), as :class:`capeval.models.captioner.CaptionerDataCollator` batches them."""
    return [ids[1:] for ids in encode_captions(tokenizer, captions, max_words)]


def decode_ids(tokenizer, sequences) -> list[str]:
    """Captions of generated id sequences (special tokens dropped; text after the first ``<eos>`` ignored)."""
    out = []
    for seq in sequences:
        ids = [int(i) for i in seq]
        if tokenizer.eos_token_id in ids[1:]:
            ids = ids[:ids.index(tokenizer.eos_token_id, 1)]
        out.append(tokenizer.decode(ids, skip_special_tokens=True).strip())
    return out
