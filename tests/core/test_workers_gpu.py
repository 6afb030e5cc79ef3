"""Each of several score-dataset workers takes its own GPU (``capeval.workers.take_own_gpu``), counted without
importing torch."""
from __future__ import annotations

import subprocess
import sys

from capeval.workers import take_own_gpu


def _driver(tmp_path, gpus):
    folder = tmp_path / "gpus"
    folder.mkdir()
    for i in range(gpus):
        (folder / f"0000:{i:02x}:00.0").mkdir()
    return str(folder)


def test_workers_spread_over_the_driver_s_gpus(tmp_path):
    folder = _driver(tmp_path, 3)
    chosen = []
    for rank in range(5):
        env: dict[str, str] = {}
        chosen.append(take_own_gpu(rank, env, folder))
        assert env["CUDA_VISIBLE_DEVICES"] == chosen[-1]
    assert chosen == ["0", "1", "2", "0", "1"]


def test_the_visible_devices_given_are_the_ones_shared(tmp_path):
    env = {"CUDA_VISIBLE_DEVICES": "5, 7"}
    assert take_own_gpu(3, env, _driver(tmp_path, 8)) == "7" and env["CUDA_VISIBLE_DEVICES"] == "7"


def test_no_gpu_or_one_gpu_changes_nothing(tmp_path):
    for env, folder in (({}, str(tmp_path / "absent")), ({}, _driver(tmp_path, 1)), ({"CUDA_VISIBLE_DEVICES": ""}, ""),
                        ({"CUDA_VISIBLE_DEVICES": "2"}, "")):
        before = dict(env)
        assert take_own_gpu(1, env, folder) is None and env == before


def test_a_score_dataset_worker_has_not_imported_torch_when_it_chooses():
    """The choice must come before torch reads CUDA_VISIBLE_DEVICES: the worker's module imports no torch."""
    code = "import sys, capeval.dataset_scoring.run; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
