"""One cache of loaded models: each model loaded once per key, even by threads racing for it; after
``capeval.clear_loaded_models()`` capeval references none of them."""
from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

import capeval
from capeval.loaded_models import forget, load_once, loaded_kinds


class _Model:
    pass


def test_one_load_per_key_even_when_threads_race():
    calls = []

    def load():
        calls.append(1)
        time.sleep(0.2)
        return _Model()

    got = []
    threads = [threading.Thread(target=lambda: got.append(load_once("test-kind", "a", load))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len({id(m) for m in got}) == 1
    assert load_once("test-kind", "b", _Model) is not got[0]  # another key, another model
    assert loaded_kinds()["test-kind"] == 2
    assert forget("test-kind") == 2 and "test-kind" not in loaded_kinds()


def test_a_failed_load_keeps_nothing():
    def broken():
        raise OSError("no such weights")

    with pytest.raises(OSError):
        load_once("test-kind", "broken", broken)
    assert load_once("test-kind", "broken", _Model).__class__ is _Model
    forget("test-kind")


def test_clear_loaded_models_leaves_no_reference():
    model = load_once("test-kind", "held", _Model)
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is not None  # kept by the cache
    assert capeval.clear_loaded_models() >= 1
    assert alive() is None and loaded_kinds().get("test-kind") is None


def test_the_metrics_models_are_in_the_one_cache(tmp_path):
    pytest.importorskip("torch")
    from capeval.critic.loading import load_critic

    capeval.clear_loaded_models()
    model, vocab = load_critic()  # the shipped critic
    assert loaded_kinds().get("critic") == 1
    alive = weakref.ref(model)
    del model, vocab
    capeval.clear_loaded_models()
    gc.collect()
    assert alive() is None
