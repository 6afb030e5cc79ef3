"""Fit the readable scales of the learned defaults (issue 38 item 3, :mod:`capeval.scales`) and measure their spread.

    python benchmarks/fit_scales.py fit [--items 5000] [--metrics critic_ref lceval lceval_plus critic critic_plus]
    python benchmarks/fit_scales.py check [--candidates 2000] [--json docs/benchmarks/readable_scales_check.json]

``fit``: each metric's default model scores human captions of images no benchmark uses, each caption against its own
image's other four (and with its image, for the metrics that read one), on the raw scale; the quantiles at
:data:`capeval.scales.LEVELS` become the map, written into ``modules/capeval/data/readable_scales.json`` (merged with the
maps already there) and, with the quantiles, to ``docs/benchmarks/readable_scales_fit.json``.

* Text-only metrics (``critic_ref``, ``lceval``, ``lceval_plus``): COCO train2014 images of the critics' COCO *dev*
  split (:func:`capeval.corpora.coco_train2014.coco_training_corpus`, seed 0, benchmark images left out: 1,656 images
  the critics never trained on; no LCEval model read COCO train2014). Items: every (image, caption k) with at least 5
  captions, a seeded sample of ``--items``.
* Image metrics (``critic``, ``critic_plus``): Flickr8k dev's 1,000 images, each of the 5 captions against the other 4
  with the image (the critics chose their epoch on Flickr8k dev and critic_plus fitted its combiner there; no
  benchmark uses these images).

``check``: the first ``--candidates`` candidates of the COCO Karpathy test split (``karpathy_cand.json``'s order: per
image the held-out human caption and three systems') against their references, raw and readable: quantiles,
interquartile range, and whether the order and ties of the raw scores survive the map.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCALES_JSON = ROOT / "modules" / "capeval" / "data" / "readable_scales.json"
TEXT_METRICS = ("critic_ref", "lceval", "lceval_plus")
IMAGE_METRICS = ("critic", "critic_plus")
SCALE_OPTION = {"critic": "critic_scale", "critic_ref": "critic_scale", "critic_plus": "critic_scale",
                "lceval": "lceval_scale", "lceval_plus": "lceval_plus_scale"}
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def coco_dev_items(n: int, seed: int) -> tuple[list[str], list[list[str]], list[str], str]:
    """``(candidates, references, image file name per candidate, description)`` of the text metrics' fitting data
    (``tests/benchmarks/test_scale_fitting_data.py`` checks that no image is a benchmark's)."""
    from capeval.corpora.coco_train2014 import coco_training_corpus
    from capeval.corpora.held_out import benchmark_images

    dev = coco_training_corpus(benchmark_images(), seed=0).dev
    items = [(name, k) for name in sorted(dev) if len(dev[name]) >= 5 for k in range(5)]
    if n < len(items):
        items = sorted(random.Random(seed).sample(items, n))
    cands = [dev[name][k] for name, k in items]
    refs = [[c for j, c in enumerate(dev[name][:5]) if j != k] for name, k in items]
    images = len({name for name, _ in items})
    return cands, refs, [name for name, _ in items], (f"{len(cands):,} COCO train2014 human captions of {images:,} images of the critics' COCO dev "
                         "split (seed 0, benchmark images left out), each against its image's other 4")


def flickr8k_dev_items() -> tuple[list[str], list[list[str]], list[str], str]:
    """``(candidates, references, image path per candidate, description)`` of the image metrics' fitting data."""
    from capeval.judgments.files import resolve_root
    from capeval.corpora.captions import flickr8k_captions

    table = flickr8k_captions("dev")
    folder = resolve_root(None) / "flickr8k" / "images-224"
    cands, refs, images = [], [], []
    for name in sorted(table):
        caps = table[name][:5]
        for k, cap in enumerate(caps):
            cands.append(cap)
            refs.append([c for j, c in enumerate(caps) if j != k])
            images.append(str(folder / name))
    return cands, refs, images, (f"{len(cands):,} Flickr8k dev human captions of {len(table):,} images, each with its "
                                 "image against the image's other 4")


def raw_scores(metric: str, cands, refs, images=None) -> tuple[np.ndarray, dict]:
    import capeval

    start = time.perf_counter()
    result = capeval.score(cands, refs, metrics=metric, images=images, language_check=False, progress=True,
                           **{SCALE_OPTION[metric]: "raw"})
    seconds = time.perf_counter() - start
    return np.asarray(result["per_caption"][metric], dtype=float), {"signature": result["signature"],
                                                                    "seconds": round(seconds, 1)}


def model_identity(metric: str) -> tuple[str, str]:
    """(catalog name, weights digest) of ``metric``'s default model, as the metric computes them."""
    from capeval.registry import metric_class

    instance = metric_class(metric)()
    if metric.startswith("critic"):
        from capeval.critic.loading import critic_folder, weights_digest
        from capeval.critic.stack import CriticStack, is_stack
        from capeval.model_store import catalog_name_of

        option = "critic_plus_model" if metric == "critic_plus" else instance.model_option
        value = instance.config[option] or (instance.option_defaults()[option] if metric == "critic_plus" else None)
        folder = critic_folder(value, getattr(instance, "context", "image+reference"))
        members = CriticStack.load(folder).member_paths(folder) if is_stack(folder) else []
        return catalog_name_of(folder), weights_digest(folder, *members)
    from capeval.lceval.model import model_folder
    from capeval.model_store import catalog_name_of

    return (catalog_name_of(model_folder(instance.config[f"{metric}_model"])),
            instance.cache_token(instance.config))


def fit(args) -> int:
    from capeval.scales import LEVELS, ReadableScale, fit_scale

    existing = json.loads(SCALES_JSON.read_text(encoding="utf-8")) if SCALES_JSON.is_file() else {"scales": {}}
    report = {"levels": list(LEVELS), "metrics": {}}
    text = coco_dev_items(args.items, args.seed) if set(args.metrics) & set(TEXT_METRICS) else None
    pics = flickr8k_dev_items() if set(args.metrics) & set(IMAGE_METRICS) else None
    for metric in args.metrics:
        if metric in TEXT_METRICS:
            cands, refs, _, described = text
            scores, info = raw_scores(metric, cands, refs)
        else:
            cands, refs, images, described = pics
            scores, info = raw_scores(metric, cands, refs, images)
        model, weights = model_identity(metric)
        scale = fit_scale(scores, metric=metric, model=model, weights=weights, fitted_on=described)
        ReadableScale.from_json(scale.to_json())
        existing["scales"][metric] = scale.to_json()
        report["metrics"][metric] = {**info, "model": model, "weights": weights, "fitted_on": described,
                                     "quantiles_at_levels": list(scale.raw), "levels_kept": list(scale.levels),
                                     "raw_quantiles_5_25_50_75_95": [round(float(q), 5) for q in
                                                                     np.quantile(scores, QUANTILES)]}
        print(f"{metric}: {len(scores)} items, {info['seconds']} s, knots {len(scale.raw)}, raw quartiles "
              f"{[round(float(q), 4) for q in np.quantile(scores, (0.25, 0.5, 0.75))]}", file=sys.stderr)
        SCALES_JSON.write_text(json.dumps(existing, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    existing["note"] = ("Readable scales of capeval's default learned models (capeval.scales); written by "
                        "benchmarks/fit_scales.py fit. Do not edit by hand: the digest checks the knots.")
    SCALES_JSON.write_text(json.dumps(existing, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    out = Path(args.json or ROOT / "docs" / "benchmarks" / "readable_scales_fit.json")
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def _order_kept(raw: np.ndarray, readable: np.ndarray) -> bool:
    """Every pair of items compares the same way (<, =, >) on both scales."""
    order = np.argsort(raw, kind="stable")
    r, m = raw[order], readable[order]
    return bool(np.all(np.sign(np.diff(r)) == np.sign(np.diff(m))))


def check(args) -> int:
    import capeval
    from capeval.judgments.coco_karpathy import load_coco_karpathy

    records = load_coco_karpathy().records[: args.candidates]
    cands = [r.candidate for r in records]
    refs = [list(r.references) for r in records]
    report = {"candidates": len(records), "quantiles": list(QUANTILES), "metrics": {}}
    for metric in args.metrics:
        row = {}
        for scale in ("raw", "auto"):
            result = capeval.score(cands, refs, metrics=metric, language_check=False, progress=True,
                                   **{SCALE_OPTION[metric]: scale})
            per = np.asarray(result["per_caption"][metric], dtype=float)
            q = np.quantile(per, QUANTILES)
            row["readable" if scale == "auto" else "raw"] = {
                "quantiles": [round(float(x), 4) for x in q], "iqr": round(float(q[3] - q[1]), 4),
                "min": float(per.min()), "max": float(per.max()), "mean": round(float(per.mean()), 4),
                "signature": result["signature"]}
            row.setdefault("_values", {})[scale] = per
        row["order_and_ties_kept"] = _order_kept(row["_values"]["raw"], row["_values"]["auto"])
        systems = np.asarray([r.system for r in records])
        row["by_system_mean"] = {
            system: {"raw": round(float(row["_values"]["raw"][systems == system].mean()), 4),
                     "readable": round(float(row["_values"]["auto"][systems == system].mean()), 4)}
            for system in dict.fromkeys(systems.tolist())}
        del row["_values"]
        report["metrics"][metric] = row
        print(f"{metric}: raw IQR {row['raw']['iqr']} readable IQR {row['readable']['iqr']} order kept "
              f"{row['order_and_ties_kept']}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit")
    f.add_argument("--items", type=int, default=5000)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--metrics", nargs="+", default=list(TEXT_METRICS + IMAGE_METRICS))
    f.add_argument("--json")
    c = sub.add_parser("check")
    c.add_argument("--candidates", type=int, default=2000)
    c.add_argument("--metrics", nargs="+", default=list(TEXT_METRICS))
    c.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    return fit(args) if args.command == "fit" else check(args)


if __name__ == "__main__":
    sys.exit(main())
