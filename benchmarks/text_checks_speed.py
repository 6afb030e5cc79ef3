"""Timings quoted in BENCHMARKS.md / docs/usage.md for two per-call text passes: CLIP's tokenizer on 5,000 Flickr8k
test captions with the "A photo depicts " prefix (cold: nothing tokenized yet in the process, vocabulary loaded) and
capeval's English check on 8,000 predictions + 40,000 references (Flickr8k captions).

Usage: ``python benchmarks/text_checks_speed.py`` (reads ``$CAPEVAL_DATA_DIR`` or ``../shared/data``).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))


def main() -> int:
    data = Path(os.environ.get("CAPEVAL_DATA_DIR", ROOT.parent / "shared" / "data")) / "flickr8k"
    lines = (data / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    by_image: dict[str, list[str]] = {}
    for line in lines:
        if "\t" in line:
            key, text = line.split("\t", 1)
            by_image.setdefault(key.split("#")[0], []).append(text)
    test = [n for n in (data / "Flickr_8k.testImages.txt").read_text().split() if n][:1000]
    captions = [c for n in test for c in by_image[n]]

    from capeval.vision_language import tokenizer

    tokenizer.warm_up()
    start = time.perf_counter()
    tokenizer.encode_texts(captions)
    print(f"CLIP tokenizer, {len(captions):,} captions, cold: {time.perf_counter() - start:.3f} s")

    from capeval.language import non_english_items

    everything = [c for group in by_image.values() for c in group]
    preds, refs = everything[:8000], [everything[i:i + 5] for i in range(8000)]
    start = time.perf_counter()
    flagged = non_english_items(preds, refs)
    print(f"English check, 8,000 predictions + 40,000 references: {time.perf_counter() - start:.3f} s, "
          f"{len(flagged)} flagged")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
