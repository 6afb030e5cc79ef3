"""Caption language models P(s) for MMI re-ranking (Wang et al., ECCV 2020, §5).

Every model here follows one protocol (:class:`CaptionLM`):

* ``log_prob(captions) -> np.ndarray``: one **natural-log** probability per caption, summed over its
  tokens **including the end-of-sentence token** (so the value is ``log P(s)``, always <= 0 for a
  normalised model);
* ``token_counts(captions) -> np.ndarray``: the number of predicted tokens per caption (words + 1
  for ``<eos>``), for :func:`perplexity`;
* ``name`` and ``settings``: short strings naming the model and everything that changes a number.

Captions are tokenised as the metrics see them: capeval's PTB tokens (``capeval.text.get_tokenizer("ptb")``,
lower-cased, punctuation removed), then ``<eos>``. Words seen fewer than ``min_count`` times map to ``<unk>``.

Models: :class:`UnigramLM` (add-k smoothed, JSON), the LSTM LM in :mod:`capeval.models.lstm_lm`
(torch), :class:`InterpolatedLM` (log-linear ``P_uni^alpha * P_LSTM^(1-alpha)``, not renormalised),
:class:`TransformersCausalLM` (any ``transformers`` causal LM). :func:`capeval.models.lm_loading.load_caption_lm`
reads any saved one.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from capeval.text import get_tokenizer

UNK = "<unk>"
EOS = "<eos>"
UNIGRAM_FILE = "unigram.json"
INTERPOLATED_FILE = "interpolated.json"


def _require_torch():
    """Import torch, or raise ``ImportError`` naming the install command (:func:`capeval.dependencies.require`)."""
    from capeval.dependencies import require

    return require("torch", what="the LSTM and transformers caption LMs")


@runtime_checkable
class CaptionLM(Protocol):
    name: str
    settings: str

    def log_prob(self, captions: Sequence[str]) -> np.ndarray: ...

    def token_counts(self, captions: Sequence[str]) -> np.ndarray: ...


def check_captions(captions: Sequence[str], what: str = "captions") -> list[str]:
    """Return ``captions`` as a list; ``ValueError`` names the first item that is not a string."""
    if isinstance(captions, str):
        raise ValueError(f"{what} must be a list of strings, not one string.")
    out = list(captions)
    for i, c in enumerate(out):
        if not isinstance(c, str):
            raise ValueError(f"{what}[{i}] must be a string, got {type(c).__name__}.")
    return out


def caption_tokens(captions: Sequence[str], tokenizer: str = "ptb") -> list[list[str]]:
    """PTB tokens of each caption (lower-cased, punctuation removed) followed by ``<eos>``."""
    captions = check_captions(captions)
    return [toks + [EOS] for toks in get_tokenizer(tokenizer).tokenize(captions)]


class Vocabulary:
    """Word <-> id map: ``<unk>`` = 0, ``<eos>`` = 1, then words by decreasing count (ties alphabetical)."""

    def __init__(self, words: Sequence[str]):
        self.itos = [UNK, EOS] + [w for w in words if w not in (UNK, EOS)]
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def build(cls, token_lists: Sequence[Sequence[str]], min_count: int = 1) -> Vocabulary:
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}.")
        counts = Counter(t for toks in token_lists for t in toks)
        words = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
        return cls(words)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(t, 0) for t in tokens]

    def to_json(self) -> list[str]:
        return list(self.itos)

    @classmethod
    def from_json(cls, itos: list[str]) -> Vocabulary:
        if itos[:2] != [UNK, EOS]:
            raise ValueError(f"A vocabulary starts with {[UNK, EOS]}, got {itos[:2]}.")
        return cls(itos[2:])


def perplexity(log_probs: Sequence[float], token_counts: Sequence[int]) -> float:
    """``exp(-sum log P / sum tokens)``: natural-log probabilities per caption, tokens include ``<eos>``."""
    total, n = float(np.sum(log_probs)), int(np.sum(token_counts))
    if n <= 0:
        raise ValueError("perplexity needs at least one token.")
    return math.exp(-total / n)


def lm_perplexity(lm: CaptionLM, captions: Sequence[str]) -> float:
    """Perplexity of ``lm`` on ``captions`` (per token, ``<eos>`` included)."""
    return perplexity(lm.log_prob(captions), lm.token_counts(captions))


class _WordLM:
    """Shared by the word-level models: tokenisation and token counts."""

    vocab: Vocabulary
    tokenizer: str = "ptb"

    def encode(self, captions: Sequence[str]) -> list[list[int]]:
        return [self.vocab.encode(t) for t in caption_tokens(captions, self.tokenizer)]

    def token_counts(self, captions: Sequence[str]) -> np.ndarray:
        return np.array([len(t) for t in caption_tokens(captions, self.tokenizer)], dtype=np.int64)


class UnigramLM(_WordLM):
    """Add-k smoothed unigram LM: ``P(w) = (c(w) + k) / (N + k |V|)`` over the vocabulary (``<unk>``,
    ``<eos>`` included; out-of-vocabulary words count as ``<unk>``). ``log_prob`` sums natural logs."""

    def __init__(self, vocab: Vocabulary, counts: Sequence[int], k: float = 1.0, tokenizer: str = "ptb"):
        if len(counts) != len(vocab):
            raise ValueError(f"{len(counts)} counts for a vocabulary of {len(vocab)} words.")
        if k < 0 or (k == 0 and min(counts) == 0):
            raise ValueError(f"add-k smoothing needs k > 0 when a count is zero (k={k}).")
        self.vocab, self.counts, self.k, self.tokenizer = vocab, np.asarray(counts, dtype=np.int64), float(k), tokenizer
        self.table = np.log((self.counts + self.k) / (self.counts.sum() + self.k * len(vocab)))

    @classmethod
    def fit(cls, captions: Sequence[str], min_count: int = 1, k: float = 1.0, tokenizer: str = "ptb") -> UnigramLM:
        tokens = caption_tokens(captions, tokenizer)
        vocab = Vocabulary.build(tokens, min_count)
        counts = np.bincount([i for t in tokens for i in vocab.encode(t)], minlength=len(vocab))
        return cls(vocab, counts, k, tokenizer)

    @property
    def name(self) -> str:
        return "unigram"

    @property
    def settings(self) -> str:
        return f"unigram|k={self.k:g}|V={len(self.vocab)}|N={int(self.counts.sum())}|tok:{self.tokenizer}"

    def log_prob(self, captions: Sequence[str]) -> np.ndarray:
        return np.array([float(self.table[ids].sum()) for ids in self.encode(captions)])

    def save(self, path: str | Path) -> Path:
        """Write ``unigram.json`` into directory ``path`` (created); returns the file."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        data = {"model_type": "capeval-unigram-lm", "k": self.k, "tokenizer": self.tokenizer,
                "vocab": self.vocab.to_json(), "counts": self.counts.tolist()}
        (path / UNIGRAM_FILE).write_text(json.dumps(data), encoding="utf-8")
        return path / UNIGRAM_FILE

    @classmethod
    def load(cls, path: str | Path) -> UnigramLM:
        path = Path(path)
        file = path / UNIGRAM_FILE if path.is_dir() else path
        data = json.loads(file.read_text(encoding="utf-8"))
        return cls(Vocabulary.from_json(data["vocab"]), data["counts"], data["k"], data.get("tokenizer", "ptb"))


class InterpolatedLM:
    """Log-linear interpolation ``alpha * log P_uni + (1 - alpha) * log P_LSTM`` per caption (natural log,
    ``<eos>`` included), i.e. ``P_uni^alpha * P_LSTM^(1-alpha)`` as in the paper; not renormalised."""

    def __init__(self, unigram: CaptionLM, lstm: CaptionLM, alpha: float):
        if not 0.0 <= alpha <= 1.0 or math.isnan(alpha):
            raise ValueError(f"alpha must be in [0, 1], got {alpha}.")
        self.unigram, self.lstm, self.alpha = unigram, lstm, float(alpha)

    @property
    def name(self) -> str:
        return f"interpolated(alpha={self.alpha:g})"

    @property
    def settings(self) -> str:
        return f"interp|alpha={self.alpha:g}|{self.unigram.settings}|{self.lstm.settings}"

    def log_prob(self, captions: Sequence[str]) -> np.ndarray:
        return combine(self.unigram.log_prob(captions), self.lstm.log_prob(captions), self.alpha)

    def token_counts(self, captions: Sequence[str]) -> np.ndarray:
        return self.lstm.token_counts(captions)

    def save(self, path: str | Path) -> None:
        """Save both models under ``path/unigram`` and ``path/lstm`` plus ``interpolated.json``."""
        path = Path(path)
        self.unigram.save(path / "unigram")
        self.lstm.save_pretrained(path / "lstm")
        (path / INTERPOLATED_FILE).write_text(json.dumps({"alpha": self.alpha}), encoding="utf-8")


def combine(logp_uni: np.ndarray, logp_lstm: np.ndarray, alpha: float) -> np.ndarray:
    """``alpha * logp_uni + (1 - alpha) * logp_lstm`` (the interpolation, on precomputed log-probs)."""
    return alpha * np.asarray(logp_uni, dtype=float) + (1.0 - alpha) * np.asarray(logp_lstm, dtype=float)


class TransformersCausalLM:
    """Any ``transformers`` causal LM as a caption LM.

    ``log_prob`` = sum of natural-log probabilities of the caption's sub-word tokens and of the end token
    (``eos_token_id``), each conditioned on the start token (``bos_token_id``, else ``eos_token_id``) and
    the tokens before it. The text fed to the model is the caption's PTB tokens joined by spaces
    (``ptb=True``, as the metrics see it) or the caption as written (``ptb=False``).
    """

    def __init__(self, model_or_name: Any, tokenizer: Any = None, *, ptb: bool = True, batch_size: int = 32,
                 device: str | None = None):
        _require_torch()
        if isinstance(model_or_name, (str, Path)):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(model_or_name))
            model_or_name = AutoModelForCausalLM.from_pretrained(str(model_or_name))
        if tokenizer is None:
            raise ValueError("TransformersCausalLM needs a tokenizer with a model object.")
        self.model, self.tokenizer, self.ptb, self.batch_size = model_or_name.eval(), tokenizer, ptb, batch_size
        if device:
            self.model.to(device)
        eos = tokenizer.eos_token_id
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else eos
        if eos is None or bos is None:
            raise ValueError("The tokenizer needs an eos_token (and optionally a bos_token).")
        self.bos, self.eos = int(bos), int(eos)
        self.name = f"hf:{getattr(self.model.config, 'name_or_path', '') or self.model.config.model_type}"
        self.settings = f"{self.name}|text:{'ptb' if ptb else 'raw'}"

    def _ids(self, captions: Sequence[str]) -> list[list[int]]:
        captions = check_captions(captions)
        texts = [" ".join(t) for t in get_tokenizer("ptb").tokenize(captions)] if self.ptb else captions
        return [[self.bos] + list(self.tokenizer(t, add_special_tokens=False)["input_ids"]) + [self.eos] for t in texts]

    def token_counts(self, captions: Sequence[str]) -> np.ndarray:
        return np.array([len(ids) - 1 for ids in self._ids(captions)], dtype=np.int64)

    def log_prob(self, captions: Sequence[str]) -> np.ndarray:
        torch = _require_torch()
        all_ids = self._ids(captions)
        device = next(self.model.parameters()).device
        out: list[float] = []
        with torch.no_grad():
            for start in range(0, len(all_ids), self.batch_size):
                chunk = all_ids[start:start + self.batch_size]
                width = max(len(ids) for ids in chunk)
                inputs = torch.full((len(chunk), width), self.eos, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for r, ids in enumerate(chunk):
                    inputs[r, :len(ids)] = torch.tensor(ids)
                    mask[r, :len(ids)] = 1
                inputs, mask = inputs.to(device), mask.to(device)
                logits = self.model(input_ids=inputs, attention_mask=mask).logits.float()
                logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, inputs[:, 1:, None])[..., 0]
                out.extend((logp * mask[:, 1:]).sum(dim=1).tolist())
        return np.array(out, dtype=float)
