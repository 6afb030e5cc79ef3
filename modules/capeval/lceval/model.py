"""The LCEval network: features -> P(caption is human-written), in numpy (no torch needed to score).

Two architectures (the paper's, §3.3): ``hidden=12`` (default: one hidden layer of 12 ReLU units, then a 2-way
softmax) and ``hidden=0`` (the linear variant, one 16 -> 2 softmax layer: what the released checkpoints hold).
Score = softmax(z)[1], column 1 = human, in (0, 1).

A model folder holds ``config.json`` (:class:`LCEvalConfig`) and ``model.safetensors`` (float32 tensors ``W1``,
``b1``, ``W2``, ``b2``; or ``W``, ``b`` for the linear variant), written by :meth:`LCEvalModel.save_pretrained`
and read by :meth:`LCEvalModel.from_pretrained` (the shipped names, e.g. ``"lceval-released-9990"``, resolve to
capeval's packaged folders). Training (:mod:`capeval.lceval.train`) uses torch and saves the same folder.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from capeval.lceval.extra import CRITIC
from capeval.lceval.features import ALL_FEATURE_NAMES, FEATURE_NAMES

__all__ = ["LCEvalConfig", "LCEvalModel", "model_folder"]

CONFIG_FILE, WEIGHTS_FILE = "config.json", "model.safetensors"


@dataclass
class LCEvalConfig:
    """What a model reads and how it was made.

    features: the feature names it reads, in :data:`~capeval.lceval.features.ALL_FEATURE_NAMES` order (a subset of
        the 16 for the ablations; LCEval+ adds the three of :mod:`capeval.lceval.extra`). hidden: hidden ReLU units (0 = linear). word_vectors / parser_model: the feature settings
        it was trained with (scoring uses the same). extra_critic: the reference-only critic behind LCEval+'s
        ``critic_ref`` feature (a shipped name or a folder; only read when the model reads that feature; a config
        written before this field existed means ``critic-flickr8k-ref``). description: free text for cards and
        signatures.
    """

    features: list[str] = field(default_factory=lambda: list(FEATURE_NAMES))
    hidden: int = 12
    word_vectors: str = "glove-6b-50d"
    parser_model: str | None = None
    extra_critic: str = CRITIC
    description: str = ""

    def __post_init__(self) -> None:
        unknown = [f for f in self.features if f not in ALL_FEATURE_NAMES]
        if unknown or not self.features:
            raise ValueError(f"features must be a non-empty subset of {ALL_FEATURE_NAMES}, got unknown {unknown}.")
        self.features = [f for f in ALL_FEATURE_NAMES if f in set(self.features)]
        if not isinstance(self.hidden, int) or self.hidden < 0:
            raise ValueError(f"hidden must be a non-negative integer, got {self.hidden!r}.")
        if not isinstance(self.extra_critic, str) or not self.extra_critic.strip():
            raise ValueError(f"extra_critic must name a reference-only critic, got {self.extra_critic!r}.")

    @property
    def columns(self) -> list[int]:
        return [ALL_FEATURE_NAMES.index(f) for f in self.features]

    @property
    def uses_extra(self) -> bool:
        """Whether it reads LCEval+'s extra features (which need the torch stack)."""
        return any(f not in FEATURE_NAMES for f in self.features)


def _softmax_human(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e[:, 1] / e.sum(axis=1)


class LCEvalModel:
    """An LCEval network: :attr:`config` and its float32 parameters (see the module docstring)."""

    def __init__(self, config: LCEvalConfig, params: dict[str, np.ndarray]) -> None:
        self.config = config
        self.params = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
        d = len(config.features)
        want = ({"W1": (d, config.hidden), "b1": (config.hidden,), "W2": (config.hidden, 2), "b2": (2,)}
                if config.hidden else {"W": (d, 2), "b": (2,)})
        got = {k: tuple(v.shape) for k, v in self.params.items()}
        if got != want:
            raise ValueError(f"LCEval parameters {got} do not fit the config (expected {want}).")
        if not all(np.all(np.isfinite(v)) for v in self.params.values()):
            raise ValueError("LCEval parameters contain NaN or infinity.")

    def logits(self, features: np.ndarray) -> np.ndarray:
        """``(n, 2)`` logits from the full feature matrix, ``(n, 16)`` or ``(n, 19)`` with LCEval+'s extra features
        (the model picks its columns)."""
        x = np.asarray(features, dtype=np.float64)
        width = len(ALL_FEATURE_NAMES) if self.config.uses_extra else len(FEATURE_NAMES)
        if x.ndim != 2 or x.shape[1] not in (width, len(ALL_FEATURE_NAMES)):
            raise ValueError(f"features must be an (n, {width}) array, got shape {x.shape}.")
        x = x[:, self.config.columns]
        p = {k: v.astype(np.float64) for k, v in self.params.items()}
        if self.config.hidden:
            return np.maximum(x @ p["W1"] + p["b1"], 0.0) @ p["W2"] + p["b2"]
        return x @ p["W"] + p["b"]

    def predict(self, features: np.ndarray) -> np.ndarray:
        """P(human-written) per row, in (0, 1)."""
        return _softmax_human(self.logits(features))

    def save_pretrained(self, folder: str | os.PathLike) -> Path:
        from safetensors.numpy import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CONFIG_FILE).write_text(json.dumps(asdict(self.config), indent=2) + "\n")
        save_file({k: np.ascontiguousarray(v) for k, v in self.params.items()}, str(folder / WEIGHTS_FILE))
        (folder / WEIGHTS_FILE).chmod(0o644)  # safetensors writes 0600; shipped and shared folders must be readable
        return folder

    @classmethod
    def from_pretrained(cls, name_or_folder: str | os.PathLike) -> LCEvalModel:
        from safetensors.numpy import load_file

        folder = model_folder(name_or_folder)
        config_path, weights_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
        if not config_path.is_file() or not weights_path.is_file():
            raise FileNotFoundError(f"{folder}: not an LCEval model folder (needs {CONFIG_FILE} and {WEIGHTS_FILE}).")
        try:
            config = LCEvalConfig(**json.loads(config_path.read_text()))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{config_path}: not an LCEval config ({err}).") from err
        return cls(config, load_file(str(weights_path)))


def model_folder(name_or_folder: str | os.PathLike) -> Path:
    """An existing folder, or the folder of a catalog model of that name (bundled or from the Hub cache:
    :func:`capeval.model_store.resolve`), as a path."""
    from capeval.model_store import resolve

    return resolve(name_or_folder)
