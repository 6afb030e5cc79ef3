"""capeval: image-caption evaluation metrics, benchmarks and human-evaluation tooling.

The functional core is :func:`capeval.score`::

    >>> import capeval
    >>> result = capeval.score(["A dog runs on the grass."],
    ...                        [["A dog is running on grass.", "A brown dog runs."]],
    ...                        metrics=["bleu", "rouge_l"])
    >>> sorted(result)
    ['bleu_1', 'bleu_2', 'bleu_3', 'bleu_4', 'per_caption', 'rouge_l', 'signature']

Everything heavier (SPICE parsing, benchmarks, Hub export) is imported lazily.
"""
from capeval._version import __version__
from capeval.api import available_metrics, score
from capeval.coverage import OutOfVocabularyWarning
from capeval.dataset_scoring import score_dataset
from capeval.language import NonEnglishWarning
from capeval.loaded_models import clear_loaded_models
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.registry import metric_options
from capeval.validation import DEFAULT_MAX_CAPTION_CHARS, EmptyCaptionWarning, WordlessCaptionWarning

__all__ = ["DEFAULT_MAX_CAPTION_CHARS", "CaptionMetric", "EmptyCaptionWarning", "MetricOutput", "NonEnglishWarning",
           "Option", "OutOfVocabularyWarning", "WordlessCaptionWarning", "__version__", "available_metrics",
           "clear_loaded_models", "metric_options", "score", "score_dataset"]
