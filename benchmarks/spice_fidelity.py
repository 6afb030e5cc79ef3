"""Fidelity of capeval's SPICE against published official-SPICE numbers.

Usage (from the repository root):
    PYTHONPATH=modules python benchmarks/spice_fidelity.py coco-example
    PYTHONPATH=modules python benchmarks/spice_fidelity.py thumb
    PYTHONPATH=modules python benchmarks/spice_fidelity.py flickr8k
    PYTHONPATH=modules python benchmarks/spice_fidelity.py pascal50s
    PYTHONPATH=modules python benchmarks/spice_fidelity.py all [--json out.json]

Every run uses pycocoevalcap's pipeline (no clean-up, PTB tokenisation with the Java tokenizer,
lower-cased, punctuation removed) and prints the measured numbers next to the published ones.
Small self-contained loaders live here until the shared benchmark loaders exist.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

import capeval
from capeval.paths import data_dir

PUBLISHED = {
    "coco-example": {"spice": 0.133},
    "thumb": {"VinVL-large": 26.4, "VinVL-base": 25.6, "Unified-VLP": 24.3, "Up-Down": 21.0, "Human": 19.4},
    "flickr8k": {"tau_c": 44.9},
}
SETTINGS = {"cleanup": "none", "tokenizer": "ptb-java"}


def _data() -> Path:
    return data_dir(required=True)


def spice(predictions, references, **options) -> dict:
    return capeval.score(predictions, references, metrics=["spice"], **SETTINGS, **options)


# ---------------------------------------------------------------------------------------------- loaders
def load_coco_example() -> tuple[list[str], list[list[str]], list[int]]:
    from capeval.coco.captions import coco_captions

    results = json.loads((_data() / "pycocoevalcap_example" / "captions_val2014_fakecap_results.json").read_text())
    refs_by_image = coco_captions("val2014")
    # pycocoevalcap scores images in sorted id order; one caption per image in this file
    results = sorted(results, key=lambda r: r["image_id"])
    return [r["caption"] for r in results], [refs_by_image[r["image_id"]] for r in results], [r["image_id"] for r in results]


def load_thumb() -> tuple[list[dict], dict[str, list[str]]]:
    folder = _data() / "thumb"
    rows = [json.loads(line) for line in (folder / "mscoco_THumB-1.0.jsonl").read_text().splitlines() if line.strip()]
    refs = {}
    for line in (folder / "mscoco_references.json").read_text().splitlines():
        if line.strip():
            item = json.loads(line)
            refs[item["seg_id"]] = item["refs"]
    return rows, refs


def load_flickr8k_expert() -> tuple[list[str], list[list[str]], list[float]]:
    """CLIPScore protocol: candidates that are not one of the image's references, 3 rows per pair."""
    data = json.loads((_data() / "flickr8k" / "expert-processed" / "flickr8k.json").read_text())
    preds, refs, scores = [], [], []
    for item in data.values():
        references = item["ground_truth"]
        for judgement in item["human_judgement"]:
            if judgement["caption"] in references:
                continue
            preds.append(judgement["caption"])
            refs.append(references)
            scores.append(float(judgement["rating"]))
    return preds, refs, scores


def load_pascal50s(all_refs: bool) -> list[dict]:
    data = json.loads((_data() / "pascal50s" / "expert-processed" / "pascal_50s.json").read_text())
    items = []
    if all_refs:
        from scipy.io import loadmat

        mat = loadmat(str(_data() / "pascal50s" / "cider-matlab" / "pascal50S.mat"), squeeze_me=True, struct_as_record=False)
        by_image = _pascal_refs(mat)
    for category, pairs in data.items():
        for pair in pairs:
            refs = pair["references"]
            if all_refs:
                key = Path(pair["image"]).name
                refs = by_image[key]
            items.append({"category": category, "a": pair["captions"][0], "b": pair["captions"][1], "label": pair["label"], "refs": refs})
    return items


def _pascal_refs(mat) -> dict[str, list[str]]:
    """``pascal50S.mat``: struct array ``refs`` with fields ``image`` (file name) and ``sent`` (50 strings)."""
    return {str(e.image): [str(s).strip() for s in np.atleast_1d(e.sent)] for e in np.atleast_1d(mat["refs"])}


# ---------------------------------------------------------------------------------------------- runs
def run_coco_example(args) -> dict:
    preds, refs, _ = load_coco_example()
    t0 = time.perf_counter()
    result = spice(preds, refs, spice_workers=args.workers)
    elapsed = time.perf_counter() - t0
    out = {
        "spice": result["spice"],
        "published": PUBLISHED["coco-example"]["spice"],
        "categories": {k: v["f"] for k, v in result["spice_categories"].items()},
        "seconds": elapsed,
        "signature": result["signature"],
    }
    print(f"pycocoevalcap example: SPICE {result['spice']:.4f} (published .133), {elapsed:.1f}s")
    return out


def run_thumb(args) -> dict:
    rows, refs = load_thumb()
    preds = [r["hyp"] for r in rows]
    references = [refs[r["seg_id"]] for r in rows]
    result = spice(preds, references, spice_workers=args.workers)
    by_system = defaultdict(list)
    for row, f in zip(rows, result["per_caption"]["spice"]):
        by_system[row["SYS"]].append(f)
    out = {}
    for system, published in PUBLISHED["thumb"].items():
        value = 100 * float(np.mean(by_system[system]))
        out[system] = {"measured": value, "published": published, "n": len(by_system[system])}
        print(f"THumB {system:12s} SPICE x100 {value:5.1f} (published {published})")
    machine = [s for s in PUBLISHED["thumb"] if s != "Human"]
    ranking = sorted(machine, key=lambda s: -out[s]["measured"])
    out["ranking_measured"] = ranking
    out["ranking_published"] = sorted(machine, key=lambda s: -PUBLISHED["thumb"][s])
    print("ranking", ranking, "same as published:", ranking == out["ranking_published"])
    return out


def run_flickr8k(args) -> dict:
    from scipy.stats import kendalltau

    preds, refs, human = load_flickr8k_expert()
    result = spice(preds, refs, spice_workers=args.workers)
    tau = kendalltau(human, result["per_caption"]["spice"], variant="c").statistic
    print(f"Flickr8k-Expert ({len(preds)} rows): SPICE Kendall tau-c {100 * tau:.1f} (published 44.9)")
    return {"tau_c": 100 * tau, "published": 44.9, "rows": len(preds), "spice": result["spice"]}


def run_pascal50s(args) -> dict:
    out = {}
    for all_refs in (False, True):
        items = load_pascal50s(all_refs)
        preds = [i["a"] for i in items] + [i["b"] for i in items]
        refs = [i["refs"] for i in items] * 2
        scores = spice(preds, refs, spice_workers=args.workers)["per_caption"]["spice"]
        n = len(items)
        acc = defaultdict(list)
        for k, item in enumerate(items):
            a, b = scores[k], scores[n + k]
            # label 0: the first caption is preferred; ties count as half (CLIPScore convention)
            correct = 0.5 if a == b else float((a > b) == (item["label"] == 0))
            acc[item["category"]].append(correct)
        name = "50 refs" if all_refs else "5 refs"
        out[name] = {c: 100 * float(np.mean(v)) for c, v in acc.items()}
        out[name]["mean"] = float(np.mean(list(out[name].values())))
        print(f"PASCAL-50S ({name}):", ", ".join(f"{c} {v:.1f}" for c, v in out[name].items()))
    return out


RUNS = {"coco-example": run_coco_example, "thumb": run_thumb, "flickr8k": run_flickr8k, "pascal50s": run_pascal50s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmark", choices=[*RUNS, "all"])
    parser.add_argument("--workers", type=int, default=1, help="spaCy worker processes")
    parser.add_argument("--json", type=Path, help="write the measured numbers here")
    args = parser.parse_args(argv)
    names = list(RUNS) if args.benchmark == "all" else [args.benchmark]
    report = {name: RUNS[name](args) for name in names}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
