"""Flickr8k-CrowdFlower end to end on the real Flickr8k files and images: its judgments are held out of the data
directory, so a file in the official format (tab-separated: image, caption id, share of yes, yes, no) is written
here from real test captions, and the shipped
caption-level critic is benchmarked through it as `capeval bench flickr8k-crowdflower` would.

What is checked is the path the held-out file will take (loader, image paths, references, the critic reading the
images, Kendall τ-b), and that the shipped critic separates a query image's own captions (every rater said "yes")
from other images' captions (every rater said "no"); not a published number.
"""
from __future__ import annotations

import random

import pytest

pytest.importorskip("torch")
pytest.importorskip("timm")


@pytest.fixture(scope="module")
def crowdflower_root(shared_data, tmp_path_factory):
    """A data directory whose ``flickr8k/`` links the real files and adds a CrowdFlower file in the official layout:
    image, caption id ``<image>#k``, fraction yes, #yes, #no (tab-separated, no header)."""
    from capeval.judgments.flickr8k import read_token_file

    real = shared_data / "flickr8k"
    if not (real / "images-224").is_dir():
        pytest.skip("Flickr8k images are not in the data directory")
    root = tmp_path_factory.mktemp("cf-data")
    base = root / "flickr8k"
    base.mkdir()
    for item in real.iterdir():
        if item.name != "CrowdFlowerAnnotations.txt":
            (base / item.name).symlink_to(item)
    captions = read_token_file(real / "Flickr8k.token.txt")
    test = sorted((real / "Flickr_8k.testImages.txt").read_text().split())[:12]
    rng = random.Random(0)
    rows = []
    for image in test:
        own = [cid for cid, _ in captions.by_image[image]]
        other = rng.choice([i for i in test if i != image])
        rows.append((image, own[0], 3, 0))                                        # its own caption: all "yes"
        rows.append((image, rng.choice([c for c, _ in captions.by_image[other]]), 0, 3))  # another image's: all "no"
    (base / "CrowdFlowerAnnotations.txt").write_text(
        "".join(f"{q}\t{c}\t{y / (y + n):.4f}\t{y}\t{n}\n" for q, c, y, n in rows), encoding="utf-8")
    return root, test


def test_shipped_critic_through_the_crowdflower_benchmark(crowdflower_root, monkeypatch):
    from capeval.judgments import load_benchmark
    from capeval.meta_evaluation.harness import run_benchmark

    root, test = crowdflower_root
    monkeypatch.setenv("CAPEVAL_DATA_DIR", str(root))
    bench = load_benchmark("flickr8k-crowdflower", protocol="cui")
    assert len(bench.records) == 2 * len(test) and all(r.image_path and r.image_path.is_file() for r in bench.records)
    own = [r for r in bench.records if r.human_scores == (1.0,)]
    assert own and all(r.candidate not in r.references and len(r.references) == 4 for r in own)
    result = run_benchmark("flickr8k-crowdflower", ["critic", "bleu_4"], protocol="cui", use_cache=False,
                           metric_options={"critic_model": "critic-flickr8k-joint"}, show_progress=False)
    entry = result.results["critic"]
    assert entry["primary"] == "tau_b" and entry["rows"] == len(bench.records)
    tau = entry["tau_b"]
    # 12 "yes" and 12 "no" rows: a metric that orders every own caption above every other caption reaches
    # tau-b = sqrt(144 / 276) = .722; .6 allows about one pair in twelve the wrong way round (measured: .642)
    assert tau > 0.6, f"the shipped critic should tell own captions from other images' captions, got tau-b {tau}"
