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

open_clip's CLIP keeps OpenAI's state-dict layout key for key (``open_clip/model.py`` ``CLIP``: the same ``visual.*`` /
``transformer.resblocks.*`` names, its causal ``attn_mask`` a non-persistent buffer; so did the copy vendored in
aimagelab/pacscore, ``models/open_clip/model.py``), so nothing in PAC-S's second checkpoint ``openClip_ViT-L-14.pth``
tells it from an OpenAI ViT-L/14 but its name and what the reference builds for it: ``compute_metrics.py`` maps
``open_clip_ViT-L/14`` to that file and loads it into ``open_clip.create_model_and_transforms('ViT-L-14',
pretrained='laion2b_s32b_b82k')``, whose MLPs use ``nn.GELU`` (``model_configs/ViT-L-14.json`` has no ``quick_gelu``)
and whose images are normalised with that tag's mean / std (0.5, 0.5, 0.5: ``pretrained.py`` of open_clip 2.0.2, the
version pacscore vendors, and of today's). :data:`OPEN_CLIP_RELEASES` lists such files by name;
:func:`open_clip_release` returns their settings.

Long-CLIP's checkpoints (Zhang et al., ECCV 2024: ``longclip-B.pt``, ``longclip-L.pt`` on the Hub as
``BeichenZhang/LongCLIP-B`` / ``-L``; beichenzbc/Long-CLIP ``model/model_longclip.py``) are OpenAI-format state dicts
with a 248-token text context and a second positional embedding, ``positional_embedding_res`` (248 rows): the
reference's ``encode_text`` adds ``positional_embedding * mask1 + positional_embedding_res * mask2``, ``mask1`` being 1
on the first :data:`LONG_CLIP_KEPT` (20) positions and ``mask2`` on the others. A checkpoint holding that tensor is
recognised as Long-CLIP (:func:`is_long_clip`), and :func:`build_openai_clip` gives the model the one positional
embedding that sum equals: the first 20 rows of ``positional_embedding``, the rest of ``positional_embedding_res``
(exact in float32 and float16: the other term of each row is a product with 0, and adding 0 leaves a number unchanged);
the tokenizer then cuts texts at 248 tokens, as Long-CLIP's ``tokenize(..., truncate=True)`` does.

PAC-S++'s checkpoints (``PAC++_clip_ViT-B-32.pth``, ``PAC++_clip_ViT-L-14.pth``; ``compute_correlations_pac++.py``)
hold OpenAI's CLIP with LoRA adapters (``models/clip_lora/model.py``, ``models/custom_loralib/layers.py``: tensors
named ``*lora_A`` / ``*lora_B``, e.g. ``attn.in_proj_weight_lora_A``, ``mlp.c_fc.lora_B``): refused by
:func:`read_state_dict` with one line naming what was found.
"""
from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.dependencies import require

#: OpenAI CLIP's image normalisation (clipscore.py, PAC-S and every OpenAI-format checkpoint).
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

#: Keys every OpenAI-format CLIP state dict has.
REQUIRED_KEYS = ("text_projection", "positional_embedding", "token_embedding.weight", "ln_final.weight")
#: Long-CLIP's second positional embedding (its presence marks a Long-CLIP checkpoint).
LONG_CLIP_KEY = "positional_embedding_res"
#: Long-CLIP's positions that keep CLIP's own positional embedding (``mask1``); the later ones read
#: :data:`LONG_CLIP_KEY` (``mask2``).
LONG_CLIP_KEPT = 20


def is_long_clip(state: dict[str, Any]) -> bool:
    """Whether ``state`` is a Long-CLIP checkpoint (it holds :data:`LONG_CLIP_KEY`)."""
    return LONG_CLIP_KEY in state


def long_clip_positions(state: dict[str, Any]):
    """The one positional embedding (``[context, width]``, float32) equal to Long-CLIP's ``positional_embedding *
    mask1 + positional_embedding_res * mask2``: rows ``< 20`` of the first, the others of the second; ``ValueError``
    when the two do not have the same shape or the context is not longer than 20."""
    torch = require("torch", what="CLIP checkpoints")
    kept, res = state["positional_embedding"], state[LONG_CLIP_KEY]
    if not (torch.is_tensor(kept) and torch.is_tensor(res)) or kept.shape != res.shape or kept.ndim != 2 \
            or kept.shape[0] <= LONG_CLIP_KEPT:
        raise ValueError(f"a Long-CLIP checkpoint needs positional_embedding and {LONG_CLIP_KEY} of one shape "
                         f"[context > {LONG_CLIP_KEPT}, width], got {tuple(getattr(kept, 'shape', ()))} and "
                         f"{tuple(getattr(res, 'shape', ()))}.")
    mixed = kept.float().clone()
    mixed[LONG_CLIP_KEPT:] = res[LONG_CLIP_KEPT:].float()
    return mixed

#: Released checkpoints that the reference builds as open_clip models, by file name (lower case): the open_clip model
#: name and pretrained tag the reference passes to ``create_model_and_transforms`` (aimagelab/pacscore
#: ``compute_metrics.py``, ``_MODELS`` and ``__main__``).
OPEN_CLIP_RELEASES = {"openclip_vit-l-14.pth": ("ViT-L-14", "laion2b_s32b_b82k")}

#: What names a LoRA adapter tensor in PAC-S++'s checkpoints (``models/custom_loralib/layers.py``).
LORA_MARKERS = ("lora_A", "lora_B")


@dataclass(frozen=True)
class OpenClipRelease:
    """How the reference builds a released open_clip checkpoint: open_clip ``name`` / ``tag``, ``quick_gelu`` (from
    the model's configuration; False: ``nn.GELU``) and the image normalisation ``mean`` / ``std`` (per channel, for
    pixels in [0, 1]) of the tag's pretrained configuration."""

    name: str
    tag: str
    quick_gelu: bool
    mean: tuple[float, float, float]
    std: tuple[float, float, float]


def open_clip_release(path: str | os.PathLike) -> OpenClipRelease | None:
    """The open_clip settings of ``path`` when its file name is one of :data:`OPEN_CLIP_RELEASES` (PAC-S's
    ``openClip_ViT-L-14.pth``), read from the installed open_clip's model and pretrained configurations; ``None``
    for any other file (built as OpenAI's CLIP, QuickGELU)."""
    entry = OPEN_CLIP_RELEASES.get(Path(path).name.lower())
    if entry is None:
        return None
    open_clip = require("open_clip", what=f"the open_clip checkpoint {Path(path).name}")
    name, tag = entry
    config = open_clip.get_model_config(name) or {}
    pretrained = open_clip.get_pretrained_cfg(name, tag) or {}
    return OpenClipRelease(name, tag, bool(config.get("quick_gelu", False)),
                           tuple(pretrained.get("mean") or CLIP_MEAN), tuple(pretrained.get("std") or CLIP_STD))


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
    lora = [k for k in state if any(marker in k for marker in LORA_MARKERS)]
    if lora:
        raise ValueError(f"{what}: {path} holds a CLIP with LoRA adapters ({len(lora)} tensors such as {lora[0]!r}: "
                         "PAC-S++'s layout, aimagelab/pacscore models/clip_lora), which capeval does not read; give a "
                         "plain CLIP state dict (OpenAI's or open_clip's layout, as PAC-S's clip_ViT-B-32.pth and "
                         "openClip_ViT-L-14.pth).")
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


def build_openai_clip(state: dict[str, Any], *, quick_gelu: bool = True):
    """An ``open_clip.model.CLIP`` in float32, eval mode, holding ``state`` exactly (strict load; a Long-CLIP
    checkpoint's two positional embeddings as the one they sum to, :func:`long_clip_positions`): the dimensions
    from the shapes (:func:`infer_architecture`), the MLP activation QuickGELU (OpenAI's ``build_model``, and
    ``open_clip.build_model_from_openai_state_dict``) or, with ``quick_gelu=False``, ``nn.GELU`` (open_clip's
    ``CLIP(quick_gelu=False)``, what ``create_model('ViT-L-14')`` builds; heads of width 64 as its configurations)."""
    torch = require("torch", what="CLIP checkpoints")
    open_clip_model = require("open_clip.model", what="CLIP checkpoints")
    arch = infer_architecture(state)
    vision = open_clip_model.CLIPVisionCfg(layers=arch["vision_layers"], width=arch["vision_width"],
                                           patch_size=arch["patch_size"], image_size=arch["image_size"])
    text = open_clip_model.CLIPTextCfg(context_length=arch["context_length"], vocab_size=arch["vocab_size"],
                                       width=arch["text_width"], heads=arch["text_heads"], layers=arch["text_layers"])
    model = open_clip_model.CLIP(arch["embed_dim"], vision_cfg=vision, text_cfg=text, quick_gelu=quick_gelu)
    weights = {k: v for k, v in state.items()
               if k not in ("input_resolution", "context_length", "vocab_size", LONG_CLIP_KEY)}
    weights = {k: (v.float() if torch.is_tensor(v) and v.is_floating_point() else v) for k, v in weights.items()}
    if is_long_clip(state):  # Long-CLIP: the sum of its two masked positional embeddings, as one
        weights["positional_embedding"] = long_clip_positions(state)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as err:
        raise ValueError(f"the checkpoint does not match the CLIP architecture inferred from its shapes ({arch}): "
                         f"{str(err)[:500]}") from None
    return model.float().eval()


__all__ = ["LONG_CLIP_KEPT", "LONG_CLIP_KEY", "LORA_MARKERS", "OPEN_CLIP_RELEASES", "OpenClipRelease",
           "REQUIRED_KEYS",
           "build_openai_clip", "infer_architecture", "is_long_clip", "long_clip_positions", "open_clip_release",
           "read_state_dict", "read_weights"]
