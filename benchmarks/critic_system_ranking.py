"""Rank captioning systems with critics used as plain metrics (no per-system fine-tuning) and with CIDEr-D / BLEU-4.

Each system's score is the mean of ``capeval.score(..., metrics=["critic"], critic_model=M)`` over its captions of
the Flickr8k test images (image + the 5 references). The ranking is compared with CIDEr-D and BLEU-4 by Kendall τ-b,
the same comparison ``capeval critic evaluate-system`` makes for the paper's per-system protocol (docs/benchmarks/measurements.md §10).

    PYTHONPATH=modules OMP_NUM_THREADS=1 python benchmarks/critic_system_ranking.py \
        --systems beam3=out/critic/system-test.jsonl,greedy=... \
        --critic-models critic-flickr8k-coco,critic-flickr8k-joint,critic-flickr8k --json out/critic/ranking.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import capeval
from capeval.judgments.stats import correlation
from capeval.corpora.captions import flickr8k_captions
from capeval.cli.cmd_critic import machine_captions
from capeval.paths import data_dir

TEXT_METRICS = ("cider_d", "bleu_4")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", required=True, metavar="NAME=FILE,...",
                        help="`capeval captioner generate --split test` outputs (first candidate per image)")
    parser.add_argument("--critic-models", required=True, metavar="NAME,...", help="critics, shipped names or folders")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(argv)
    systems = dict(item.split("=", 1) for item in args.systems.split(","))
    models = [m for m in args.critic_models.split(",") if m]
    refs = flickr8k_captions("test")
    images = sorted(refs)
    root = data_dir()
    if root is None:
        raise SystemExit("the data directory (CAPEVAL_DATA_DIR or ../shared/data) is missing")
    paths = [str(root / "flickr8k" / "images-224" / i) for i in images]
    references = [refs[i] for i in images]
    rows = {}
    for name, path in systems.items():
        captions = {i: c[0] for i, c in machine_captions(Path(path)).items()}
        predictions = [captions[i] for i in images]
        row = {m: capeval.score(predictions, references, metrics=["critic"], images=paths, critic_model=m,
                                progress=False)["critic"] for m in models}
        text = capeval.score(predictions, references, metrics=list(TEXT_METRICS), progress=False)
        row.update({k: text[k] for k in TEXT_METRICS})
        rows[name] = row
        print(name, " ".join(f"{k} {v:.3f}" for k, v in row.items()), file=sys.stderr)
    names = list(rows)
    agreement = {m: {k: correlation([rows[n][m] for n in names], [rows[n][k] for n in names], "kendall_b")
                     for k in TEXT_METRICS} for m in models}
    args.json.write_text(json.dumps({"systems": rows, "kendall_b": agreement}, indent=1) + "\n")
    for m, row in agreement.items():
        print(f"{m}: Kendall τ-b " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
