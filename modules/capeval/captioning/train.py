"""Training of the captioner (:mod:`capeval.models.captioner`) with ``accelerate``.

``capeval captioner train --features F --out DIR`` (or :func:`train_captioner`):

* data: the Flickr8k train split only (6,000 images × 5 captions), never a dev or test image (checked);
  a batch is ``images_per_batch`` images with all their captions (the image keys/values are computed once
  per image);
* loss: mean cross-entropy per predicted token (``<eos>`` included, padding excluded), AdamW, linear warm-up
  then cosine decay over ``epochs``, gradient clipping;
* seeded: the shuffling and dropout of epoch ``e`` use ``seed + e``, so a resumed run equals an uninterrupted
  one; a tqdm bar with the running loss;
* after every epoch: greedy captions of the dev split scored with BLEU-4 and CIDEr-D (capeval's defaults),
  a checkpoint ``DIR/checkpoints/epoch-N`` (``save_pretrained`` + tokenizer + the resume state, no pickles);
  ``resume=True`` continues from the last one; training stops after ``patience`` epochs without a better dev
  CIDEr-D. ``DIR`` ends up holding the best epoch's model and tokenizer and ``training.json`` (the log).
* several processes (``accelerate launch``): each takes every ``num_processes``-th batch, gradients are
  averaged by accelerate (DDP).
* ``objective="scst"`` (self-critical sequence training, Rennie et al. CVPR 2017, with the mean reward of the
  other samples of the same image as the baseline, Luo 2020): fine-tunes a trained captioner (``init_from``)
  on the CIDEr-D of ``scst_samples`` sampled captions per image, each against its image's training references
  with document frequencies from the training references (:mod:`capeval.captioning.rewards`). The loss is
  ``-(reward - baseline) * log P(sample|I)`` averaged over samples.
"""
from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from capeval.models.feature_table import FeatureTable, check_disjoint
from capeval.dependencies import require
from capeval.models.checkpoints import finish, last_checkpoint, load_state, record_epoch, save_checkpoint, stale
from capeval.progress import progress
DEFAULTS: dict[str, Any] = {"epochs": 20, "images_per_batch": 32, "lr": 5e-4, "weight_decay": 0.01,
                            "warmup_steps": 300, "clip_norm": 1.0, "patience": 3, "min_count": 5,
                            "max_words": 22, "seed": 0, "objective": "xe", "init_from": None,
                            "scst_samples": 5}


def _schedule(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress_ = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * progress_))


def train_captioner(
    features: FeatureTable,
    train: Mapping[str, Sequence[str]],
    out_dir: str | Path,
    *,
    dev: Mapping[str, Sequence[str]] | None = None,
    held_out: Mapping[str, Mapping[str, object]] | None = None,
    config: dict[str, Any] | None = None,
    resume: bool = True,
    cpu: bool | None = None,
    progress_bar: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Train a captioner on ``train`` (``{image: [captions]}``) and save the best epoch to ``out_dir``.

    ``dev``: the selection split (greedy captions scored after each epoch); ``held_out``: ``{split name:
    images}`` that must not overlap ``train`` (the dev split is always checked). ``config`` overrides
    :class:`~capeval.models.captioner.CaptionerConfig` fields; ``options`` override :data:`DEFAULTS`.
    Returns the training log (also written to ``out_dir/training.json``).
    """
    torch, accelerate = require("torch", "accelerate", what="captioner training")
    from capeval.models.caption_tokenizer import build_caption_tokenizer, encode_captions
    from capeval.models.captioner import CaptionerConfig, CaptionerForImageCaptioning

    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown training option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}.")
    opts = {**DEFAULTS, **options}
    if opts["epochs"] < 1 or opts["images_per_batch"] < 1 or opts["lr"] <= 0:
        raise ValueError("epochs and images_per_batch must be >= 1 and lr > 0.")
    if opts["objective"] not in ("xe", "scst"):
        raise ValueError(f"objective must be 'xe' or 'scst', got {opts['objective']!r}.")
    if opts["objective"] == "scst" and (opts["init_from"] is None or opts["scst_samples"] < 2):
        raise ValueError("objective='scst' needs init_from (a trained captioner folder) and scst_samples >= 2.")
    check_disjoint(train, **({"dev": dev} if dev else {}), **(held_out or {}))
    images = sorted(train)
    if not images:
        raise ValueError("No training images.")
    features.check(images)  # KeyError now, not at the first batch that lacks features
    out_dir = Path(out_dir)
    accelerator = accelerate.Accelerator(cpu=(not torch.cuda.is_available()) if cpu is None else cpu)
    last = last_checkpoint(out_dir, resume)
    torch.manual_seed(opts["seed"])
    if last is not None:
        model = CaptionerForImageCaptioning.from_pretrained(last)
        tokenizer = require("transformers").AutoTokenizer.from_pretrained(last)
        state = load_state(last)
        log = state["log"]
        opts = {**DEFAULTS, **log["options"], "epochs": opts["epochs"]}  # options added later keep their defaults
    elif opts["init_from"] is not None:
        model = CaptionerForImageCaptioning.from_pretrained(opts["init_from"])
        tokenizer = require("transformers").AutoTokenizer.from_pretrained(opts["init_from"])
        if config:
            raise ValueError("config cannot change the architecture of an init_from model.")
        opts["init_from"] = str(opts["init_from"])
        state, log = None, {"options": opts, "config": model.config.to_dict(), "feature_settings": features.settings,
                            "train_images": len(images), "epochs": [], "best_epoch": None, "best_dev": None}
    else:
        tokenizer = build_caption_tokenizer([c for i in images for c in train[i]], opts["min_count"])
        cfg = CaptionerConfig(vocab_size=len(tokenizer), feature_dim=features.feature_dim,
                              feature_kind="pooled" if features.features.dim() == 2 else "grid",
                              pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id, **features.encoder_settings(), **(config or {}))
        model = CaptionerForImageCaptioning(cfg)
        state, log = None, {"options": opts, "config": cfg.to_dict(), "feature_settings": features.settings,
                            "train_images": len(images), "epochs": [], "best_epoch": None, "best_dev": None}
    ids = {i: encode_captions(tokenizer, train[i], opts["max_words"]) for i in images}
    reward = None
    if opts["objective"] == "scst":
        from capeval.captioning.rewards import CiderReward

        reward = CiderReward({i: train[i] for i in images})
    steps_per_epoch = math.ceil(len(images) / opts["images_per_batch"] / accelerator.num_processes)
    total = steps_per_epoch * opts["epochs"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=opts["lr"], weight_decay=opts["weight_decay"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _schedule(s, opts["warmup_steps"], total))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    model, optimizer = accelerator.prepare(model, optimizer)
    core = accelerator.unwrap_model(model)
    for epoch in range(len(log["epochs"]) + 1, opts["epochs"] + 1):
        if _stale(log, opts["patience"]):
            break
        torch.manual_seed(opts["seed"] + epoch)
        order = images[:]
        random.Random(opts["seed"] + epoch).shuffle(order)
        n = opts["images_per_batch"]
        batches = [order[i:i + n] for i in range(0, len(order), n)]
        batches = batches[accelerator.process_index::accelerator.num_processes][:steps_per_epoch]
        model.train()
        total_loss, total_tokens = 0.0, 0
        bar = progress(batches, desc=f"captioner epoch {epoch}/{opts['epochs']}", enabled=progress_bar,
                       ) if accelerator.is_main_process else batches
        for batch in bar:
            if reward is None:
                loss, tokens = _step(core, model, features, batch, ids, accelerator)
            else:
                loss, tokens = _scst_step(core, model, tokenizer, features, batch, reward, opts, accelerator)
            optimizer.zero_grad()
            accelerator.backward(loss)
            if opts["clip_norm"]:
                accelerator.clip_grad_norm_(model.parameters(), opts["clip_norm"])
            optimizer.step()
            scheduler.step()
            total_loss, total_tokens = total_loss + float(loss.item()) * tokens, total_tokens + tokens
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{total_loss / total_tokens:.3f}")
        entry: dict[str, Any] = {"epoch": epoch, "train_loss": total_loss / max(1, total_tokens),
                                 "lr": scheduler.get_last_lr()[0]}
        if dev:
            entry.update(_dev_scores(core, tokenizer, features, dev))
        record_epoch(log, entry, "dev_cider_d")  # without a dev split: the latest epoch is the best
        if accelerator.is_main_process:
            save_checkpoint(out_dir, epoch, core, tokenizer.save_pretrained,
                            {"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "log": log})
        accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        finish(out_dir, log)
    return log



def _step(core, model, features: FeatureTable, batch: list[str], ids: dict, accelerator):
    from capeval.models.captioner import pad_batch

    torch = require("torch")
    rows = [(k, seq) for k, image in enumerate(batch) for seq in ids[image]]
    inputs, targets = pad_batch([seq for _, seq in rows], core.config.pad_token_id)
    feats = features.rows(batch).to(accelerator.device)
    embeds = core.encode_images(feats)[torch.as_tensor([k for k, _ in rows], device=accelerator.device)]
    out = model(input_ids=inputs.to(accelerator.device), image_embeds=embeds, labels=targets.to(accelerator.device))
    return out.loss, int((targets >= 0).sum())


def _scst_step(core, model, tokenizer, features: FeatureTable, batch: list[str], reward, opts, accelerator):
    """Self-critical loss of one batch; returns ``(loss, number of sampled captions)``."""
    from capeval.captioning.generate import _strip

    torch = require("torch")
    k = opts["scst_samples"]
    feats = features.rows(batch).to(accelerator.device)
    core.eval()
    with torch.no_grad():
        gen = core.generate(image_features=feats, do_sample=True, num_beams=1, length_penalty=None, top_k=0,
                            top_p=1.0, num_return_sequences=k, max_new_tokens=opts["max_words"] + 1,
                            **core.caption_constraints())
    core.train()
    eos = core.config.eos_token_id
    seqs = [_strip(s, eos) for s in gen.tolist()]
    special = set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}
    words = [[t for i, t in zip(s, tokenizer.convert_ids_to_tokens(s)) if i not in special] for s in seqs]
    rewards = torch.as_tensor(reward([w for w in words], [im for im in batch for _ in range(k)]),
                              dtype=torch.float32, device=accelerator.device).view(len(batch), k)
    baseline = (rewards.sum(1, keepdim=True) - rewards) / (k - 1)
    advantage = (rewards - baseline).flatten()
    logp = _sequence_log_probs(core, model, seqs, feats, k, accelerator)
    return -(advantage * logp).mean(), len(seqs)


def _sequence_log_probs(core, model, seqs, feats, k, accelerator):
    """Teacher-forced log P(s|I) (with gradients) of sampled id sequences, ``k`` per image."""
    from capeval.models.captioner import pad_batch, sequence_log_probs

    inputs, targets = pad_batch(seqs, core.config.pad_token_id)
    inputs, targets = inputs.to(accelerator.device), targets.to(accelerator.device)
    embeds = core.encode_images(feats).repeat_interleave(k, 0)
    return sequence_log_probs(model(input_ids=inputs, image_embeds=embeds).logits, targets)


def _dev_scores(model, tokenizer, features: FeatureTable, dev: Mapping[str, Sequence[str]]) -> dict[str, float]:
    from capeval.api import score
    from capeval.captioning.generate import beam_candidates

    names = sorted(dev)
    model.eval()
    captions = [c["candidates"][0]["caption"] for c in beam_candidates(model, tokenizer, features, names, num_beams=1,
                                                                       progress_bar=False)]
    result = score(captions, [list(dev[n]) for n in names], ["bleu", "cider_d"], progress=False)
    return {"dev_bleu_4": result["bleu_4"], "dev_cider_d": result["cider_d"]}


def _stale(log: dict[str, Any], patience: int) -> bool:
    return "dev_cider_d" in (log["epochs"] or [{}])[-1] and stale(len(log["epochs"]), log["best_epoch"], patience)
