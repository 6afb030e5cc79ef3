"""``clip_dtype="float16"`` / ``pac_dtype="float16"``: clipscore.py's GPU path, step for step.

jmhessel/clipscore ``clipscore.py`` on a GPU runs ``clip.load("ViT-B/32", device="cuda", jit=False)`` (``main``),
i.e. OpenAI's ``clip/model.py`` ``build_model`` → ``convert_weights``, then scores in numpy on the float16 features:

* **weights** (:func:`openai_mixed_precision`): ``convert_weights`` turns to float16 only the Conv1d / Conv2d /
  Linear weights and biases, ``nn.MultiheadAttention``'s ``in_proj_weight`` / ``in_proj_bias`` (its ``out_proj`` is a
  Linear) and the ``text_projection`` / ``proj`` matrices; embeddings, class / positional embeddings, LayerNorm and
  BatchNorm stay float32. OpenAI's ``LayerNorm`` subclass computes in float32 and casts back
  (``ret = super().forward(x.type(torch.float32)); return ret.type(orig_type)``): here open_clip's
  ``convert_weights_to_lp`` (the same rule on open_clip's modules, which keep OpenAI's layout) and its
  ``LayerNormFp32`` (the same forward);
* **inputs**: ``extract_all_images``: ``if device == 'cuda': b = b.to(torch.float16)``; ``encode_text`` casts the
  token embedding to the model's dtype (:class:`~capeval.vision_language.backends.ClipBackend` does both);
* **features** stay float16 (``model.encode_image(b).cpu().numpy()``, ``np.vstack``);
* **normalisation** (:func:`normalize_rows_float16`): ``get_clip_score`` / ``get_refonlyclipscore`` on numpy ≥ 1.21:
  ``x / np.sqrt(np.sum(x**2, axis=1, keepdims=True))`` in float16 (on numpy < 1.21, which the paper used,
  ``sklearn.preprocessing.normalize``; not reproduced). ``main`` hands the candidates *already normalised* by
  ``get_clip_score`` to ``get_refonlyclipscore``, which normalises them again: the text-text side reads them twice
  normalised (:func:`reference_scores_float16`);
* **scores**: ``per = w*np.clip(np.sum(images * candidates, axis=1), 0, None)`` (float16: element products rounded
  to float16, then numpy's sum), ``all_sims = cand.dot(cur_refs.transpose()); per.append(np.max(all_sims))`` (numpy's
  float16 ``dot``, which accumulates in float32), and ``2 * per_instance_image_text * per_instance_text_text /
  (per_instance_image_text + per_instance_text_text)`` in float16 (:func:`capeval.vision_language.scores.harmonic_mean`
  keeps the dtype).

Scores are therefore float16 values (about 3 significant digits: steps of 2⁻¹⁰ ≈ 0.001 between 1 and 2). capeval
keeps its two documented deviations: a zero feature row stays zero (the reference divides by zero, NaN) and a zero
denominator of the harmonic mean gives 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.dependencies import require
from capeval.vision_language.scores import reference_counts


def openai_mixed_precision(model: Any) -> Any:
    """``model`` (an ``open_clip.model.CLIP`` holding OpenAI's layout, float32) converted in place as OpenAI's
    ``convert_weights`` converts a CLIP (see the module docstring), every LayerNorm computing in float32."""
    open_clip_model = require("open_clip.model", what="clip_dtype='float16'")
    transformer = require("open_clip.transformer", what="clip_dtype='float16'")
    torch = require("torch")
    open_clip_model.convert_weights_to_lp(model, dtype=torch.float16)
    for module in model.modules():
        if isinstance(module, torch.nn.LayerNorm):
            module.__class__ = transformer.LayerNormFp32
    return model


def openai_state_from_transformers(model: Any, option: str = "clip_dtype") -> tuple[dict[str, Any], bool]:
    """``(OpenAI-format state dict, quick_gelu)`` of a transformers ``CLIPModel`` (ViT towers, 64-wide heads, LayerNorm
    eps 1e-5 as OpenAI's): the inverse of transformers' ``convert_clip_original_pytorch_to_hf.py`` (q / k / v
    projections concatenated into ``in_proj``, the projections transposed). ``ValueError`` naming ``option`` for another
    architecture."""
    torch = require("torch")
    config = model.config
    text, vision = config.text_config, config.vision_config
    for name, cfg in (("text", text), ("vision", vision)):
        if cfg.hidden_size != 64 * cfg.num_attention_heads or abs(cfg.layer_norm_eps - 1e-5) > 1e-12:
            raise ValueError(f"{option}='float16' builds OpenAI's CLIP from the weights; this {name} tower "
                             f"({cfg.num_attention_heads} heads of width {cfg.hidden_size}, LayerNorm eps "
                             f"{cfg.layer_norm_eps}) is not OpenAI's architecture (64-wide heads, eps 1e-5).")
    if text.hidden_act != vision.hidden_act or text.hidden_act not in ("quick_gelu", "gelu"):
        raise ValueError(f"{option}='float16': activations {text.hidden_act!r} / {vision.hidden_act!r} are not "
                         "one of OpenAI's (quick_gelu) or open_clip's (gelu).")
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    out: dict[str, Any] = {}

    def blocks(source: str, target: str, layers: int) -> None:
        for i in range(layers):
            s, t = f"{source}.layers.{i}", f"{target}.resblocks.{i}"
            out[f"{t}.attn.in_proj_weight"] = torch.cat([sd[f"{s}.self_attn.{p}_proj.weight"] for p in "qkv"])
            out[f"{t}.attn.in_proj_bias"] = torch.cat([sd[f"{s}.self_attn.{p}_proj.bias"] for p in "qkv"])
            for a, b in (("attn.out_proj", "self_attn.out_proj"), ("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"),
                         ("mlp.c_fc", "mlp.fc1"), ("mlp.c_proj", "mlp.fc2")):
                out[f"{t}.{a}.weight"], out[f"{t}.{a}.bias"] = sd[f"{s}.{b}.weight"], sd[f"{s}.{b}.bias"]

    blocks("text_model.encoder", "transformer", text.num_hidden_layers)
    blocks("vision_model.encoder", "visual.transformer", vision.num_hidden_layers)
    out.update({
        "token_embedding.weight": sd["text_model.embeddings.token_embedding.weight"],
        "positional_embedding": sd["text_model.embeddings.position_embedding.weight"],
        "ln_final.weight": sd["text_model.final_layer_norm.weight"],
        "ln_final.bias": sd["text_model.final_layer_norm.bias"],
        "text_projection": sd["text_projection.weight"].T.contiguous(),
        "visual.class_embedding": sd["vision_model.embeddings.class_embedding"],
        "visual.conv1.weight": sd["vision_model.embeddings.patch_embedding.weight"],
        "visual.positional_embedding": sd["vision_model.embeddings.position_embedding.weight"],
        "visual.ln_pre.weight": sd["vision_model.pre_layrnorm.weight"],
        "visual.ln_pre.bias": sd["vision_model.pre_layrnorm.bias"],
        "visual.ln_post.weight": sd["vision_model.post_layernorm.weight"],
        "visual.ln_post.bias": sd["vision_model.post_layernorm.bias"],
        "visual.proj": sd["visual_projection.weight"].T.contiguous(),
        "logit_scale": sd["logit_scale"],
    })
    return out, text.hidden_act == "quick_gelu"


def normalize_rows_float16(features: np.ndarray) -> np.ndarray:
    """clipscore.py's normalisation on numpy ≥ 1.21, in float16: ``x / np.sqrt(np.sum(x**2, axis=1,
    keepdims=True))``; an all-zero row stays zero (the reference gives NaN)."""
    features = np.asarray(features, dtype=np.float16)
    norms = np.sqrt(np.sum(features ** 2, axis=1, keepdims=True))
    return np.divide(features, norms, out=np.zeros_like(features), where=norms > 0)


def reference_scores_float16(candidate_features: np.ndarray, reference_features: np.ndarray,
                             owners: Sequence[int]) -> np.ndarray:
    """clipscore.py ``get_refonlyclipscore`` on float16 features each normalised once (:func:`normalize_rows_float16`):
    the candidates normalised a second time (``main`` passes ``get_clip_score``'s normalised candidates, which it
    normalises again), then per candidate ``np.max(cand.dot(cur_refs.transpose()))``; ``reference_features[j]`` belongs to candidate ``owners[j]``, each
    candidate needs one (``ValueError`` naming the first without). float16, in [-1, 1]."""
    owners = np.asarray(owners, dtype=np.int64)
    n = candidate_features.shape[0]
    counts = reference_counts(owners, n)
    candidates = normalize_rows_float16(candidate_features)
    references = np.asarray(reference_features, dtype=np.float16)
    order = np.argsort(owners, kind="stable")  # each candidate's references, in their order
    starts = np.concatenate([[0], np.cumsum(counts)])
    best = np.empty(n, dtype=np.float16)
    for i in range(n):
        best[i] = np.max(candidates[i].dot(references[order[starts[i]:starts[i + 1]]].transpose()))
    return best


__all__ = ["normalize_rows_float16", "openai_mixed_precision", "openai_state_from_transformers",
           "reference_scores_float16"]
