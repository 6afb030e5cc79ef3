"""A large METEOR call split over forked children (capeval.meteor.forked): the same statistics lines as one process,
a failed child's share computed by the caller, and no fork where one is not safe."""
from __future__ import annotations

import os
import random
import threading

import pytest

import capeval.meteor.forked as forked
import capeval.meteor.scorer as scorer_module
from capeval.meteor.scorer import PythonMeteorScorer

_WORDS = ("a the dog dogs man men riding rides bike bicycle street road on of in big large small little is are playing "
          "plays grass lawn photo picture two people person sitting sits table").split()


def _pairs(n: int, seed: int) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(seed)
    caption = lambda: " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))  # noqa: E731
    hyps = [caption() for _ in range(n)]
    refs = [[caption() for _ in range(rng.randint(1, 4))] for _ in range(n)]
    return hyps + hyps[:5], refs + refs[:5]  # five pairs repeated: computed once


@pytest.fixture
def forks(monkeypatch):
    """The shares handed to children (one list per call), with a share per 10 pairs."""
    if not forked.can_fork():
        pytest.skip("this process may not fork (not Linux, or another thread runs)")
    monkeypatch.setattr(scorer_module, "_PAIRS_PER_PROCESS", 10)
    started: list[list] = []

    class Recorded(forked.ForkedShares):
        def __init__(self, compute, shares) -> None:
            started.append([list(s) for s in shares])
            super().__init__(compute, shares)

    monkeypatch.setattr(scorer_module, "ForkedShares", Recorded)
    return started


def test_forked_shares_give_the_lines_of_one_process(forks):
    hyps, refs = _pairs(60, seed=1)
    expected = PythonMeteorScorer(processes=1).statistics(hyps, refs)
    assert not forks
    split = PythonMeteorScorer(processes=3)
    assert split.statistics(hyps, refs) == expected
    assert len(forks) == 1 and len(forks[0]) == 2  # this process and two children
    assert split.computed == 60 and len(split._stats) == 60
    assert split.statistics(hyps, refs) == expected and len(forks) == 1  # answered from the cache: no fork


def test_a_failed_child_leaves_its_share_to_the_caller(forks, monkeypatch):
    hyps, refs = _pairs(40, seed=2)
    expected = PythonMeteorScorer(processes=1).statistics(hyps, refs)
    monkeypatch.setattr(forked, "_run_share", lambda compute, share, send: os._exit(3))  # dies without an answer
    assert PythonMeteorScorer(processes=2).statistics(hyps, refs) == expected
    assert len(forks) == 1


def test_no_fork_beside_another_thread_or_under_a_launch(monkeypatch):
    if not forked.can_fork():
        pytest.skip("this process may not fork (not Linux, or another thread runs)")
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        assert not forked.can_fork()
    finally:
        stop.set()
        thread.join()
    assert forked.can_fork()
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not forked.can_fork()


def test_processes_must_be_a_positive_integer():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="processes"):
            PythonMeteorScorer(processes=bad)
    assert 1 <= forked.default_processes() <= forked.MAX_PROCESSES
