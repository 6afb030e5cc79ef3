"""Load a captioner (shipped or trained) and caption image files with it.

>>> from capeval.captioning.load import caption_images
>>> caption_images(["dog.jpg"])                      # capeval's shipped Flickr8k captioner, beam 3
[{'id': 'dog.jpg', 'candidates': [{'caption': 'a black dog runs through the grass', 'logp': -6.9}]}]

The image features are computed with the encoder recorded in the model's config (``encoder``,
``encoder_resolution``, ``feature_kind``) through :func:`capeval.models.image_encoder.load_image_encoder`
(feature cache included); bad images follow :mod:`capeval.models.images` (an error naming the file).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capeval.models.feature_table import FeatureTable
from capeval.dependencies import require

DEFAULT_CAPTIONER = "flickr8k-captioner"
_LOADED: dict[tuple[str, str], tuple[Any, Any]] = {}


def load_captioner(path: str | os.PathLike | None = None, device: Any = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a folder (``save_pretrained`` output), by default capeval's shipped one.

    Loaded models are kept (per folder and device) and reused by later calls.
    """
    from capeval.dependencies import default_device
    from capeval.model_store import model_dir

    folder = Path(path) if path is not None else model_dir(DEFAULT_CAPTIONER)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"{folder} holds no captioner (no config.json); train one with "
                                "`capeval captioner train` or omit the path for the shipped model.")
    device = device if device is not None else default_device()
    key = (str(folder.resolve()), str(device))
    if key not in _LOADED:
        transformers = require("transformers", what="the captioner")
        from capeval.models.captioner import CaptionerForImageCaptioning

        model = CaptionerForImageCaptioning.from_pretrained(folder).to(device).eval()
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        _LOADED[key] = (model, tokenizer)
    return _LOADED[key]


def image_features(model, images: Sequence[Any], *, names: Sequence[str] | None = None,
                   progress_bar: bool | None = None, cache: bool = True) -> FeatureTable:
    """Features of ``images`` (paths, PIL images or arrays) as the captioner's encoder makes them, keyed by
    ``names`` (default ``str(path)``, or ``"image-<i>"`` for in-memory images)."""
    from capeval.models.image_encoder import load_image_encoder

    cfg = model.config
    encoder = load_image_encoder(cfg.encoder, cfg.encoder_resolution, cache=cache)
    if cfg.encoder_resolution == "native" and cfg.feature_kind == "grid":
        raise ValueError("Native-resolution grids differ in size per image; captioners read fixed-size features.")
    feats = encoder.encode(list(images), kind=cfg.feature_kind, progress=progress_bar)
    if names is not None:
        return FeatureTable(list(names), feats, encoder.settings, cfg.feature_kind)
    names = [str(im) if isinstance(im, (str, os.PathLike)) else f"image-{i}" for i, im in enumerate(images)]
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    return FeatureTable(names, feats, encoder.settings, cfg.feature_kind)


def caption_images(images: Sequence[Any], model_path: str | os.PathLike | None = None, *, num_beams: int = 3,
                   num_return_sequences: int = 1, progress_bar: bool | None = None) -> list[dict[str, Any]]:
    """Beam-search captions of image files (see the module docstring); one ``{"id", "candidates"}`` per image."""
    from capeval.captioning.generate import beam_candidates

    if isinstance(images, (str, os.PathLike)):
        images = [images]
    if not images:
        raise ValueError("No images to caption.")
    model, tokenizer = load_captioner(model_path)
    table = image_features(model, images, progress_bar=progress_bar)
    names = list(table.index)
    return beam_candidates(model, tokenizer, table, names, num_beams=num_beams,
                           num_return_sequences=num_return_sequences, progress_bar=progress_bar)
