"""``capeval hub``: build Hub-ready benchmark datasets and push them."""
from __future__ import annotations

import argparse
from pathlib import Path

DATASETS = ("flickr8k", "composite", "pascal50s", "thumb")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hub", help="build / push benchmark datasets for the Hugging Face Hub",
                       description="Build Hub-ready benchmark datasets and push them.")
    hub_sub = p.add_subparsers(dest="hub_command", metavar="HUB_COMMAND")

    b = hub_sub.add_parser(
        "build-dataset", help="write a Hub-ready dataset folder (parquet + README.md card)",
        description="Read a benchmark in its original files and write typed parquet files and a dataset card.",
    )
    b.add_argument("name", choices=DATASETS)
    b.add_argument("--source", type=Path, default=None,
                   help="data directory with the original files (default: $CAPEVAL_DATA_DIR or ../shared/data)")
    b.add_argument("--out", type=Path, required=True, help="output folder (must be empty unless --overwrite)")
    b.add_argument("--no-images", action="store_true", help="text-only build (leave out the image column)")
    b.add_argument("--limit", type=int, default=None, help="keep only the first N rows of each split")
    b.add_argument("--cards", type=Path, default=None, help="card template folder (default: hub_cards/datasets)")
    b.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
    b.set_defaults(func=run_build)

    u = hub_sub.add_parser("push", help="upload a built dataset folder with huggingface_hub",
                           description="Create the dataset repo if needed and upload the folder.")
    u.add_argument("folder", type=Path)
    u.add_argument("--repo-id", required=True, help="user-or-org/name")
    u.add_argument("--token", default=None, help="Hub token (default: HF_TOKEN or the saved login)")
    u.add_argument("--public", action="store_true", help="create the repo public (default: private)")
    u.add_argument("--revision", default=None, help="branch to push to")
    u.add_argument("--message", default=None, help="commit message")
    u.set_defaults(func=run_push)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_build(args: argparse.Namespace) -> int:
    from capeval.hub.build import build_dataset

    report = build_dataset(args.name, args.source, args.out, images=not args.no_images, limit=args.limit,
                           cards_dir=args.cards, overwrite=args.overwrite)
    print(report.summary())
    return 0


def run_push(args: argparse.Namespace) -> int:
    from capeval.hub.push import push_dataset

    url = push_dataset(args.folder, args.repo_id, token=args.token, private=not args.public,
                       revision=args.revision, commit_message=args.message)
    print(f"pushed {args.folder} to {args.repo_id}: {url}")
    return 0
