"""The released LCEval checkpoints (NaehaSharif/LCEVal, TF1) ported to :class:`~capeval.lceval.model.LCEvalModel`.

The repository's checkpoints ``nn_classify_checkpoint{8010,9990}`` hold one linear softmax layer,
``out_layer/out/W_out`` [16 x 2] and ``b_out`` [2] (no hidden layer, whatever the paper and the repository's
configuration say). ``decoded_weights.json`` (beside the checkpoints in capeval's shared data) holds those
tensors read out of the TF data files as little-endian float32; :func:`port_released` writes them as a capeval
model folder. capeval ships both: ``lceval-released-9990`` (the last checkpoint, default of ``lceval_released``)
and ``lceval-released-8010``.

The released layer was trained on features from GoogleNews word2vec (WMD), fastText wiki.en (MOWE) and Java
SPICE 1.0; capeval computes WMD / MOWE with GloVe 6B 50-d and SPICE with its own parser by default, which shifts
those features' distributions: the layer's weights are the released ones, its inputs are not exactly theirs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from capeval.lceval.model import LCEvalConfig, LCEvalModel

__all__ = ["RELEASED_STEPS", "port_released", "released_model"]

RELEASED_STEPS = ("9990", "8010")
SOURCE = "NaehaSharif/LCEVal@ad9db49be7655c8dca275412fc3975edee4062ba"


def released_model(decoded_weights: str | os.PathLike, step: str = "9990") -> LCEvalModel:
    """The released layer of global step ``step`` from ``decoded_weights.json``."""
    table = json.loads(Path(decoded_weights).read_text())
    if str(step) not in table:
        raise ValueError(f"{decoded_weights}: no checkpoint {step!r}; it has {sorted(table)}.")
    entry = table[str(step)]
    w, b = np.asarray(entry["W_out"], dtype=np.float32), np.asarray(entry["b_out"], dtype=np.float32)
    config = LCEvalConfig(hidden=0, word_vectors="glove-6b-50d", description=(
        f"LCEval released checkpoint nn_classify_checkpoint{step} ({SOURCE}): linear 16->2 softmax layer, "
        "trained by Sharif et al. on Flickr30k with word2vec/fastText/Java-SPICE features."))
    return LCEvalModel(config, {"W": w, "b": b})


def port_released(decoded_weights: str | os.PathLike, out_dir: str | os.PathLike, step: str = "9990") -> Path:
    """Write the released layer of ``step`` as a model folder ``out_dir`` (``config.json`` + safetensors)."""
    return released_model(decoded_weights, step).save_pretrained(out_dir)
