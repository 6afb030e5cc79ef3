"""The Polos reference procedure (keio-smilab24/Polos: ``PolosEstimator.prepare_sample`` / ``forward``,
``Estimator.get_sentence_embedding`` / ``predict``, COMET's ``ScalarMixWithDropout``, ``FeedForward``,
``HFTextEncoder`` and torchnlp's ``collate_tensors`` / ``stack_and_pad_tensors``), transcribed for parity tests; plus
builders of tiny Polos checkpoints in the released format (a PyTorch Lightning ``.ckpt`` with ``hparams.yaml`` beside
it) from a tiny random RoBERTa and a tiny random OpenAI CLIP.

The transcription keeps the reference's steps: items in input order, ``batch_size`` per batch; the reference lists
transposed with ``zip`` (a batch keeps as many references as its item with the fewest); each text tokenized with
``tokenizer(text, truncation=False)``, right-padded with the pad id, a boolean mask from the lengths, the encoder's
13 hidden states mixed after a layer norm over the whole batch; CLIP on ``Image.open(path).convert("RGB")`` through
``clip``'s own ``_transform`` and ``clip.tokenize("A photo depicts " + text, truncate=True)``, unnormalised; the
ten-part concatenation, the feed-forward network, a sigmoid, the maximum over the references.
"""
from __future__ import annotations

import argparse
from collections import OrderedDict
from pathlib import Path

import numpy as np

CORPUS = ["a dog runs on the grass", "two cats sleep on a red blanket", "a man rides a bike down the street",
          "a bowl of fruit on a table", "people walk in the park", "a child plays with a ball",
          "a woman holds an umbrella in the rain", "a bird sits on a branch", "the car is parked near the house"]


def text_encoder_folder(folder, *, seed: int = 0, max_positions: int = 42, hidden: int = 32, heads: int = 2,
                        intermediate: int = 64, layers: int = 2):
    """A tiny RoBERTa (2 layers, 32 wide; ``hidden=768, heads=12, intermediate=3072`` gives RoBERTa-base's widths)
    and a byte-level BPE tokenizer trained on :data:`CORPUS`, saved as a transformers folder (the role of
    ``princeton-nlp/sup-simcse-roberta-base``). ``max_positions`` includes RoBERTa's two reserved positions (40 usable
    tokens by default)."""
    import torch
    import transformers
    from tokenizers import ByteLevelBPETokenizer, processors

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 5, vocab_size=400, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe._tokenizer.post_processor = processors.RobertaProcessing(("</s>", bpe.token_to_id("</s>")),
                                                                 ("<s>", bpe.token_to_id("<s>")))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, bos_token="<s>",
                                                     eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                                                     mask_token="<mask>", cls_token="<s>", sep_token="</s>")
    tokenizer.save_pretrained(str(folder))
    config = transformers.RobertaConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                                        num_attention_heads=heads, intermediate_size=intermediate,
                                        max_position_embeddings=max_positions, pad_token_id=1, bos_token_id=0,
                                        eos_token_id=2)
    torch.manual_seed(seed)
    transformers.RobertaModel(config).eval().save_pretrained(str(folder))
    return folder


def write_checkpoint(folder, clip_model, text_folder, *, seed: int = 1, hidden_sizes=(48, 24), pool: str = "cls",
                     final_activation=False, yaml_beside: bool = True, hparams_inside: bool = True,
                     name: str = "reprod.ckpt", head_scale: float = 1.0) -> Path:
    """A Polos checkpoint in the released layout: ``folder/<name>`` (Lightning: ``state_dict`` with
    ``encoder.model.*``, ``scalar_mix.*``, ``ff.0.ff.linear_*``, ``clip.*``; ``hyper_parameters`` holding an
    ``argparse.Namespace``) and ``folder/hparams.yaml``. Weights seeded; the encoder's differ from the text folder's
    (the checkpoint's must be the ones used); the head's scaled by ``head_scale`` so scores spread over (0, 1)."""
    import torch
    import transformers
    import yaml

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    config = transformers.AutoConfig.from_pretrained(str(text_folder))
    encoder = transformers.AutoModel.from_config(config)
    state: "OrderedDict[str, torch.Tensor]" = OrderedDict()
    for key, value in encoder.state_dict().items():
        value = value.clone()
        if "LayerNorm" in key:  # trained layer norms: without them every token is mean 0, variance 1, whatever the batch
            value = 1.0 + 0.6 * torch.rand_like(value) if key.endswith("weight") else 0.4 * torch.randn_like(value)
        state[f"encoder.model.{key}"] = value
    n_layers = config.num_hidden_layers + 1
    for i in range(n_layers):
        state[f"scalar_mix.scalar_parameters.{i}"] = torch.randn(1)
    state["scalar_mix.gamma"] = torch.tensor([1.0]) + 0.5 * torch.rand(1)
    state["scalar_mix.dropout_mask"] = torch.zeros(n_layers)
    state["scalar_mix.dropout_fill"] = torch.full((n_layers,), -1e20)
    width = 4 * config.hidden_size + 6 * int(clip_model.text_projection.shape[1])
    sizes = [width, *hidden_sizes, 1]
    for i in range(len(sizes) - 1):
        layer = torch.nn.Linear(sizes[i], sizes[i + 1])
        state[f"ff.0.ff.linear_{i + 1}.weight"] = layer.weight.detach() * head_scale
        state[f"ff.0.ff.linear_{i + 1}.bias"] = layer.bias.detach().clone()
    for key, value in clip_model.state_dict().items():
        state[f"clip.{key}"] = value.detach().clone().float()
    hparams = {"model": "PolosEstimator", "encoder_model": "BERT", "pretrained_model": str(text_folder),
               "layer": "mix", "scalar_mix_dropout": 0.1, "pool": pool, "dropout": 0.1, "activations": "Tanh",
               "hidden_sizes": ",".join(str(h) for h in hidden_sizes), "final_activation": final_activation,
               "batch_size": 64, "nr_frozen_epochs": 100000, "loss": "mse"}
    checkpoint = {"epoch": 3, "global_step": 1200, "pytorch-lightning_version": "1.9.5", "state_dict": state,
                  "hyper_parameters": {"hparams": argparse.Namespace(**hparams)},
                  "callbacks": {"EarlyStopping{'monitor': 'pearson', 'mode': 'max'}":
                                {"wait_count": 0, "stopped_epoch": 0, "best_score": torch.tensor(0.6),
                                 "patience": 1}}}
    if not hparams_inside:
        del checkpoint["hyper_parameters"]
    path = folder / name
    torch.save(checkpoint, path)
    if yaml_beside:
        (folder / "hparams.yaml").write_text(yaml.safe_dump(hparams), encoding="utf-8")
    return path


class _ScalarMixWithDropout:
    """COMET's layer-wise attention in eval mode (dropout only acts in training), ``do_layer_norm=True``."""

    def __init__(self, parameters, gamma):
        self.parameters, self.gamma = parameters, gamma

    def __call__(self, tensors, mask):
        import torch

        def _do_layer_norm(tensor, broadcast_mask, num_elements_not_masked):
            tensor_masked = tensor * broadcast_mask
            mean = torch.sum(tensor_masked) / num_elements_not_masked
            variance = torch.sum(((tensor_masked - mean) * broadcast_mask) ** 2) / num_elements_not_masked
            return (tensor - mean) / torch.sqrt(variance + 1e-12)

        weights = torch.cat(list(self.parameters))
        normed_weights = torch.split(torch.nn.functional.softmax(weights, dim=0), split_size_or_sections=1)
        mask_float = mask.float()
        broadcast_mask = mask_float.unsqueeze(-1)
        num_elements_not_masked = torch.sum(mask_float) * tensors[0].size(-1)
        pieces = [weight * _do_layer_norm(tensor, broadcast_mask, num_elements_not_masked)
                  for weight, tensor in zip(normed_weights, tensors)]
        return self.gamma * sum(pieces)


def load_reference(checkpoint_path, clip_package):
    """The reference model's parts from a checkpoint written by :func:`write_checkpoint` (or the released one)."""
    import torch
    import transformers
    import yaml

    checkpoint_path = Path(checkpoint_path)
    hparams = yaml.safe_load((checkpoint_path.parent / "hparams.yaml").read_text(encoding="utf-8"))
    with torch.serialization.safe_globals([argparse.Namespace]):
        state = torch.load(str(checkpoint_path), map_location="cpu", weights_only=True)["state_dict"]
    encoder = transformers.AutoModel.from_pretrained(hparams["pretrained_model"])
    encoder.load_state_dict({k[len("encoder.model."):]: v for k, v in state.items()
                             if k.startswith("encoder.model.")}, strict=False)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hparams["pretrained_model"])
    n_layers = encoder.config.num_hidden_layers + 1
    mix = _ScalarMixWithDropout([state[f"scalar_mix.scalar_parameters.{i}"] for i in range(n_layers)],
                                state["scalar_mix.gamma"])
    sizes = [int(x) for x in str(hparams["hidden_sizes"]).split(",")]
    ff = torch.nn.Sequential()
    in_dim = state["ff.0.ff.linear_1.weight"].shape[1]
    ff.add_module("linear_1", torch.nn.Linear(in_dim, sizes[0]))
    ff.add_module("activation_1", getattr(torch.nn, hparams["activations"])())
    ff.add_module("dropout_1", torch.nn.Dropout(hparams["dropout"]))
    for i in range(1, len(sizes)):
        ff.add_module(f"linear_{i + 1}", torch.nn.Linear(sizes[i - 1], sizes[i]))
        ff.add_module(f"activation_{i + 1}", getattr(torch.nn, hparams["activations"])())
        ff.add_module(f"dropout_{i + 1}", torch.nn.Dropout(hparams["dropout"]))
    ff.add_module(f"linear_{len(sizes) + 1}", torch.nn.Linear(sizes[-1], 1))
    if hparams["final_activation"]:
        ff.add_module(f"activation_{len(sizes) + 1}", getattr(torch.nn, hparams["final_activation"])())
    head = torch.nn.Sequential(ff, torch.nn.Sigmoid())
    head[0].load_state_dict({k[len("ff.0.ff."):]: v for k, v in state.items() if k.startswith("ff.0.ff.")})
    clip_state = {k[len("clip."):]: v for k, v in state.items() if k.startswith("clip.")}
    clip_model = clip_package.model.build_model(dict(clip_state)).float()
    clip_model.load_state_dict(clip_state)  # build_model rounds to float16; the Lightning load restores float32
    preprocess = clip_package.clip._transform(clip_model.visual.input_resolution)
    for module in (encoder, head, clip_model):
        module.eval()
    return {"hparams": hparams, "encoder": encoder, "tokenizer": tokenizer, "mix": mix, "head": head,
            "clip_model": clip_model, "preprocess": preprocess, "clip": clip_package}


def _prepare(tokenizer, texts, max_positions):
    import torch

    rows = [torch.tensor(tokenizer(text, truncation=False)["input_ids"]) for text in texts]
    lengths = torch.tensor([len(r) for r in rows])
    tokens = torch.full((len(rows), int(lengths.max())), tokenizer.pad_token_id, dtype=torch.long)
    for i, r in enumerate(rows):
        tokens[i, :len(r)] = r
    if lengths.max() > max_positions:
        lengths[lengths > max_positions] = max_positions
        tokens = tokens[:, :max_positions]
    return tokens, lengths


def _sentence_embedding(ref, tokens, lengths):
    import torch

    mask = torch.arange(tokens.shape[1])[None, :] < lengths[:, None]
    _, _, all_layers = ref["encoder"](tokens, mask, output_hidden_states=True, return_dict=False)
    embeddings = ref["mix"](all_layers, mask)
    if ref["hparams"]["pool"] == "cls":
        return embeddings[:, 0, :]
    pad = ref["tokenizer"].pad_token_id
    wordemb = embeddings.float().masked_fill_(tokens.eq(pad).unsqueeze(-1), 0.0).type_as(embeddings)
    return torch.sum(wordemb, 1) / mask.unsqueeze(-1).expand(embeddings.size()).float().sum(1)


def reference_scores(ref, candidates, references, image_paths, *, batch_size: int = 32, max_positions=None):
    """The reference's ``predict(samples, batch_size=batch_size)`` scores (float32 → float64 array)."""
    import torch
    from PIL import Image

    clip = ref["clip"]
    model = ref["clip_model"]
    limit = max_positions or ref["encoder"].config.max_position_embeddings
    scores = []
    with torch.no_grad():
        for lo in range(0, len(candidates), batch_size):
            mt = list(candidates[lo:lo + batch_size])
            refs = [list(x) for x in zip(*references[lo:lo + batch_size])]  # collate_tensors transposes
            imgs = [Image.open(p).convert("RGB") for p in image_paths[lo:lo + batch_size]]
            mt_sentemb = _sentence_embedding(ref, *_prepare(ref["tokenizer"], mt, limit))
            ref_sentembs = [_sentence_embedding(ref, *_prepare(ref["tokenizer"], r, limit)) for r in refs]
            refs_clip = [model.encode_text(torch.cat([clip.tokenize("A photo depicts " + r, truncate=True)
                                                       for r in ref_list], dim=0)) for ref_list in refs]
            mts_clip = model.encode_text(clip.tokenize(["A photo depicts " + x for x in mt], truncate=True))
            imgs_clip = model.encode_image(torch.cat([ref["preprocess"](img).unsqueeze(0) for img in imgs], dim=0))
            batch_scores = []
            for ref_sentemb, ref_clip in zip(ref_sentembs, refs_clip):
                diff = torch.abs(mt_sentemb - ref_sentemb)
                mul = mt_sentemb * ref_sentemb
                x = torch.cat((ref_sentemb, mt_sentemb, diff, mul, imgs_clip, mts_clip, torch.abs(imgs_clip - mts_clip),
                               imgs_clip * mts_clip, torch.abs(ref_clip - mts_clip), ref_clip * mts_clip), dim=1)
                batch_scores.append(ref["head"](x))
            scores += torch.max(torch.stack(batch_scores), dim=0).values.reshape(-1).tolist()
    return np.asarray(scores, dtype=np.float64)


def tiny_polos(folder, *, images: int = 3) -> dict:
    """A tiny Polos in the released layout under ``folder``: ``polos_model`` (the ``reprod/`` folder), the text
    encoder folder (``text``), the CLIP (``clip_model``) and ``images`` noise PNGs. Skips without the CLIP stack."""
    from support.clip_reference import TINY, random_openai_clip, require_clip_stack
    from support.images import write_pngs

    require_clip_stack()
    folder = Path(folder)
    text = text_encoder_folder(folder / "simcse")
    clip_model = random_openai_clip(TINY, seed=3)
    checkpoint = write_checkpoint(folder / "reprod", clip_model, text)
    return {"polos_model": str(checkpoint.parent), "text": str(text), "clip_model": clip_model,
            "images": [str(p) for p in write_pngs(folder / "images", images, size=(64, 48))]}
