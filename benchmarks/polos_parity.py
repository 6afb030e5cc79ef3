"""Polos against the transcribed reference (tests/support/polos_reference.py) on random weights, with numbers: the
largest per-caption difference at several batch sizes, and how much the batch-wide layer norm moves scores (the same
captions, every item with two references, scored in one batch of 7 and one by one). Tiny RoBERTa and CLIP, as the
tests build them.

    python benchmarks/polos_parity.py
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

CANDIDATES = ["a dog runs on the grass", "two cats on a blanket", "a man rides a bike", "fruit", "people in the park",
              "a bird on a branch", "a red car near a house"]
REFERENCES = [["a dog running", "a brown dog on grass"], ["cats sleeping", "two cats", "a blanket"], ["a man cycling"],
              ["a bowl of fruit", "fruit on a table"], ["a crowd of people", "people walking"],
              ["a small bird", "a bird"], ["a car", "a house"]]


def main() -> int:
    warnings.simplefilter("ignore")
    import capeval
    from support import clip_reference as cref
    from support import polos_reference as pref
    from support.images import write_pngs

    clip = cref.import_openai_clip()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        text = pref.text_encoder_folder(tmp / "text")
        checkpoint = pref.write_checkpoint(tmp / "reprod", cref.random_openai_clip(cref.TINY, seed=3), text)
        pngs = [str(p) for p in write_pngs(tmp / "images", 5, size=(64, 48))]
        images = [pngs[i % 5] for i in range(len(CANDIDATES))]
        reference = pref.load_reference(checkpoint, clip)
        for size in (32, 3, 1):
            want = pref.reference_scores(reference, CANDIDATES, REFERENCES, images, batch_size=size)
            got = capeval.score(CANDIDATES, REFERENCES, metrics="polos", images=images, polos_model=str(checkpoint),
                                polos_batch_size=size, progress=False)["per_caption"]["polos"]
            print(f"batch {size}: max |capeval - reference| = {np.max(np.abs(np.asarray(got) - want)):.1e}")
        two = [r[:1] + ["a photo"] for r in REFERENCES]
        together = pref.reference_scores(reference, CANDIDATES, two, images, batch_size=7)
        alone = pref.reference_scores(reference, CANDIDATES, two, images, batch_size=1)
        print(f"batch of 7 vs one by one (two references each): max |difference| = "
              f"{np.max(np.abs(together - alone)):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
