"""Resume states without pickles (capeval.models.checkpoints): every training loop's optimiser / scheduler / log
round-trips exactly through safetensors + JSON, a pickled state is never loaded, a half-written state never counts."""
from __future__ import annotations

import json
import pickle

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from capeval.models.checkpoints import (LEGACY_STATE_FILE, STATE_FILE, STATE_TENSORS, epoch_checkpoints,  # noqa: E402
                                        last_checkpoint, load_state, save_state)


def _trained_optimizer_and_scheduler():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.8, 0.95), weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 3))
    for _ in range(3):
        loss = model(torch.randn(5, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    return model, optimizer, scheduler


def _equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN


def test_optimizer_scheduler_and_log_round_trip_exactly(tmp_path):
    model, optimizer, scheduler = _trained_optimizer_and_scheduler()
    state = {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "log": {"epochs": [{"epoch": 1, "dev": 0.5}], "best_dev": float("nan"), "best_epoch": None},
             "extra": {3: (1, "a"), "__odd": [True, 2.5]}}
    save_state(tmp_path, state)
    assert (tmp_path / STATE_TENSORS).is_file() and json.loads((tmp_path / STATE_FILE).read_text())
    back = load_state(tmp_path)
    assert _equal(back, state)
    assert isinstance(next(iter(back["optimizer"]["state"])), int)  # integer keys stay integers
    assert back["optimizer"]["param_groups"][0]["betas"] == (0.8, 0.95)
    # the restored optimiser takes the same next step as the original
    again, optimizer2, scheduler2 = _trained_optimizer_and_scheduler()
    optimizer2.load_state_dict(back["optimizer"])
    scheduler2.load_state_dict(back["scheduler"])
    batch = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    for m, opt in ((model, optimizer), (again, optimizer2)):
        opt.zero_grad()
        m(batch).pow(2).mean().backward()
        opt.step()
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))


def test_what_would_need_a_pickle_is_refused(tmp_path):
    with pytest.raises(TypeError, match=r"training state at \.fn: function cannot be stored without a pickle"):
        save_state(tmp_path, {"fn": lambda: 0})
    assert not (tmp_path / STATE_FILE).exists()


def test_a_pickled_state_is_never_loaded_and_the_way_out_is_named(tmp_path):
    folder = tmp_path / "checkpoints" / "epoch-1"
    folder.mkdir(parents=True)

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('pickle ran')",))

    (folder / LEGACY_STATE_FILE).write_bytes(pickle.dumps({"optimizer": Boom()}))
    assert epoch_checkpoints(tmp_path) == []
    with pytest.raises(ValueError, match=r"pickled resume state.*pass resume=False") as err:
        last_checkpoint(tmp_path)
    from capeval.cli.metric_flags import cli_words

    assert "train from scratch (give --restart)" in cli_words(err.value)  # the command line's words
    assert last_checkpoint(tmp_path, resume=False) is None


def test_a_half_written_state_does_not_count_and_a_damaged_one_is_named(tmp_path):
    for epoch in (1, 2):
        save_state(tmp_path / "checkpoints" / f"epoch-{epoch}", {"log": {"epoch": epoch}})
    (tmp_path / "checkpoints" / "epoch-3").mkdir()
    (tmp_path / "checkpoints" / "epoch-3" / (STATE_FILE + ".partial")).write_text("{\"form")  # killed mid-write
    assert last_checkpoint(tmp_path).name == "epoch-2"
    (tmp_path / "checkpoints" / "epoch-2" / STATE_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="epoch-2.*not a readable training state"):
        load_state(last_checkpoint(tmp_path))


def test_no_training_loop_loads_a_pickle():
    """The package never calls torch.load with weights_only=False nor pickle.load (no pickles)."""
    from pathlib import Path

    import capeval

    offenders = []
    for path in Path(capeval.__file__).parent.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "weights_only=False" in text or "pickle.load" in text or "torch.save(" in text:
            offenders.append(path.name)
    assert offenders == []
