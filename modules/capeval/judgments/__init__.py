"""Human-judgment benchmarks for caption metrics: loaders, statistics, the harness and its reports.

Modules, in data-flow order: the loaders (``flickr8k``, ``composite``, ``pascal50s``, ``abstract50s``,
``thumb``, ``nebula`` and ``polaris`` (both read by ``judgment_sets``; Hub datasets by ``hub_dataset``), ``detailcaps``,
``coco_karpathy``; file helpers in ``files``) yield the record types of ``records``;
``stats`` holds the correlation / accuracy statistics; ``scorers`` scores items with any capeval
metric or ``evaluate`` module, cached by ``score_cache``; ``harness`` runs ``capeval bench``;
``report`` prints its tables beside the published numbers and draws plots. ``robustness`` runs
``capeval robustness`` (Cui et al. 2018 §3.4: metric scores of transformed Flickr8k test captions, no
human judgments). ``verify`` runs ``capeval verify``: every published number re-measured through the harness and
marked reproduced / differs / skipped with its reason.

>>> from capeval.judgments import load_benchmark            # doctest: +SKIP
>>> bench = load_benchmark("flickr8k-expert", protocol="clipscore")
>>> result = capeval.score(bench.candidates(), bench.references(), metrics="cider_d")
>>> bench.evaluate(result["per_caption"]["cider_d"])["value"]   # Kendall tau-c

Metrics that read images also take ``images=bench.images()``: one image file path per candidate, in
:meth:`Benchmark.candidates` order (``None`` when some image is not under the data directory; the loaders look
in ``files.FLICKR8K_IMAGE_DIRS``, ``PASCAL_IMAGE_DIRS``... or a loader's ``image_dir=``); for Nebula and Polaris
read from their Hub datasets, the datasets' own ``Image`` values (``{"bytes", "path"}``).

Benchmarks (``load_benchmark`` names; settings are the loader's keyword arguments):

=====================  ==============================================  =========================
name                   settings                                        statistic
=====================  ==============================================  =========================
flickr8k-expert        protocol=clipscore|cui, tau_variant             Kendall tau-c / tau-b
flickr8k-crowdflower   protocol=clipscore|cui, tau_variant             Kendall tau-b
composite              subset=8k|30k|coco|all, drop_matched_reference  Kendall tau-c
pascal50s              references=expert|all|k, seed                   pairwise accuracy
abstract50s            references=all|k, seed, hc_pairs                pairwise accuracy
thumb                  include_human, target=total|P|R                 Pearson
nebula                 split=test|validation|train, image_dir          Kendall tau-c
polaris                split=test|validation|train, image_dir          Kendall tau-c
detailcaps             references=paper|all                            Pearson (and Kendall tau-b)
caparena               annotations, image_dir                          caption-level agreement
longcap-arena          aspect=desc|rel|flu, split=test|validation      Kendall tau-c
coco-karpathy-test     systems                                         (no judgments)
=====================  ==============================================  =========================

Every loader also takes ``root`` (the data directory; default :func:`capeval.paths.data_dir`) and
raises ``FileNotFoundError`` naming the missing file and its expected format.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from capeval.judgments.records import Benchmark, CaptionRecord, PairRecord
from capeval.registry import BENCHMARK_ALIASES, BENCHMARKS


def _registry() -> dict[str, Callable[..., Benchmark]]:
    from capeval.judgments.abstract50s import load_abstract50s
    from capeval.judgments.coco_karpathy import load_coco_karpathy
    from capeval.judgments.caparena import load_caparena
    from capeval.judgments.composite import load_composite
    from capeval.judgments.detailcaps import load_detailcaps
    from capeval.judgments.flickr8k import load_crowdflower, load_expert
    from capeval.judgments.longcap_arena import load_longcap_arena
    from capeval.judgments.nebula import load_nebula
    from capeval.judgments.pascal50s import load_pascal50s
    from capeval.judgments.polaris import load_polaris
    from capeval.judgments.thumb import load_thumb

    return {
        "flickr8k-expert": load_expert,
        "flickr8k-crowdflower": load_crowdflower,
        "composite": load_composite,
        "pascal50s": load_pascal50s,
        "abstract50s": load_abstract50s,
        "thumb": load_thumb,
        "nebula": load_nebula,
        "polaris": load_polaris,
        "detailcaps": load_detailcaps,
        "caparena": load_caparena,
        "longcap-arena": load_longcap_arena,
        "coco-karpathy-test": load_coco_karpathy,
    }


#: Every benchmark name, declared once in :data:`capeval.registry.BENCHMARKS`.
BENCHMARK_NAMES = tuple(BENCHMARKS)


def canonical_name(name: str, choices: Sequence[str] = BENCHMARK_NAMES) -> str:
    """``"Flickr8k_Expert"`` → ``"flickr8k-expert"``; ``ValueError`` listing ``choices`` otherwise."""
    key = str(name).strip().lower().replace("_", "-")
    key = BENCHMARK_ALIASES.get(key, key)
    if key not in BENCHMARK_NAMES:
        from capeval.suggest import did_you_mean

        raise ValueError(f"unknown benchmark {name!r}{did_you_mean(str(name), choices) or '; available: ' + ', '.join(choices)}.")
    return key


def load_benchmark(name: str, root: str | Path | None = None, **settings: Any) -> Benchmark:
    """Load benchmark ``name`` with the given protocol settings (see the module docstring); for ``caparena``, its
    battles (:class:`capeval.judgments.caparena.CapArena`)."""
    import inspect

    loader = _registry()[canonical_name(name)]
    try:
        inspect.signature(loader).bind(root, **settings)  # a setting this benchmark does not take: said before loading
    except TypeError as err:
        raise ValueError(f"{name}: {err}") from None
    return loader(root, **settings)


__all__ = ["BENCHMARK_NAMES", "Benchmark", "CaptionRecord", "PairRecord", "canonical_name", "load_benchmark"]
