"""How far capeval's FLEUR / RefFLEUR are from the reference procedure on the tiny LLaVA, per layout and batch size.

The reference is tests/support/fleur_reference.py (Yebin46/FLEUR's loop on the original LLaVA code of ``llava-torch``
1.2.2, whose wheel ``--llava-wheel`` names: ``pip download llava-torch==1.2.2 --no-deps``); the judge is
:func:`capeval.judges.random_llava.write_tiny_llava`'s (seeded), the items its 9 captions of the bundled photos. Prints,
for each layout (transformers', LLaVA's original) and ``fleur_batch_size`` (1: one prompt per ``generate``; 4, 8:
shared prefixes, equal-length batches), the number of items both scored, the largest |Δ| of the per-caption scores and
whether the items without a score are the same. Usage::

    python benchmarks/fleur_parity.py --llava-wheel llava_torch-1.2.2-py3-none-any.whl
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "modules"), str(ROOT / "tests")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llava-wheel", required=True, type=Path)
    parser.add_argument("--batch-sizes", default="1,4,8")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import capeval
    from capeval.io import example_images
    from capeval.judges.random_llava import CAPTIONS, REFERENCES, write_tiny_llava
    from capeval.models.images import read_item

    with tempfile.TemporaryDirectory() as work:
        with zipfile.ZipFile(args.llava_wheel) as wheel:
            wheel.extractall(Path(work) / "llava")
        sys.path.insert(0, str(Path(work) / "llava"))
        import llava
        from support import fleur_reference as ref

        tiny = write_tiny_llava(Path(work) / "tiny")
        tokenizer, model, image_processor = ref.load_reference(tiny["original"], llava)
        preds, refs, images = [], [], []
        for photo, captions, references in zip(example_images()[:3], CAPTIONS, REFERENCES):
            for caption in captions:
                preds.append(caption)
                refs.append(list(references))
                images.append(photo)
        photos = [read_item(p, i).decode() for i, p in enumerate(images)]
        want = {"fleur": [ref.fleur_reference(tokenizer, model, image_processor, im, p)[0]
                          for im, p in zip(photos, preds)],
                "ref_fleur": [ref.fleur_reference(tokenizer, model, image_processor, im, p, r)[0]
                              for im, p, r in zip(photos, preds, refs)]}
        print("layout    batch  metric     scored  max|Δ|   unscored items equal")
        for layout in ("hf", "original"):
            for size in (int(b) for b in args.batch_sizes.split(",")):
                got = capeval.score(preds, refs, metrics=["fleur", "ref_fleur"], images=images, progress=False,
                                    fleur_model=str(tiny[layout]), fleur_batch_size=size)["per_caption"]
                for metric, reference in want.items():
                    diffs = [abs(a - b) for a, b in zip(got[metric], reference) if b is not None]
                    same = all(math.isnan(a) == (b is None) for a, b in zip(got[metric], reference))
                    print(f"{layout:<9} {size:>5}  {metric:<9} {len(diffs):>7}  {max(diffs):.1e}  {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
