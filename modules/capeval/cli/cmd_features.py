"""``capeval features``: image features for the learned metrics (needs ``pip install "capeval[learned]"``).

* ``capeval features extract --images DIR --out FILE.safetensors``: pooled (or ``--kind grid``) features of
  every image under DIR with EfficientNet-Lite0 (offline) or any timm model (``--encoder resnet152``).
  Several processes: ``accelerate launch --multi_gpu --num_processes N -m capeval.models.extract_features ...``
  (same options, same file; on a CPU-only machine the processes use the CPU).
"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("features", help="extract image features (learned metrics)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    features_sub = p.add_subparsers(dest="features_command", metavar="STEP")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    e = features_sub.add_parser("extract", help="features of a folder of images into one safetensors file")
    e.set_defaults(func=run_extract)
    from capeval.models.extract_features import add_arguments  # argparse only: no torch import

    add_arguments(e)


def run_extract(args: argparse.Namespace) -> int:
    from capeval.models.extract_features import run

    return run(args)
