"""The example outputs of the reference repositories (clipscore, pacscore, pycocoevalcap) as ``capeval verify``
reads them from the data directory: their predictions, references and images."""
from __future__ import annotations

import json
from pathlib import Path

from capeval.meta_evaluation.verify.reasons import EXAMPLES


def example_dir(name: str) -> Path:
    from capeval.paths import data_dir

    root = data_dir(required=True)
    assert root is not None
    return root / EXAMPLES[name]


def example_sets(name: str, with_images: bool) -> dict[str | None, tuple[list[str], list[list[str]], list | None]]:
    """``{set name: (predictions, references, images)}`` of an example (``None``: a single set)."""
    folder = example_dir(name)
    if name == "pycocoevalcap-example":
        from capeval.judgments.files import COCO_IMAGE_DIRS, image_finder
        from capeval.coco.captions import coco_captions

        path = folder / "captions_val2014_fakecap_results.json"
        results = json.loads(path.read_text(encoding="utf-8"))
        refs = coco_captions("val2014")
        images = None
        if with_images:
            find = image_finder(folder.parent, None, COCO_IMAGE_DIRS)
            images = [find(f"COCO_val2014_{r['image_id']:012d}.jpg") for r in results]
        return {None: ([r["caption"] for r in results], [refs[r["image_id"]] for r in results], images)}
    references = json.loads((folder / "refs.json").read_text(encoding="utf-8"))
    out = {}
    for kind in ("good", "bad"):
        cands = json.loads((folder / f"{kind}_captions.json").read_text(encoding="utf-8"))
        ids = list(cands)
        images = [(folder / "images" / f"{i}.jpg") for i in ids] if with_images else None
        out[kind] = ([cands[i] for i in ids], [references[i] for i in ids],
                     None if images is None else [p if p.is_file() else None for p in images])
    return out

