"""CLIP models behind one small interface: pixels -> image features, token ids -> text features.

:func:`load_clip` resolves a model spec (``clip_model=`` / ``pac_model=``) to a :class:`ClipBackend`, kept per process
(spec, device, dtype), so later calls reuse it:

========================================  =====================================================================
spec                                      loaded with
========================================  =====================================================================
a file (``.pt``, ``.pth``, ``.bin``,      :mod:`capeval.vision_language.checkpoints` (OpenAI format, PAC-S's
``.safetensors``)                         ``{"state_dict": ...}``, TorchScript; never a pickle that runs code)
a folder with ``config.json``             transformers ``CLIPModel.from_pretrained`` (an HF-format CLIP)
a folder with ``open_clip_config.json``   ``open_clip.create_model("local-dir:<folder>")``
``open_clip:<name>[/<pretrained tag>]``   ``open_clip.create_model(name, pretrained=tag)`` (open_clip's own Hub
                                          loader and cache)
``ViT-B/32``, ``ViT-L/14``... (OpenAI's   the Hub id of the same weights (:data:`OPENAI_NAMES`)
names)
``<org>/<repo>`` (a Hub id)               transformers ``CLIPModel.from_pretrained`` through the Hugging Face
                                          cache; a repo without ``config.json`` but with one checkpoint file is read
                                          as a file (above)
========================================  =====================================================================

``HF_HUB_OFFLINE=1`` is honoured by the loaders; a model that is neither cached nor reachable raises one
``OSError`` naming the id and the command that fetches it.

Every backend runs in float32 by default (the reference's CPU path); ``dtype="float16"`` only on a GPU, as
clipscore.py's GPU path (OpenAI's mixed precision, float16 features: :mod:`capeval.vision_language.half`). Image
features come from ``encode_image`` (the projected class token / attention-pool output); text features from the
end-of-text position after the final layer norm, projected. Token batches are only as long as their longest sequence
(the text encoder is causal, see :mod:`capeval.vision_language.tokenizer`), in float32; in float16 the full context,
as the reference pads them (a shorter sequence rounds differently there).
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.advice import about
from capeval.hub_cli import download_command
from capeval.dependencies import default_device, require
from capeval.vision_language.checkpoints import CLIP_MEAN, CLIP_STD

#: OpenAI's model names and the Hub repos holding the same weights in transformers' format.
OPENAI_NAMES = {
    "vit-b/32": "openai/clip-vit-base-patch32",
    "vit-b/16": "openai/clip-vit-base-patch16",
    "vit-l/14": "openai/clip-vit-large-patch14",
    "vit-l/14@336px": "openai/clip-vit-large-patch14-336",
}
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt")
DTYPES = ("float32", "float16")


@dataclass
class ClipBackend:
    """A loaded CLIP: ``kind`` (``"openai"``, ``"open_clip"``, ``"transformers"``), ``label`` (for signatures),
    ``fingerprint`` (sha256 of every weight, 16 hex digits: the cache key of its features), the image ``resolution``
    and normalisation ``mean`` / ``std``, the text ``context_length``, ``device`` and ``dtype``."""

    kind: str
    label: str
    fingerprint: str
    model: Any
    resolution: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    context_length: int
    device: Any
    dtype: str

    def image_features(self, pixels, *, to_cpu: bool = True):
        """``[B, 3, R, R]`` normalised pixels -> ``[B, D]`` features (not normalised; float32, or float16 as the
        float16 model gives them, :mod:`capeval.vision_language.half`), on the CPU; with
        ``to_cpu=False`` left on the model's device, not waited for (:func:`features_to_cpu` gathers them)."""
        torch = require("torch")
        from capeval.models.inference import ieee_float32

        with torch.inference_mode(), ieee_float32():
            x = self.to_device(pixels).to(self._torch_dtype())
            if self.kind == "transformers":
                out = self.model.get_image_features(pixel_values=x)
                out = out if torch.is_tensor(out) else out.pooler_output
            else:
                out = self.model.encode_image(x)
        out = out if self.dtype == "float16" else out.float()
        return out.cpu() if to_cpu else out

    def text_features(self, tokens, *, to_cpu: bool = True):
        """``[B, L]`` token ids (end-of-text = the largest id of each row) -> ``[B, D]`` features (float32, or float16 for
        the float16 model), CPU (or, with
        ``to_cpu=False``, on the model's device, not waited for)."""
        torch = require("torch")
        from capeval.models.inference import ieee_float32

        with torch.inference_mode(), ieee_float32():
            ids = self.to_device(tokens)
            if self.kind == "transformers":
                out = self.model.get_text_features(input_ids=ids)
                out = out if torch.is_tensor(out) else out.pooler_output
            else:
                out = _open_clip_text(self.model, ids, self._torch_dtype())
        out = out if self.dtype == "float16" else out.float()
        return out.cpu() if to_cpu else out

    def to_device(self, tensor):
        """``tensor`` on the model's device. To a GPU from page-locked memory without waiting (a copy from ordinary
        memory would first wait for all the work queued on the device, so the next batch could not be prepared while
        the last one computes)."""
        if self.device.type != "cuda" or tensor.device.type != "cpu":
            return tensor.to(self.device)
        if not tensor.is_pinned():
            try:
                tensor = tensor.pin_memory()
            except RuntimeError:  # no page-locked memory to be had: the ordinary copy
                return tensor.to(self.device)
        return tensor.to(self.device, non_blocking=True)

    def _torch_dtype(self):
        torch = require("torch")
        return torch.float16 if self.dtype == "float16" else torch.float32


def _open_clip_text(model, ids, dtype):
    """open_clip's ``CLIP.encode_text`` on a batch ``L`` tokens long (``L`` ≤ the context): the causal mask and the
    positional embedding cut to ``L``."""
    length = ids.shape[1]
    x = model.token_embedding(ids).to(dtype) + model.positional_embedding[:length].to(dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = x[range(x.shape[0]), ids.argmax(dim=-1)]
    projection = model.text_projection
    return projection(x) if hasattr(projection, "weight") else x @ projection


def features_to_cpu(parts):
    """``[sum of B, D]`` numpy (the model's feature dtype): the features of ``parts`` (tensors from ``to_cpu=False`` calls, in order, at
    least one) in one copy, which waits for the device once."""
    torch = require("torch")
    return (torch.cat(parts) if len(parts) > 1 else parts[0]).cpu().numpy()


def weights_fingerprint(model) -> str:
    """sha256 (16 hex digits) of every parameter and buffer of ``model`` by name: features of two models never share
    a cache entry unless their weights are identical."""
    torch = require("torch")
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        value = tensor.detach().to("cpu", dtype=torch.float32 if tensor.is_floating_point() else tensor.dtype)
        digest.update(f"{name}:{tuple(value.shape)}:".encode())
        digest.update(value.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if value.numel() else b"")
    return digest.hexdigest()[:16]


def check_dtype(dtype: Any, device, option: str) -> str:
    """``dtype`` as ``"float32"`` / ``"float16"``; ``ValueError`` naming ``option`` otherwise, or for float16 off a GPU."""
    if dtype is None:
        dtype = "float32"
    if dtype not in DTYPES:
        raise ValueError(f"{option} must be one of {list(DTYPES)}, got {dtype!r:.60}.")
    if dtype == "float16" and default_device(device).type != "cuda" and not HALF_ON_CPU:
        raise ValueError(f"{option}='float16' runs only on a GPU (the CPU path is float32, as the reference's); "
                         f"device is {default_device(device)}.")
    return dtype


#: Tests only: let ``dtype="float16"`` run on the CPU (torch computes float16 there, slowly), to check the float16
#: path against OpenAI's own code without a GPU.
HALF_ON_CPU = False



def load_clip(spec: str | os.PathLike, *, device: Any = None, dtype: str = "float32",
              option: str = "clip_model") -> ClipBackend:
    """The :class:`ClipBackend` of ``spec`` (see the module docstring), loaded once per process and device/dtype."""
    torch = require("torch", what=f"{option} (CLIP)")
    if not isinstance(spec, (str, os.PathLike)) or not str(spec).strip():
        raise ValueError(f"{option} must be a Hub id, an open_clip name, a folder or a checkpoint file, got "
                         f"{spec!r:.60}.")
    target = default_device(device)
    dtype = check_dtype(dtype, target, option.replace("model", "dtype"))
    key = (_cache_key(spec), str(target), dtype)
    from capeval.loaded_models import load_once

    def load() -> ClipBackend:
        backend = _load(spec, option)
        if dtype == "float16":
            _to_openai_mixed_precision(backend, option.replace("model", "dtype"))
            backend.model.to(target)
        else:
            backend.model.to(target, dtype=torch.float32)
        backend.device, backend.dtype = target, dtype
        return backend

    return load_once("clip", key, load)


def _to_openai_mixed_precision(backend: ClipBackend, option: str) -> None:
    """``backend``'s model as OpenAI's ``clip.load`` holds it on a GPU (:mod:`capeval.vision_language.half`); a
    transformers CLIP is first rebuilt in OpenAI's layout from the same weights (its fingerprint and label kept)."""
    from capeval.vision_language.half import openai_mixed_precision, openai_state_from_transformers

    if backend.kind == "transformers":
        from capeval.vision_language.checkpoints import build_openai_clip

        state, quick_gelu = openai_state_from_transformers(backend.model, option)
        backend.model, backend.kind = build_openai_clip(state, quick_gelu=quick_gelu), "openai"
    openai_mixed_precision(backend.model)


def _cache_key(spec: str | os.PathLike) -> str:
    path = Path(spec).expanduser()
    if path.exists():
        stat = path.stat()
        return f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    return str(spec)


def _load(spec: str | os.PathLike, option: str) -> ClipBackend:
    text = os.fspath(spec).strip()
    path = Path(text).expanduser()
    if path.is_file():
        return _from_state_dict(path, option, label=path.name)
    if path.is_dir():
        if (path / "config.json").is_file():
            return _from_transformers(str(path), option, label=f"{path.name}")
        if (path / "open_clip_config.json").is_file():
            return _from_open_clip(f"local-dir:{path}", None, option, label=path.name)
        checkpoints = sorted(p for p in path.iterdir() if p.suffix in CHECKPOINT_SUFFIXES)
        if len(checkpoints) == 1:
            return _from_state_dict(checkpoints[0], option, label=f"{path.name}/{checkpoints[0].name}")
        raise about(ValueError, option, f"{path} holds no config.json (transformers), no open_clip_config.json and not "
                         f"exactly one checkpoint file ({[p.name for p in checkpoints]}).")
    if text.lower().startswith("open_clip:"):
        rest = text.split(":", 1)[1]
        name, _, tag = (rest, "", "") if rest.startswith("hf-hub:") else rest.partition("/")
        return _from_open_clip(name, tag or None, option, label=text)
    if text.lower() in OPENAI_NAMES:
        return _from_hub(OPENAI_NAMES[text.lower()], option)
    if text.startswith((".", "/", "~")) or text.lower().endswith(CHECKPOINT_SUFFIXES) or text.count("/") > 1:
        raise about(FileNotFoundError, option, f"no such file or folder {text}.")
    if text.count("/") == 1:
        return _from_hub(text, option)
    raise about(ValueError, option, f"{text!r} is not a file, a folder, a Hub id (org/name), an OpenAI name "
                     f"({', '.join(OPENAI_NAMES)}) or open_clip:<name>[/<pretrained>].")


def _first_sentence(err: BaseException, limit: int = 160) -> str:
    """The first sentence of an exception's message, at most ``limit`` characters."""
    text = " ".join(str(err).split())
    end = text.find(". ")
    text = text if end < 0 else text[:end + 1]
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _fetch_hint(repo: str) -> str:
    return (f"fetch it once online with `{download_command(repo)}`, then it is read "
            "from the Hugging Face cache offline")


def _from_hub(repo: str, option: str) -> ClipBackend:
    hub = require("huggingface_hub", what=f"{option} (a Hub id)")
    try:
        files = _cached_or_listed_files(hub, repo)
    except Exception as err:  # noqa: BLE001 - offline, missing repo, no network: one message
        raise OSError(f"{option}={repo!r}: the model is not in the Hugging Face cache and the Hub cannot be reached "
                      f"({type(err).__name__}: {_first_sentence(err)}); {_fetch_hint(repo)}.") from None
    if "config.json" in files:
        return _from_transformers(repo, option, label=repo)
    checkpoints = [f for f in files if f.endswith(CHECKPOINT_SUFFIXES)]
    if len(checkpoints) == 1:
        try:
            local = hub.hf_hub_download(repo, checkpoints[0])
        except Exception as err:  # noqa: BLE001
            raise OSError(f"{option}={repo!r}: {checkpoints[0]} could not be read ({str(err)[:200]}); "
                          f"{_fetch_hint(repo)}.") from None
        return _from_state_dict(Path(local), option, label=f"{repo}/{checkpoints[0]}")
    raise ValueError(f"{option}={repo!r}: the repo holds neither a transformers config.json nor exactly one "
                     f"checkpoint file ({checkpoints}).")


def _cached_or_listed_files(hub, repo: str) -> list[str]:
    """The repo's file names: from the local cache when a snapshot is there (offline or not), else from the Hub."""
    try:
        folder = hub.snapshot_download(repo, local_files_only=True)
        return [p.relative_to(folder).as_posix() for p in Path(folder).rglob("*") if p.is_file()]
    except Exception:  # noqa: BLE001 - not cached
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
            raise
        return list(hub.list_repo_files(repo))


def _side(size) -> int:
    """An open_clip tower's ``image_size`` (an int, or a square's (h, w)) as one int."""
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def _from_state_dict(path: Path, option: str, label: str) -> ClipBackend:
    """A checkpoint file: OpenAI's CLIP (QuickGELU, OpenAI's normalisation), or, for a released open_clip checkpoint
    (:func:`~capeval.vision_language.checkpoints.open_clip_release`, PAC-S's ``openClip_ViT-L-14.pth``), the same
    shapes with its configuration's activation and its pretrained tag's normalisation; the fingerprint then names
    the activation too (the same weights under another activation are another model)."""
    from capeval.vision_language.checkpoints import build_openai_clip, open_clip_release, read_state_dict

    state = read_state_dict(path, what=option)
    release = open_clip_release(path)
    if release is None:
        model = build_openai_clip(state)
        return ClipBackend("openai", label, weights_fingerprint(model), model, _side(model.visual.image_size),
                           CLIP_MEAN, CLIP_STD, int(model.context_length), None, "float32")
    model = build_openai_clip(state, quick_gelu=release.quick_gelu)
    activation = "quick_gelu" if release.quick_gelu else "gelu"
    fingerprint = hashlib.sha256(f"{weights_fingerprint(model)}:{activation}".encode()).hexdigest()[:16]
    return ClipBackend("open_clip", f"{label}:open_clip-{release.name}-{activation}", fingerprint, model,
                       _side(model.visual.image_size), release.mean, release.std, int(model.context_length), None,
                       "float32")


def _from_transformers(source: str, option: str, label: str) -> ClipBackend:
    transformers = require("transformers", what=f"{option} (a transformers CLIP)")
    from capeval.progress import announce

    try:
        with announce(f"loading the CLIP model {label} (once per process)"):
            model = transformers.CLIPModel.from_pretrained(source, torch_dtype="float32")
    except OSError as err:
        raise OSError(f"{option}={source!r}: could not be loaded ({str(err)[:300]}); {_fetch_hint(source)}.") from None
    model.eval()
    mean, std = CLIP_MEAN, CLIP_STD
    processor_config = Path(source) / "preprocessor_config.json"
    if processor_config.is_file():
        import json

        config = json.loads(processor_config.read_text(encoding="utf-8"))
        mean, std = tuple(config.get("image_mean", mean)), tuple(config.get("image_std", std))
    return ClipBackend("transformers", label, weights_fingerprint(model), model,
                       int(model.config.vision_config.image_size), mean, std,
                       int(model.config.text_config.max_position_embeddings), None, "float32")


def _from_open_clip(name: str, tag: str | None, option: str, label: str) -> ClipBackend:
    open_clip = require("open_clip", what=f"{option} (an open_clip model)")
    try:
        model = open_clip.create_model(name, pretrained=tag, precision="fp32")
    except (RuntimeError, OSError, ValueError) as err:
        raise OSError(f"{option}={label!r}: open_clip could not load it ({str(err)[:300]}); fetch its weights once "
                      "online (open_clip caches them in the Hugging Face cache).") from None
    if not isinstance(model, open_clip.model.CLIP) or getattr(model, "text_pool_type", "argmax") != "argmax":
        raise ValueError(f"{option}={label!r} is not a CLIP with OpenAI's text tower (argmax pooling, OpenAI's "
                         "tokenizer); CLIP-S / PAC-S are defined on those.")
    config = getattr(model.visual, "preprocess_cfg", {}) or {}
    return ClipBackend("open_clip", label, weights_fingerprint(model), model.eval(), _side(model.visual.image_size),
                       tuple(config.get("mean", CLIP_MEAN)), tuple(config.get("std", CLIP_STD)),
                       int(model.context_length), None, "float32")


def clear_loaded() -> None:
    """Forget the loaded CLIP models (:func:`capeval.clear_loaded_models` forgets every kind; their memory is freed
    once no caller holds them)."""
    from capeval.loaded_models import forget

    forget("clip")


__all__ = ["CLIP_MEAN", "CLIP_STD", "ClipBackend", "DTYPES", "OPENAI_NAMES", "check_dtype", "clear_loaded",
           "load_clip", "weights_fingerprint"]
