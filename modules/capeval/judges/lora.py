"""LLaVA LoRA adapters (LLaVA's ``finetune_task_lora`` output, e.g. EXPERT's ``hjkim811/EXPERT-llava-13b-lora``) merged
into a loaded judge, as LLaVA's ``load_pretrained_model`` merges them (``llava/model/builder.py``, the
``'lora' in model_name.lower() and model_base is not None`` branch):

1. the adapter folder's ``non_lora_trainables.bin`` (the projector, trained in full) replaces the base model's
   tensors: its keys lose the ``base_model.`` prefix, then ``model.`` when they start with ``model.model.``;
2. the LoRA pairs of ``adapter_model.safetensors`` / ``adapter_model.bin`` (peft's format:
   ``base_model.model.<module>.lora_A.weight`` and ``lora_B``, configuration in ``adapter_config.json``) are merged
   into their linear layers (``PeftModel.from_pretrained`` then ``merge_and_unload``): ``W += (lora_alpha / r) ·
   B @ A`` (``use_rslora``: ``lora_alpha / sqrt(r)``), in the weight's dtype as peft's merge computes it.

The module names are LLaVA's original ones (``model.layers.N.self_attn.q_proj``, ``model.mm_projector.0``); they are
mapped to transformers' names as :func:`capeval.judges.llava_layout.original_key` maps the checkpoint's. Tensors
are read as weights only (``torch.load(weights_only=True)`` for ``.bin``); nothing of the adapter runs. An adapter
with DoRA, biases or ``fan_in_fan_out`` is refused in one line.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from capeval.judges.llava_layout import original_key
from capeval.dependencies import require

#: EXPERT's released adapter (Kim et al. 2025) and its base model.
EXPERT_ADAPTER = "hjkim811/EXPERT-llava-13b-lora"
EXPERT_BASE = "llava-hf/llava-1.5-13b-hf"


def _read(path: Path) -> dict:
    torch = require("torch", what="reading a LoRA adapter")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def _module_name(key: str, suffix: str) -> str | None:
    """The transformers name of the linear layer a peft key belongs to (``None`` if it is not that kind of key)."""
    if not key.endswith(suffix):
        return None
    name = key[: -len(suffix)]
    for prefix in ("base_model.model.",):
        if name.startswith(prefix):
            name = name[len(prefix):]
    mapped = original_key(name + ".weight")
    return None if mapped is None else mapped[: -len(".weight")]


def adapter_files(folder: Path) -> tuple[Path, Path | None]:
    """The adapter's LoRA weights and its ``non_lora_trainables.bin`` (``None`` when it has none)."""
    for name in ("adapter_model.safetensors", "adapter_model.bin"):
        if (folder / name).is_file():
            extra = folder / "non_lora_trainables.bin"
            return folder / name, extra if extra.is_file() else None
    raise FileNotFoundError(f"{folder} holds no adapter_model.safetensors or adapter_model.bin (a LLaVA LoRA adapter).")


def merge_adapter(model, folder: str | os.PathLike) -> int:
    """Merge the LLaVA LoRA adapter in ``folder`` into ``model`` (transformers' ``LlavaForConditionalGeneration``),
    in place; returns how many linear layers changed."""
    torch = require("torch", what="merging a LoRA adapter")
    folder = Path(folder)
    weights, extra = adapter_files(folder)
    if not (folder / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{folder} holds no adapter_config.json (a LLaVA LoRA adapter has one beside its "
                                "weights).")
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    if config.get("use_dora") or config.get("fan_in_fan_out") or config.get("bias", "none") != "none":
        raise ValueError(f"{folder}: capeval merges plain LoRA adapters (no DoRA, no biases, no fan_in_fan_out), as "
                         "LLaVA's fine-tuning writes them.")
    rank, alpha = int(config["r"]), float(config["lora_alpha"])
    scale = alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank
    params = dict(model.named_parameters())
    if extra is not None:
        for key, tensor in _read(extra).items():
            name = key[len("base_model."):] if key.startswith("base_model.") else key
            name = name[len("model."):] if name.startswith("model.model.") else name
            mapped = original_key(name)
            if mapped is None or mapped not in params:
                raise ValueError(f"{extra}: {key} has no place in the judge (LLaVA-1.5's architecture expected).")
            with torch.no_grad():
                params[mapped].copy_(tensor.to(params[mapped].dtype))
    tensors = _read(weights)
    pairs: dict[str, dict[str, object]] = {}
    for key, tensor in tensors.items():
        for part in ("lora_A", "lora_B"):
            module = _module_name(key, f".{part}.weight") or _module_name(key, f".{part}.default.weight")
            if module is not None:
                pairs.setdefault(module, {})[part] = tensor
    if not pairs:
        raise ValueError(f"{weights}: no LoRA pairs (lora_A / lora_B weights) found.")
    for module, pair in pairs.items():
        if set(pair) != {"lora_A", "lora_B"} or f"{module}.weight" not in params:
            raise ValueError(f"{weights}: {module} has no matching linear layer or lacks one of lora_A / lora_B.")
        weight = params[f"{module}.weight"]
        with torch.no_grad():
            delta = (pair["lora_B"].to(weight.device, weight.dtype) @ pair["lora_A"].to(weight.device, weight.dtype))
            weight += delta * scale
    return len(pairs)


def adapter_fingerprint(folder: str | os.PathLike) -> str:
    """sha256 over the adapter's configuration and weight files (they are MBs, not GBs)."""
    import hashlib

    folder = Path(folder)
    digest = hashlib.sha256()
    for name in ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin", "non_lora_trainables.bin"):
        if (folder / name).is_file():
            digest.update(name.encode())
            digest.update((folder / name).read_bytes())
    return digest.hexdigest()
