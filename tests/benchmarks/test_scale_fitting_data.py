"""The readable scales were fitted on captions of images no reported benchmark evaluates: the data
``benchmarks/fit_scales.py fit`` reads is rebuilt here and checked against every benchmark's images, and the shipped
maps record that very data."""
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _fit_scales():
    spec = importlib.util.spec_from_file_location("fit_scales", ROOT / "benchmarks" / "fit_scales.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _coco_id(name: str) -> int | None:
    """COCO's numeric image id (train2014 and val2014 share one id space), ``None`` for other images."""
    return int(re.findall(r"\d+", name)[-1]) if name.startswith("COCO_") else None


@pytest.fixture(scope="module")
def benchmark_names(shared_data):
    from capeval.corpora.held_out import benchmark_images

    found = benchmark_images(shared_data)
    # not a vacuous check: the photo benchmarks with Flickr8k and COCO images are there
    assert {"composite", "flickr8k-expert", "pascal50s"} <= set(found) and all(found.values())
    names = set().union(*found.values())
    return names, {i for i in map(_coco_id, names) if i is not None}


def _shipped(metric: str) -> dict:
    data = json.loads((ROOT / "modules" / "capeval" / "data" / "readable_scales.json").read_text(encoding="utf-8"))
    return data["scales"][metric]


def test_the_text_metrics_scales_read_no_benchmark_image(benchmark_names):
    pytest.importorskip("pycocoevalcap")
    names, coco_ids = benchmark_names
    cands, refs, images, described = _fit_scales().coco_dev_items(5000, 0)
    assert len(cands) == len(refs) == len(images) == 5000
    assert not set(images) & names
    assert not {_coco_id(n) for n in images} & coco_ids
    assert all(n.startswith("COCO_train2014_") for n in images)
    for metric in ("critic_ref", "lceval", "lceval_plus"):  # the shipped maps were fitted on exactly these items
        assert _shipped(metric)["fitted_on"] == described and _shipped(metric)["n"] == len(cands)


def test_the_image_metrics_scales_read_no_benchmark_image(benchmark_names):
    names, _ = benchmark_names
    cands, refs, images, described = _fit_scales().flickr8k_dev_items()
    files = {Path(p).name for p in images}
    assert len(files) == 1000 and not files & names
    for metric in ("critic", "critic_plus"):
        assert _shipped(metric)["fitted_on"] == described and _shipped(metric)["n"] == len(cands)
