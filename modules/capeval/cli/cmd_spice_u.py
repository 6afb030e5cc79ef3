"""``capeval spice_u build-uniqueness``: build a SPICE-U uniqueness table from any caption corpus."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from capeval.cli.output import add_progress_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spice_u", help="SPICE-U tools (uniqueness tables)")
    inner = p.add_subparsers(dest="spice_u_command", metavar="ACTION")
    b = inner.add_parser(
        "build-uniqueness",
        help="count, per SPICE concept, the images whose captions contain it (resumable)",
        description="Build a uniqueness table Un(c) = 1 - images containing c / images from a caption corpus.",
    )
    src = b.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus", choices=["coco-train2014", "coco-val2014"],
                     help="COCO 2014 captions shipped inside pycocoevalcap's SPICE jar")
    src.add_argument("--captions", type=Path,
                     help="captions per image: {image: [captions]}, COCO annotations, JSONL or CSV (see capeval score)")
    b.add_argument("--out", type=Path, required=True, help="table file to write (.tsv.gz)")
    b.add_argument("--checkpoint", type=Path, help="SQLite checkpoint (default: beside --out)")
    b.add_argument("--restart", action="store_true", help="discard an existing checkpoint")
    b.add_argument("--chunk-images", type=int, default=1000, help="images per committed chunk")
    b.add_argument("--workers", type=int, default=1, help="spaCy processes")
    b.add_argument("--cleanup", default="thumb", choices=["thumb", "none"])
    b.add_argument("--tokenizer", default="ptb", choices=["ptb", "ptb-ctx", "ptb-java"])
    add_progress_argument(b)
    b.set_defaults(func=build)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def build(args: argparse.Namespace) -> int:
    from capeval.spice_u.build import build_uniqueness_table
    from capeval.spice_u.concepts import concept_extractor

    if args.corpus:
        from capeval.coco.captions import coco_captions

        corpus = coco_captions(args.corpus.split("-", 1)[1])
        source = args.corpus
    else:
        from capeval.io import load_references

        ids, refs = load_references(args.captions)
        corpus = dict(zip(ids if ids is not None else range(len(refs)), refs))
        source = args.captions.name
    extract, settings = concept_extractor(cleanup=args.cleanup, tokenizer=args.tokenizer, workers=args.workers)
    meta = {"source": source, **settings}
    checkpoint = args.checkpoint or args.out.with_name(args.out.name + ".checkpoint.sqlite")
    n_captions = sum(len(v) for v in corpus.values())
    print(f"{source}: {len(corpus)} images, {n_captions} captions; checkpoint {checkpoint}", file=sys.stderr)
    start = time.perf_counter()
    table = build_uniqueness_table(corpus, extract, checkpoint=checkpoint, meta=meta,
                                   chunk_images=args.chunk_images, restart=args.restart, show_progress=args.progress)
    table.save(args.out)
    checkpoint.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(checkpoint) + suffix).unlink(missing_ok=True)
    size = args.out.stat().st_size / 1e6
    print(f"wrote {args.out}: {len(table)} concepts over {table.n_images} images ({size:.1f} MB) "
          f"in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0
