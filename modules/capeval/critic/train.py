"""Training of the critic (:mod:`capeval.critic.model`) with ``accelerate``: ``capeval critic train`` / :func:`train_critic`.

* data: ``train`` (``{image: [human captions]}``, Flickr8k train for the shipped critic) with pooled image features;
  an epoch visits every image once (``candidates_per_image`` = 1; up to 5 for every caption): a random caption is
  the candidate of a positive and of a negative example sharing a random other caption as context
  (:func:`capeval.critic.data.epoch_examples`; negatives in the paper's proportions by default). Never an image of
  ``dev`` or of a ``held_out`` split (checked);
* model: vocabulary of the ``max_words`` most frequent training tokens, embeddings initialised from word vectors
  (GloVe 6B 50-d offline; unknown words from GloVe's ``unk``), then trained; or ``init_from`` a trained critic
  (fine-tuning: its vocabulary and architecture), or ``init_text_from`` one (a new critic of the given ``config``
  whose vocabulary, embeddings and LSTM start from that critic's, e.g. a reference-context critic trained on COCO's
  captions, :mod:`capeval.corpora.coco_train2014`; the image projection and the head start fresh);
* optimisation as the paper: cross-entropy, Adam (lr 1e-3) decayed ×0.9 per epoch, global-norm clipping 1.0,
  batches of ``pairs_per_batch`` (50) images × (1 positive + 1 negative) = 100 examples;
* seeded: epoch ``e``'s examples, order and dropout come from ``seed + e``, so a resumed run equals an uninterrupted
  one; a tqdm bar with the running loss;
* after every epoch: the dev score s(Θ, D) of the paper (§3.4: mean of P(human) over human candidates and of
  1 − P(human) over negatives; in [0, 1], higher is better) on fixed dev examples built with ``dev_seed``, plus dev
  loss and accuracy per negative source; a checkpoint ``DIR/checkpoints/epoch-N``; ``resume=True`` continues from
  the last one; training stops after ``patience`` epochs without a better dev s. ``DIR`` ends with the best
  epoch's model (``save_pretrained``) and vocabulary, and ``training.json`` (the log).
* ``text`` / ``text_dev`` (optional, image + reference critics): a second corpus of human captions *without* image
  features (COCO train2014's captions, :mod:`capeval.corpora.coco_train2014`), trained in the same epochs with negatives
  from ``text_mix`` (RC by ``text_neighbours``, caption vectors; WP; RW) and the learned "no image" context vector
  (the critic becomes ``image_optional``, :meth:`~capeval.critic.model.CriticModel.allow_missing_images`). Its dev
  pairs are logged as ``text_dev_*``; the epoch is still selected on ``dev`` (the image corpus) alone;
* several processes (``accelerate launch``): each takes every ``num_processes``-th batch; accelerate averages the
  gradients (DDP).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from capeval.critic.data import (CriticExample, NegativeSampler, check_word_gamma, epoch_examples, fixed_pairs,
                                 resolve_mix, training_vocabulary)
from capeval.critic.transforms import NearestImages
from capeval.critic.vocab import CriticVocab
from capeval.dependencies import require
from capeval.models.checkpoints import finish, last_checkpoint, load_state, record_epoch, save_checkpoint, stale
from capeval.models.feature_table import FeatureTable, check_disjoint
from capeval.model_store import catalog_name_of
from capeval.progress import progress

DEFAULTS: dict[str, Any] = {"epochs": 15, "pairs_per_batch": 50, "lr": 1e-3, "lr_decay": 0.9, "clip_norm": 1.0,
                            "patience": 3, "candidates_per_image": 1, "seed": 0, "dev_seed": 1234, "max_words": 10_000,
                            "mix": "paper", "word_vectors": "glove-6b-50d", "init_from": None,
                            "init_text_from": None, "text_mix": {"RC": 3, "WP": 1, "RW": 1},
                            "text_candidates_per_image": 1, "word_gamma": "uniform"}


def _word_vector_rows(vocab: CriticVocab, name: str, seed: int) -> tuple[np.ndarray, int]:
    """``([len(vocab), dim] initial embeddings, words found in the vectors)``."""
    from capeval.models.word_vectors import load_word_vectors

    wv = load_word_vectors(name)
    rng = np.random.default_rng(seed)
    rows = np.zeros((len(vocab), wv.dim), dtype=np.float32)
    unk = wv.unk_vector()
    found = 0
    for i, word in enumerate(vocab.words):
        if i == 0:
            continue  # <pad> stays zero
        vec = wv.get(word) if i >= 4 else None
        if vec is not None:
            rows[i], found = vec, found + 1
        elif i in (2, 3):  # <sos>, <eos>: their own random vectors
            rows[i] = rng.normal(0, 0.3, wv.dim)
        else:
            rows[i] = unk
    return rows, found


def _vocabulary_coverage(vocab: CriticVocab, captions: list[str]) -> dict[str, Any]:
    """The share of the training captions' tokens (the first ``max_length`` of each) that ``vocab`` knows."""
    from capeval.coverage import measure
    from capeval.critic.vocab import critic_tokens

    cov = measure([[critic_tokens(c)[:vocab.max_length]] for c in captions], vocab.index)
    return {"share": round(cov.share, 4), "known": cov.known, "tokens": cov.total, "captions": len(captions),
            "source": "training captions"}


class _Encoder:
    """Caption text -> (ids, length), memoised (captions repeat across epochs)."""

    def __init__(self, vocab: CriticVocab):
        self.vocab, self.memo = vocab, {}

    def __call__(self, texts: Sequence[str]):
        torch = require("torch")
        missing = [t for t in dict.fromkeys(texts) if t not in self.memo]
        if missing:
            ids, lengths = self.vocab.encode(missing)
            self.memo.update({t: (i, n) for t, i, n in zip(missing, ids, lengths)})
        rows = [self.memo[t] for t in texts]
        return (torch.as_tensor(np.stack([r[0] for r in rows])), torch.as_tensor(np.array([r[1] for r in rows])))


def _batch_tensors(examples: Sequence[CriticExample], encode: _Encoder, features: FeatureTable, device,
                   text_images: frozenset[str] = frozenset()):
    """Model inputs of ``examples``: each distinct caption (context or candidate) is encoded once; examples whose
    image is in ``text_images`` (a corpus without image features) get zero features and ``image_mask`` False."""
    torch = require("torch")
    texts = list(dict.fromkeys(t for e in examples for t in (e.reference, e.candidate)))
    where = {t: i for i, t in enumerate(texts)}
    ids, lengths = encode(texts)
    out = {"candidate_ids": ids.to(device), "candidate_lengths": lengths.to(device),
           "candidate_index": torch.as_tensor([where[e.candidate] for e in examples], device=device),
           "reference_index": torch.as_tensor([where[e.reference] for e in examples], device=device),
           "labels": torch.as_tensor([e.label for e in examples], device=device)}
    mask = [e.image not in text_images for e in examples]
    if all(mask):
        out["image_features"] = features.rows([e.image for e in examples]).to(device)
        return out
    rows = torch.zeros((len(examples), features.feature_dim))
    present = [i for i, m in enumerate(mask) if m]
    if present:
        rows[present] = features.rows([examples[i].image for i in present])
    out["image_features"], out["image_mask"] = rows.to(device), torch.as_tensor(mask, device=device)
    return out


def train_critic(
    features: FeatureTable,
    train: Mapping[str, Sequence[str]],
    out_dir: str | Path,
    *,
    dev: Mapping[str, Sequence[str]] | None = None,
    system: Mapping[str, Sequence[str]] | None = None,
    samples: Mapping[str, Sequence[str]] | None = None,
    dev_system: Mapping[str, Sequence[str]] | None = None,
    dev_samples: Mapping[str, Sequence[str]] | None = None,
    held_out: Mapping[str, Mapping[str, object]] | None = None,
    text: Mapping[str, Sequence[str]] | None = None,
    text_dev: Mapping[str, Sequence[str]] | None = None,
    text_neighbours: FeatureTable | None = None,
    config: dict[str, Any] | None = None,
    resume: bool = True,
    cpu: bool | None = None,
    progress_bar: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Train a critic on ``train`` and save the best epoch to ``out_dir`` (see the module docstring).

    ``system`` / ``samples`` (and ``dev_system`` / ``dev_samples``): machine captions per image for the ``system`` and
    ``sample`` negatives; ``config`` overrides :class:`~capeval.critic.model.CriticConfig` fields (``context``,
    ``head``, ``hidden_size`` ...); ``text`` / ``text_dev`` / ``text_neighbours``: a corpus without images (captions
    per image name; RC neighbour vectors of all its images); ``options`` override :data:`DEFAULTS`. Returns the log
    (``out_dir/training.json``).
    """
    torch, accelerate = require("torch", "accelerate", what="critic training")
    opts = _resolve_options(options)
    images = _check_corpora(train, dev, held_out, text, text_dev, text_neighbours, opts)
    features = features.pooled()
    features.check(images + sorted(dev or {}))
    out_dir = Path(out_dir)
    accelerator = accelerate.Accelerator(cpu=(not torch.cuda.is_available()) if cpu is None else cpu)
    last = last_checkpoint(out_dir, resume)
    torch.manual_seed(opts["seed"])
    model, vocab, state, log, opts = _start_model(last, opts, config, features, train, images)
    if "vocabulary_coverage" not in log:  # the baseline of the OutOfVocabularyWarning (capeval.coverage)
        log["vocabulary_coverage"] = _vocabulary_coverage(vocab, [c for i in images for c in train[i]])
    data = _training_data(train, images, features, dev, system, samples, dev_system, dev_samples, opts)
    if text:
        _add_text_corpus(data, model, log, text, text_dev, text_neighbours, opts)
    optimizer, scheduler = _optimizer_and_schedule(model, opts, state)
    model, optimizer = accelerator.prepare(model, optimizer)
    run = _Run(accelerator, model, accelerator.unwrap_model(model), optimizer, scheduler, vocab, _Encoder(vocab),
               features, data, opts, log, out_dir, progress_bar)
    for epoch in range(len(log["epochs"]) + 1, opts["epochs"] + 1):
        if "dev_s" in (log["epochs"] or [{}])[-1] and stale(len(log["epochs"]), log["best_epoch"], opts["patience"]):
            break
        _run_epoch(run, epoch)
    if accelerator.is_main_process:
        finish(out_dir, log)
    return log


def _resolve_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`DEFAULTS` overridden by ``options``, checked: known names, epochs and pairs_per_batch ≥ 1, lr > 0,
    lr_decay in (0, 1], a valid negative mix and word_gamma."""
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown training option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}.")
    opts = {**DEFAULTS, **options}
    if opts["epochs"] < 1 or opts["pairs_per_batch"] < 1 or not opts["lr"] > 0 or not 0 < opts["lr_decay"] <= 1:
        raise ValueError("epochs and pairs_per_batch must be >= 1, lr > 0 and lr_decay in (0, 1].")
    resolve_mix(opts["mix"])
    check_word_gamma(opts["word_gamma"])
    return opts


def _check_corpora(train, dev, held_out, text, text_dev, text_neighbours, opts: dict[str, Any]) -> list[str]:
    """Check that train, dev, the held-out splits (and the text corpus) share no image and that train has at least
    2 images; returns the training images, sorted."""
    check_disjoint(train, **({"dev": dev} if dev else {}), **(held_out or {}))
    if text_dev and not text:
        raise ValueError("text_dev without a text corpus.")
    if text:
        _check_text_corpus(text, text_dev, text_neighbours, train, dev, held_out, opts["text_mix"])
    images = sorted(train)
    if len(images) < 2:
        raise ValueError("the critic needs at least 2 training images.")
    return images


def _start_model(last: Path | None, opts: dict[str, Any], config: dict[str, Any] | None, features: FeatureTable,
                 train: Mapping[str, Sequence[str]], images: list[str]):
    """``(model, vocab, state, log, opts)`` to train from: the last checkpoint's (``state``: its optimizer and
    scheduler), or a new critic (``state`` None) fine-tuned from ``init_from``, with ``init_text_from``'s text
    encoder, or built from word vectors."""
    if last is not None:
        return _resume_model(last, opts)
    if opts["init_from"] is not None and opts["init_text_from"] is not None:
        raise ValueError("give init_from (a whole critic) or init_text_from (its text encoder), not both.")
    if opts["init_text_from"] is not None:  # a new critic reading text as a trained one does (e.g. COCO-trained)
        return _model_from_text_encoder(opts, config, features, images)
    if opts["init_from"] is not None:  # fine-tune a trained critic (its vocabulary and architecture)
        return _model_from_critic(opts, config, features, images)
    return _model_from_word_vectors(opts, config, features, train, images)


def _resume_model(last: Path, opts: dict[str, Any]):
    """The model, vocabulary, optimizer / scheduler state and log of checkpoint ``last``; the options are the
    logged ones, but for ``epochs`` (a resumed run plans the epochs it was last asked for)."""
    from capeval.critic.model import CriticModel

    model = CriticModel.from_pretrained(last)
    vocab = CriticVocab.load(last)
    state = load_state(last)
    log = state["log"]
    log["options"]["epochs"] = opts["epochs"]  # a resumed run plans the epochs it was last asked for
    return model, vocab, state, log, {**DEFAULTS, **log["options"]}


def _model_from_text_encoder(opts: dict[str, Any], config: dict[str, Any] | None, features: FeatureTable,
                             images: list[str]):
    """A new critic of ``config`` whose vocabulary, embeddings and LSTM are ``init_text_from``'s (its sizes kept);
    the image projection and the head start fresh."""
    from capeval.critic.model import CriticConfig, CriticModel

    source = CriticModel.from_pretrained(opts["init_text_from"]).float()
    vocab = CriticVocab.load(opts["init_text_from"])
    opts["init_text_from"] = catalog_name_of(opts["init_text_from"]) or str(opts["init_text_from"])
    fixed = {"embed_dim": source.config.embed_dim, "hidden_size": source.config.hidden_size}
    clash = {k: v for k, v in (config or {}).items() if k in fixed and v != fixed[k]}
    if clash:
        raise ValueError(f"init_text_from keeps the text encoder's sizes {fixed}; config asks {clash}.")
    cfg = CriticConfig(vocab_size=len(vocab), image_dim=features.feature_dim, max_tokens=vocab.max_length,
                       word_vectors=source.config.word_vectors, seed=opts["seed"], **features.encoder_settings(),
                       **{**(config or {}), **fixed})
    model = CriticModel(cfg)
    model.embed.load_state_dict(source.embed.state_dict())
    model.lstm.load_state_dict(source.lstm.state_dict())
    log = {"options": dict(opts), "config": cfg.to_dict(), "feature_settings": features.settings,
           "train_images": len(images), "vocabulary": len(vocab), "epochs": [], "best_epoch": None, "best_dev": None}
    return model, vocab, None, log, opts


def _model_from_critic(opts: dict[str, Any], config: dict[str, Any] | None, features: FeatureTable,
                       images: list[str]):
    """The trained critic ``init_from`` (its vocabulary and architecture; ``config`` must be empty), to fine-tune."""
    from capeval.critic.model import CriticModel

    if config:
        raise ValueError("config cannot change the architecture of an init_from critic.")
    model = CriticModel.from_pretrained(opts["init_from"]).float()
    vocab = CriticVocab.load(opts["init_from"])
    opts["init_from"] = catalog_name_of(opts["init_from"]) or str(opts["init_from"])
    log = {"options": dict(opts), "config": model.config.to_dict(), "feature_settings": features.settings,
           "train_images": len(images), "vocabulary": len(vocab), "epochs": [], "best_epoch": None, "best_dev": None}
    return model, vocab, None, log, opts


def _model_from_word_vectors(opts: dict[str, Any], config: dict[str, Any] | None, features: FeatureTable,
                             train: Mapping[str, Sequence[str]], images: list[str]):
    """A new critic: the ``max_words`` most frequent training words, embeddings initialised from ``word_vectors``."""
    from capeval.critic.model import CriticConfig, CriticModel

    vocab = CriticVocab.build((c for i in images for c in train[i]), opts["max_words"])
    rows, found = _word_vector_rows(vocab, opts["word_vectors"], opts["seed"])
    cfg = CriticConfig(vocab_size=len(vocab), embed_dim=rows.shape[1], image_dim=features.feature_dim,
                       max_tokens=vocab.max_length, word_vectors=str(opts["word_vectors"]), seed=opts["seed"],
                       **features.encoder_settings(), **(config or {}))
    model = CriticModel(cfg)
    model.set_word_vectors(rows)
    log = {"options": {k: (v if not isinstance(v, Path) else str(v)) for k, v in opts.items()},
           "config": cfg.to_dict(), "feature_settings": features.settings,
           "train_images": len(images), "vocabulary": len(vocab), "words_with_vectors": found,
           "epochs": [], "best_epoch": None, "best_dev": None}
    return model, vocab, None, log, opts


@dataclass
class _TrainingData:
    """What the epochs read: the image corpus (its images, sorted, and negative sampler), its fixed dev pairs and,
    optionally, the text corpus without image features (its images, sampler and dev pairs)."""

    train: Mapping[str, Sequence[str]]
    images: list[str]
    sampler: NegativeSampler
    dev_pairs: list[tuple[CriticExample, CriticExample]] | None
    text: Mapping[str, Sequence[str]] | None = None
    text_names: list[str] = field(default_factory=list)
    text_images: frozenset[str] = frozenset()
    text_sampler: NegativeSampler | None = None
    text_dev_pairs: list[tuple[CriticExample, CriticExample]] | None = None


def _training_data(train, images: list[str], features: FeatureTable, dev, system, samples, dev_system, dev_samples,
                   opts: dict[str, Any]) -> _TrainingData:
    """The image corpus's negative sampler (RC neighbours by image features) and fixed dev pairs (``dev_seed``)."""
    words = training_vocabulary(train)
    sampler = NegativeSampler(train, mix=opts["mix"], system=system, samples=samples,
                              nearest=NearestImages(images, features.rows(images)), vocabulary=words,
                              word_gamma=opts["word_gamma"])
    dev_pairs = fixed_pairs(dev, features, mix=opts["mix"], seed=opts["dev_seed"], system=dev_system,
                            samples=dev_samples, vocabulary=words, word_gamma=opts["word_gamma"]) if dev else None
    return _TrainingData(train, images, sampler, dev_pairs)


def _add_text_corpus(data: _TrainingData, model, log: dict[str, Any], text, text_dev,
                     text_neighbours: FeatureTable, opts: dict[str, Any]) -> None:
    """Add the text corpus (``text_mix`` negatives, RC by ``text_neighbours``) to ``data`` and make the critic
    ``image_optional``; only image + reference critics take one."""
    if not model.config.uses_image or not model.config.uses_reference:
        raise ValueError(f"a text corpus trains image + reference critics, not context {model.config.context!r}.")
    model.allow_missing_images()
    log["config"]["image_optional"] = True
    data.text = text
    data.text_names = sorted(text)
    data.text_images = frozenset(data.text_names) | frozenset(text_dev or ())
    text_words = training_vocabulary(text)
    data.text_sampler = NegativeSampler(text, mix=opts["text_mix"], vocabulary=text_words,
                                        nearest=NearestImages(data.text_names, text_neighbours.rows(data.text_names)),
                                        word_gamma=opts["word_gamma"])
    data.text_dev_pairs = fixed_pairs(text_dev, text_neighbours, mix=opts["text_mix"], seed=opts["dev_seed"],
                                      vocabulary=text_words, word_gamma=opts["word_gamma"]) if text_dev else None
    log.setdefault("text_corpus", {"train_images": len(data.text_names), "dev_images": len(text_dev or {}),
                                   "neighbours": text_neighbours.settings})


def _optimizer_and_schedule(model, opts: dict[str, Any], state: dict[str, Any] | None):
    """Adam at ``lr`` and its ×``lr_decay`` per-epoch schedule, restored from a checkpoint's ``state`` if any."""
    torch = require("torch")
    optimizer = torch.optim.Adam(model.parameters(), lr=opts["lr"])
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=opts["lr_decay"])
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    return optimizer, scheduler


@dataclass
class _Run:
    """The state one training epoch reads and updates: the accelerator, the prepared model (``core``: unwrapped)
    and optimizer, the schedule, the vocabulary and its encoder, the features, the data, the options, the log, the
    output folder and whether to show a progress bar."""

    accelerator: Any
    model: Any
    core: Any
    optimizer: Any
    scheduler: Any
    vocab: CriticVocab
    encode: _Encoder
    features: FeatureTable
    data: _TrainingData
    opts: dict[str, Any]
    log: dict[str, Any]
    out_dir: Path
    progress_bar: bool | None


def _run_epoch(run: _Run, epoch: int) -> None:
    """Train epoch ``epoch`` (from 1), score the dev pairs, log it and save its checkpoint (main process)."""
    accelerator, scheduler = run.accelerator, run.scheduler
    batches = _epoch_batches(run.data, run.opts, epoch, accelerator)
    run.model.train()
    total, count = _train_batches(run, batches, desc=f"critic epoch {epoch}/{run.opts['epochs']}")
    entry: dict[str, Any] = {"epoch": epoch, "train_loss": total / max(1, count), "lr": scheduler.get_last_lr()[0]}
    scheduler.step()
    entry.update(_dev_scores(run))
    record_epoch(run.log, entry, "dev_s")
    if accelerator.is_main_process:
        save_checkpoint(run.out_dir, epoch, run.core, run.vocab.save, {"optimizer": run.optimizer.state_dict(),
                                                                       "scheduler": scheduler.state_dict(),
                                                                       "log": run.log})
    accelerator.wait_for_everyone()


def _epoch_batches(data: _TrainingData, opts: dict[str, Any], epoch: int, accelerator) -> list[list]:
    """This process's batches of epoch ``epoch``: the pairs of both corpora drawn and shuffled with ``seed + epoch``
    (torch seeded with it too), cut into ``pairs_per_batch``, every ``num_processes``-th batch, the same count in
    every process."""
    rng = random.Random(opts["seed"] + epoch)
    require("torch").manual_seed(opts["seed"] + epoch)
    pairs = epoch_examples(data.train, data.sampler, rng, data.images, opts["candidates_per_image"])
    if data.text_sampler is not None:
        pairs += epoch_examples(data.text, data.text_sampler, rng, data.text_names, opts["text_candidates_per_image"])
    rng.shuffle(pairs)
    n = opts["pairs_per_batch"]
    batches = [pairs[i:i + n] for i in range(0, len(pairs), n)]
    per_process = len(batches) // accelerator.num_processes or 1
    return batches[accelerator.process_index::accelerator.num_processes][:per_process]


def _train_batches(run: _Run, batches: list[list], desc: str) -> tuple[float, int]:
    """One optimizer step per batch (gradients clipped to ``clip_norm``); ``(summed example loss, examples)``."""
    accelerator, model, optimizer, opts = run.accelerator, run.model, run.optimizer, run.opts
    total, count = 0.0, 0
    bar = progress(batches, desc=desc, enabled=run.progress_bar) if accelerator.is_main_process else batches
    for batch in bar:
        examples = [e for pair in batch for e in pair]
        loss = model(**_batch_tensors(examples, run.encode, run.features, accelerator.device,
                                      run.data.text_images)).loss
        optimizer.zero_grad()
        accelerator.backward(loss)
        if opts["clip_norm"]:
            accelerator.clip_grad_norm_(model.parameters(), opts["clip_norm"])
        optimizer.step()
        total, count = total + float(loss.item()) * len(examples), count + len(examples)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{total / count:.4f}")
    return total, count


def _dev_scores(run: _Run) -> dict[str, float]:
    """The dev metrics of :func:`evaluate_pairs` on the image corpus's dev pairs, then (prefixed ``text_``) on the
    text corpus's; ``{}`` without dev pairs."""
    data, scores = run.data, {}
    if data.dev_pairs:
        scores.update(evaluate_pairs(run.core, run.vocab, run.features, data.dev_pairs))
    if data.text_dev_pairs:
        scores.update({f"text_{k}": v for k, v in evaluate_pairs(run.core, run.vocab, run.features,
                                                                 data.text_dev_pairs,
                                                                 text_images=data.text_images).items()})
    return scores


def evaluate_pairs(model, vocab: CriticVocab, features: FeatureTable, pairs, batch_size: int = 500,
                   text_images: frozenset[str] = frozenset()) -> dict[str, float]:
    """Dev metrics of ``(positive, negative)`` pairs: ``dev_s`` (the paper's s(Θ, D)), ``dev_loss``, ``dev_accuracy``
    and ``dev_s_<source>`` per negative source (mean 1 − P(human) of that source's negatives); examples of
    ``text_images`` are scored without their image (see :func:`_batch_tensors`)."""
    torch = require("torch")
    examples = [e for pair in pairs for e in pair]
    encode = _Encoder(vocab)
    model.eval()
    probs, losses = [], []
    with torch.no_grad():
        for start in range(0, len(examples), batch_size):
            chunk = examples[start:start + batch_size]
            out = model(**_batch_tensors(chunk, encode, features, model.device, text_images))
            probs.append(torch.softmax(out.logits.float(), -1)[:, 1].cpu())
            losses.append(float(out.loss) * len(chunk))
    p = torch.cat(probs).numpy()
    labels = np.array([e.label for e in examples])
    s = np.where(labels == 1, p, 1 - p)
    out = {"dev_s": float(s.mean()), "dev_loss": sum(losses) / len(examples),
           "dev_accuracy": float(((p > 0.5) == (labels == 1)).mean()), "dev_s_human": float(s[labels == 1].mean())}
    sources = np.array([e.source for e in examples])
    for source in sorted(set(sources) - {"human"}):
        out[f"dev_s_{source}"] = float(s[sources == source].mean())
    return out


def _check_text_corpus(text, text_dev, text_neighbours, train, dev, held_out, text_mix) -> None:
    """Refuse a text corpus that overlaps the image corpus, its dev split or a held-out split, lacks RC neighbour
    vectors, or asks for negatives it cannot have (system captions and samples need a captioner's output)."""
    unusable = {"system", "sample"} & set(resolve_mix(text_mix))
    if unusable:
        raise ValueError(f"text_mix uses {sorted(unusable)}: a corpus without a captioner's output can use RC, WP "
                         "and RW only.")
    others = {"image_train": train, **({"dev": dev} if dev else {}), **(held_out or {})}
    checks = [("text", text, {**others, **({"text_dev": text_dev} if text_dev else {})}),
              ("text_dev", text_dev or {}, others)]
    for name, split, evaluated in checks:
        try:
            check_disjoint(split, **evaluated)
        except ValueError as err:
            raise ValueError(f"{name} corpus: {err}") from None
    if text_neighbours is None:
        raise ValueError("a text corpus needs text_neighbours (caption vectors of its images, for RC negatives).")
    text_neighbours.check(sorted(text) + sorted(text_dev or {}))
