"""Epoch checkpoints shared by capeval's training loops (the LSTM LM, the captioner).

A run writes ``out_dir/checkpoints/epoch-N/`` (the model's ``save_pretrained`` output plus
:data:`STATE_FILE`, the optimiser state and the training log); a checkpoint counts only once its state file
exists, so a run killed while saving resumes from the previous epoch.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

STATE_FILE = "training_state.pt"


def epoch_checkpoints(out_dir: Path) -> list[Path]:
    """Complete checkpoints of ``out_dir``, oldest epoch first."""
    found = [p for p in (Path(out_dir) / "checkpoints").glob("epoch-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def last_checkpoint(out_dir: Path, resume: bool = True) -> Path | None:
    """The newest complete checkpoint to resume from (``None`` without one, or with ``resume=False``)."""
    found = epoch_checkpoints(out_dir) if resume else []
    return found[-1] if found else None


def stale(epochs_done: int, best_epoch: int | None, patience: int) -> bool:
    """True when the last ``patience`` epochs did not improve on ``best_epoch`` (0 = never stop early)."""
    return bool(patience) and best_epoch is not None and epochs_done - best_epoch >= patience


def record_epoch(log: dict[str, Any], entry: dict[str, Any], key: str) -> None:
    """Append ``entry`` to ``log["epochs"]`` and make it the best epoch when ``entry[key]`` beats ``log["best_dev"]``
    (higher is better; without ``key`` in the entry the latest epoch is the best)."""
    log["epochs"].append(entry)
    value = entry.get(key, entry["epoch"])
    if log["best_dev"] is None or value > log["best_dev"]:
        log["best_epoch"], log["best_dev"] = entry["epoch"], value


def save_checkpoint(out_dir: Path, epoch: int, model, save_extra: Callable[[Path], Any], state: dict[str, Any]) -> Path:
    """``out_dir/checkpoints/epoch-N``: ``model.save_pretrained``, ``save_extra(folder)`` (tokenizer, vocabulary)
    and, last, ``state`` (optimiser, scheduler, log) in :data:`STATE_FILE`, which makes the checkpoint complete."""
    torch = __import__("torch")
    folder = Path(out_dir) / "checkpoints" / f"epoch-{epoch}"
    model.save_pretrained(folder)
    save_extra(folder)
    torch.save(state, folder / STATE_FILE)
    return folder


def finish(out_dir: Path, log: dict[str, Any]) -> None:
    """Copy the best epoch's files (all but :data:`STATE_FILE`) to ``out_dir`` and write ``training.json``."""
    out_dir = Path(out_dir)
    best = out_dir / "checkpoints" / f"epoch-{log['best_epoch']}"
    for path in best.iterdir():
        if path.is_file() and path.name != STATE_FILE:
            shutil.copy2(path, out_dir / path.name)
    (out_dir / "training.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
