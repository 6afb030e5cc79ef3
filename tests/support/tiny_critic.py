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


#: Words of :func:`tiny_dev_data`'s captions (also RW's replacement words in the fits' tests).
DEV_WORDS = "a cat dog man woman runs sits red blue ball grass water".split()


def random_features(n: int, seed: int = 0):
    """``[n, 1280]`` standard-normal torch features (seeded): stand-ins for EfficientNet-Lite0 pooled features."""
    import torch

    return torch.randn(n, 1280, generator=torch.Generator().manual_seed(seed))


def tiny_dev_data(n: int = 8):
    """``(table, dev, test)``: a pooled feature table of ``n + 2`` images, 5 random captions (of :data:`DEV_WORDS`)
    for each of the first ``n`` (``dev``) and of the last 2 (``test``); for the combiners' fits on dev pairs."""
    import random

    from capeval.models.feature_table import FeatureTable

    rng = random.Random(0)
    names = [f"img{i}.jpg" for i in range(n + 2)]
    caps = {m: [" ".join(rng.choice(DEV_WORDS) for _ in range(rng.randint(3, 7))) for _ in range(5)] for m in names}
    table = FeatureTable(names, random_features(len(names), seed=2),
                         settings="image_encoder:efficientnet-lite0,res:224", kind="pooled")
    return table, {m: caps[m] for m in names[:n]}, {m: caps[m] for m in names[n:]}
