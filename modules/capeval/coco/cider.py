"""CIDEr-D exactly as pycocoevalcap 1.2's ``CiderScorer`` (Vedantam et al. 2015).

For n = 1..4, every caption becomes a TF-IDF vector of its n-grams: ``tf * (log(N) - log(max(1, df)))``
where ``df`` is the number of documents (images) whose references contain the n-gram and ``N`` the
number of documents. The prediction's similarity to each reference is
``sum_g min(v_pred[g], v_ref[g]) * v_ref[g] / (|v_pred| |v_ref|)`` (clipped cosine), times the
Gaussian length penalty ``exp(-(d^2) / (2 sigma^2))`` with ``sigma = 6`` and ``d`` the difference of
the captions' bigram counts (pycocoevalcap's "length"). The per-caption score is the mean over n
of the mean over references, times 10; the corpus score is the mean of the per-caption scores.

Scores are >= 0 and at most 10 (a prediction equal to all its references, with every n-gram rare).

Document frequencies (option ``cider_df``):

* ``"references"`` (default, pycocoevalcap): from the references of the evaluated set itself, one
  document per prediction. A one-image call therefore scores 0 (every n-gram has df = N = 1);
  CIDEr-D is a corpus-level metric. With fewer than :data:`MIN_DF_DOCUMENTS` (10) predictions a
  :class:`SmallCorpusWarning` says so and names ``cider_df="coco-val2014"`` (the score itself stays pycocoevalcap's).
* ``"coco-val2014"``: from the captions of all 40,504 COCO val2014 images, computed once with the
  batch's clean-up and tokenizer and cached (see :mod:`capeval.coco.document_frequency`); ``N = 40504``. Useful to
  score small sets or single captions on the COCO scale.
* a :class:`~capeval.coco.document_frequency.DocumentFrequency` counted over the references of a larger set that
  contains this batch, one document per prediction (``settings["source"] == "references"``; what
  :func:`capeval.score_dataset` counts in its first pass): the batch then scores exactly as it would inside that set
  with ``"references"``, and the signature says ``df=refs``.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse as sp

from capeval.advice import Setting, with_words, words
from capeval.batch import CaptionBatch
from capeval.coco.document_frequency import (DocumentFrequency, coco_document_frequency,
                                             reference_document_frequency)
from capeval.coco.ngrams import BatchNgrams, batch_ngrams
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option, OptionValueError
from capeval.validation import warn_at_caller

__all__ = ["CIDER_DF_OPTION", "CiderD", "DF_CHOICES", "MIN_DF_DOCUMENTS", "SmallCorpusWarning", "cider_from_ngrams"]

#: Values of the ``cider_df`` option and their short names in the signature.
DF_CHOICES = {"references": "refs", "coco-val2014": "coco-val2014"}

SIGMA = 6.0
N_MAX = 4
#: Below this many documents (predictions), document frequencies from the evaluated references say little: warn.
MIN_DF_DOCUMENTS = 10


#: The ``cider_df`` option, one declaration for ``cider_d`` and ``spider``: a name of :data:`DF_CHOICES` or a
#: :class:`~capeval.coco.document_frequency.DocumentFrequency` counted over references (checked in ``CiderD``).
CIDER_DF_OPTION = Option(
    default="references", kind="any", python_types=(DocumentFrequency,), metavar="NAME",
    help="CIDEr-D's document frequencies: references (the default, pycocoevalcap's: the references of the call "
         "itself, one document per prediction, so a single image scores 0) or coco-val2014 (the captions of the "
         "40,504 COCO val2014 images, computed once and cached, to score a few captions on COCO's scale), or in "
         "Python a DocumentFrequency "
         "table counted over the references of a larger set that contains the batch")


class SmallCorpusWarning(UserWarning):
    """CIDEr-D's document frequencies come from the references of only a few predictions (see :data:`MIN_DF_DOCUMENTS`)."""


def _order_norms(matrix: sp.csr_matrix, order: np.ndarray, n: int) -> np.ndarray:
    """``(rows x n)`` Euclidean norms of each row restricted to the grams of each order."""
    rows = np.repeat(np.arange(matrix.shape[0], dtype=np.int64), np.diff(matrix.indptr))
    sq = np.bincount(rows * n + order[matrix.indices], weights=matrix.data**2, minlength=matrix.shape[0] * n)
    return np.sqrt(sq).reshape(matrix.shape[0], n)


def cider_from_ngrams(
    ng: BatchNgrams, df: np.ndarray, n_documents: int, sigma: float = SIGMA
) -> tuple[float, np.ndarray]:
    """CIDEr-D ``(corpus score, per-caption scores)`` from n-gram counts and document frequencies.

    Args:
        ng: n-gram counts of predictions and references (orders 1..4).
        df: document frequency of every gram column of ``ng`` (0 where unseen).
        n_documents: number of documents ``df`` was counted over (``N``; ``log(N)`` is the ref-length term).
    """
    n = ng.table.n
    order = ng.table.order.astype(np.int64)
    weight = np.log(float(n_documents)) - np.log(np.maximum(1.0, df))
    # TF-IDF vectors and their norms once per distinct caption, then each caption's row (the same values)
    counts, row_of = ng.table.distinct()
    vectors = sp.csr_matrix((counts.data * weight[counts.indices], counts.indices, counts.indptr), shape=counts.shape)
    norms = _order_norms(vectors, order, n)
    hyp, refs = vectors[row_of[: ng.n_predictions]], vectors[row_of[ng.n_predictions:]]
    hyp_norm, ref_norm = norms[row_of[: ng.n_predictions]], norms[row_of[ng.n_predictions:]]

    # clipped dot product of each reference with its prediction, per order
    clipped = hyp[ng.ref_item].minimum(refs).multiply(refs).tocoo()
    dot = np.bincount(
        clipped.row.astype(np.int64) * n + order[clipped.col],
        weights=clipped.data,
        minlength=refs.shape[0] * n,
    ).reshape(refs.shape[0], n)
    denom = hyp_norm[ng.ref_item] * ref_norm
    nonzero = (hyp_norm[ng.ref_item] != 0) & (ref_norm != 0)
    sim = np.where(nonzero, dot / np.where(nonzero, denom, 1.0), dot)

    # Gaussian penalty on the difference of bigram counts (pycocoevalcap's "length")
    bigrams_hyp = np.maximum(ng.hyp_lengths - 1, 0)
    bigrams_ref = np.maximum(ng.ref_lengths - 1, 0)
    delta = (bigrams_hyp[ng.ref_item] - bigrams_ref).astype(np.float64)
    sim *= np.exp(-(delta**2) / (2 * sigma**2))[:, None]

    n_items = ng.hyp.shape[0]
    summed = np.zeros((n_items, n))
    for k in range(n):
        summed[:, k] = np.bincount(ng.ref_item, weights=sim[:, k], minlength=n_items)
    n_refs = np.bincount(ng.ref_item, minlength=n_items)
    per_caption = summed.mean(axis=1) / n_refs * 10.0
    return float(np.mean(per_caption)), per_caption


class CiderD(CaptionMetric):
    """CIDEr-D as in pycocoevalcap (see module docstring); ``cider_df`` picks the document frequencies."""

    pauses_gc: ClassVar[bool] = True

    name: ClassVar[str] = "cider_d"
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    document_frequency_option: ClassVar[str | None] = "cider_df"
    options: ClassVar[dict] = {"cider_df": CIDER_DF_OPTION}

    def __init__(self, **options) -> None:
        super().__init__(**options)
        mode = self.config["cider_df"]
        self.table: DocumentFrequency | None = None
        if isinstance(mode, DocumentFrequency):
            if mode.settings.get("source") != "references":
                raise ValueError("cider_df as a DocumentFrequency table must be counted over the references of a set "
                                 "that contains the batch (settings['source'] == 'references').")
            self.table, mode = mode, "references"
        elif not isinstance(mode, str) or mode not in DF_CHOICES:  # names or a table: not choices an Option states
            from capeval.suggest import closest

            found = closest(mode, list(DF_CHOICES), n=1) if isinstance(mode, str) else []
            raise OptionValueError("cider_df", mode, "one of " + ", ".join(map(repr, DF_CHOICES))
                                   + " or a DocumentFrequency table", found[0] if found else None)
        self.df_mode = mode

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        ng = batch_ngrams(batch, N_MAX)
        if self.table is not None:  # the references' frequencies over a larger set (score_dataset's first pass)
            df = self.table.lookup(ng.table.gram_strings())
            n_docs = self.table.n_documents
        elif self.df_mode == "references":
            df, n_docs = reference_document_frequency(ng)
            if n_docs < MIN_DF_DOCUMENTS:
                warn_at_caller(with_words(SmallCorpusWarning, words(
                    "cider_df", f"CIDEr-D's document frequencies come from the references of only {n_docs} "
                    "prediction(s) (", Setting("references"), ", pycocoevalcap's default): n-grams shared by them "
                    f"weigh little or nothing{' and a single prediction always scores 0' if n_docs == 1 else ''}. To "
                    "score a few captions on COCO's scale, pass ", Setting("coco-val2014"), ".")))
        else:
            table = coco_document_frequency(cleanup=batch.cleanup, tokenizer=batch.tokenizer)
            df = table.lookup(ng.table.gram_strings())
            n_docs = table.n_documents
        corpus, per_caption = cider_from_ngrams(ng, df, n_docs)
        return MetricOutput(
            corpus={"cider_d": corpus},
            per_caption={"cider_d": per_caption.tolist()},
            signature=f"df={DF_CHOICES[self.df_mode]},sigma={SIGMA:g}",
        )
