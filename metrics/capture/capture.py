# Copyright 2024 The capeval authors. Apache-2.0.
"""CAPTURE (Dong et al. 2024: "Benchmarking and Improving Detail Image Caption", the DetailCaps benchmark's metric
for detailed captions) as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.capture`` (``pip install "capeval[evaluate,capture]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("capture",)

_CITATION = """\
@article{dong2024benchmarking,
    title   = {Benchmarking and Improving Detail Image Caption},
    author  = {Dong, Hongyuan and Li, Jiawen and Wu, Bohong and Wang, Jiacong and Zhang, Yuan and Guo, Haoyuan},
    journal = {arXiv preprint arXiv:2405.19092},
    year    = {2024},
}
"""

_DESCRIPTION = """\
CAPTURE (Dong et al. 2024, the DetailCaps benchmark's metric for detailed captions), computed as capture-metric
0.1.13 computes it: every sentence of the candidate and of each reference is parsed into a scene graph by the FACTUAL
parser (lizhuang144/flan-t5-base-VG-factual-sg, a Flan-T5-base, 5 beams), the sentence graphs of a caption are
merged, stop-word objects (background, scene, image, ...) are dropped, and the candidate's objects, attributes and
relations are matched to the reference's: first exactly, then by WordNet synonyms (or one containing the other),
then softly, by the cosine of all-mpnet-base-v2 phrase vectors of what is left. Per kind, a precision, a recall and
an F1; the score is (α·F1_objects + β·F1_attributes + γ·F1_relations) / (α + β + γ), α = β = 0.5, γ = 0.2, in
[0, 1], the mean over the references; the corpus score is the mean over the captions. No image is read. Exact to
capture-metric 0.1.13 on the same models and NLTK data: verified on tiny models of the real architectures (a T5
and a random MPNet), not on the released weights. The parser and the encoder come from the Hugging Face cache (or
folders); NLTK's Punkt, perceptron tagger and WordNet from NLTK's data folders (`capeval capture nltk-data` writes
them offline).
"""

_KWARGS_DESCRIPTION = with_options("""
Scores detailed image captions with CAPTURE: the caption's scene graph against its references'.

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption or a
        non-empty list of them.
    metrics (`list` of `str` or `str`, optional): "capture" (the default). Names of other capeval modules' metrics
        are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        "capture" is not named.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules are accepted and passed over, because `evaluate.combine` sends every
    option to every module; an option no capeval module knows raises ValueError.

Returns:
    capture (`float`): the mean CAPTURE over the captions, in [0, 1], higher = better.
    capture_object_f1, capture_attribute_f1, capture_relation_f1 (`float`): the means of each F1, in [0, 1].
    per_caption (`dict`): {"capture": ..., "capture_object_f1": ..., "capture_attribute_f1": ...,
        "capture_relation_f1": ...}, one float per prediction each.
    capture_details (`list` of `dict`): per prediction, object_precision, object_recall, object_f1 and the same
        for attribute and relation, as fractions (the reference prints them ×100, rounded to 2 decimals).
    signature (`str`): the reference's version, the parser, the phrase encoder, the weights and the three switches,
        e.g. "capture:v=0.1.13,parser=lizhuang144/flan-t5-base-VG-factual-sg,
        enc=sentence-transformers/all-mpnet-base-v2,a=0.5,b=0.5,g=0.2,syn=yes,soft=yes,stop=yes".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption or an empty reference
        list; weights whose capture_alpha + capture_beta is not 1; an unknown option value.
    FileNotFoundError: NLTK's data are missing (the message gives `capeval capture nltk-data`), or the parser or
        the phrase encoder is neither a folder nor in the Hugging Face cache and cannot be downloaded (the message
        gives the command that fetches it). ImportError: naming the package to install when torch, transformers or
        nltk are missing.

Examples:
    >>> import evaluate
    >>> capture = evaluate.load("capeval/capture")
    >>> predictions = ["A brown dog runs on the green grass. It carries a red ball.",
    ...                "Two cats sleep on a blanket."]
    >>> references = [["A brown dog running on a lawn with a red ball in its mouth."],
    ...               "Two grey cats sleeping on a red blanket next to a window."]

    Scoring needs the FACTUAL parser and all-mpnet-base-v2 (from the Hugging Face cache) and NLTK's data
    (`capeval capture nltk-data`), so these lines are not run by the test suite:

    >>> result = capture.compute(predictions=predictions, references=references)  # doctest: +SKIP
    >>> sorted(result["per_caption"])  # doctest: +SKIP
    ['capture', 'capture_attribute_f1', 'capture_object_f1', 'capture_relation_f1']
    >>> all(0 <= s <= 1 for s in result["per_caption"]["capture"])  # doctest: +SKIP
    True

    The options are checked before any model is loaded:

    >>> try:
    ...     capture.compute(predictions=predictions, references=references, capture_alpha=0.7)
    ... except ValueError as err:
    ...     print(err)
    capture_alpha + capture_beta must be 1 (CAPTURE's reference requires it), got 0.7 + 0.5 = 1.2.
    >>> try:
    ...     capture.compute(predictions=predictions, references=references, capture_batch_size=0)
    ... except ValueError as err:
    ...     print(err)
    capture_batch_size must be an integer >= 1, got 0.
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Capture(CaptionModule, evaluate.Metric):
    """CAPTURE; see ``capeval.score(..., metrics="capture")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/2405.19092"],
            codebase_urls=["https://github.com/foundation-multimodal-models/CAPTURE"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        empty="error",
        **options,  # the capture_* options, each declared once (capeval.metric_options("capture"))
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            empty=empty,
            **options,
        )
