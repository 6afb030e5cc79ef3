"""Extract image features to one safetensors file, in one process or several (``accelerate``).

One process::

    python -m capeval.models.extract_features --images DIR --out features.safetensors
    capeval features extract --images DIR --out features.safetensors          # the same, from the CLI

Several processes (the images are split in contiguous shards, one per process; the main process gathers the
shards in order, so the file holds the same features as with one process: bit-identical when the shard
boundaries fall on batch boundaries and the thread count is the same, else equal to float rounding)::

    accelerate launch --multi_gpu --num_processes 2 -m capeval.models.extract_features --images DIR --out F
    torchrun --nproc_per_node 2 -m capeval.models.extract_features --images DIR --out F     # the same

On a machine without CUDA both run the processes on the CPU (gloo); with GPUs, one GPU each. Note that
``accelerate launch --cpu --num_processes 2`` starts a *single* process in accelerate 1.15 (it needs an MPI
``--mpirun_hostfile`` for several CPU processes): it gives the same file, without the split, and prints a note.
Set ``OMP_NUM_THREADS`` so that processes × threads does not exceed the cores.

``--images`` is a folder (every image file below it, sorted by relative path) or a text file with one path
per line (relative paths are read from the list's folder). The output holds ``features`` (``[N, D]``, or
``[N, C, H, W]`` with ``--kind grid``; with ``--kind grid --resolution native`` one tensor ``features.<i>``
per image) and metadata: ``images`` (JSON list of the names), ``settings``, ``kind``, ``count``, ``processes``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from capeval.advice import about
from capeval.dependencies import require

ONE_CPU_PROCESS_NOTE = (
    "note: `accelerate launch --cpu` starts a single process (accelerate needs an MPI --mpirun_hostfile for "
    "several CPU processes); on a machine without GPUs use `accelerate launch --multi_gpu --num_processes N` "
    "(processes then run on the CPU with gloo) or `torchrun --nproc_per_node N -m capeval.models.extract_features`."
)
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}


def list_images(source: str | os.PathLike) -> tuple[list[Path], list[str]]:
    """``(paths, names)`` of a folder (image files below it, sorted) or of a list file (one path a line)."""
    source = Path(source)
    if source.is_dir():
        paths = sorted((p for p in source.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
                       key=lambda p: p.relative_to(source).as_posix())
        if not paths:
            raise ValueError(f"{source} holds no image files ({', '.join(sorted(IMAGE_SUFFIXES))}).")
        return paths, [p.relative_to(source).as_posix() for p in paths]
    if source.is_file():
        lines = [line.strip() for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
        if not lines:
            raise ValueError(f"{source} lists no images.")
        return [Path(line) if Path(line).is_absolute() else source.parent / line for line in lines], lines
    raise about(FileNotFoundError, "images", f"{source}: no such folder or list file.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", type=Path, required=True, help="folder of images, or a file listing them")
    parser.add_argument("--out", type=Path, required=True, help="output .safetensors file")
    parser.add_argument("--encoder", default="efficientnet-lite0",
                        help="efficientnet-lite0 (default, offline weights) or any timm model name")
    parser.add_argument("--resolution", default="224", help="an int (default 224) or 'native'")
    parser.add_argument("--kind", default="pooled", choices=["pooled", "grid"])
    parser.add_argument("--batch-size", type=int, default=None, help="default: 8 on the CPU, 64 on a GPU")
    parser.add_argument("--no-pretrained", action="store_true", help="random (seeded) weights, for tests")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the feature cache")
    parser.add_argument("--progress", action="store_const", const=True, default=None,
                        help="show the progress bar on stderr even when it is not a terminal (default: only on a "
                             "terminal, after one second)")


def run(args: argparse.Namespace) -> int:
    from capeval.models.image_encoder import load_image_encoder

    state = _partial_state()
    resolution = args.resolution if args.resolution == "native" else int(args.resolution)
    paths, names = list_images(args.images)
    encoder = load_image_encoder(args.encoder, resolution, pretrained=not args.no_pretrained,
                                 device=state.device, cache=not args.no_cache)
    if state.num_processes == 1 and os.environ.get("ACCELERATE_USE_CPU", "").lower() == "true":
        print(ONE_CPU_PROCESS_NOTE, file=sys.stderr)
    extract(encoder, paths, names, args.out, kind=args.kind, batch_size=args.batch_size, state=state,
            progress=getattr(args, "progress", None))
    if state.is_main_process:
        print(f"{len(paths)} images -> {args.out} ({args.kind}, {state.num_processes} process(es)); {encoder.settings}")
    return 0


def _partial_state():
    """accelerate's process state; on a machine without CUDA (or under ``--cpu``) the processes use gloo on the CPU."""
    torch, accelerate = require("torch", "accelerate", what="feature extraction")
    cpu = os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes") or not torch.cuda.is_available()
    return accelerate.PartialState(cpu=cpu)


def extract(encoder, paths: list, names: list[str], out: str | os.PathLike, *, kind: str = "pooled",
            batch_size: int | None = None, state=None, progress: bool | None = None) -> None:
    """Encode ``paths`` (split across the processes of ``state``, an ``accelerate.PartialState``) into ``out``.

    ``progress``: the main process's bar (``None``: on a terminal only); the other processes show none.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if state is None or state.num_processes == 1:
        _write(out, _tensors(encoder.encode(paths, kind=kind, batch_size=batch_size, progress=progress)), encoder, kind,
               names)
        return
    rank, world = state.process_index, state.num_processes
    part = out.with_name(f"{out.name}.part-{rank}-of-{world}")
    with state.split_between_processes(list(range(len(paths)))) as mine:
        features = encoder.encode([paths[i] for i in mine], kind=kind, batch_size=batch_size,
                                  progress=progress if state.is_main_process else False)
        _write(part, _tensors(features, offset=mine[0] if mine else 0), encoder, kind, names=[names[i] for i in mine])
    state.wait_for_everyone()
    if state.is_main_process:
        parts = [out.with_name(f"{out.name}.part-{r}-of-{world}") for r in range(world)]
        _write(out, _merge(parts), encoder, kind, names, processes=world)
        for p in parts:
            p.unlink()
    state.wait_for_everyone()


def _tensors(features, offset: int = 0) -> dict:
    if isinstance(features, list):  # native-resolution grids: one tensor per image
        return {f"features.{offset + i}": f for i, f in enumerate(features)}
    return {"features": features}


def _merge(parts: list[Path]) -> dict:
    torch = require("torch")
    load_file = require("safetensors.torch").load_file
    loaded = [load_file(str(p)) for p in parts]
    if all("features" in d for d in loaded):
        return {"features": torch.cat([d["features"] for d in loaded])}
    return {k: v for d in loaded for k, v in d.items()}


def _write(path: Path, tensors: dict, encoder, kind: str, names: list[str], processes: int = 1) -> None:
    save_file = require("safetensors.torch").save_file
    metadata = {"settings": encoder.settings, "kind": kind, "count": str(len(names)), "images": json.dumps(names),
                "processes": str(processes)}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    save_file(tensors, str(tmp), metadata=metadata)
    os.replace(tmp, path)


def load(path: str | os.PathLike) -> tuple[dict, dict]:
    """``(tensors, metadata)`` of an extracted file (``metadata["images"]`` decoded from JSON)."""
    safe_open = require("safetensors").safe_open
    with safe_open(str(path), framework="pt") as f:
        metadata = dict(f.metadata() or {})
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    metadata["images"] = json.loads(metadata.get("images", "[]"))
    return tensors, metadata


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capeval.models.extract_features", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
