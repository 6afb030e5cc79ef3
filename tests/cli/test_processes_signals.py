"""``capeval score --processes 2`` stopped: Ctrl-C of the process group and SIGTERM of the parent
print one line and leave no process behind; SIGKILL of the parent stops the launcher and its workers (they get
SIGTERM when the parent dies) before a restarted run could overlap them."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytest.importorskip("accelerate")
pytest.importorskip("torch")

WORDS = "a the dog cat man woman runs sits on in with red blue grass field street ball child plays water".split()


def _files(tmp_path, n=20_000):
    rng = random.Random(3)

    def caption():
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 12)))

    preds, refs = tmp_path / "p.jsonl", tmp_path / "r.jsonl"
    preds.write_text("".join(json.dumps({"image_id": i, "caption": caption()}) + "\n" for i in range(n)))
    refs.write_text("".join(json.dumps({"image_id": i, "references": [caption(), caption()]}) + "\n"
                            for i in range(n)))
    return preds, refs


def _workers_running(parent: psutil.Process) -> list[psutil.Process]:
    found = []
    for process in parent.children(recursive=True):
        try:
            words = process.cmdline()
        except psutil.Error:  # gone, or a zombie
            continue
        if "capeval" in words and "capeval.cli.launcher" not in words:  # python [-u] -m capeval score ...
            found.append(process)
    return found


@pytest.mark.parametrize("how", ["sigint-group", "sigterm", "sigkill"])
def test_stopping_a_run_of_several_processes(tmp_path, how):
    preds, refs = _files(tmp_path)
    child = subprocess.Popen([sys.executable, "-m", "capeval", "score", "--predictions", str(preds), "--references",
                              str(refs), "--metrics", "meteor", "--processes", "2", "--no-language-check"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    parent = psutil.Process(child.pid)
    try:
        deadline = time.monotonic() + 120
        while len(_workers_running(parent)) < 2:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.2)
        family = parent.children(recursive=True)
        time.sleep(4)  # the workers are importing or scoring
        assert child.poll() is None, "finished before the signal: make the input larger"
        if how == "sigint-group":
            os.killpg(child.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        else:
            child.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
        _, err = child.communicate(timeout=60)
        _, alive = psutil.wait_procs(family, timeout=30)
        assert alive == [], f"left running: {[p.pid for p in alive]}"
    finally:
        for p in [child, *psutil.Process().children(recursive=True)]:
            try:
                p.kill()
            except (psutil.NoSuchProcess, ProcessLookupError):
                pass
    if how == "sigkill":
        assert child.returncode == -signal.SIGKILL
        return
    expected = {"sigint-group": (130, "interrupted"), "sigterm": (143, "terminated")}[how]
    assert child.returncode == expected[0], err
    assert [line for line in err.splitlines() if line.strip()] == [f"capeval score: {expected[1]}"], err


def test_an_error_met_by_every_process_is_said_once(tmp_path):
    """Each of the processes meets the same bad input: the parent prints its line once, with no launcher report."""
    preds, refs = tmp_path / "p.jsonl", tmp_path / "r.jsonl"
    preds.write_text('{"image_id": 1, "caption": "a dog"}\n{"image_id": 1, "caption": "a cat"}\n')
    refs.write_text('{"image_id": 1, "references": ["a dog"]}\n')
    done = subprocess.run([sys.executable, "-m", "capeval", "score", "--predictions", str(preds), "--references",
                           str(refs), "--processes", "2", "--no-language-check"], capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and lines[0].startswith("capeval score: error: ") and "lines 1 and 2" in lines[0], lines
