"""A real local Ray cluster for the Ray tests: ``ray.init`` on 127.0.0.1 with 2 CPUs, once per test module and shut
down after it (a Ray left running beside other tests can lose its control store to a test that kills processes, and
Ray then ends the whole test process)."""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="module")
def ray_cluster():
    """The ``ray`` module, connected to a local cluster of 2 CPUs started for the module's tests; skips without Ray
    Data (``pip install "capeval[ray]"``)."""
    pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    import logging

    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local test cluster: no token warnings
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             logging_level=logging.WARNING)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    yield ray
    ray.shutdown()
