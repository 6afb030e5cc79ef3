"""Training of the LSTM caption LM (:mod:`capeval.models.lstm_lm`) with ``accelerate``.

Seeded (same seed, same data, same settings -> same weights), a tqdm bar with the running loss
(mean negative natural-log likelihood per token, ``<eos>`` included), a checkpoint after every epoch
(``out_dir/checkpoints/epoch-N``: the model via ``save_pretrained`` plus the resume state, no pickles: :mod:`capeval.models.checkpoints`), resume from
the last checkpoint, early stopping on the dev perplexity. ``out_dir`` itself ends up holding the
best model (lowest dev perplexity; the last epoch without dev captions) and ``training.json``.
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from capeval.models.caption_lm import Vocabulary, caption_tokens, perplexity
from capeval.models.lstm_lm import LSTMConfig, LSTMLanguageModel, torch
from capeval.progress import progress

from capeval.models.checkpoints import last_checkpoint, load_state, save_state, stale


def _seed_all(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def train_lstm_lm(
    captions: Sequence[str],
    out_dir: str | Path,
    *,
    dev_captions: Sequence[str] | None = None,
    epochs: int = 10,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    min_count: int = 5,
    patience: int = 2,
    clip_norm: float = 5.0,
    config: dict[str, Any] | None = None,
    cpu: bool = True,
    resume: bool = True,
    progress_bar: bool | None = None,
) -> dict[str, Any]:
    """Train an LSTM LM on ``captions`` and save the best one to ``out_dir``; returns the training log.

    ``config`` overrides :class:`LSTMConfig` fields (``embedding_dim``, ``hidden_size``, ``dropout``,
    ``tie_weights``, ...). Training stops after ``epochs`` or when the dev perplexity has not improved for
    ``patience`` epochs. With ``resume=True`` an existing checkpoint in ``out_dir`` is continued (its
    vocabulary and config win); the per-epoch seeding (``seed + epoch``) makes a resumed run equal an
    uninterrupted one.
    """
    from accelerate import Accelerator

    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(f"epochs and batch_size must be >= 1 and lr > 0 (got {epochs}, {batch_size}, {lr}).")
    out_dir = Path(out_dir)
    accelerator = Accelerator(cpu=cpu)
    tokens = caption_tokens(captions)
    if not tokens:
        raise ValueError("No training captions.")
    last = last_checkpoint(out_dir, resume)
    _seed_all(seed)
    model = _start_model(last, tokens, min_count, config)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    log: dict[str, Any] = {"epochs": [], "best_epoch": None, "best_dev_ppl": None, "seed": seed, "lr": lr,
                           "batch_size": batch_size, "min_count": min_count, "config": asdict(model.config)}
    if last is not None:
        state = load_state(last)
        optimizer.load_state_dict(state["optimizer"])
        log = state["log"]
    model, optimizer = accelerator.prepare(model, optimizer)
    core = accelerator.unwrap_model(model)
    train_ids = [core.vocab.encode(t) for t in tokens]
    dev_ids = [core.vocab.encode(t) for t in caption_tokens(dev_captions)] if dev_captions else None
    start_epoch = len(log["epochs"]) + 1
    for epoch in range(start_epoch, epochs + 1):
        if _stale(log, patience):
            break
        _seed_all(seed + epoch)
        order = list(range(len(train_ids)))
        random.Random(seed + epoch).shuffle(order)
        batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        model.train()
        total_nll, total_tokens = _train_batches(model, core, optimizer, accelerator, train_ids, batches, clip_norm,
                                                 desc=f"lm epoch {epoch}/{epochs}", progress_bar=progress_bar)
        entry = {"epoch": epoch, "train_loss": total_nll / total_tokens, "train_ppl": math.exp(total_nll / total_tokens)}
        if dev_ids:
            dev_lp = core.log_prob_ids(dev_ids)
            entry["dev_ppl"] = perplexity(dev_lp, [len(i) for i in dev_ids])
        _record_and_save_epoch(log, entry, core, optimizer, out_dir)
    _save_best(out_dir, log, bool(dev_ids))
    return log


def _start_model(last: Path | None, tokens: list[list[str]], min_count: int,
                 config: dict[str, Any] | None) -> LSTMLanguageModel:
    """The last checkpoint's model (in training mode; its vocabulary and config win), or a new one over the words
    seen at least ``min_count`` times."""
    if last is not None:
        model = LSTMLanguageModel.from_pretrained(last)
        model.train()
        return model
    vocab = Vocabulary.build(tokens, min_count)
    return LSTMLanguageModel(LSTMConfig(vocab_size=len(vocab), **(config or {})), vocab)


def _train_batches(model, core, optimizer, accelerator, train_ids: list[list[int]], batches: list[list[int]],
                   clip_norm: float, desc: str, progress_bar: bool | None) -> tuple[float, int]:
    """One optimizer step per batch of caption indices (mean token NLL, gradients clipped to ``clip_norm``; 0:
    not), under a progress bar titled ``desc``; ``(summed NLL in nats, target tokens)``."""
    total_nll, total_tokens = 0.0, 0
    bar = progress(batches, desc=desc, enabled=progress_bar)
    for batch in bar:
        inputs, targets, mask = (t.to(accelerator.device) for t in core.batch_tensors([train_ids[i] for i in batch]))
        nll = -core.token_log_probs(inputs, targets, mask).sum()
        n = int(mask.sum().item())
        optimizer.zero_grad()
        accelerator.backward(nll / n)
        if clip_norm:
            accelerator.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        total_nll, total_tokens = total_nll + float(nll.item()), total_tokens + n
        bar.set_postfix(loss=f"{total_nll / total_tokens:.3f}")
    return total_nll, total_tokens


def _record_and_save_epoch(log: dict[str, Any], entry: dict[str, Any], core, optimizer, out_dir: Path) -> None:
    """Append the epoch's ``entry`` to the log, update the best epoch (lowest dev perplexity; without dev
    captions the latest) and save the checkpoint ``out_dir/checkpoints/epoch-N`` with the optimizer and log."""
    epoch = entry["epoch"]
    log["epochs"].append(entry)
    score = entry.get("dev_ppl", -epoch)  # without dev captions: the latest epoch is the best
    if log["best_dev_ppl"] is None or score < log["best_dev_ppl"]:
        log["best_epoch"], log["best_dev_ppl"] = epoch, score
    ckpt = out_dir / "checkpoints" / f"epoch-{epoch}"
    core.save_pretrained(ckpt)
    save_state(ckpt, {"optimizer": optimizer.state_dict(), "log": log})


def _save_best(out_dir: Path, log: dict[str, Any], has_dev: bool) -> None:
    """Copy the best epoch's model to ``out_dir`` and write ``training.json`` (``best_dev_ppl`` None without dev
    captions)."""
    best = LSTMLanguageModel.from_pretrained(out_dir / "checkpoints" / f"epoch-{log['best_epoch']}")
    best.save_pretrained(out_dir)
    if not has_dev:
        log["best_dev_ppl"] = None
    (out_dir / "training.json").write_text(json.dumps(log, indent=1), encoding="utf-8")


def _stale(log: dict[str, Any], patience: int) -> bool:
    """True when the last ``patience`` epochs did not improve on the best dev perplexity."""
    return "dev_ppl" in (log["epochs"] or [{}])[-1] and stale(len(log["epochs"]), log["best_epoch"], patience)
