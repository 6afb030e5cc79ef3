"""Training ``sentence_rank`` (``capeval sentence-rank train``, :func:`train_sentence_rank`): torch + accelerate.

The plan (docs/benchmarks/measurements.md, "Beyond the papers: a learned ranker on sentence embeddings"), fixed before training:

* data: :mod:`capeval.sentence_rank.data` (one pair per training image per epoch; negatives hard / random / WP / RW
  in equal parts; fixed dev pairs). The corpus captions' sentence vectors come from the float16 cache
  (:func:`~capeval.sentence_rank.embeddings.cached_embeddings`); the WP / RW texts of an epoch are encoded during
  the epoch and rounded to float16 too, so that no negative differs from a positive by its precision;
* objective: pairwise logistic ranking, ``−log σ(s(c+, R) − s(c−, R))``, with ``s(·, R)`` the mean logit over the
  references (:mod:`capeval.sentence_rank.model`);
* Adam (lr 1e-3), batches of 256 pairs, seed 0, at most 10 epochs, patience 2: training stops after 2 epochs
  without a better dev pairwise accuracy; the epoch with the best dev pairwise accuracy is kept. Pairwise accuracy:
  the share of pairs with s(c+, R) > s(c−, R) (a tie counts 1/2), in [0, 1]; the untrained model's (the cosine's
  ranking) is logged as ``initial_dev``;
* seeded: epoch ``e``'s pairs, order and dropout come from ``seed · 1,000,003 + e``, so a resumed run equals an
  uninterrupted one;
* after every epoch: ``DIR/checkpoints/epoch-N/`` with the model (``config.json``, ``model.safetensors``), the
  Adam state (``optimizer.safetensors``: tensors; its step counts and settings in ``state.json``) and the log
  (``state.json``, written last: a checkpoint counts once it exists). No pickles. ``resume=True`` continues from
  the last complete checkpoint. ``DIR`` ends with the best epoch's ``config.json`` + ``model.safetensors`` and
  ``training.json`` (the log);
* several processes (``accelerate launch``): each takes every ``num_processes``-th batch; accelerate averages the
  gradients.

Cost on 2 CPU cores shared with another job (COCO train2014, 81,126 training images): encoding the 399,942
distinct captions once took 38 minutes (cached), then per epoch about 4.5 minutes to encode its ~40k WP / RW
negatives, 1.5 minutes for the ~20k hard negatives' nearest captions and 1.5 minutes of training (317 batches).
"""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from capeval.dependencies import require
from capeval.models.checkpoints import record_epoch, stale
from capeval.progress import progress
from capeval.sentence_rank.data import NEGATIVE_KINDS, RankCorpus, dev_pairs, epoch_pairs, resolve_pairs
from capeval.sentence_rank.embeddings import cached_embeddings
from capeval.sentence_rank.model import (CONFIG_FILE, WEIGHTS_FILE, SentenceRankConfig, SentenceRankModel, from_torch,
                                         torch_network)

__all__ = ["DEFAULTS", "STATE_FILE", "train_sentence_rank"]

DEFAULTS: dict[str, Any] = {"epochs": 10, "batch_size": 256, "lr": 1e-3, "patience": 2, "seed": 0, "dev_seed": 1234,
                            "hidden": 256, "dropout": 0.1, "init_scale": 5.0, "init_bias": -2.5, "neighbours": 50,
                            "gamma_min": 0.1, "gamma_max": 1.0, "encode_batch_size": 256}
#: Options that decide the data or the network: a resumed run must have the same.
_FIXED = ("batch_size", "lr", "seed", "dev_seed", "hidden", "dropout", "init_scale", "init_bias", "neighbours",
          "gamma_min", "gamma_max")
STATE_FILE, OPTIMIZER_FILE = "state.json", "optimizer.safetensors"


def _encoder(encoder: Any, device: Any) -> tuple[Any, str, int]:
    """(encoder object, identity for the cache key, max_length) of a name / folder or an object with encode()."""
    if encoder is None or isinstance(encoder, (str, os.PathLike)):
        from capeval.models.sentence_encoder import DEFAULT_SENTENCE_ENCODER, load_sentence_encoder
        from capeval.sentence_cosine.metric import SentenceCosine

        name = DEFAULT_SENTENCE_ENCODER if encoder is None else encoder
        loaded = load_sentence_encoder(name, device=device)
        return loaded, SentenceCosine.cache_token({"sentence_cosine_encoder": name}), loaded.max_length
    if not callable(getattr(encoder, "encode", None)):
        raise TypeError(f"encoder must be a name, a folder or an object with encode(texts), got "
                        f"{type(encoder).__name__}.")
    return encoder, f"object:{getattr(encoder, 'name', type(encoder).__name__)}", int(getattr(encoder, "max_length",
                                                                                               256))


def _encode_new(encoder: Any, texts: list[str], batch_size: int, dim: int, progress_bar: bool | None) -> np.ndarray:
    """float16 unit vectors of new texts (WP / RW negatives), rounded as the cached corpus vectors are."""
    if not texts:
        return np.zeros((0, dim), dtype=np.float16)
    vectors = np.asarray(encoder.encode(texts, batch_size=batch_size, progress_bar=progress_bar), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if vectors.shape != (len(texts), dim) or not np.isfinite(vectors).all() or (norms < 1e-6).any():
        raise ValueError("the encoder returned a vector of the wrong size, zero or not finite.")
    return (vectors / norms).astype(np.float16)


def _flatten(pairs: Sequence, torch, device):
    """Index tensors of a batch: every (candidate, reference) row pair of the positives then the negatives, and the
    pair each belongs to."""
    counts = [len(p.references) for p in pairs]
    refs = [r for p in pairs for r in p.references]
    pos = [p.positive for p, n in zip(pairs, counts) for _ in range(n)]
    neg = [p.negative for p, n in zip(pairs, counts) for _ in range(n)]
    owner = [i for i, n in enumerate(counts) for _ in range(n)]
    as_long = lambda x: torch.as_tensor(x, dtype=torch.long, device=device)  # noqa: E731
    return (as_long(pos + neg), as_long(refs + refs), as_long(owner),
            torch.as_tensor(counts, dtype=torch.float32, device=device))


def _pair_margins(net, table, pairs, torch, device):
    """s(c+, R) − s(c−, R) per pair (mean logits over the references), a float tensor ``[len(pairs)]``."""
    candidates, references, owner, counts = _flatten(pairs, torch, device)
    logits = net(table[candidates].float(), table[references].float())
    half = logits.shape[0] // 2
    n = len(pairs)
    pos = torch.zeros(n, device=device).index_add_(0, owner, logits[:half]) / counts
    neg = torch.zeros(n, device=device).index_add_(0, owner, logits[half:]) / counts
    return pos - neg


def _accuracy(margins: np.ndarray) -> float:
    return float(((margins > 0) + 0.5 * (margins == 0)).mean()) if len(margins) else float("nan")


def evaluate_pairs(net, table, pairs: Sequence, *, batch_size: int = 2048) -> dict[str, float]:
    """Dev metrics of ``pairs``: ``dev_accuracy`` (pairwise, ties 1/2, in [0, 1]), ``dev_loss`` (mean
    −log σ(margin), nats) and ``dev_accuracy_<kind>`` per negative kind."""
    torch = require("torch")
    device = table.device
    net.eval()
    margins = []
    with torch.no_grad():
        for start in range(0, len(pairs), batch_size):
            margins.append(_pair_margins(net, table, pairs[start:start + batch_size], torch, device).double().cpu())
    m = torch.cat(margins)
    out = {"dev_accuracy": _accuracy(m.numpy()), "dev_loss": float(torch.nn.functional.softplus(-m).mean())}
    kinds = np.array([p.kind for p in pairs])
    for kind in NEGATIVE_KINDS:
        if (kinds == kind).any():
            out[f"dev_accuracy_{kind}"] = _accuracy(m.numpy()[kinds == kind])
    return out


def _checkpoints(out_dir: Path) -> list[Path]:
    found = [p for p in (out_dir / "checkpoints").glob("epoch-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def _save_checkpoint(out_dir: Path, epoch: int, model: SentenceRankModel, optimizer, log: dict[str, Any]) -> Path:
    """``checkpoints/epoch-N``: model files, Adam tensors (safetensors) and, last, ``state.json``."""
    from safetensors.torch import save_file

    folder = out_dir / "checkpoints" / f"epoch-{epoch}"
    if folder.exists():
        shutil.rmtree(folder)
    model.save_pretrained(folder)
    state = optimizer.state_dict()
    tensors, steps = {}, {}
    for index, entry in state["state"].items():
        for key, value in entry.items():
            if key == "step":
                steps[str(index)] = float(value)
            else:
                tensors[f"{index}.{key}"] = value.detach().cpu().contiguous()
    save_file(tensors, str(folder / OPTIMIZER_FILE))
    payload = {"epoch": epoch, "log": log, "optimizer": {"param_groups": state["param_groups"], "steps": steps}}
    (folder / STATE_FILE).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return folder


def _load_optimizer(optimizer, folder: Path, saved: dict[str, Any], torch) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(folder / OPTIMIZER_FILE))
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    for index, step in saved["steps"].items():
        state.setdefault(int(index), {})["step"] = torch.tensor(step, dtype=torch.float32)
    groups = [{**g, "betas": tuple(g["betas"])} if "betas" in g else g for g in saved["param_groups"]]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def _finish(out_dir: Path, log: dict[str, Any]) -> None:
    best = out_dir / "checkpoints" / f"epoch-{log['best_epoch']}"
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        shutil.copy2(best / name, out_dir / name)
    (out_dir / "training.json").write_text(json.dumps(log, indent=1), encoding="utf-8")


def train_sentence_rank(
    train: Mapping[str, Sequence[str]],
    dev: Mapping[str, Sequence[str]],
    out_dir: str | Path,
    *,
    encoder: Any = None,
    cache_dir: str | Path | None = None,
    held_out: Mapping[str, object] | None = None,
    catalog_name: str | None = None,
    corpus_report: dict[str, Any] | None = None,
    device: Any = None,
    resume: bool = True,
    progress_bar: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Train on ``train`` (``{image: captions}``), select the epoch on ``dev``, save the best to ``out_dir``.

    ``encoder``: the frozen sentence encoder (``None``: all-MiniLM-L6-v2; a name / folder; or an object with
    ``encode(texts, batch_size=, progress_bar=)``). ``cache_dir``: where the corpus vectors are cached (``None``:
    not cached). ``held_out``: ``{name: image names}`` no train / dev image may belong to (the reported benchmarks).
    ``catalog_name``: written to ``config.json`` (see :class:`~capeval.sentence_rank.model.SentenceRankConfig`).
    ``device``: ``"cpu"``, ``"cuda"`` ... (default CUDA when available). ``options`` override :data:`DEFAULTS`.
    Returns the log (also ``out_dir/training.json``).
    """
    torch, accelerate = require("torch", "accelerate", what="sentence_rank training")
    opts = _resolve_options(options)
    corpus = RankCorpus(train, dev, held_out)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    use_cpu = device == "cpu" or (device is None and not torch.cuda.is_available())
    accelerator = accelerate.Accelerator(cpu=use_cpu)
    enc, identity, max_length = _encoder(encoder, "cpu" if use_cpu else device)
    gamma = (float(opts["gamma_min"]), float(opts["gamma_max"]))
    started = time.time()
    base = cached_embeddings(corpus.texts, enc, cache_dir, identity=identity, batch_size=opts["encode_batch_size"],
                             progress_bar=progress_bar)
    config = _model_config(opts, int(base.shape[1]), enc, max_length, catalog_name)
    run = _Run(accelerator, None, None, None, config, corpus, enc, torch.from_numpy(base), None, None, opts, gamma,
               {}, out_dir, progress_bar)
    run.dev_plan, run.dev_table = _dev_pairs_and_table(run)
    torch.manual_seed(opts["seed"])
    net = torch_network(config)
    optimizer = torch.optim.Adam(net.parameters(), lr=opts["lr"])
    found = _checkpoints(out_dir) if resume else []
    if found:
        run.log = _resume(found[-1], out_dir, opts, net, optimizer)
    else:
        if resume is False and (out_dir / "checkpoints").exists():
            shutil.rmtree(out_dir / "checkpoints")
        run.log = _new_log(run, corpus_report, identity)
        run.log["initial_dev"] = evaluate_pairs(net.to(accelerator.device), run.dev_table, run.dev_plan.pairs)
        run.log["seconds_setup"] = round(time.time() - started, 1)
    run.net, run.optimizer = accelerator.prepare(net, optimizer)
    run.core = accelerator.unwrap_model(run.net)
    log = run.log
    for epoch in range(len(log["epochs"]) + 1, opts["epochs"] + 1):
        if stale(len(log["epochs"]), log["best_epoch"], opts["patience"]):
            break
        _run_epoch(run, epoch)
    if accelerator.is_main_process:
        _finish(out_dir, log)
    return log


def _resolve_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`DEFAULTS` overridden by ``options``, checked: known names, epochs, batch_size and neighbours ≥ 1,
    lr > 0 and 0 < gamma_min ≤ gamma_max ≤ 1."""
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"Unknown training option(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}.")
    opts = {**DEFAULTS, **options}
    if opts["epochs"] < 1 or opts["batch_size"] < 1 or not opts["lr"] > 0 or opts["neighbours"] < 1:
        raise ValueError("epochs, batch_size and neighbours must be >= 1 and lr > 0.")
    if not 0 < opts["gamma_min"] <= opts["gamma_max"] <= 1:
        raise ValueError("gamma_min and gamma_max must satisfy 0 < gamma_min <= gamma_max <= 1.")
    return opts


def _model_config(opts: dict[str, Any], dim: int, enc: Any, max_length: int,
                  catalog_name: str | None) -> SentenceRankConfig:
    """The model's configuration: sentence vectors of ``dim`` dimensions, the options' head sizes and initial
    scale / bias, the encoder's name and maximum length."""
    return SentenceRankConfig(dim=dim, hidden=int(opts["hidden"]), dropout=float(opts["dropout"]),
                              init_scale=float(opts["init_scale"]), init_bias=float(opts["init_bias"]),
                              encoder=str(getattr(enc, "name", "custom")), encoder_max_length=max_length,
                              catalog_name=catalog_name,
                              description="sentence_rank: a·cos + MLP([u, v, |u-v|, u*v]) on frozen sentence "
                                          "vectors")


@dataclass
class _Run:
    """What the epochs read and update: the accelerator, the prepared network (``core``: unwrapped) and optimizer,
    the configuration, the corpus, the encoder, the corpus captions' vectors (``base``, a tensor on the CPU), the
    fixed dev pairs and their vector table (on the accelerator's device), the options, the γ range of the WP / RW
    negatives, the log, the output folder and whether to show progress bars."""

    accelerator: Any
    net: Any
    core: Any
    optimizer: Any
    config: SentenceRankConfig
    corpus: RankCorpus
    enc: Any
    base: Any
    dev_plan: Any
    dev_table: Any
    opts: dict[str, Any]
    gamma: tuple[float, float]
    log: dict[str, Any]
    out_dir: Path
    progress_bar: bool | None

    @property
    def dim(self) -> int:
        """Dimensions of a sentence vector."""
        return self.config.dim


def _dev_pairs_and_table(run: _Run):
    """The fixed dev pairs (``dev_seed``) with their neighbours resolved, and the vector table they index: the corpus
    vectors, then those of the pairs' new captions (WP / RW), on the accelerator's device."""
    torch, opts = require("torch"), run.opts
    dev_plan = dev_pairs(run.corpus, opts["dev_seed"], neighbours=opts["neighbours"], gamma=run.gamma)
    dev_plan = resolve_pairs(run.corpus, run.base, dev_plan, opts["neighbours"], progress_bar=run.progress_bar)
    dev_table = torch.cat([run.base, torch.from_numpy(_encode_new(run.enc, dev_plan.texts, opts["encode_batch_size"],
                                                                  run.dim, run.progress_bar))])
    return dev_plan, dev_table.to(run.accelerator.device)


def _resume(last: Path, out_dir: Path, opts: dict[str, Any], net, optimizer) -> dict[str, Any]:
    """Load checkpoint ``last`` into ``net`` and ``optimizer`` and return its log (planning the ``epochs`` and
    ``patience`` asked now); a checkpoint of other fixed settings is refused."""
    torch = require("torch")
    saved = json.loads((last / STATE_FILE).read_text(encoding="utf-8"))
    log = saved["log"]
    clash = {k: (log["options"].get(k), opts[k]) for k in _FIXED if log["options"].get(k) != opts[k]}
    if clash:
        raise ValueError(f"{out_dir} holds a run with other settings {clash} (saved, asked); use another folder "
                         "or resume=False.")
    log["options"]["epochs"], log["options"]["patience"] = opts["epochs"], opts["patience"]
    net.load_state_dict({k: torch.from_numpy(v.copy())
                         for k, v in SentenceRankModel.from_pretrained(last).params.items()})
    _load_optimizer(optimizer, last, saved["optimizer"], torch)
    return log


def _new_log(run: _Run, corpus_report: dict[str, Any] | None, identity: str) -> dict[str, Any]:
    """The log of a new run: options, configuration, corpus sizes, dev pairs per negative kind, no epoch yet."""
    corpus, dev_plan = run.corpus, run.dev_plan
    return {"options": dict(run.opts), "config": run.config.to_dict(), "corpus": dict(corpus_report or {}),
            "train_images": len(corpus.train_images), "dev_images": len(corpus.dev_images),
            "train_captions": corpus.train_rows, "dev_pairs": len(dev_plan.pairs),
            "dev_pairs_by_kind": {k: sum(p.kind == k for p in dev_plan.pairs) for k in NEGATIVE_KINDS},
            "encoder_identity": identity, "epochs": [], "best_epoch": None, "best_dev": None}


def _run_epoch(run: _Run, epoch: int) -> None:
    """Train epoch ``epoch`` (from 1) on newly drawn pairs, score the dev pairs, log it with its timings (seconds)
    and save its checkpoint (main process)."""
    t0 = time.time()
    seed = run.opts["seed"] * 1_000_003 + epoch
    plan, table, t1, t2 = _epoch_pairs_and_table(run, seed)
    t3 = time.time()
    require("torch").manual_seed(seed)
    total, correct, count = _train_batches(run, table, _process_batches(run, plan.pairs),
                                           desc=f"sentence_rank epoch {epoch}/{run.opts['epochs']}")
    core = run.core
    entry: dict[str, Any] = {"epoch": epoch, "train_loss": total / max(1, count),
                             "train_accuracy": correct / max(1, count), "train_pairs": len(plan.pairs),
                             "train_pairs_by_kind": {k: sum(p.kind == k for p in plan.pairs)
                                                     for k in NEGATIVE_KINDS}}
    entry.update(evaluate_pairs(core, run.dev_table, run.dev_plan.pairs))
    entry.update({"scale": float(core.scale.detach()[0]), "bias": float(core.bias.detach()[0]),
                  "seconds_pairs": round(t1 - t0, 1), "seconds_neighbours": round(t2 - t1, 1),
                  "seconds_encode": round(t3 - t2, 1), "seconds_train": round(time.time() - t3, 1)})
    record_epoch(run.log, entry, "dev_accuracy")
    if run.accelerator.is_main_process:
        _save_checkpoint(run.out_dir, epoch, from_torch(core, run.config), run.optimizer, run.log)
    run.accelerator.wait_for_everyone()


def _epoch_pairs_and_table(run: _Run, seed: int):
    """``(pairs, vector table, time drawn, time resolved)``: the epoch's pairs drawn with ``seed``, their neighbours
    resolved, and the table of the corpus vectors and the new captions' (on the accelerator's device); the times
    are :func:`time.time` seconds."""
    torch, opts = require("torch"), run.opts
    plan = epoch_pairs(run.corpus, random.Random(seed), neighbours=opts["neighbours"], gamma=run.gamma)
    t1 = time.time()
    plan = resolve_pairs(run.corpus, run.base, plan, opts["neighbours"], progress_bar=run.progress_bar)
    t2 = time.time()
    extra = _encode_new(run.enc, plan.texts, opts["encode_batch_size"], run.dim, run.progress_bar)
    table = torch.cat([run.base, torch.from_numpy(extra)]).to(run.accelerator.device)
    return plan, table, t1, t2


def _process_batches(run: _Run, pairs: Sequence) -> list:
    """This process's batches of ``batch_size`` pairs: every ``num_processes``-th, the same count in every
    process."""
    accelerator, size = run.accelerator, run.opts["batch_size"]
    batches = [pairs[i:i + size] for i in range(0, len(pairs), size)]
    per_process = len(batches) // accelerator.num_processes or 1
    return batches[accelerator.process_index::accelerator.num_processes][:per_process]


def _train_batches(run: _Run, table, batches: list, desc: str) -> tuple[float, float, int]:
    """One optimizer step per batch on the pairs' logistic margin loss; ``(summed loss, pairs ranked right (a tie
    counts 1/2), pairs)``."""
    torch, accelerator, net, optimizer = require("torch"), run.accelerator, run.net, run.optimizer
    net.train()
    total, correct, count = 0.0, 0.0, 0
    bar = progress(batches, desc=desc, enabled=run.progress_bar) if accelerator.is_main_process else batches
    for batch in bar:
        margins = _pair_margins(net, table, batch, torch, accelerator.device)
        loss = torch.nn.functional.softplus(-margins).mean()
        optimizer.zero_grad()
        accelerator.backward(loss)
        optimizer.step()
        total += float(loss.item()) * len(batch)
        correct += float(((margins > 0).float() + 0.5 * (margins == 0).float()).sum())
        count += len(batch)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{total / count:.4f}", acc=f"{correct / count:.4f}")
    return total, correct, count
