"""Score the captioner's beam captions on a split with capeval's metrics (``capeval captioner evaluate``).

The result is ``{"settings": {...}, "results": {"bleu_1": ..., "bleu_4": ..., "meteor": ..., "rouge_l": ...,
"cider_d": ..., "spice": ..., "spice_u": ...}}``: capeval's result keys and scales (fractions in [0, 1];
CIDEr-D in [0, 10], usually below 2), every caption scored against the 5 references of its image, with
capeval's defaults (pycocoevalcap-identical for BLEU, METEOR, ROUGE-L and CIDEr-D). ``settings`` records
the model, the decoding, the split and the metric signatures.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capeval.models.feature_table import FeatureTable

DEFAULT_METRICS = ("bleu", "meteor", "rouge_l", "cider_d", "spice", "spice_u")


def score_candidates(rows: Sequence[dict], references: Mapping[str, Sequence[str]],
                     metrics: Sequence[str] = DEFAULT_METRICS, progress: bool | None = None) -> dict[str, Any]:
    """Score the first candidate of each row (``{"id", "candidates"}``) against ``references[id]``.

    Returns :func:`capeval.score`'s result (corpus floats, ``per_caption``, ``signature``).
    """
    from capeval.api import score

    missing = [r["id"] for r in rows if r["id"] not in references]
    if missing:
        raise KeyError(f"No references for {missing[0]!r} ({len(missing)} ids without references).")
    if not rows:
        raise ValueError("No captions to score.")
    return score([r["candidates"][0]["caption"] for r in rows], [list(references[r["id"]]) for r in rows],
                 list(metrics), progress=progress)


def model_fingerprint(model) -> str:
    """First 12 hex digits of the SHA-256 of the model's parameters (names, shapes and values)."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(str(tuple(tensor.shape)).encode())
        h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:12]


def evaluate_captioner(model, tokenizer, features: FeatureTable, references: Mapping[str, Sequence[str]], *,
                       split: str, num_beams: int = 3, metrics: Sequence[str] = DEFAULT_METRICS,
                       model_name: str = "", progress: bool | None = None,
                       captions_out: str | Path | None = None) -> dict[str, Any]:
    """Beam-``num_beams`` captions of every image in ``references``, scored; see the module docstring.

    ``captions_out``: also write the captions (JSONL, :func:`capeval.captioning.generate.write_jsonl`).
    """
    from capeval.captioning.generate import beam_candidates, write_jsonl

    names = sorted(references)
    rows = beam_candidates(model, tokenizer, features, names, num_beams=num_beams, progress_bar=progress)
    if captions_out is not None:  # written before scoring: the captions survive a scoring failure
        write_jsonl(rows, captions_out)
    result = score_candidates(rows, references, metrics, progress=progress)
    keys = [k for k, v in result.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    settings = {
        "model": model_name, "model_sha256_12": model_fingerprint(model), "split": split, "images": len(names),
        "references_per_image": sorted({len(references[n]) for n in names}), "num_beams": num_beams,
        "length_penalty": 0.0, "max_new_tokens": model.generation_config.max_new_tokens,
        "features": features.settings, "metrics": list(metrics), "signature": result.get("signature", ""),
    }
    return {"settings": settings, "results": {k: float(result[k]) for k in keys}}
