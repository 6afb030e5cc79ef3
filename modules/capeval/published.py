"""Published metric-vs-human numbers, stored as data with their citation (``data/published.json``).

Each entry: ``benchmark``, ``source`` (a key of :func:`citations`), ``where`` (table), ``protocol``,
``statistic`` (``tau``, ``tau_b``, ``tau_c``, ``pearson``, ``spearman``, ``accuracy``, ...), ``scale``
(1 or 100, as printed in the source), ``values`` (metric -> number or nested dict) and an optional
``note``. Values are transcribed from the papers in ../shared/papers and the spec digest, or from the public copies
each ``where`` names. An entry whose ``source`` transcribes other papers' tables (``capevalkit``) names, per value,
the table it copies: ``original`` (metric -> ``{"source": citation key, "where": table}``). ``settings`` (optional)
records the benchmark settings the numbers correspond to.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def _load() -> dict:
    return json.loads((resources.files("capeval") / "data" / "published.json").read_text(encoding="utf-8"))


def citations() -> dict[str, str]:
    return dict(_load()["citations"])


def entries() -> list[dict]:
    """Every entry, in file order (``capeval verify`` re-measures them all)."""
    return list(_load()["entries"])


def published(benchmark: str, protocol: str | None = None, statistic: str | None = None) -> list[dict]:
    """Entries for ``benchmark`` (optionally one protocol / statistic), in file order."""
    return [
        e
        for e in _load()["entries"]
        if e["benchmark"] == benchmark
        and (protocol is None or e["protocol"] == protocol)
        and (statistic is None or e["statistic"] == statistic)
    ]
