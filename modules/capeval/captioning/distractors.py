"""Wang et al. (ECCV 2020) §3.1: generic training captions versus human captions under the captioner's P(s|I).

The paper found that for 73 % of COCO images one of the 5 most common training captions gets a higher
P(s|I) than one of the image's human captions: likelihood-trained captioners favour generic captions, the
motivation for SPICE-U and MMI decoding. Here, for each image of a split:

* distractors: the ``top`` most frequent captions of the training split, compared as the metrics tokenise
  them (PTB tokens, lower-cased, no punctuation; ties broken alphabetically);
* ``log P(s|I)``: the captioner's teacher-forced natural-log probability (``<eos>`` included) of each
  distractor and each human caption of the image;
* ``share_any``: share of images where the best distractor beats the *worst* human caption (the paper's
  statistic); ``share_best``: where it beats the *best* human caption; ``share_pairs``: share of all
  (distractor, human caption) pairs of an image where the distractor wins, averaged over pairs.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from capeval.models.feature_table import FeatureTable
from capeval.dependencies import require


def most_common_captions(captions: Sequence[str], top: int = 5) -> list[tuple[str, int]]:
    """The ``top`` most frequent normalised captions with their counts (ties alphabetical)."""
    from capeval.models.caption_tokenizer import normalise_captions

    if top < 1:
        raise ValueError(f"top must be >= 1, got {top}.")
    counts = Counter(c for c in normalise_captions(captions) if c)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]


def distractor_analysis(model, tokenizer, features: FeatureTable, references: Mapping[str, Sequence[str]],
                        train: Mapping[str, Sequence[str]], *, top: int = 5, batch_size: int = 50,
                        progress_bar: bool | None = None) -> dict[str, Any]:
    """See the module docstring; returns ``{"settings", "results", "distractors"}``."""
    torch = require("torch")
    from capeval.models.caption_tokenizer import encode_captions
    from capeval.progress import progress

    shared = set(train) & set(references)
    if shared:
        raise ValueError(f"{len(shared)} images are both training and evaluated images (e.g. {sorted(shared)[0]}).")
    common = most_common_captions([c for caps in train.values() for c in caps], top)
    d_ids = encode_captions(tokenizer, [c for c, _ in common])
    names = sorted(references)
    any_wins = best_wins = 0
    pair_wins = pairs = 0
    model.eval()
    for start in progress(range(0, len(names), batch_size), desc="distractors", enabled=progress_bar):
        chunk = names[start:start + batch_size]
        with torch.no_grad():
            embeds = model.encode_images(features.rows(chunk).to(model.device))
        for j, name in enumerate(chunk):
            h_ids = encode_captions(tokenizer, list(references[name]))
            rows = embeds[j:j + 1].expand(len(d_ids) + len(h_ids), *embeds.shape[1:])
            lp = model.caption_log_probs(d_ids + h_ids, image_embeds=rows).cpu()
            lp_d, lp_h = lp[:len(d_ids)], lp[len(d_ids):]
            any_wins += int(lp_d.max() > lp_h.min())
            best_wins += int(lp_d.max() > lp_h.max())
            pair_wins += int((lp_d[:, None] > lp_h[None, :]).sum())
            pairs += lp_d.numel() * lp_h.numel()
    n = len(names)
    if n == 0:
        raise ValueError("No images to analyse.")
    return {
        "settings": {"top": top, "images": n, "captioner_vocab": len(tokenizer), "features": features.settings},
        "results": {"share_any": any_wins / n, "share_best": best_wins / n, "share_pairs": pair_wins / pairs},
        "distractors": [{"caption": c, "train_count": k} for c, k in common],
    }
