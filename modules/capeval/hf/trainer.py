"""A ready ``compute_metrics`` for ``transformers.Seq2SeqTrainer(predict_with_generate=True)``.

>>> from capeval.hf import compute_metrics                                   # doctest: +SKIP
>>> trainer = Seq2SeqTrainer(model, args, eval_dataset=eval_ds, compute_metrics=compute_metrics(
...     processor, metrics=["bleu_4", "cider_d"], references=refs_by_image, ids=eval_ds["image_id"]))
>>> trainer.evaluate()["eval_cider_d"]

What it does with the ``EvalPrediction`` the Trainer hands it: decodes the generated ids and the labels with
the tokenizer (or processor) — ``-100`` and any other negative id are dropped first, special tokens skipped —
pairs every caption with its references, scores them with :func:`capeval.score` and returns the corpus
scores as flat floats (the Trainer prefixes them with ``eval_``). Empty generated captions (common at early
checkpoints) score 0 with an :class:`~capeval.validation.EmptyCaptionWarning` instead of aborting the
evaluation (``empty="error"`` restores the error). The signature of the settings is logged (logger
``capeval.hf.trainer``, level INFO) and kept, with the full result, on the returned object.

References, one of:

* ``None``: the decoded labels. With ``ids`` (one per evaluation row), every row of an id contributes its label
  to that id's references — so a dataset with one caption per row (five rows per COCO image) is scored with
  all five references per image.
* a list, one entry per evaluation row: a reference string or a list of them.
* a mapping ``{id: reference string or list}`` with ``ids``: references kept outside the dataset, keyed by
  image id or example id.

With ``ids``, each distinct id is scored once (its first row's caption), as the COCO evaluation scores one
caption per image. The Trainer calls ``compute_metrics`` only when the evaluation set has labels, so keep them
there even when the references come from ``references=``. ``batch_eval_metrics=True`` works too (batches are
gathered until the last one). Torch and transformers are never imported here: the arrays are read through numpy.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from capeval.api import option_names, score
from capeval.registry import resolve
from capeval.validation import check_empty_option, normalize_references

logger = logging.getLogger(__name__)


def _rows(ids: Any) -> list[list[int]]:
    """Token id rows without padding: negative ids (``-100`` from the labels or the Trainer's padding) dropped.

    ``ids``: a numpy array, a (CPU or GPU) torch tensor, a list of rows (ragged allowed), or a tuple whose first
    element is one of these (``generate`` returned several outputs).
    """
    import numpy as np

    if isinstance(ids, tuple):
        ids = ids[0]
    if hasattr(ids, "detach"):
        ids = ids.detach().cpu().numpy()
    rows = [np.asarray(row) for row in ids] if isinstance(ids, list) else np.asarray(ids)
    if not isinstance(rows, list) and rows.ndim != 2 or any(np.ndim(row) != 1 for row in rows):
        raise ValueError(f"expected token ids of shape (rows, length), got an array of shape {np.shape(ids)}; "
                         "set predict_with_generate=True so that the Trainer passes generated ids, not logits.")
    for row in rows:
        if row.size and row.dtype.kind not in "iu":
            raise ValueError(f"expected integer token ids, got {row.dtype} values; set predict_with_generate=True "
                             "so that the Trainer passes generated ids, not logits.")
    return [[int(t) for t in row if t >= 0] for row in rows]


class CaptionMetricsForTrainer:
    """The callable :func:`compute_metrics` returns (see the module docstring).

    Attributes:
        keys: the result keys returned, in order.
        signature: the signature of the last evaluation (``None`` before the first).
        result: the last full :func:`capeval.score` result (per caption scores included).
        captions: the last decoded captions that were scored, one per scored item.
    """

    def __init__(self, tokenizer_or_processor, metrics=None, references=None, ids=None, *, empty: str = "zero",
                 **options: Any) -> None:
        if not callable(getattr(tokenizer_or_processor, "batch_decode", None)):
            raise TypeError(f"tokenizer_or_processor must have a batch_decode method (a transformers tokenizer or "
                            f"processor), got a {type(tokenizer_or_processor).__name__}.")
        self.decoder = tokenizer_or_processor
        self.keys = [key for keys in resolve(metrics).values() for key in keys]
        self.metrics = metrics
        self.empty = check_empty_option(empty)
        unknown = sorted(set(options) - option_names())
        if unknown:
            raise ValueError(f"Unknown option(s) {unknown} for capeval.score; valid: {sorted(option_names())}.")
        images = options.pop("images", None)
        self.options = options
        self.ids = None if ids is None else list(ids)
        self.images = self._check_images(images)
        self.references = self._check_references(references)
        self.signature: str | None = None
        self.result: dict[str, Any] | None = None
        self.captions: list[str] = []
        self._pending: list[tuple[list[list[int]], list[list[int]] | None]] = []

    def _check_images(self, images):
        """``images=``: one image per evaluation row (for metrics that read images), as a list, or ``None``."""
        if images is None:
            return None
        if isinstance(images, (str, bytes, Mapping)):
            raise TypeError("images must be a list with one image per evaluation row, got a single "
                            f"{type(images).__name__}.")
        images = list(images)
        if self.ids is not None and len(images) != len(self.ids):
            raise ValueError(f"images has {len(images)} entries but ids has {len(self.ids)}; give one of each per "
                             "evaluation row.")
        return images

    def _check_references(self, references):
        if references is None:
            return None
        if isinstance(references, Mapping):
            if self.ids is None:
                raise ValueError("references is a mapping by id: also give ids=, one id per evaluation row in "
                                 "order (e.g. ids=eval_dataset['image_id']).")
            keys = list(references)
            checked = normalize_references([references[k] for k in keys])
            missing = [i for i in self.ids if i not in references]
            if missing:
                raise ValueError(f"ids has {len(missing)} id(s) without references, e.g. {missing[:3]!r}.")
            return dict(zip(keys, checked))
        if isinstance(references, str):
            raise TypeError("references must be a list (one entry per evaluation row) or a {id: references} "
                            "mapping, got a single string.")
        checked = normalize_references(references)
        if self.ids is not None and len(checked) != len(self.ids):
            raise ValueError(f"references has {len(checked)} entries but ids has {len(self.ids)}; give one of each "
                             "per evaluation row.")
        return checked

    def __call__(self, eval_pred, compute_result: bool | None = None) -> dict[str, float]:
        """Score one ``EvalPrediction``; with ``batch_eval_metrics=True`` batches are gathered until
        ``compute_result`` is true."""
        predictions = _rows(eval_pred.predictions)
        labels = None if eval_pred.label_ids is None else _rows(eval_pred.label_ids)
        if compute_result is None:
            return self._score(predictions, labels)
        self._pending.append((predictions, labels))
        if not compute_result:
            return {}
        pending, self._pending = self._pending, []
        labels = None if any(lab is None for _, lab in pending) else [row for _, lab in pending for row in lab]
        return self._score([row for pred, _ in pending for row in pred], labels)

    def _decode(self, rows: list[list[int]]) -> list[str]:
        return [text.strip() for text in self.decoder.batch_decode(rows, skip_special_tokens=True)]

    def _score(self, prediction_rows: list[list[int]], label_rows: list[list[int]] | None) -> dict[str, float]:
        captions = self._decode(prediction_rows)
        n = len(captions)
        if self.ids is not None and len(self.ids) != n:
            raise ValueError(f"the Trainer passed {n} generated captions but ids= has {len(self.ids)} entries; give "
                             "one id per row of the evaluation dataset, in order (e.g. eval_dataset['image_id']).")
        if self.references is None and label_rows is None:
            raise ValueError("no labels in the evaluation dataset and no references= given: nothing to score against.")
        if isinstance(self.references, list) and len(self.references) != n:
            raise ValueError(f"references= has {len(self.references)} entries but the Trainer passed {n} generated "
                             "captions; give one entry per row of the evaluation dataset, in order.")
        if self.images is not None and len(self.images) != n:
            raise ValueError(f"images= has {len(self.images)} entries but the Trainer passed {n} generated captions; "
                             "give one image per row of the evaluation dataset, in order.")
        labels = None if label_rows is None else self._decode(label_rows)
        predictions, references = self._pair(captions, labels)
        extra = {} if self.images is None else {"images": [self.images[row] for row in self._scored_rows(n)]}
        result = score(predictions, references, metrics=self.metrics, empty=self.empty, **self.options, **extra)
        self.result, self.captions, self.signature = result, predictions, result["signature"]
        logger.info("capeval: %d captions scored (%d empty); signature: %s", len(predictions),
                    sum(1 for p in predictions if not p.strip()), self.signature)
        return {key: float(result[key]) for key in self.keys}

    def _scored_rows(self, n: int) -> list[int]:
        """The evaluation rows that are scored, in order: all ``n``, or each distinct id's first row."""
        if self.ids is None:
            return list(range(n))
        first: dict[Hashable, int] = {}
        for row, key in enumerate(self.ids):
            first.setdefault(key, row)
        return list(first.values())

    def _pair(self, captions: list[str], labels: list[str] | None) -> tuple[list[str], list[list[str]]]:
        """One caption and its references per scored item (per distinct id when ``ids`` is given)."""
        if self.ids is None:
            if self.references is not None:
                return captions, self.references
            return captions, [[label] for label in labels]
        first: dict[Hashable, int] = {}
        gathered: dict[Hashable, list[str]] = {}
        for row, key in enumerate(self.ids):
            first.setdefault(key, row)
            if self.references is None:
                gathered.setdefault(key, []).extend([labels[row]] if labels[row].strip() else [])
        predictions = [captions[row] for row in first.values()]
        if isinstance(self.references, dict):
            return predictions, [self.references[key] for key in first]
        if isinstance(self.references, list):
            return predictions, [self.references[row] for row in first.values()]
        empty = [key for key in first if not gathered[key]]
        if empty:
            raise ValueError(f"id {empty[0]!r} has no non-empty label to use as a reference.")
        return predictions, [gathered[key] for key in first]


def compute_metrics(
    tokenizer_or_processor,
    metrics: Sequence[str] | str | None = None,
    references: Sequence[str | Sequence[str]] | Mapping[Hashable, str | Sequence[str]] | None = None,
    ids: Sequence[Hashable] | None = None,
    *,
    empty: str = "zero",
    **options: Any,
) -> Callable[..., dict[str, float]]:
    """A ``compute_metrics`` for ``Seq2SeqTrainer(predict_with_generate=True)`` scoring captions with capeval.

    Args:
        tokenizer_or_processor: anything with ``batch_decode`` (a tokenizer, or a processor such as BLIP's).
        metrics: as in :func:`capeval.score` (default BLEU, METEOR, ROUGE-L, CIDEr-D; no Java).
        references: ``None`` (the decoded labels), a list with one entry per evaluation row, or a mapping
            ``{id: references}`` together with ``ids`` (see the module docstring).
        ids: one image id or example id per evaluation row, in order (e.g. ``eval_dataset["image_id"]``);
            each distinct id is scored once.
        empty: ``"zero"`` (default): an empty generated caption scores 0 with a warning; ``"error"`` raises.
        **options: :func:`capeval.score` options (``cider_df``, ``tokenizer="ptb-java"``, ``meteor_backend``...).
            ``images``: one image per evaluation row, in order (e.g. ``eval_dataset["image"]``), for metrics
            that read images; with ``ids`` each id is scored with its first row's image.

    Returns:
        A :class:`CaptionMetricsForTrainer`: called with an ``EvalPrediction`` it returns ``{result key: float}``
        for the selected metrics only (no per-caption lists, no signature string).

    Raises:
        ValueError, TypeError: at once for an unknown metric or option name or bad references; at evaluation
            time when the number of generated captions does not match ``ids`` or ``references``.
    """
    return CaptionMetricsForTrainer(tokenizer_or_processor, metrics, references, ids, empty=empty, **options)
