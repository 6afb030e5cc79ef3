# Copyright 2024 The capeval authors. Apache-2.0.
"""FLEUR and RefFLEUR (Lee et al., ACL 2024: "FLEUR: An Explainable Reference-Free Evaluation Metric for Image
Captioning Using a Large Multimodal Model") as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.judges`` (``pip install "capeval[evaluate,judges]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("fleur", "ref_fleur")

_CITATION = """\
@inproceedings{lee2024fleur,
    title     = {{FLEUR}: An Explainable Reference-Free Evaluation Metric for Image Captioning Using a Large
                 Multimodal Model},
    author    = {Yebin Lee and Imseong Park and Myungjoo Kang},
    booktitle = {Proc. of ACL},
    pages     = {3732--3746},
    year      = {2024},
    url       = {https://aclanthology.org/2024.acl-long.205},
}
"""

_DESCRIPTION = """\
FLEUR and RefFLEUR (Lee et al., ACL 2024), computed as the authors' fleur.py and reffleur.py compute them: a large
multimodal model (LLaVA-1.5-13B in the paper, "llava-hf/llava-1.5-13b-hf" here by default) is asked FLEUR's question,
to rate the caption against the image from 0.0 to 1.0 (RefFLEUR: with the references in the question too), greedy
decoding with LLaVA's llava_v1 conversation and images padded to a square; the answer's number is read as the
reference reads it and its decimals are smoothed over the probabilities of the digit tokens at the steps that wrote
them (sum_d p(d) * d * 0.1, plus sum_d p(d) * d * 0.01 for a second decimal; 0.9 * p("0") + p("1") for an answer of
1.0). Per caption in [0, 1], higher = better; the corpus score is the mean over the captions that got a score. An
answer without a usable number gives NaN for that caption, is listed in judge_failures and named in a
JudgeFailureWarning (the reference scripts reused the previous score or skipped the item). Any transformers
image-text-to-text model can be the judge (fleur_model); results then name it ("FLEUR prompt, judge <id>"), since
only the paper's model gives FLEUR's numbers. The judge's training data (LLaVA-1.5's instruction data includes COCO
images; its CLIP's 400M pairs are undisclosed) makes its overlap with any benchmark unknown.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with a multimodal-LLM judge: FLEUR (image and caption) and RefFLEUR (image, caption and
references).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them (read by ref_fleur only, but always required).
    metrics (`list` of `str` or `str`, optional): "fleur", "ref_fleur" or both (a list or a comma-separated
        string). Default: both. Names of other capeval modules' metrics are accepted and left to those modules
        (`evaluate.combine`): this module returns {} (with a warning) when none of its own is named.
    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a numpy array or
        a `datasets.Image` value. Required (ValueError naming the metrics without it). Give it to `compute`, not to
        `add_batch`.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules are accepted and passed over, because `evaluate.combine` sends every
    option to every module; an option no capeval module knows raises ValueError.

Returns:
    fleur (`float`): the mean FLEUR over the captions that got a score, 0 to 1, higher = better (NaN when none
        did).
    ref_fleur (`float`): the same for RefFLEUR.
    per_caption (`dict`): for each key above, one float per prediction; NaN for a caption whose answer gave no
        usable number.
    judge_failures (`dict`): for each key above, a list of {"index", "answer", "reason"}, one per NaN caption
        (empty when every caption got a score).
    judges (`dict`): for each key above, what judged: "FLEUR (LLaVA-1.5-13B)" / "RefFLEUR (LLaVA-1.5-13B)" for
        the paper's model, else "FLEUR prompt, judge <id>" / "RefFLEUR prompt, judge <id>".
    fleur_explanations (`dict`): with fleur_explain=True only: for each key above, the judge's explanation per
        prediction (None where there is no score).
    signature (`str`): the judge (its name and a hash of its files), whether it is the paper's, the prompt, the
        dtype, the batch size, max_new_tokens and the image preparation, e.g. "fleur:judge=llava-hf/llava-1.5-13b-hf
        #1a2b3c4d,paper=yes,prompt=fleur,dtype=float16,batch=8,max_new=512,img=pad-square" (one field, no line
        break).

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty reference
        list, a missing or bad image (`images[3] ...`), no `images`, a caption containing LLaVA's "<image>"
        placeholder, a model that is not a vision-language model, or an unknown option value; a judge of more
        than 3 billion parameters on the CPU without fleur_force_cpu=True.
    FileNotFoundError: fleur_model is neither a folder nor a Hub model id. OSError: a Hub id that is neither in
        the Hugging Face cache nor reachable. ImportError: naming the package to install when torch, transformers
        or Pillow are missing.

Examples:
    >>> import evaluate
    >>> fleur = evaluate.load("capeval/fleur")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval: a cat, an astronaut, a coffee cup
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               "a cup of coffee with a spoon on a wooden table"]

    Scoring needs the 13B judge (about 26 GB in float16, `hf download llava-hf/llava-1.5-13b-hf` once)
    and a GPU, so these lines are not run by the test suite:

    >>> result = fleur.compute(predictions=predictions, references=references, images=images)  # doctest: +SKIP
    >>> sorted(result)  # doctest: +SKIP
    ['fleur', 'judge_failures', 'judges', 'per_caption', 'ref_fleur', 'signature']
    >>> result["judges"]["fleur"]  # doctest: +SKIP
    'FLEUR (LLaVA-1.5-13B)'
    >>> all(0 <= s <= 1 for s in result["per_caption"]["fleur"])  # doctest: +SKIP
    True
    >>> only = fleur.compute(predictions=predictions, references=references, images=images,
    ...                      metrics="fleur", fleur_explain=True)  # doctest: +SKIP
    >>> len(only["fleur_explanations"]["fleur"])  # doctest: +SKIP
    3

    Every image is required, and the options are checked before any model is loaded:

    >>> try:
    ...     fleur.compute(predictions=predictions, references=references)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    fleur, ref_fleur need one image per prediction
    >>> try:
    ...     fleur.compute(predictions=predictions, references=references, images=images, fleur_batch_size=0)
    ... except ValueError as err:
    ...     print(err)
    fleur_batch_size must be an integer >= 1, got 0.
    >>> try:
    ...     fleur.compute(predictions=predictions, references=references, images=images, fleur_dtype="int8")
    ... except ValueError as err:
    ...     print(err)
    fleur_dtype must be one of 'auto', 'float32', 'float16', 'bfloat16', got 'int8'.
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Fleur(CaptionModule, evaluate.Metric):
    """FLEUR and RefFLEUR; see ``capeval.score(..., metrics="fleur,ref_fleur", images=...)``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://aclanthology.org/2024.acl-long.205"],
            codebase_urls=["https://github.com/Yebin46/FLEUR"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        empty="error",
        **options,  # the fleur_* options, each declared once (capeval.metric_options("fleur"))
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            images=images,
            empty=empty,
            **options,
        )
