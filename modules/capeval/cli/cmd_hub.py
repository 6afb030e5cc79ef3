"""``capeval hub``: build Hub-ready benchmark datasets and evaluate-module folders, and push them."""
from __future__ import annotations

import argparse
from pathlib import Path

DATASETS = ("flickr8k", "composite", "pascal50s", "thumb")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("hub", help="build / push datasets, model repos and evaluate modules for the Hugging Face Hub",
                       description="Build Hub-ready benchmark datasets, model repos and evaluate-module folders, and "
                                   "push them.")
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

    for kind in ("space", "metric"):
        m = hub_sub.add_parser(
            f"build-{kind}",
            help=f"write a Hub-ready evaluate {kind} folder (script, card, requirements.txt"
                 + (", app.py)" if kind == "space" else ")"),
            description=f"Write the folder the Hub needs for metrics/METRIC as {'a gradio Space' if kind == 'space' else 'an evaluate module'}: "
                        "the module script named after the folder, the card with license and homepage, requirements.txt"
                        + (" (capeval and gradio pinned) and app.py." if kind == "space" else
                           " (capeval pinned)."),
        )
        m.add_argument("metric", help="a module folder of capeval's metrics/ (e.g. coco_caption, clip_score, thumb), or "
                                      "a plug-in metric's name (its module is generated from its class)")
        m.add_argument("--out", type=Path, required=True,
                       help="output folder, named like the Hub repo (its script is OUT_NAME.py)")
        m.add_argument("--repo-id", default=None, help="the Hub id the card names (user-or-org/name)")
        m.add_argument("--source", type=Path, default=None, help="the metrics/ folder (default: the source tree's)")
        m.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
        m.set_defaults(func=run_build_module, kind=kind)

    bm = hub_sub.add_parser(
        "build-model", help="write a Hub-ready model repo folder (weights, card, capeval-model.json)",
        description="Write the Hub model repo of a catalog model (capeval models lists them): its files as capeval "
                    "resolves them, its card (hub_cards/models/NAME.md, provenance regenerated) as README.md, and "
                    "capeval-model.json (name, status, repo id, sha256 of every file). Push it with "
                    "`capeval hub push DIR --repo-id capeval/NAME`.")
    bm.add_argument("name", help="a catalog model (bundled or Hub), e.g. critic-flickr8k")
    bm.add_argument("--out", type=Path, required=True, help="output folder (must be empty unless --overwrite)")
    bm.add_argument("--source", type=Path, default=None, help="the model's folder (default: where capeval finds it)")
    bm.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
    bm.set_defaults(func=run_build_model)

    u = hub_sub.add_parser("push", help="upload a built dataset, model or evaluate-module folder with huggingface_hub",
                           description="Create the repo if needed (a dataset repo for a dataset folder, a model "
                                       "repo for a `build-model` folder, a gradio Space for an evaluate-module "
                                       "folder) and upload the folder.")
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


def run_build_module(args: argparse.Namespace) -> int:
    from capeval.hub.metric_folder import build_metric_folder

    built = build_metric_folder(args.metric, args.out, kind=args.kind, hub_id=args.repo_id, source=args.source,
                                overwrite=args.overwrite)
    print(built.summary())
    return 0


def run_build_model(args: argparse.Namespace) -> int:
    from capeval.hub.model_folder import build_model_folder

    built = build_model_folder(args.name, args.out, overwrite=args.overwrite, source=args.source)
    print(built.summary())
    return 0


def run_push(args: argparse.Namespace) -> int:
    from capeval.hub.model_folder import is_model_folder
    from capeval.hub.push import push_dataset, push_model_folder, push_module_folder

    push = (push_dataset if (args.folder / "data").is_dir() else
            push_model_folder if is_model_folder(args.folder) else push_module_folder)
    url = push(args.folder, args.repo_id, token=args.token, private=not args.public,
                       revision=args.revision, commit_message=args.message)
    print(f"pushed {args.folder} to {args.repo_id}: {url}")
    return 0
