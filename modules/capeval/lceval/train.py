"""Training an LCEval network on feature vectors (torch + accelerate; seconds per epoch on a CPU).

The paper (§3.3, §4.6): a feed-forward network (default one hidden layer of 12 ReLU units; ``hidden=0`` is the
linear variant) classifies human (1) vs machine (0) captions from the 16 features; cross-entropy with L2
regularisation (``weight_decay``), Adam lr 5e-4, batch 75. Model selection: the epoch with the lowest dev
cross-entropy on a dev split of the *training* data (the paper early-stopped on Flickr8k-Expert, which capeval
reports, so it may not select on it), with ``patience`` epochs of patience.

Each epoch writes ``out_dir/checkpoints/epoch-N/`` (model folder + optimiser state and log); a rerun resumes from
the last complete one and reproduces an uninterrupted run (seeded per epoch). The best epoch is copied to
``out_dir`` (``config.json``, ``model.safetensors``) with ``training.json`` (the log).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from capeval.lceval.features import ALL_FEATURE_NAMES, FEATURE_NAMES
from capeval.lceval.model import LCEvalConfig, LCEvalModel
from capeval.dependencies import require
from capeval.models.checkpoints import finish, last_checkpoint, load_state, record_epoch, save_checkpoint, stale
from capeval.progress import progress

__all__ = ["DEFAULTS", "train_lceval"]

DEFAULTS: dict[str, Any] = {"hidden": 12, "epochs": 200, "batch_size": 75, "lr": 5e-4, "weight_decay": 1e-4,
                            "patience": 20, "seed": 0, "features": list(FEATURE_NAMES)}


def _network(torch, d: int, hidden: int):
    nn = torch.nn
    if hidden:
        return nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, 2))
    return nn.Sequential(nn.Linear(d, 2))


def _to_model(net, config: LCEvalConfig) -> LCEvalModel:
    """The torch network's weights as an :class:`LCEvalModel` (weights stored input x output)."""
    layers = [m for m in net if hasattr(m, "weight")]
    w = [m.weight.detach().cpu().numpy().T for m in layers]
    b = [m.bias.detach().cpu().numpy() for m in layers]
    params = {"W1": w[0], "b1": b[0], "W2": w[1], "b2": b[1]} if config.hidden else {"W": w[0], "b": b[0]}
    return LCEvalModel(config, params)


def _from_model(torch, net, model: LCEvalModel) -> None:
    layers = [m for m in net if hasattr(m, "weight")]
    p = model.params
    pairs = [("W1", "b1"), ("W2", "b2")] if model.config.hidden else [("W", "b")]
    with torch.no_grad():
        for layer, (wk, bk) in zip(layers, pairs):
            layer.weight.copy_(torch.from_numpy(p[wk].T.copy()))
            layer.bias.copy_(torch.from_numpy(p[bk].copy()))


def _check_xy(x: np.ndarray, y: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float32), np.asarray(y)
    if x.ndim != 2 or x.shape[1] not in (len(FEATURE_NAMES), len(ALL_FEATURE_NAMES)) or len(y) != len(x):
        raise ValueError(f"{what}: features must be (n, {len(FEATURE_NAMES)}) or (n, {len(ALL_FEATURE_NAMES)}) with one "
                         f"label each, got {x.shape} and {len(y)} labels.")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: features contain NaN or infinity.")
    if not set(np.unique(y)) <= {0, 1}:
        raise ValueError(f"{what}: labels must be 0 (machine) or 1 (human).")
    return x, y.astype(np.int64)


def _dev_metrics(torch, net, x, y, columns) -> dict[str, float]:
    net.eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(x[:, columns]))
        loss = float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(y)).item())
        acc = float((logits.argmax(1).numpy() == y).mean())
    return {"dev_loss": loss, "dev_neg_loss": -loss, "dev_accuracy": acc}


def train_lceval(train_x: np.ndarray, train_y: Sequence[int], dev_x: np.ndarray, dev_y: Sequence[int],
                 out_dir: str | Path, *, resume: bool = True, progress_bar: bool | None = None,
                 word_vectors: str = "glove-6b-50d", parser_model: str | None = None, description: str = "",
                 extra_critic: str | None = None, extra_log: dict[str, Any] | None = None,
                 **options: Any) -> dict[str, Any]:
    """Train on ``(train_x, train_y)``, select on ``(dev_x, dev_y)``, save the best epoch to ``out_dir``.

    ``train_x`` / ``dev_x``: ``(n, 16)`` features (:func:`capeval.lceval.features.lceval_features`); labels 1 human,
    0 machine. ``options`` override :data:`DEFAULTS` (``hidden``, ``epochs``, ``batch_size``, ``lr``,
    ``weight_decay``, ``patience``, ``seed``, ``features``: the feature names used, for ablations).
    ``word_vectors`` / ``parser_model`` / ``extra_critic`` (LCEval+'s critic feature; default ``critic-flickr8k-ref``):
    the feature settings, recorded in the config. Returns the log.
    """
    torch, accelerate = require("torch", "accelerate", what="LCEval training")
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown training option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}.")
    opts = {**DEFAULTS, **options}
    if opts["epochs"] < 1 or opts["batch_size"] < 1 or not opts["lr"] > 0 or opts["weight_decay"] < 0:
        raise ValueError("epochs and batch_size must be >= 1, lr > 0 and weight_decay >= 0.")
    train_x, train_y = _check_xy(train_x, np.asarray(train_y), "train")
    dev_x, dev_y = _check_xy(dev_x, np.asarray(dev_y), "dev")
    if len(dev_y) == 0 or len(set(train_y.tolist())) < 2:
        raise ValueError("training needs both classes in train and a non-empty dev split.")
    config = LCEvalConfig(features=list(opts["features"]), hidden=int(opts["hidden"]), word_vectors=str(word_vectors),
                          parser_model=parser_model, description=description,
                          **({"extra_critic": str(extra_critic)} if extra_critic else {}))
    opts["features"] = list(config.features)
    columns = config.columns
    if max(columns) >= train_x.shape[1]:
        raise ValueError(f"features {config.features} need LCEval+'s extra columns: train_x has {train_x.shape[1]}.")
    out_dir = Path(out_dir)
    accelerator = accelerate.Accelerator(cpu=True)
    torch.manual_seed(opts["seed"])
    net = _network(torch, len(columns), config.hidden)
    optimizer = torch.optim.Adam(net.parameters(), lr=opts["lr"], weight_decay=opts["weight_decay"])
    last = last_checkpoint(out_dir, resume)
    if last is not None:
        state = load_state(last)
        log = state["log"]
        if log["options"]["features"] != opts["features"] or log["options"]["hidden"] != opts["hidden"]:
            raise ValueError(f"{out_dir} holds a run with other features/hidden units; use another folder or resume=False.")
        _from_model(torch, net, LCEvalModel.from_pretrained(last))
        optimizer.load_state_dict(state["optimizer"])
    else:
        log = {"options": dict(opts), "config": {"hidden": config.hidden, "features": config.features},
               "train_pairs": int(len(train_y)), "dev_pairs": int(len(dev_y)), "epochs": [], "best_epoch": None,
               "best_dev": None, **(extra_log or {})}
    net, optimizer = accelerator.prepare(net, optimizer)
    core = accelerator.unwrap_model(net)
    xt = torch.from_numpy(train_x[:, columns])
    yt = torch.from_numpy(train_y)
    bar = progress(range(len(log["epochs"]) + 1, opts["epochs"] + 1), total=opts["epochs"] - len(log["epochs"]),
                   desc="LCEval training", enabled=progress_bar)
    for epoch in bar:
        if stale(len(log["epochs"]), log["best_epoch"], opts["patience"]):
            break
        generator = torch.Generator().manual_seed(opts["seed"] * 100_003 + epoch)
        order = torch.randperm(len(yt), generator=generator)
        net.train()
        total = 0.0
        for start in range(0, len(order), opts["batch_size"]):
            idx = order[start:start + opts["batch_size"]]
            loss = torch.nn.functional.cross_entropy(net(xt[idx].to(accelerator.device)), yt[idx].to(accelerator.device))
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
            total += float(loss.item()) * len(idx)
        entry = {"epoch": epoch, "train_loss": total / len(yt), **_dev_metrics(torch, core.cpu(), dev_x, dev_y, columns)}
        core.to(accelerator.device)
        record_epoch(log, entry, "dev_neg_loss")
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{entry['train_loss']:.4f}", dev=f"{entry['dev_loss']:.4f}")
        if accelerator.is_main_process:
            save_checkpoint(out_dir, epoch, _to_model(core, config), lambda folder: None,
                            {"optimizer": optimizer.state_dict(), "log": log})
        accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        finish(out_dir, log)
    return log
