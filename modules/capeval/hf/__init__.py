"""Hugging Face glue built on :func:`capeval.score`.

* :mod:`capeval.hf.modules`: what the ``evaluate`` module scripts in ``metrics/`` share (input features, mixed
  reference forms, ``evaluate.combine`` options, ``metrics=`` across modules).
* :mod:`capeval.hf.trainer`: :func:`compute_metrics`, a ready ``compute_metrics`` for
  ``transformers.Seq2SeqTrainer(predict_with_generate=True)``.

Neither imports ``evaluate``, ``datasets``, ``transformers`` or torch when imported.
"""
from capeval.hf.modules import CaptionModule, caption_features, select_metrics, takes_options, with_options
from capeval.hf.trainer import CaptionMetricsForTrainer, compute_metrics

__all__ = ["CaptionMetricsForTrainer", "CaptionModule", "caption_features", "compute_metrics", "select_metrics",
           "takes_options", "with_options"]
