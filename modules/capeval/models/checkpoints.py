"""Epoch checkpoints shared by capeval's training loops (the critic, LCEval, the LSTM LM, the captioner).

A run writes ``out_dir/checkpoints/epoch-N/`` (the model's ``save_pretrained`` output plus the resume state: the
optimiser, the scheduler and the training log). The state is stored without pickles, so a resume folder from
elsewhere cannot run code: its tensors in :data:`STATE_TENSORS` (safetensors), everything else in :data:`STATE_FILE`
(JSON; tuples, dictionaries with integer keys and tensors marked so that :func:`load_state` rebuilds them exactly).
The JSON is written last, through a temporary file and a rename: a checkpoint counts only once it exists, so a run
killed while saving resumes from the previous epoch. Checkpoints of capeval before 0.2 (``training_state.pt``, a
pickle) are refused with the way out (``--restart``), never loaded.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capeval.advice import Fix, with_words, words

STATE_FILE = "training_state.json"
STATE_TENSORS = "training_state.safetensors"
#: The pickled state file of capeval before 0.2: never loaded.
LEGACY_STATE_FILE = "training_state.pt"
_FORMAT = "capeval-training-state"


def epoch_checkpoints(out_dir: Path) -> list[Path]:
    """Complete checkpoints of ``out_dir``, oldest epoch first."""
    found = [p for p in (Path(out_dir) / "checkpoints").glob("epoch-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def last_checkpoint(out_dir: Path, resume: bool = True) -> Path | None:
    """The newest complete checkpoint to resume from (``None`` without one, or with ``resume=False``).

    ``ValueError`` when ``out_dir`` holds only pickled checkpoints of capeval before 0.2 (they are never loaded)."""
    if not resume:
        return None
    found = epoch_checkpoints(out_dir)
    if not found:
        legacy = sorted((Path(out_dir) / "checkpoints").glob(f"epoch-*/{LEGACY_STATE_FILE}"))
        if legacy:
            raise with_words(ValueError, words(
                "resume", f"{legacy[-1]} is a pickled resume state of capeval before 0.2, which capeval no longer "
                "loads (a pickle can run code); train from scratch (", Fix("pass resume=False"), ") or into another "
                "folder."))
    return found[-1] if found else None


def _encode(value: Any, tensors: dict[str, Any], path: str) -> Any:
    """``value`` as JSON data; tensors moved to ``tensors`` under ``path``."""
    if hasattr(value, "detach") and hasattr(value, "dtype") and hasattr(value, "shape"):  # a torch tensor
        tensors[path] = value.detach().cpu().contiguous()
        return {"__tensor__": path}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and not any(k.startswith("__") for k in value):
            return {k: _encode(v, tensors, f"{path}.{k}") for k, v in value.items()}
        return {"__items__": [[_encode(k, tensors, f"{path}.k{i}"), _encode(v, tensors, f"{path}.{i}")]
                              for i, (k, v) in enumerate(value.items())]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, tensors, f"{path}.{i}") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, tensors, f"{path}.{i}") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():  # numpy scalars
        return value.item()
    raise TypeError(f"training state at {path or 'the top'}: {type(value).__name__} cannot be stored without a "
                    "pickle (tensors, numbers, strings, lists, tuples and dictionaries can).")


def _decode(value: Any, tensors: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_decode(v, tensors) for v in value]
    if isinstance(value, dict):
        if "__tensor__" in value:
            return tensors[value["__tensor__"]]
        if "__tuple__" in value:
            return tuple(_decode(v, tensors) for v in value["__tuple__"])
        if "__items__" in value:
            return {_decode(k, tensors): _decode(v, tensors) for k, v in value["__items__"]}
        return {k: _decode(v, tensors) for k, v in value.items()}
    return value


def save_state(folder: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write ``state`` (optimiser / scheduler ``state_dict()``s, the log) as :data:`STATE_TENSORS` then, last and
    atomically, :data:`STATE_FILE`; return the JSON's path. ``TypeError`` for a value that would need a pickle."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, Any] = {}
    payload = {"format": _FORMAT, "version": 1, "state": _encode(state, tensors, "")}
    save_file(tensors, str(folder / STATE_TENSORS))
    target = folder / STATE_FILE
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(partial, target)
    return target


def load_state(folder: str | os.PathLike) -> dict[str, Any]:
    """The state :func:`save_state` wrote into ``folder`` (tensors on the CPU). ``ValueError`` for a damaged or
    foreign file, naming it."""
    from safetensors.torch import load_file

    folder = Path(folder)
    path = folder / STATE_FILE
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        tensors = load_file(str(folder / STATE_TENSORS)) if (folder / STATE_TENSORS).is_file() else {}
    except (OSError, ValueError) as err:
        raise with_words(ValueError, words("resume", f"{path}: not a readable training state ({err}); resume from "
                                           "another checkpoint or ", Fix("pass resume=False"), ".")) from err
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{path} is not a capeval training state.")
    try:
        return _decode(payload["state"], tensors)
    except KeyError as err:
        raise ValueError(f"{path}: the tensor {err} is missing from {STATE_TENSORS}.") from None


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
    and, last, ``state`` (optimiser, scheduler, log; :func:`save_state`), which makes the checkpoint complete."""
    folder = Path(out_dir) / "checkpoints" / f"epoch-{epoch}"
    model.save_pretrained(folder)
    save_extra(folder)
    save_state(folder, state)
    return folder


def finish(out_dir: Path, log: dict[str, Any]) -> None:
    """Copy the best epoch's files (all but the resume state) to ``out_dir`` and write ``training.json``."""
    out_dir = Path(out_dir)
    best = out_dir / "checkpoints" / f"epoch-{log['best_epoch']}"
    for path in best.iterdir():
        if path.is_file() and path.name not in (STATE_FILE, STATE_TENSORS):
            shutil.copy2(path, out_dir / path.name)
    (out_dir / "training.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
