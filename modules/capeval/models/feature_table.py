"""Image features by image name, read from a ``capeval features extract`` file: what the learned models train on.

A :class:`FeatureTable` holds one feature tensor per image name (``[regions, channels]`` or ``[channels]``),
read from a file written by ``capeval features extract`` (:mod:`capeval.models.extract_features`) and kept
as float16 to halve memory (Flickr8k grid features at 224²: 8,091 × 49 × 1,280 → 1.0 GB).
:func:`check_disjoint` refuses to train on any image of a split that is evaluated. Used by the captioner
(:mod:`capeval.captioning`) and the critic (:mod:`capeval.critic`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from capeval.advice import Setting, with_words, words
from capeval.dependencies import require


class FeatureTable:
    """Image name -> feature tensor (float16 in memory; ``rows(names)`` returns float32 ``[n, ...]``)."""

    def __init__(self, names: Sequence[str], features, settings: str = "", kind: str = "grid"):
        torch = require("torch", what="the captioner")
        if len(names) != features.shape[0]:
            raise ValueError(f"{len(names)} image names but {features.shape[0]} feature rows.")
        if len(set(names)) != len(names):
            raise ValueError("Duplicate image names in the feature table.")
        if features.dim() == 4:  # [N, C, H, W] -> [N, H*W, C]
            features = features.flatten(2).transpose(1, 2)
        self.features = features.to(torch.float16).contiguous()
        if not torch.isfinite(self.features).all():
            raise ValueError("The feature table holds NaN or infinite values (float16 overflow or a bad file).")
        self.index = {n: i for i, n in enumerate(names)}
        self.settings, self.kind = settings, kind

    @classmethod
    def load(cls, path: str | os.PathLike) -> FeatureTable:
        """Read a ``capeval features extract`` file; image names are reduced to their file names."""
        from capeval.models.extract_features import load

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such feature file (make one with `capeval features extract`).")
        tensors, meta = load(path)
        if "features" not in tensors:
            raise with_words(ValueError, words("resolution", f"{path}: per-image native-resolution grids are not "
                                               "supported here; extract with ", Setting(224),
                                               " (or any fixed size)."))
        names = [Path(n).name for n in meta["images"]]
        return cls(names, tensors["features"], meta.get("settings", ""), meta.get("kind", "grid"))

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def __len__(self) -> int:
        return len(self.index)

    def check(self, names: Sequence[str]) -> None:
        """``KeyError`` naming the first of ``names`` without features."""
        missing = [n for n in names if n not in self.index]
        if missing:
            raise KeyError(f"No features for image {missing[0]!r} ({len(missing)} missing); extract them first.")

    def rows(self, names: Sequence[str]):
        """Float32 features of ``names`` (``KeyError`` names the first missing image)."""
        self.check(names)
        torch = require("torch")
        return self.features[torch.as_tensor([self.index[n] for n in names])].float()

    @property
    def feature_dim(self) -> int:
        return int(self.features.shape[-1])

    def save(self, path: str | os.PathLike) -> Path:
        """Write this table as a ``capeval features extract`` file (float32; :meth:`load` reads it back)."""
        import json

        save_file = require("safetensors.torch").save_file
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        names = sorted(self.index, key=self.index.get)
        metadata = {"settings": self.settings, "kind": self.kind, "count": str(len(names)), "images": json.dumps(names),
                    "processes": "1"}
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        save_file({"features": self.features.float().contiguous()}, str(tmp), metadata=metadata)
        os.replace(tmp, path)
        return path

    def encoder_settings(self) -> dict:
        """``encoder`` / ``encoder_resolution`` parsed from the feature file's settings string, when present
        (what a model trained on these features records, so that it can encode new images the same way)."""
        fields = dict(part.split(":", 1) for part in self.settings.split(",") if ":" in part)
        out: dict = {}
        if "image_encoder" in fields:
            out["encoder"] = fields["image_encoder"]
        if fields.get("res", "").isdigit():
            out["encoder_resolution"] = int(fields["res"])
        elif fields.get("res") == "native":
            out["encoder_resolution"] = "native"
        return out

    def pooled(self) -> "FeatureTable":
        """This table with each grid averaged over its regions (``[N, channels]``: the encoder's pooled features)."""
        if self.features.dim() == 2:
            return self
        names = sorted(self.index, key=self.index.get)
        return FeatureTable(names, self.features.float().mean(dim=1), self.settings, "pooled")


def check_disjoint(train: Mapping[str, object], **evaluated: Mapping[str, object]) -> None:
    """``ValueError`` when a training image is also in one of the ``evaluated`` splits (named in the error)."""
    for split, images in evaluated.items():
        shared = sorted(set(train) & set(images))
        if shared:
            raise ValueError(f"{len(shared)} training images are also in the {split} split (e.g. {shared[0]}); "
                             "never train on images that are evaluated.")
