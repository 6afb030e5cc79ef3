"""Tiny random critics for the learned_critic module and Space tests: one folder per context, seconds to make.

The weights are random (seeded), so the scores mean nothing; what the tests check is that the numbers a module or a
page shows are ``capeval.score``'s for the same critic folders. The image critics read EfficientNet-Lite0 pooled
features (1280-d), the encoder the shipped critics use, so real photos go through the real encoder.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

#: Option of the critic metrics -> the context of the critic it names.
CONTEXTS = {"critic_model": "image+reference", "critic_ref_model": "reference", "critic_img_model": "image"}
SIZES = {"hidden_size": 16, "mlp_size": 8, "bilinear_dim": 64, "embed_dim": 8}
WORDS = ["a cat looking at the camera with stripes", "an astronaut woman in an orange space suit",
         "a cup of coffee on a saucer with a spoon", "a dog runs on the grass"]


def make_tiny_critics(root: Path, seed: int = 0) -> dict[str, str]:
    """Write the three tiny critics under ``root``; ``{option name: folder}`` (``critic_model``: ``root/critic``...)."""
    import torch

    from capeval.critic.model import CriticConfig, CriticModel
    from capeval.critic.vocab import CriticVocab

    vocab = CriticVocab.build(WORDS)
    out = {}
    for k, (option, context) in enumerate(CONTEXTS.items()):
        folder = Path(root) / option.removesuffix("_model")
        torch.manual_seed(seed + k)
        model = CriticModel(CriticConfig(vocab_size=len(vocab), image_dim=1280, context=context, **SIZES))
        model.save_pretrained(folder)
        vocab.save(folder)
        out[option] = str(folder)
    return out


class FakeEncoder:
    """Bag-of-letters unit vectors: a deterministic, instant stand-in for critic_plus's sentence encoder."""

    name = "fake-letters"

    def encode(self, texts, **_):
        out = np.zeros((len(texts), 27), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t.lower():
                out[i, ord(ch) - 97 if "a" <= ch <= "z" else 26] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    def similarity(self, a, b, **kwargs):
        return np.einsum("ij,ij->i", self.encode(a).astype(float), self.encode(b).astype(float))
