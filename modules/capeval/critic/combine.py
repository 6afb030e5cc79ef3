"""What capeval's score combiners share (``critic_plus``'s :mod:`capeval.critic.ensemble` and the critic ensembles of
:mod:`capeval.critic.critic_ensemble`): the deterministic logistic fit of their weights, its report on the fit data,
the feature-table check, and their small JSON files with a format tag.

All numpy; log-odds in (-inf, inf), probabilities in [0, 1], losses in nats per example.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow, in [0, 1]."""
    return np.exp(-np.logaddexp(0.0, -z))


def log_loss(z: np.ndarray, y: np.ndarray) -> float:
    """Mean cross-entropy of labels ``y`` (0/1) under log-odds ``z`` (computed without overflow)."""
    z, y = np.asarray(z, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return float(np.mean(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z)))


def fit_logistic(x: np.ndarray, y: np.ndarray, *, l2: float = 1e-6, max_iter: int = 100,
                 tol: float = 1e-10) -> np.ndarray:
    """Logistic regression of ``y`` (0/1) on the columns of ``x`` plus an intercept, by Newton's method from zero
    (deterministic); ``l2`` (on the mean log-loss, intercept excluded) keeps separable data finite.
    Returns ``[w_1 .. w_k, intercept]``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"fit_logistic needs as many labels as rows (> 0), got {x.shape[0]} rows, {y.shape[0]} labels.")
    if not np.isin(y, (0.0, 1.0)).all() or len(np.unique(y)) < 2:
        raise ValueError("fit_logistic needs labels 0 and 1, both present.")
    if not np.isfinite(x).all():
        raise ValueError("fit_logistic: the features hold NaN or infinite values.")
    design = np.hstack([x, np.ones((x.shape[0], 1))])
    penalty = np.full(design.shape[1], float(l2))
    penalty[-1] = 0.0
    w = np.zeros(design.shape[1])
    m = design.shape[0]
    for _ in range(max_iter):
        p = sigmoid(design @ w)
        grad = design.T @ (p - y) / m + penalty * w
        hess = (design * (p * (1 - p))[:, None]).T @ design / m + np.diag(penalty)
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(w)), grad)
        w = w - step
        if np.max(np.abs(step)) < tol:
            break
    return w


def _pair_accuracy(z: np.ndarray, y: np.ndarray) -> float:
    """Share of (human, negative) pairs, stored one after the other, where the human caption scores higher
    (ties count half)."""
    pos, neg = z[0::2], z[1::2]
    assert (y[0::2] == 1).all() and (y[1::2] == 0).all()
    return float(np.mean((pos > neg) + 0.5 * (pos == neg)))


def fit_report(z: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Accuracy (``z > 0`` = human), mean log-loss and pair accuracy of log-odds ``z`` on labels ``y``, stored as
    (human, negative) pairs one after the other."""
    return {"accuracy": float(((z > 0) == (y == 1)).mean()), "log_loss": log_loss(z, y),
            "pair_accuracy": _pair_accuracy(z, y)}


def check_feature_settings(model: Any, features) -> None:
    """``ValueError`` when ``features`` (a feature table) were made with another image encoder or resolution than
    the one the critic ``model`` reads."""
    settings = features.encoder_settings()
    want = {"encoder": model.config.encoder, "encoder_resolution": model.config.encoder_resolution}
    clash = {k: (settings[k], v) for k, v in want.items() if k in settings and settings[k] != v}
    if clash:
        raise ValueError(f"the features were made with {clash} (features, critic): the critic reads other ones.")


def write_tagged_json(folder: str | os.PathLike, name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as ``folder/name`` (indented JSON, the folder created); return the path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return path


def read_tagged_json(folder: str | os.PathLike, name: str, fmt: str, what: str, how_to_make: str) -> dict[str, Any]:
    """The JSON object of ``folder/name`` whose ``format`` is ``fmt``: ``FileNotFoundError`` naming ``how_to_make``
    when it is absent, ``ValueError`` naming ``what`` it should have been when it is another kind of file."""
    path = Path(folder) / name
    if not path.is_file():
        raise FileNotFoundError(f"{Path(folder)} holds no {name}; make one with {how_to_make}.")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != fmt:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path} is not {what} (format {found!r}).")
    return data


__all__ = ["check_feature_settings", "fit_logistic", "fit_report", "log_loss", "read_tagged_json", "sigmoid",
           "write_tagged_json"]
