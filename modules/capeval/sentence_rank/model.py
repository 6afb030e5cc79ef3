"""The ``sentence_rank`` model: a learned score on frozen sentence embeddings (all-MiniLM-L6-v2), in numpy.

For a candidate c and a reference r with unit sentence vectors u, v (384-d for MiniLM)::

    s(c, r) = a · cos(u, v) + b + MLP([u, v, |u − v|, u ⊙ v])        (a logit, unbounded)
    MLP(x)  = w2 · dropout(ReLU(W1 x + b1)) + b2                     (1536 -> ``hidden`` (256) -> 1)

* ``a`` (``scale``) is a learned scalar, initialised at ``init_scale`` (5): cosines of captions lie in about
  [0, 1], so σ(a · cos + b) then spans about σ(−2.5) = 0.08 to σ(2.5) = 0.92, far from saturation.
* ``b`` (``bias``) is a learned scalar, initialised at ``init_bias`` (−2.5, i.e. −a/2: a cosine of 0.5 maps to
  σ = 0.5). The pairwise training objective (:mod:`capeval.sentence_rank.train`) compares two candidates on the same
  references, so ``b`` and the MLP's output bias cancel in it: their gradient is 0 up to float32 rounding (about
  1e-9), which Adam, being invariant to the gradient's scale, still turns into steps of up to the learning rate. They
  therefore drift slightly (a random walk of about 0.004 per epoch on COCO) without changing any ranking; they only
  place the scores inside (0, 1).
* The MLP's output layer (``w2``, ``b2``) is initialised at zero, so the MLP outputs exactly 0 before training and
  the model's ranking is the cosine's; its hidden layer is PyTorch's default (Kaiming-uniform) initialisation.
  Dropout (0.1, on the hidden units) acts only in training.

A caption's score is the mean over its references of σ(s(c, r)), in [0, 1] (:func:`SentenceRankModel.scores`).

A model folder holds ``config.json`` (:class:`SentenceRankConfig`) and ``model.safetensors`` (tensors ``scale``
[1], ``bias`` [1], ``mlp.0.weight`` [hidden, 4·dim], ``mlp.0.bias`` [hidden], ``mlp.3.weight`` [1, hidden],
``mlp.3.bias`` [1]; float32, or float16 for a shipped copy: :meth:`SentenceRankModel.save_pretrained`). No pickles.
Scoring needs numpy and safetensors; training (:mod:`capeval.sentence_rank.train`) builds the same network in torch
(:func:`torch_network`) and converts both ways.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CONFIG_FILE", "SentenceRankConfig", "SentenceRankModel", "WEIGHTS_FILE", "from_torch", "model_digest",
           "torch_network"]

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"
#: The model type written into ``config.json`` (a folder of another model is refused by name).
MODEL_TYPE = "capeval-sentence-rank"


@dataclass
class SentenceRankConfig:
    """What a model reads and how it starts.

    dim: sentence-vector size (384 for all-MiniLM-L6-v2); hidden: hidden ReLU units (256); dropout: on the hidden
    units in training (0.1); init_scale / init_bias: the initial ``a`` and ``b`` (5, −2.5); encoder /
    encoder_max_length: the sentence encoder the model was trained on (scoring uses the same); catalog_name: the
    :mod:`capeval.catalog` entry whose recipe and training data made this folder (``capeval sentence-rank train``
    writes ``sentence-rank-coco``), else ``None``; description: free text.
    """

    dim: int = 384
    hidden: int = 256
    dropout: float = 0.1
    init_scale: float = 5.0
    init_bias: float = -2.5
    encoder: str = "all-minilm-l6-v2"
    encoder_max_length: int = 256
    catalog_name: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        for name in ("dim", "hidden", "encoder_max_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if not 0 <= float(self.dropout) < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}.")
        if not float(self.init_scale) > 0:
            raise ValueError(f"init_scale must be > 0 (the cosine's ranking), got {self.init_scale!r}.")

    def to_dict(self) -> dict[str, Any]:
        return {"model_type": MODEL_TYPE, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SentenceRankConfig:
        if data.get("model_type") != MODEL_TYPE:
            raise ValueError(f"not a sentence_rank model config (model_type {data.get('model_type')!r}, expected "
                             f"{MODEL_TYPE!r}).")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _param_shapes(config: SentenceRankConfig) -> dict[str, tuple[int, ...]]:
    return {"scale": (1,), "bias": (1,), "mlp.0.weight": (config.hidden, 4 * config.dim),
            "mlp.0.bias": (config.hidden,), "mlp.3.weight": (1, config.hidden), "mlp.3.bias": (1,)}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """σ(x) in [0, 1] without overflow warnings (float64)."""
    out = np.empty_like(x, dtype=np.float64)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def model_digest(folder: str | os.PathLike) -> str:
    """sha256 (first 16 hex digits) of a model folder's ``config.json`` and ``model.safetensors``."""
    digest = hashlib.sha256()
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        path = Path(folder) / name
        digest.update(name.encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


class SentenceRankModel:
    """A sentence_rank network: :attr:`config` and its float32 parameters (see the module docstring)."""

    def __init__(self, config: SentenceRankConfig, params: dict[str, np.ndarray]) -> None:
        self.config = config
        shapes = _param_shapes(config)
        if set(params) != set(shapes):
            raise ValueError(f"parameters {sorted(params)} do not match a sentence_rank model ({sorted(shapes)}).")
        self.params = {}
        for name, shape in shapes.items():
            value = np.asarray(params[name], dtype=np.float32)
            if value.shape != shape:
                raise ValueError(f"parameter {name} has shape {value.shape}, expected {shape}.")
            if not np.isfinite(value).all():
                raise ValueError(f"parameter {name} holds NaN or infinity.")
            self.params[name] = value

    @classmethod
    def initial(cls, config: SentenceRankConfig, seed: int = 0) -> SentenceRankModel:
        """The untrained model (numpy; the torch network of :func:`torch_network` starts from the same values)."""
        rng = np.random.default_rng(seed)
        bound = 1.0 / np.sqrt(4 * config.dim)  # PyTorch's default Linear initialisation bound
        return cls(config, {"scale": np.array([config.init_scale]), "bias": np.array([config.init_bias]),
                            "mlp.0.weight": rng.uniform(-bound, bound, (config.hidden, 4 * config.dim)),
                            "mlp.0.bias": rng.uniform(-bound, bound, config.hidden),
                            "mlp.3.weight": np.zeros((1, config.hidden)), "mlp.3.bias": np.zeros(1)})

    # -- files --------------------------------------------------------------------------------------------------
    def save_pretrained(self, folder: str | os.PathLike, *, dtype: str = "float32") -> Path:
        """Write ``config.json`` and ``model.safetensors`` (``dtype``: ``"float32"`` or ``"float16"``)."""
        from safetensors.numpy import save_file

        if dtype not in ("float32", "float16"):
            raise ValueError(f"dtype must be 'float32' or 'float16', got {dtype!r}.")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=1) + "\n", encoding="utf-8")
        save_file({k: np.ascontiguousarray(v.astype(dtype)) for k, v in self.params.items()},
                  str(folder / WEIGHTS_FILE), metadata={"format": "np", "model_type": MODEL_TYPE})
        return folder

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike) -> SentenceRankModel:
        """Read a folder written by :meth:`save_pretrained` (float16 weights are read as float32)."""
        from safetensors.numpy import load_file

        folder = Path(folder)
        for name in (CONFIG_FILE, WEIGHTS_FILE):
            if not (folder / name).is_file():
                raise FileNotFoundError(f"{folder / name} is missing: not a sentence_rank model folder (train one "
                                        "with `capeval sentence-rank train --out DIR`).")
        config = SentenceRankConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")))
        return cls(config, dict(load_file(str(folder / WEIGHTS_FILE))))

    # -- scoring ------------------------------------------------------------------------------------------------
    def mlp(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The MLP's output (float64 ``[n]``) for pairs of unit vectors ``u``, ``v`` (``[n, dim]``)."""
        u, v = np.asarray(u, dtype=np.float32), np.asarray(v, dtype=np.float32)
        x = np.concatenate([u, v, np.abs(u - v), u * v], axis=1)
        h = np.maximum(x @ self.params["mlp.0.weight"].T + self.params["mlp.0.bias"], 0.0)
        return (h.astype(np.float64) @ self.params["mlp.3.weight"][0].astype(np.float64)
                + float(self.params["mlp.3.bias"][0]))

    def logits(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """s(c, r) (float64 ``[n]``, unbounded) for pairs of unit vectors (renormalised here)."""
        u = np.asarray(u, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        cos = np.clip(np.einsum("ij,ij->i", u, v), -1.0, 1.0)
        return float(self.params["scale"][0]) * cos + float(self.params["bias"][0]) + self.mlp(u, v)

    def probabilities(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """σ(s(c, r)) per pair, float64 in [0, 1]."""
        return _sigmoid(self.logits(u, v))


def torch_network(config: SentenceRankConfig, model: SentenceRankModel | None = None):
    """The torch module of ``config`` (``forward(u, v) -> logits [n]``), starting from ``model``'s parameters
    (default: :meth:`SentenceRankModel.initial` with torch's own seeded initialisation of the hidden layer)."""
    from capeval.dependencies import require

    torch = require("torch", what="sentence_rank training")
    nn = torch.nn

    class Network(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.tensor([float(config.init_scale)]))
            self.bias = nn.Parameter(torch.tensor([float(config.init_bias)]))
            self.mlp = nn.Sequential(nn.Linear(4 * config.dim, config.hidden), nn.ReLU(), nn.Dropout(config.dropout),
                                     nn.Linear(config.hidden, 1))
            nn.init.zeros_(self.mlp[3].weight)
            nn.init.zeros_(self.mlp[3].bias)

        def head(self, u, v):
            return self.mlp(torch.cat([u, v, (u - v).abs(), u * v], dim=1)).squeeze(1)

        def forward(self, u, v):
            u = nn.functional.normalize(u.float(), dim=1)
            v = nn.functional.normalize(v.float(), dim=1)
            return self.scale * (u * v).sum(1) + self.bias + self.head(u, v)

    net = Network()
    if model is not None:
        state = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in model.params.items()}
        net.load_state_dict(state)
    return net


def from_torch(net, config: SentenceRankConfig) -> SentenceRankModel:
    """The torch network's parameters as a :class:`SentenceRankModel`."""
    return SentenceRankModel(config, {k: v.detach().float().cpu().numpy() for k, v in net.state_dict().items()})
