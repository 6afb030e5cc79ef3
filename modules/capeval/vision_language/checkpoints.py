"""CLIP checkpoints in OpenAI's format: read them without running code, infer the architecture, build the model.

Accepted files (``clip_model=`` / ``pac_model=`` a path):

* a PyTorch file holding an OpenAI-format state dict (``visual.*``, ``transformer.resblocks.*``,
  ``token_embedding.weight``, ``positional_embedding``, ``ln_final.*``, ``text_projection``, ``logit_scale``), or a
  dict that holds one under ``"state_dict"`` (the PAC-S checkpoints as distributed: ``clip_ViT-B-32.pth``), read with
  ``torch.load(weights_only=True)``: a pickle that would run code is refused, naming the file;
* a TorchScript archive as OpenAI's ``clip.load`` downloads it (``ViT-B-32.pt``): its parameters are read with
  ``torch.jit.load`` on the CPU (TorchScript's own loader, which does not unpickle arbitrary Python objects);
* a ``.safetensors`` file with the same keys.

The architecture is inferred from the tensor shapes as OpenAI's ``build_model`` infers it (vision transformer or
modified ResNet, widths, layers, patch size, resolution, text context, vocabulary; 64-wide attention heads) and built
with ``open_clip``'s implementation of OpenAI's modules (QuickGELU), in float32: the values are loaded exactly as
stored (``open_clip.build_model_from_openai_state_dict`` would round them to float16 first, which the PAC-S reference,
loading into a float32 model, does not do).
"""
from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path
from typing import Any

from capeval.models._deps import require

#: Keys every OpenAI-format CLIP state dict has.
REQUIRED_KEYS = ("text_projection", "positional_embedding", "token_embedding.weight", "ln_final.weight")


def _is_torchscript(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return any(name.split("/", 1)[-1].startswith("code/") for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False


#: File signatures (first bytes) of what a checkpoint path sometimes turns out to hold.
_SIGNATURES = ((b"\xff\xd8\xff", "a JPEG image"), (b"\x89PNG", "a PNG image"), (b"GIF8", "a GIF image"),
               (b"%PDF", "a PDF document"), (b"\x1f\x8b", "a gzip archive (unpack it first)"),
               (b"BZh", "a bzip2 archive (unpack it first)"), (b"7z\xbc\xaf", "a 7-zip archive (unpack it first)"),
               (b"\x7fELF", "a program"), (b"<!DOCTYPE html", "an HTML page (a download that failed?)"),
               (b"<html", "an HTML page (a download that failed?)"),
               (b"version https://git-lfs", "a Git LFS pointer, not the file itself (git lfs pull)"))


def not_a_torch_file(path: Path) -> str | None:
    """What ``path`` is when its first bytes show it cannot be a PyTorch file (``"a JPEG image"``, ``"an empty
    file"``, ``"a zip archive without a PyTorch model (no data.pkl)"``, ``"text"`` ...); ``None`` when it may be one
    (a PyTorch zip archive or a legacy pickle)."""
    with open(path, "rb") as fh:
        head = fh.read(512)
    if not head:
        return "an empty file"
    if head.startswith(b"PK"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
        except (zipfile.BadZipFile, OSError):
            return "a damaged zip archive (an interrupted download?)"
        if any(name.endswith("data.pkl") for name in names):
            return None
        return f"a zip archive without a PyTorch model (no data.pkl; it holds {', '.join(names[:3]) or 'nothing'})"
    if head[:1] == b"\x80":  # a pickle's protocol opcode: torch.save's legacy format
        return None
    for signature, kind in _SIGNATURES:
        if head.lstrip().lower().startswith(signature.lower()):
            return kind
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of an unknown kind"
    return "text (" + " ".join(head[:40].decode("utf-8", "replace").split()) + "…)"


def read_weights(path: Path, what: str, *, allowed: tuple = (),
                 hint: str = "save the state dict itself (model.state_dict(), tensors only) or a safetensors file"):
    """What a ``.safetensors`` file or a PyTorch file holds, read without running code: safetensors' loader, or
    ``torch.load(weights_only=True)`` with ``allowed`` classes besides tensors and containers. ``ValueError`` naming
    ``what`` and the file (with ``hint``, the way out) for anything unreadable that way."""
    torch = require("torch", what=what)
    if path.suffix == ".safetensors":
        safetensors_torch = require("safetensors.torch", what="reading .safetensors checkpoints")
        try:
            return safetensors_torch.load_file(str(path), device="cpu")
        except Exception as err:  # noqa: BLE001 - safetensors raises its own error types
            raise ValueError(f"{what}: {path} is not a readable safetensors file ({err}).") from None
    other = not_a_torch_file(path)
    if other:
        raise ValueError(f"{what}: {path} is not a PyTorch or safetensors checkpoint: it is {other}. Give the "
                         "checkpoint file (.pt, .pth, .ckpt or .safetensors).")
    try:
        with torch.serialization.safe_globals(list(allowed)):
            return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - the unpickler raises many types
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(err)).strip().splitlines()[0][:200] if str(err).strip() else ""
        raise ValueError(f"{what}: {path} could not be read as weights only ({type(err).__name__}: {first}). "
                         f"capeval never unpickles code: {hint}.") from None


def read_state_dict(path: str | os.PathLike, *, what: str = "clip_model") -> dict[str, Any]:
    """The OpenAI-format CLIP state dict in ``path`` (float tensors on the CPU; see the module docstring).

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming ``what`` and the file for anything that is not
    such a checkpoint (a pickle with code, another model's weights, a damaged file).
    """
    torch = require("torch", what="CLIP checkpoints")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what}: no such checkpoint file {path}.")
    if path.suffix != ".safetensors" and _is_torchscript(path):
        try:
            state = torch.jit.load(str(path), map_location="cpu").state_dict()
        except Exception as err:  # noqa: BLE001 - TorchScript raises RuntimeError and others
            raise ValueError(f"{what}: {path} is a TorchScript archive that could not be loaded ({err}).") from None
    else:
        state = read_weights(path, what)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ValueError(f"{what}: {path} holds a {type(state).__name__}, not a state dict.")
    state = {(k[len("module."):] if k.startswith("module.") else k): v for k, v in state.items()}
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing or not any(k.startswith("visual.") for k in state):
        raise ValueError(f"{what}: {path} is not an OpenAI-format CLIP state dict (missing {missing or 'visual.*'}; "
                         f"first keys: {list(state)[:5]}).")
    return state


def infer_architecture(state: dict[str, Any]) -> dict[str, Any]:
    """The model dimensions implied by an OpenAI-format state dict's tensor shapes (OpenAI's ``build_model`` rule)."""
    vit = "visual.proj" in state
    if vit:
        vision_width = state["visual.conv1.weight"].shape[0]
        vision_layers = len({k.split(".")[3] for k in state
                             if k.startswith("visual.transformer.resblocks.") and k.endswith(".attn.in_proj_weight")})
        patch_size = state["visual.conv1.weight"].shape[-1]
        grid = round((state["visual.positional_embedding"].shape[0] - 1) ** 0.5)
        image_size = patch_size * grid
        layers: Any = vision_layers
    else:
        counts = [len({k.split(".")[2] for k in state if k.startswith(f"visual.layer{b}.")}) for b in (1, 2, 3, 4)]
        layers = tuple(counts)
        vision_width = state["visual.layer1.0.conv1.weight"].shape[0]
        output_width = round((state["visual.attnpool.positional_embedding"].shape[0] - 1) ** 0.5)
        patch_size = None
        image_size = output_width * 32
    width = state["ln_final.weight"].shape[0]
    return {
        "embed_dim": state["text_projection"].shape[1], "image_size": image_size, "vision_layers": layers,
        "vision_width": vision_width, "patch_size": patch_size,
        "context_length": state["positional_embedding"].shape[0], "vocab_size": state["token_embedding.weight"].shape[0],
        "text_width": width, "text_heads": width // 64,
        "text_layers": len({k.split(".")[2] for k in state if k.startswith("transformer.resblocks.")}),
    }


def build_openai_clip(state: dict[str, Any]):
    """An ``open_clip.model.CLIP`` in float32, eval mode, holding ``state`` exactly (strict load)."""
    torch = require("torch", what="CLIP checkpoints")
    open_clip_model = require("open_clip.model", what="CLIP checkpoints")
    arch = infer_architecture(state)
    vision = open_clip_model.CLIPVisionCfg(layers=arch["vision_layers"], width=arch["vision_width"],
                                           patch_size=arch["patch_size"], image_size=arch["image_size"])
    text = open_clip_model.CLIPTextCfg(context_length=arch["context_length"], vocab_size=arch["vocab_size"],
                                       width=arch["text_width"], heads=arch["text_heads"], layers=arch["text_layers"])
    model = open_clip_model.CLIP(arch["embed_dim"], vision_cfg=vision, text_cfg=text, quick_gelu=True)
    weights = {k: v for k, v in state.items() if k not in ("input_resolution", "context_length", "vocab_size")}
    weights = {k: (v.float() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in weights.items()}
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as err:
        raise ValueError(f"the checkpoint does not match the CLIP architecture inferred from its shapes ({arch}): "
                         f"{str(err)[:500]}") from None
    return model.float().eval()


__all__ = ["REQUIRED_KEYS", "build_openai_clip", "infer_architecture", "read_state_dict", "read_weights"]
