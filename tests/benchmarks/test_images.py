"""Benchmarks give image-reading metrics each candidate's image file; the score cache keys on those files.

A fake image metric (``tests/support/image_metric.py``: its score is a hash of the image file) stands in for
``critic``; the benchmarks are built from records here, except the last tests, which read the shared data.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from capeval.judgments import Benchmark, CaptionRecord, PairRecord, load_benchmark
from capeval.meta_evaluation import harness
from capeval.meta_evaluation.harness import _Scorer, run_benchmark
from capeval.meta_evaluation.score_cache import ScoreCache, image_fingerprint
from capeval.meta_evaluation.scorers import needs_images, score_items
from support import image_metric, require_data
from support.image_metric import image_score


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def fake(monkeypatch) -> str:
    return image_metric.register(monkeypatch)


def _image(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_bytes(name.encode() * 3)
    return path


def _captions(tmp_path, with_images=True) -> Benchmark:
    names = ["b.jpg", "a.jpg", "c.jpg", "a.jpg"]  # an image judged twice, not in file-name order
    captions = ["a dog runs", "a cat sleeps on a sofa", "a dog", "two men talk"]
    records = [CaptionRecord("tiny", str(i), name, _image(tmp_path, name) if with_images or i else None,
                             caption, ("a dog runs on the grass", "a dog"), (float(i % 3 + 1),))
               for i, (name, caption) in enumerate(zip(names, captions))]
    return Benchmark("tiny", records, {}, "kendall_c")


def _pairs(tmp_path) -> Benchmark:
    records = [PairRecord("tiny-pairs", str(i), name, _image(tmp_path, name), (f"a dog {i}", f"a cat {i}"),
                          ("a dog", "a dog runs"), i % 2, category="HC")
               for i, name in enumerate(["x.jpg", "y.jpg", "z.jpg"])]
    return Benchmark("tiny-pairs", records, {}, "accuracy")


def test_images_follow_candidates(tmp_path):
    bench = _captions(tmp_path)
    assert bench.images() == [str(tmp_path / n) for n in ("b.jpg", "a.jpg", "c.jpg", "a.jpg")]
    pairs = _pairs(tmp_path)
    assert len(pairs.images()) == len(pairs.candidates()) == 6
    assert pairs.images() == [str(tmp_path / n) for n in ("x.jpg", "x.jpg", "y.jpg", "y.jpg", "z.jpg", "z.jpg")]
    assert _captions(tmp_path, with_images=False).images() is None
    assert _captions(tmp_path, with_images=False).missing_images() == ["b.jpg"]


def test_scorer_passes_paths_in_candidate_order(tmp_path, fake):
    bench = _pairs(tmp_path)
    scores = _Scorer([fake, "bleu_1"], ScoreCache(tmp_path / "s.sqlite"), {}, False).bench(bench)
    assert list(scores[fake].values) == [image_score(p) for p in bench.images()]
    assert scores["bleu_1"].values.shape == (6,)


def test_needs_images():
    assert not needs_images("bleu_4") and not needs_images("evaluate:some/module")


def test_needs_images_of_the_fake(fake):
    assert needs_images(fake)


def test_run_benchmark_with_an_image_metric(tmp_path, fake, monkeypatch):
    bench = _captions(tmp_path)
    monkeypatch.setattr(harness, "load_benchmark", lambda name, **kw: bench)
    result = run_benchmark("flickr8k-expert", [fake, "bleu_1"])
    assert set(result.results) == {fake, "bleu_1", "caption_length"}
    metric = result.plot_data[fake]["metric"]
    assert list(metric) == [image_score(p) for p in bench.images()]  # one judgment row per record here


def test_benchmark_without_images_names_benchmark_and_metric(tmp_path, fake, monkeypatch):
    bench = _captions(tmp_path, with_images=False)
    monkeypatch.setattr(harness, "load_benchmark", lambda name, **kw: bench)
    with pytest.raises(ValueError, match=r"fake_img read images, but 1 image\(s\) of benchmark tiny are not under "
                                         r"the data directory \(e.g. 'b.jpg'\)"):
        run_benchmark("flickr8k-expert", ["bleu_1", fake])
    assert set(run_benchmark("flickr8k-expert", ["bleu_1"]).results) == {"bleu_1", "caption_length"}  # no images


def test_score_items_without_images_names_the_metric(fake):
    with pytest.raises(ValueError, match="fake_img reads images"):
        score_items(fake, ["a dog"], [["a dog"]])


def test_cache_key_follows_the_image_files(tmp_path, fake, monkeypatch):
    bench = _captions(tmp_path)
    preds, refs, images = bench.candidates(), bench.references(), bench.images()
    cache = ScoreCache(tmp_path / "s.sqlite")
    first = score_items(fake, preds, refs, images=images, cache=cache)[fake].values
    calls = []
    monkeypatch.setattr(image_metric.FakeImageMetric, "prepare",
                        lambda self, batch: calls.append(1) or [image_score(x) for x in batch.images])
    again = score_items(fake, preds, refs, images=images, cache=cache)[fake].values
    assert calls == [] and np.array_equal(first, again)  # a hit: nothing recomputed

    key_before = image_fingerprint(images)
    changed = Path(images[2])
    changed.write_bytes(b"another picture")
    os.utime(changed, ns=(1_000_000_000, 1_000_000_000))
    assert image_fingerprint(images) != key_before
    fresh = score_items(fake, preds, refs, images=images, cache=cache)[fake].values
    assert calls == [1] and fresh[2] == image_score(changed) != first[2]
    assert np.array_equal(np.delete(fresh, 2), np.delete(first, 2))


def test_text_metric_cache_ignores_images(tmp_path):
    bench = _captions(tmp_path)
    cache = ScoreCache(tmp_path / "s.sqlite")
    with_images = score_items("bleu_4", bench.candidates(), bench.references(), images=bench.images(), cache=cache)
    without = score_items("bleu_4", bench.candidates(), bench.references(), cache=cache)
    assert np.array_equal(with_images["bleu_4"].values, without["bleu_4"].values)
    assert cache._con.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 1  # one entry: the same key


def test_image_fingerprint_kinds(tmp_path):
    path = _image(tmp_path, "p.jpg")
    assert image_fingerprint([str(path)]) == image_fingerprint([path]) == image_fingerprint([{"path": str(path)}])
    assert image_fingerprint([str(tmp_path / "gone.jpg")]) is not None  # missing: keyed as missing
    assert image_fingerprint([{"bytes": b"abc"}]) == image_fingerprint([b"abc"])
    assert image_fingerprint([np.zeros((2, 2, 3), np.uint8)]) is None  # in memory: not cached


# -- the shared data: loaders find the images ------------------------------------------------------------


@pytest.mark.parametrize("name, folder", [("flickr8k-expert", ("flickr8k", "images-224")),
                                          ("pascal50s", ("pascal50s", "images"))])
def test_loaders_find_the_shared_images(name, folder):
    root = require_data(*folder)
    bench = load_benchmark(name)
    images = bench.images()
    assert images is not None and len(images) == len(bench.candidates())
    assert all(Path(p).is_file() and Path(p).parent == root for p in images[:: max(1, len(images) // 50)])
    if bench.is_pairwise:
        assert images[0::2] == images[1::2]


def test_composite_without_its_images_refuses_image_metrics(fake):
    require_data("composite")
    if load_benchmark("composite").images() is not None:
        pytest.skip("every COMPOSITE image is present")
    with pytest.raises(ValueError, match="of benchmark composite are not under the data directory"):
        run_benchmark("composite", [fake])
