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
from dataclasses import dataclass
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
    from capeval.models.caption_tokenizer import encode_captions

    opts = _resolve_options(options)
    images = _check_splits(features, train, dev, held_out)
    out_dir = Path(out_dir)
    accelerator = accelerate.Accelerator(cpu=(not torch.cuda.is_available()) if cpu is None else cpu)
    last = last_checkpoint(out_dir, resume)
    torch.manual_seed(opts["seed"])
    model, tokenizer, state, log, opts = _start_model(last, opts, config, features, train, images)
    ids = {i: encode_captions(tokenizer, train[i], opts["max_words"]) for i in images}
    reward = _scst_reward(opts, train, images)
    steps_per_epoch = math.ceil(len(images) / opts["images_per_batch"] / accelerator.num_processes)
    optimizer, scheduler = _optimizer_and_schedule(model, opts, steps_per_epoch * opts["epochs"], state)
    model, optimizer = accelerator.prepare(model, optimizer)
    run = _Run(accelerator, model, accelerator.unwrap_model(model), optimizer, scheduler, tokenizer, features, ids,
               reward, images, steps_per_epoch, dev, opts, log, out_dir, progress_bar)
    for epoch in range(len(log["epochs"]) + 1, opts["epochs"] + 1):
        if _stale(log, opts["patience"]):
            break
        _run_epoch(run, epoch)
    if accelerator.is_main_process:
        finish(out_dir, log)
    return log


def _resolve_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`DEFAULTS` overridden by ``options``, checked: known names, epochs and images_per_batch ≥ 1, lr > 0,
    objective 'xe' or 'scst' (which needs init_from and scst_samples ≥ 2)."""
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
    return opts


def _check_splits(features: FeatureTable, train: Mapping[str, Sequence[str]], dev, held_out) -> list[str]:
    """Check that train shares no image with dev or the held-out splits, is not empty and has features for every
    image; returns the training images, sorted."""
    check_disjoint(train, **({"dev": dev} if dev else {}), **(held_out or {}))
    images = sorted(train)
    if not images:
        raise ValueError("No training images.")
    features.check(images)  # KeyError now, not at the first batch that lacks features
    return images


def _start_model(last: Path | None, opts: dict[str, Any], config: dict[str, Any] | None, features: FeatureTable,
                 train: Mapping[str, Sequence[str]], images: list[str]):
    """``(model, tokenizer, state, log, opts)`` to train from: the last checkpoint's (``state``: its optimizer and
    scheduler; the logged options but for ``epochs``), the ``init_from`` captioner, or a new one (``state`` None)."""
    from capeval.models.caption_tokenizer import build_caption_tokenizer
    from capeval.models.captioner import CaptionerConfig, CaptionerForImageCaptioning

    if last is not None:
        model = CaptionerForImageCaptioning.from_pretrained(last)
        tokenizer = require("transformers").AutoTokenizer.from_pretrained(last)
        state = load_state(last)
        log = state["log"]
        opts = {**DEFAULTS, **log["options"], "epochs": opts["epochs"]}  # options added later keep their defaults
        return model, tokenizer, state, log, opts
    if opts["init_from"] is not None:
        model = CaptionerForImageCaptioning.from_pretrained(opts["init_from"])
        tokenizer = require("transformers").AutoTokenizer.from_pretrained(opts["init_from"])
        if config:
            raise ValueError("config cannot change the architecture of an init_from model.")
        opts["init_from"] = str(opts["init_from"])
        log = {"options": opts, "config": model.config.to_dict(), "feature_settings": features.settings,
               "train_images": len(images), "epochs": [], "best_epoch": None, "best_dev": None}
        return model, tokenizer, None, log, opts
    tokenizer = build_caption_tokenizer([c for i in images for c in train[i]], opts["min_count"])
    cfg = CaptionerConfig(vocab_size=len(tokenizer), feature_dim=features.feature_dim,
                          feature_kind="pooled" if features.features.dim() == 2 else "grid",
                          pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                          eos_token_id=tokenizer.eos_token_id, **features.encoder_settings(), **(config or {}))
    model = CaptionerForImageCaptioning(cfg)
    log = {"options": opts, "config": cfg.to_dict(), "feature_settings": features.settings,
           "train_images": len(images), "epochs": [], "best_epoch": None, "best_dev": None}
    return model, tokenizer, None, log, opts


def _scst_reward(opts: dict[str, Any], train: Mapping[str, Sequence[str]], images: list[str]):
    """With objective 'scst': the CIDEr-D reward against the training captions; else ``None`` (cross-entropy)."""
    if opts["objective"] != "scst":
        return None
    from capeval.captioning.rewards import CiderReward

    return CiderReward({i: train[i] for i in images})


def _optimizer_and_schedule(model, opts: dict[str, Any], total_steps: int, state: dict[str, Any] | None):
    """AdamW and its per-step schedule (linear warm-up over ``warmup_steps``, then cosine down to 5 % of lr at
    ``total_steps``), restored from a checkpoint's ``state`` if any."""
    torch = require("torch")
    optimizer = torch.optim.AdamW(model.parameters(), lr=opts["lr"], weight_decay=opts["weight_decay"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer,
                                                  lambda s: _schedule(s, opts["warmup_steps"], total_steps))
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    return optimizer, scheduler


@dataclass
class _Run:
    """What the epochs read and update: the accelerator, the prepared model (``core``: unwrapped) and optimizer,
    the schedule, the tokenizer, the features, the encoded training captions, the SCST reward (``None``:
    cross-entropy), the training images, the steps per epoch, the dev split, the options, the log, the output folder
    and whether to show a progress bar."""

    accelerator: Any
    model: Any
    core: Any
    optimizer: Any
    scheduler: Any
    tokenizer: Any
    features: FeatureTable
    ids: dict
    reward: Any
    images: list[str]
    steps_per_epoch: int
    dev: Mapping[str, Sequence[str]] | None
    opts: dict[str, Any]
    log: dict[str, Any]
    out_dir: Path
    progress_bar: bool | None


def _run_epoch(run: _Run, epoch: int) -> None:
    """Train epoch ``epoch`` (from 1), score the dev split, log it and save its checkpoint (main process)."""
    accelerator, opts = run.accelerator, run.opts
    torch = require("torch")
    torch.manual_seed(opts["seed"] + epoch)
    order = run.images[:]
    random.Random(opts["seed"] + epoch).shuffle(order)
    n = opts["images_per_batch"]
    batches = [order[i:i + n] for i in range(0, len(order), n)]
    batches = batches[accelerator.process_index::accelerator.num_processes][:run.steps_per_epoch]
    run.model.train()
    total_loss, total_tokens = _train_batches(run, batches, desc=f"captioner epoch {epoch}/{opts['epochs']}")
    entry: dict[str, Any] = {"epoch": epoch, "train_loss": total_loss / max(1, total_tokens),
                             "lr": run.scheduler.get_last_lr()[0]}
    if run.dev:
        entry.update(_dev_scores(run.core, run.tokenizer, run.features, run.dev))
    record_epoch(run.log, entry, "dev_cider_d")  # without a dev split: the latest epoch is the best
    if accelerator.is_main_process:
        save_checkpoint(run.out_dir, epoch, run.core, run.tokenizer.save_pretrained,
                        {"optimizer": run.optimizer.state_dict(), "scheduler": run.scheduler.state_dict(),
                         "log": run.log})
    accelerator.wait_for_everyone()


def _train_batches(run: _Run, batches: list[list[str]], desc: str) -> tuple[float, int]:
    """One optimizer and schedule step per batch of images (cross-entropy or SCST, gradients clipped to
    ``clip_norm``); ``(summed token loss, tokens)``."""
    accelerator, model, optimizer, opts = run.accelerator, run.model, run.optimizer, run.opts
    total_loss, total_tokens = 0.0, 0
    bar = progress(batches, desc=desc, enabled=run.progress_bar,
                   ) if accelerator.is_main_process else batches
    for batch in bar:
        if run.reward is None:
            loss, tokens = _step(run.core, model, run.features, batch, run.ids, accelerator)
        else:
            loss, tokens = _scst_step(run.core, model, run.tokenizer, run.features, batch, run.reward, opts,
                                      accelerator)
        optimizer.zero_grad()
        accelerator.backward(loss)
        if opts["clip_norm"]:
            accelerator.clip_grad_norm_(model.parameters(), opts["clip_norm"])
        optimizer.step()
        run.scheduler.step()
        total_loss, total_tokens = total_loss + float(loss.item()) * tokens, total_tokens + tokens
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{total_loss / total_tokens:.3f}")
    return total_loss, total_tokens



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
