"""Epoch checkpoints shared by capeval's training loops (the LSTM LM, the captioner).

A run writes ``out_dir/checkpoints/epoch-N/`` (the model's ``save_pretrained`` output plus
:data:`STATE_FILE`, the optimiser state and the training log); a checkpoint counts only once its state file
exists, so a run killed while saving resumes from the previous epoch.
"""
from __future__ import annotations

from pathlib import Path

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
