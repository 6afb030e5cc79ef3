"""The 1-layer LSTM caption language model of Wang et al. (ECCV 2020, §5): embedding 300, hidden 512.

A caption ``w_1 .. w_n <eos>`` is read after a start symbol (``<eos>`` doubles as it);
``log_prob`` = ``sum_t log P(w_t | w_<t)`` in natural log over the ``n + 1`` predicted tokens, ``<eos>``
included. Saved with :meth:`LSTMLanguageModel.save_pretrained`: ``config.json`` (the
:class:`LSTMConfig` plus ``model_type``), ``vocab.json`` and ``model.safetensors``.
Importing this module imports torch (``ImportError`` names ``pip install "capeval[learned]"``).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

from capeval.models.caption_lm import EOS, Vocabulary, _require_torch, _WordLM

torch = _require_torch()
nn = torch.nn

MODEL_TYPE = "capeval-lstm-lm"
WEIGHTS_FILE = "model.safetensors"


@dataclass
class LSTMConfig:
    """Architecture: ``vocab_size`` words, ``embedding_dim`` (300), ``hidden_size`` (512), ``num_layers`` (1),
    ``dropout`` on embeddings and outputs, ``tie_weights`` (output layer shares the embedding through a
    hidden -> embedding projection), ``tokenizer`` (capeval tokenizer name for the captions)."""

    vocab_size: int
    embedding_dim: int = 300
    hidden_size: int = 512
    num_layers: int = 1
    dropout: float = 0.0
    tie_weights: bool = False
    tokenizer: str = "ptb"

    @classmethod
    def from_dict(cls, data: dict) -> LSTMConfig:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class LSTMLanguageModel(nn.Module, _WordLM):
    """Word-level LSTM LM over a :class:`~capeval.models.caption_lm.Vocabulary` (a ``CaptionLM``)."""

    def __init__(self, config: LSTMConfig, vocab: Vocabulary):
        super().__init__()
        if config.vocab_size != len(vocab):
            raise ValueError(f"config.vocab_size={config.vocab_size} but the vocabulary has {len(vocab)} words.")
        self.config, self.vocab, self.tokenizer = config, vocab, config.tokenizer
        self.embedding = nn.Embedding(config.vocab_size, config.embedding_dim)
        self.lstm = nn.LSTM(config.embedding_dim, config.hidden_size, config.num_layers, batch_first=True)
        self.dropout = nn.Dropout(config.dropout)
        if config.tie_weights:
            self.projection = nn.Linear(config.hidden_size, config.embedding_dim, bias=False)
            self.decoder = nn.Linear(config.embedding_dim, config.vocab_size)
            self.decoder.weight = self.embedding.weight
        else:
            self.projection = None
            self.decoder = nn.Linear(config.hidden_size, config.vocab_size)

    @property
    def name(self) -> str:
        return "lstm"

    @property
    def settings(self) -> str:
        c = self.config
        return (f"lstm|emb={c.embedding_dim}|hid={c.hidden_size}|layers={c.num_layers}|tied={int(c.tie_weights)}"
                f"|V={c.vocab_size}|tok:{c.tokenizer}")

    def forward(self, inputs):
        """Logits ``(batch, time, vocab)`` for input ids ``(batch, time)``."""
        hidden, _ = self.lstm(self.dropout(self.embedding(inputs)))
        hidden = self.dropout(hidden)
        if self.projection is not None:
            hidden = self.projection(hidden)
        return self.decoder(hidden)

    def batch_tensors(self, id_lists: Sequence[Sequence[int]]):
        """``(inputs, targets, mask)`` for encoded captions (each ending in ``<eos>``), padded with ``<eos>``."""
        eos = self.vocab.stoi[EOS]
        width = max(len(ids) for ids in id_lists)
        targets = torch.full((len(id_lists), width), eos, dtype=torch.long)
        mask = torch.zeros((len(id_lists), width), dtype=torch.float32)
        for r, ids in enumerate(id_lists):
            targets[r, :len(ids)] = torch.tensor(list(ids), dtype=torch.long)
            mask[r, :len(ids)] = 1.0
        inputs = torch.cat([torch.full((len(id_lists), 1), eos, dtype=torch.long), targets[:, :-1]], dim=1)
        return inputs, targets, mask

    def token_log_probs(self, inputs, targets, mask):
        """Natural-log probability of every target token, zero where ``mask`` is 0."""
        logp = torch.log_softmax(self(inputs).float(), dim=-1)
        return logp.gather(-1, targets[..., None])[..., 0] * mask

    def log_prob_ids(self, id_lists: Sequence[Sequence[int]], batch_size: int = 256) -> np.ndarray:
        device = next(self.parameters()).device
        was_training = self.training
        self.eval()
        out: list[float] = []
        with torch.no_grad():
            for start in range(0, len(id_lists), batch_size):
                tensors = [t.to(device) for t in self.batch_tensors(id_lists[start:start + batch_size])]
                out.extend(self.token_log_probs(*tensors).sum(dim=1).tolist())
        self.train(was_training)
        return np.array(out, dtype=float)

    def log_prob(self, captions: Sequence[str], batch_size: int = 256) -> np.ndarray:
        """``log P(s)`` per caption: natural log, summed over its tokens and ``<eos>``."""
        return self.log_prob_ids(self.encode(captions), batch_size)

    def save_pretrained(self, path: str | Path) -> Path:
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps({"model_type": MODEL_TYPE, **asdict(self.config)}, indent=1),
                                          encoding="utf-8")
        (path / "vocab.json").write_text(json.dumps(self.vocab.to_json()), encoding="utf-8")
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        if self.config.tie_weights:
            state.pop("decoder.weight")  # shared with embedding.weight
        save_file(state, str(path / WEIGHTS_FILE))
        return path

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = None) -> LSTMLanguageModel:
        from safetensors.torch import load_file

        path = Path(path)
        data = json.loads((path / "config.json").read_text(encoding="utf-8"))
        if data.get("model_type") != MODEL_TYPE:
            raise ValueError(f"{path}/config.json: model_type {data.get('model_type')!r} is not {MODEL_TYPE!r}.")
        vocab = Vocabulary.from_json(json.loads((path / "vocab.json").read_text(encoding="utf-8")))
        model = cls(LSTMConfig.from_dict(data), vocab)
        state = load_file(str(path / WEIGHTS_FILE))
        if model.config.tie_weights:
            state["decoder.weight"] = state["embedding.weight"]
        model.load_state_dict(state)
        if device:
            model.to(device)
        return model.eval()
