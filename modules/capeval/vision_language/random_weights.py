"""Seeded random checkpoints of the real vision-language architectures, to try ``clip_s``, ``ref_clip_s``, ``pac_s``,
``ref_pac_s`` and ``polos`` without downloading any weights (``capeval models random DIR``).

The scores they give mean nothing (the weights are random); everything else is the real path: the files are read by
the same loaders as the released checkpoints, the images go through the reference preprocessing, the captions
through OpenAI's tokenizer, and the model has the released shapes. What :func:`write_random_models` writes in
``folder``:

* ``clip-vit-b-32.safetensors``: an OpenAI-format CLIP ViT-B/32 state dict (151M parameters, float16 as OpenAI's
  checkpoints are; 0.3 GB): open_clip's ``CLIP`` with OpenAI's ViT-B/32 configuration (QuickGELU) and its own
  initialisation, seeded. ``clip_model=`` reads it, and ``pac_model=`` too (PAC-S is a fine-tuned ViT-B/32 of the
  same shapes; its distributed file holds the same state dict under ``"state_dict"``).
* ``polos/reprod.safetensors`` + ``polos/hparams.yaml``: a Polos checkpoint in the released layout with its state
  dict as safetensors (the released ``reprod.ckpt`` is a PyTorch Lightning pickle; capeval writes none and reads both:
  ``encoder.model.*`` a RoBERTa-base encoder, 125M parameters, ``scalar_mix.*`` over its 13 layers,
  ``ff.0.ff.linear_{1,2,3}`` the head with COMET's estimator hidden sizes 3072 and 1024, ``clip.*`` the same
  ViT-B/32; encoder and CLIP in float16, the head in float32); its ``pretrained_model`` is ``polos/text-encoder``, a RoBERTa-base configuration with a byte-level BPE
  tokenizer trained on the captions below (not RoBERTa's vocabulary, which needs a download; the encoder keeps
  RoBERTa's 50,265 embedding rows). 0.64 GB.
* ``predictions.json``, ``references.json``, ``images.txt``: three captions of capeval's bundled example photos
  (:func:`capeval.io.example_images`), two references each, in the formats ``capeval score`` reads.

``tiny=True`` writes the same files with small widths (a few MB, seconds): the tests use it.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.dependencies import require

#: The captions written beside the checkpoints, one per bundled example photo (chelsea, astronaut, coffee).
EXAMPLE_PREDICTIONS = ("a tabby cat looking at the camera", "a smiling woman astronaut in an orange suit",
                       "a cup of coffee on a saucer")
EXAMPLE_REFERENCES = (("a cat with grey stripes", "a striped cat sitting and staring"),
                      ("an astronaut in front of an american flag", "a woman in a space suit smiles"),
                      ("a cup of coffee on a saucer with a spoon", "coffee in a white cup on a table"))


@dataclass(frozen=True)
class Sizes:
    """The widths of the random models: :data:`REAL` (the released architectures) or :data:`TINY`."""

    clip_embed: int
    vision_width: int
    vision_layers: int
    text_width: int
    text_layers: int
    roberta_hidden: int
    roberta_layers: int
    roberta_heads: int
    roberta_intermediate: int
    roberta_vocab: int
    head_hidden: tuple[int, ...]


#: OpenAI's ViT-B/32 (open_clip's ``ViT-B-32`` configuration), RoBERTa-base, COMET's estimator head (3072, 1024).
REAL = Sizes(512, 768, 12, 512, 12, 768, 12, 12, 3072, 50265, (3072, 1024))
#: Small widths with the same structure (ViT patch 32 at 224 px, 77-token context, CLIP's vocabulary).
TINY = Sizes(32, 64, 2, 64, 2, 32, 2, 2, 64, 1000, (48, 24))


def random_clip(sizes: Sizes = REAL, seed: int = 0):
    """An open_clip ``CLIP`` of OpenAI's ViT-B/32 layout (``sizes``' widths), randomly initialised with ``seed``."""
    torch = require("torch", what="random CLIP weights")
    open_clip_model = require("open_clip.model", what="random CLIP weights")
    torch.manual_seed(seed)
    vision = open_clip_model.CLIPVisionCfg(layers=sizes.vision_layers, width=sizes.vision_width, patch_size=32,
                                           image_size=224)
    text = open_clip_model.CLIPTextCfg(context_length=77, vocab_size=49408, width=sizes.text_width,
                                       heads=sizes.text_width // 64, layers=sizes.text_layers)
    return open_clip_model.CLIP(sizes.clip_embed, vision_cfg=vision, text_cfg=text, quick_gelu=True).eval()


def clip_state_dict(model, dtype=None) -> "OrderedDict[str, Any]":
    """``model``'s weights as an OpenAI-format state dict (what OpenAI's saved ``model.state_dict()`` of
    ``clip`` holds), floating tensors cast to ``dtype`` (default float16, as OpenAI's checkpoints)."""
    torch = require("torch")
    dtype = torch.float16 if dtype is None else dtype
    return OrderedDict((k, v.detach().to(dtype) if v.is_floating_point() else v.detach())
                       for k, v in model.state_dict().items())


def _text_encoder_folder(folder: Path, sizes: Sizes, seed: int):
    """``folder``: a RoBERTa configuration of ``sizes`` and a byte-level BPE tokenizer trained on the example captions
    (RoBERTa's special tokens at its ids: ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3). Returns the config."""
    transformers = require("transformers", what="a random Polos text encoder")
    tokenizers = require("tokenizers", what="a random Polos text encoder")
    folder.mkdir(parents=True, exist_ok=True)
    corpus = list(EXAMPLE_PREDICTIONS) + [r for refs in EXAMPLE_REFERENCES for r in refs]
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus * 5, vocab_size=400, min_frequency=1, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe._tokenizer.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")))
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>", cls_token="<s>", sep_token="</s>", model_max_length=512)
    tokenizer.save_pretrained(str(folder))
    config = transformers.RobertaConfig(vocab_size=max(sizes.roberta_vocab, len(tokenizer)),
                                        hidden_size=sizes.roberta_hidden, num_hidden_layers=sizes.roberta_layers,
                                        num_attention_heads=sizes.roberta_heads,
                                        intermediate_size=sizes.roberta_intermediate, max_position_embeddings=514,
                                        pad_token_id=1, bos_token_id=0, eos_token_id=2, type_vocab_size=1)
    config.save_pretrained(str(folder))
    return config


def write_polos(folder: str | Path, clip_model, sizes: Sizes = REAL, seed: int = 0) -> Path:
    """A random Polos checkpoint in the released layout under ``folder`` (``reprod.safetensors``, ``hparams.yaml``,
    ``text-encoder/``) holding ``clip_model``'s weights as its CLIP; returns the folder (what ``polos_model=`` takes)."""
    torch = require("torch", what="a random Polos checkpoint")
    transformers = require("transformers", what="a random Polos checkpoint")
    folder = Path(folder)
    text_folder = folder / "text-encoder"
    config = _text_encoder_folder(text_folder, sizes, seed)
    torch.manual_seed(seed + 1)
    encoder = transformers.AutoModel.from_config(config)
    state: "OrderedDict[str, Any]" = OrderedDict()
    for key, value in encoder.state_dict().items():  # float16, as the CLIP, to halve the file (read as float32)
        state[f"encoder.model.{key}"] = value.detach().half() if value.is_floating_point() else value.detach()
    n_layers = config.num_hidden_layers + 1
    for i in range(n_layers):
        state[f"scalar_mix.scalar_parameters.{i}"] = torch.randn(1)
    state["scalar_mix.gamma"] = torch.ones(1)
    state["scalar_mix.dropout_mask"] = torch.zeros(n_layers)
    state["scalar_mix.dropout_fill"] = torch.full((n_layers,), -1e20)
    width = 4 * config.hidden_size + 6 * int(clip_model.text_projection.shape[1])
    widths = [width, *sizes.head_hidden, 1]
    for i in range(len(widths) - 1):
        layer = torch.nn.Linear(widths[i], widths[i + 1])
        state[f"ff.0.ff.linear_{i + 1}.weight"] = layer.weight.detach().clone()
        state[f"ff.0.ff.linear_{i + 1}.bias"] = layer.bias.detach().clone()
    for key, value in clip_state_dict(clip_model).items():
        state[f"clip.{key}"] = value
    hparams = {"model": "PolosEstimator", "encoder_model": "BERT", "pretrained_model": str(text_folder.resolve()),
               "layer": "mix", "scalar_mix_dropout": 0.1, "pool": "cls", "dropout": 0.1, "activations": "Tanh",
               "hidden_sizes": ",".join(str(h) for h in sizes.head_hidden), "final_activation": False,
               "batch_size": 64, "nr_frozen_epochs": 100000, "loss": "mse"}
    # the state dict as safetensors beside hparams.yaml (capeval reads that as it reads the released reprod.ckpt;
    # writing a pickle is left to the reference code)
    _save_safetensors(state, folder / "reprod.safetensors")
    lines = [f"{k}: {json.dumps(v)}" for k, v in hparams.items()]  # JSON scalars are YAML scalars
    (folder / "hparams.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _save_safetensors(state: dict, path: Path) -> None:
    """``state`` (name -> tensor) as a safetensors file: contiguous copies, so tied or strided tensors save."""
    safetensors_torch = require("safetensors.torch", what="random vision-language checkpoints")
    safetensors_torch.save_file({k: v.detach().contiguous().clone() for k, v in state.items()}, str(path))


def write_examples(folder: Path) -> dict[str, Path]:
    """``predictions.json``, ``references.json`` and ``images.txt`` (absolute paths of the bundled photos)."""
    from capeval.io import example_images

    paths = {"predictions": folder / "predictions.json", "references": folder / "references.json",
             "images": folder / "images.txt"}
    paths["predictions"].write_text(json.dumps(list(EXAMPLE_PREDICTIONS), indent=1) + "\n", encoding="utf-8")
    paths["references"].write_text(json.dumps([list(r) for r in EXAMPLE_REFERENCES], indent=1) + "\n",
                                   encoding="utf-8")
    paths["images"].write_text("".join(f"{p.resolve()}\n" for p in example_images()), encoding="utf-8")
    return paths


def write_random_models(folder: str | Path, *, tiny: bool = False, seed: int = 0) -> dict[str, Path]:
    """Write the random checkpoints and the example inputs into ``folder`` (created); return their paths by role:
    ``clip_model`` (also ``pac_model``), ``polos_model``, ``predictions``, ``references``, ``images``."""
    torch = require("torch", what="random vision-language checkpoints")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = TINY if tiny else REAL
    clip_model = random_clip(sizes, seed)
    clip_path = folder / "clip-vit-b-32.safetensors"
    _save_safetensors(clip_state_dict(clip_model), clip_path)
    polos = write_polos(folder / "polos", clip_model, sizes, seed)
    return {"clip_model": clip_path, "pac_model": clip_path, "polos_model": polos, **write_examples(folder)}


def score_command(paths: dict[str, Path]) -> str:
    """The ``capeval score`` command that scores the example with every vision-language metric on ``paths``."""
    return (f"capeval score --predictions {paths['predictions']} --references {paths['references']} "
            f"--images {paths['images']} --metrics clip_s,ref_clip_s,pac_s,ref_pac_s,polos "
            f"--clip-model {paths['clip_model']} --pac-model {paths['pac_model']} --polos-model {paths['polos_model']}")


__all__ = ["EXAMPLE_PREDICTIONS", "EXAMPLE_REFERENCES", "REAL", "Sizes", "TINY", "clip_state_dict", "random_clip",
           "score_command", "write_examples", "write_polos", "write_random_models"]
