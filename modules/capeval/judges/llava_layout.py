"""LLaVA-1.5's two checkpoint layouts, read as transformers' ``LlavaForConditionalGeneration``.

* The **Hugging Face layout** (``llava-hf/llava-1.5-13b-hf``): ``config.json`` with ``model_type: "llava"``, the
  vision tower inside, the image placeholder ``<image>`` added to the tokenizer (id 32000) and the vocabulary padded
  to 32,064 rows; read by ``from_pretrained``.
* The **original layout** (``liuhaotian/llava-v1.5-13b``, what FLEUR's scripts load through LLaVA's
  ``load_pretrained_model``): ``config.json`` with ``model_type: "llava_llama"`` (a Llama configuration plus
  ``mm_vision_tower``, ``mm_projector_type: "mlp2x_gelu"``, ``mm_vision_select_layer: -2``,
  ``image_aspect_ratio: "pad"``), the language model and ``model.mm_projector.{0,2}`` in ``*.safetensors`` or
  ``pytorch_model*.bin`` files, the tokenizer's ``tokenizer.model``; the vision tower is a separate CLIP model
  (``mm_vision_tower``, e.g. ``openai/clip-vit-large-patch14-336``). capeval reads it without running its code: the
  tensors are renamed as transformers' conversion script renames them (``convert_llava_weights_to_hf.py``,
  ``KEYS_TO_MODIFY_MAPPING``, in transformers 5's module names: ``model.layers.*`` → ``model.language_model.layers.*``,
  ``model.mm_projector.0`` / ``.2`` → ``model.multi_modal_projector.linear_1`` / ``linear_2``, the vision tower's
  ``vision_model.*`` → ``model.vision_tower.vision_model.*``), and one embedding row is added for the image
  placeholder (its row is never read: the image features replace it), so the model's output vocabulary stays the
  original's, as the reference's softmax sees it.

``.bin`` files are read with ``torch.load(weights_only=True)`` (tensors only, no code runs).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from capeval.dependencies import require

#: ``model_type`` of each layout's ``config.json``.
ORIGINAL_MODEL_TYPE = "llava_llama"
HF_MODEL_TYPE = "llava"


def read_config(folder: str | os.PathLike) -> dict:
    """The folder's ``config.json`` as a dict (``{}`` when it has none)."""
    path = Path(folder) / "config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def is_original_layout(config: dict) -> bool:
    """Whether ``config`` is an original LLaVA checkpoint's (``model_type: "llava_llama"``)."""
    return config.get("model_type") == ORIGINAL_MODEL_TYPE


def original_key(name: str) -> str | None:
    """The transformers name of an original LLaVA tensor (``None`` for tensors transformers has no place for: the
    rotary caches some checkpoints store)."""
    if name.endswith("rotary_emb.inv_freq"):
        return None
    if name.startswith("model.mm_projector."):
        index, rest = name[len("model.mm_projector."):].split(".", 1)
        linear = {"0": "linear_1", "2": "linear_2"}.get(index)
        if linear is None:
            raise ValueError(f"{name}: capeval reads LLaVA's mlp2x_gelu projector (mm_projector.0 and .2), not this one.")
        return f"model.multi_modal_projector.{linear}.{rest}"
    if name.startswith("model.vision_tower."):  # checkpoints that saved the tower too (LLaVA's unfrozen variants)
        return "model.vision_tower." + name[len("model.vision_tower.vision_tower."):] \
            if name.startswith("model.vision_tower.vision_tower.") else None
    if name.startswith("model."):
        return "model.language_model." + name[len("model."):]
    if name.startswith("lm_head."):
        return name
    return None


def _read_tensors(folder: Path) -> dict:
    """Every tensor of the folder's weight files (safetensors preferred), by original name."""
    torch = require("torch", what="reading LLaVA checkpoints")
    files = sorted(folder.glob("*.safetensors"))
    tensors: dict = {}
    if files:
        from safetensors.torch import load_file

        for f in files:
            tensors.update(load_file(str(f)))
        return tensors
    files = sorted(folder.glob("pytorch_model*.bin"))
    if not files:
        raise FileNotFoundError(f"{folder} holds no *.safetensors or pytorch_model*.bin weights.")
    for f in files:
        tensors.update(torch.load(f, map_location="cpu", weights_only=True))
    return tensors


def hf_config(config: dict, vision_config: Any, image_token_id: int):
    """A transformers ``LlavaConfig`` for an original checkpoint's ``config`` and its vision tower's configuration."""
    transformers = require("transformers", what="the FLEUR judge")
    if config.get("mm_projector_type", "linear") != "mlp2x_gelu":
        raise ValueError(f"mm_projector_type {config.get('mm_projector_type')!r}: capeval reads LLaVA-1.5's mlp2x_gelu "
                         "projector only.")
    if config.get("mm_patch_merge_type", "flat") != "flat" or config.get("image_aspect_ratio", "pad") == "anyres":
        raise ValueError("this is a LLaVA-NeXT checkpoint (anyres / spatial merge); capeval reads LLaVA-1.5's layout.")
    text = {k: v for k, v in config.items() if not k.startswith(("mm_", "image_", "tune_", "freeze_", "use_mm"))}
    text.pop("architectures", None)
    text["model_type"] = "llama"
    text_config = transformers.LlamaConfig(**{k: v for k, v in text.items() if k != "model_type"})
    text_config.vocab_size = config["vocab_size"] + 1  # the image placeholder's row (never read)
    select = config.get("mm_vision_select_feature", "patch")
    return transformers.LlavaConfig(
        vision_config=vision_config.to_dict() if hasattr(vision_config, "to_dict") else vision_config,
        text_config=text_config.to_dict(), image_token_id=image_token_id, projector_hidden_act="gelu",
        vision_feature_select_strategy="default" if select == "patch" else "full",
        vision_feature_layer=config.get("mm_vision_select_layer", -2), tie_word_embeddings=False)


def load_original(folder: str | os.PathLike, vision_tower: str | os.PathLike | None = None, *, dtype: Any = None):
    """An original-layout LLaVA-1.5 checkpoint as ``(LlavaForConditionalGeneration, vision tower spec)``.

    vision_tower: the CLIP vision model (Hub id or folder); default the checkpoint's ``mm_vision_tower``. The image
    placeholder's id is the original vocabulary size (one row past it), the row zero.
    """
    torch, transformers = require("torch", "transformers", what="the FLEUR judge")
    folder = Path(folder)
    config = read_config(folder)
    tower = vision_tower or config.get("mm_vision_tower")
    if not tower:
        raise ValueError(f"{folder}/config.json names no mm_vision_tower; pass the CLIP vision model's folder.")
    vision = transformers.CLIPVisionModel.from_pretrained(str(tower), dtype=dtype or torch.float32)
    llava_config = hf_config(config, vision.config, image_token_id=config["vocab_size"])
    with torch.device("meta"):
        model = transformers.LlavaForConditionalGeneration(llava_config)
    state = {}
    for name, tensor in _read_tensors(folder).items():
        key = original_key(name)
        if key is not None:
            state[key] = tensor
    for name, tensor in vision.state_dict().items():
        state["model.vision_tower." + name] = tensor
    embed = state["model.language_model.embed_tokens.weight"]
    state["model.language_model.embed_tokens.weight"] = torch.cat([embed, embed.new_zeros(1, embed.shape[1])])
    lm_head = state["lm_head.weight"]
    # the placeholder's output row: never generated (its logit is masked, see capeval.judges.judge), kept at zero
    state["lm_head.weight"] = torch.cat([lm_head, lm_head.new_zeros(1, lm_head.shape[1])])
    missing = sorted(set(model.state_dict()) - set(state))
    if missing:
        raise ValueError(f"{folder}: the checkpoint lacks {len(missing)} tensor(s) of LLaVA-1.5, e.g. {missing[:3]}.")
    model = transformers.LlavaForConditionalGeneration.from_pretrained(None, config=llava_config, state_dict=state,
                                                                       dtype=dtype or torch.float32)
    model.eval()
    return model, str(tower)


def to_hf_state(state: dict, vision_state: dict, pad_to: int = 64, seed: int = 0) -> dict:
    """An original LLaVA state dict (+ its vision tower's) in transformers' layout, with the image placeholder and
    ``<pad>`` appended and the vocabulary padded to a multiple of ``pad_to`` as llava-hf's checkpoints are (new
    embedding and output rows drawn around the old rows' mean, as the conversion script draws them). Used to build
    llava-hf-layout test models from original-layout ones."""
    torch = require("torch", what="converting LLaVA checkpoints")
    out = {}
    for name, tensor in state.items():
        key = original_key(name)
        if key is not None:
            out[key] = tensor
    for name, tensor in vision_state.items():
        out["model.vision_tower." + name] = tensor
    # the conversion script's draw: a normal around the embedding rows' mean, covariance 1e-5 x theirs, for both
    # the embedding and the output rows
    rows = out["model.language_model.embed_tokens.weight"].float()
    n = rows.shape[0]
    total = -(-(n + 2) // pad_to) * pad_to
    mu = rows.mean(0)
    sigma = (rows - mu).T @ (rows - mu) / n
    factor = torch.linalg.cholesky(1e-5 * sigma + 1e-8 * torch.eye(len(mu)))
    generator = torch.Generator().manual_seed(seed)
    for key in ("model.language_model.embed_tokens.weight", "lm_head.weight"):
        extra = mu + torch.randn(total - n, len(mu), generator=generator) @ factor.T
        out[key] = torch.cat([out[key].float(), extra]).to(out[key].dtype)
    return out
