# Copyright 2024 The capeval authors. Apache-2.0.
"""CLIP-S and RefCLIP-S (Hessel et al., EMNLP 2021: "CLIPScore: A Reference-free Evaluation Metric for Image
Captioning") as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.vision_language`` (``pip install "capeval[evaluate,learned]"`` and
``open_clip_torch``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("clip_s", "ref_clip_s")

_CITATION = """\
@inproceedings{hessel2021clipscore,
    title     = {{CLIPScore}: A Reference-free Evaluation Metric for Image Captioning},
    author    = {Jack Hessel and Ari Holtzman and Maxwell Forbes and Ronan Le Bras and Yejin Choi},
    booktitle = {Proc. of EMNLP},
    pages     = {7514--7528},
    year      = {2021},
    url       = {https://arxiv.org/abs/2104.08718},
}
"""

_DESCRIPTION = """\
CLIP-S and RefCLIP-S (Hessel et al., EMNLP 2021), computed as the authors' clipscore.py computes them. CLIP-S is
reference-free: 2.5 * max(cos(E_image, E_text("A photo depicts " + caption)), 0) with OpenAI's CLIP ViT-B/32, in
[0, 2.5], higher = the caption fits the image better. RefCLIP-S is the harmonic mean 2ab/(a+b) of CLIP-S (a) and the
largest cosine between the caption and its references (b, every text encoded with the same prompt, neither clipped
nor scaled); where the reference divides by zero (a + b = 0) capeval returns 0. The corpus score of each is the mean
over the captions. Texts longer than CLIP's 77 tokens are cut as the reference cuts them (the end-of-text token kept),
with one CaptionTruncatedWarning naming them. Images are read by capeval's rules (EXIF orientation applied,
transparency composited onto white, 16-bit scaled), then preprocessed as the reference does (bicubic resize, centre
crop, CLIP's normalisation): identical to the reference on ordinary RGB and greyscale files. The default model is the
paper's, "openai/clip-vit-base-patch32", read from the Hugging Face cache (fetch it once online); any CLIP can be
named with clip_model. CLIP's 400M training pairs (WIT) are undisclosed: its overlap with any benchmark is unknown.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with CLIP: CLIP-S (image and caption) and RefCLIP-S (image, caption and references).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them (read by ref_clip_s only, but always required).
    metrics (`list` of `str` or `str`, optional): "clip_s", "ref_clip_s" or both (a list or a comma-separated
        string; "clipscore" and "refclipscore" are aliases). Default: both. Names of other capeval modules' metrics
        are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        none of its own is named.
    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a numpy array or
        a `datasets.Image` value. Required (ValueError naming the metric without it). Give it to `compute`, not to
        `add_batch`.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for COCO Caption) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    clip_s (`float`): the mean CLIP-S over the captions, 0 to 2.5, higher = closer to the image.
    ref_clip_s (`float`): the mean RefCLIP-S over the captions; 0 to 1.43 (= 2 * 2.5 * 1 / 3.5) whenever the best
        reference cosine is not negative, as it nearly always is with CLIP's text features (the formula is
        unbounded where that cosine is negative and close to minus CLIP-S; 0 where they sum to 0).
    per_caption (`dict`): for each key above, one float per prediction.
    signature (`str`): the model (its name and a hash of its weights), w=2.5, the prompt, the dtype, the image
        preprocessing and, for ref_clip_s, "refs=max", e.g. "clip_s:model=openai/clip-vit-base-patch32#1a2b3c4d,
        w=2.5,prefix=A%20photo%20depicts%20,dtype=float32,img=clip-reference-1" (one field, no line break).

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list, a missing or bad image (`images[3] ...`), no `images`, or an unknown option value.
    FileNotFoundError: a missing image file or checkpoint file. OSError: a Hub id that is neither in the Hugging
        Face cache nor reachable (the message names `hf download <id>`). ImportError: naming the
        package to install when torch, torchvision, open_clip or transformers are missing.

Examples:
    >>> import evaluate
    >>> clip_score = evaluate.load("capeval/clip_score")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval: a cat, an astronaut, a coffee cup
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               "a cup of coffee with a spoon on a wooden table"]

    Scoring needs CLIP's weights (about 600 MB; `hf download openai/clip-vit-base-patch32` once, then
    offline), so these lines are not run by the test suite:

    >>> result = clip_score.compute(predictions=predictions, references=references, images=images)  # doctest: +SKIP
    >>> sorted(result)  # doctest: +SKIP
    ['clip_s', 'per_caption', 'ref_clip_s', 'signature']
    >>> all(0 <= s <= 2.5 for s in result["per_caption"]["clip_s"])  # doctest: +SKIP
    True
    >>> result["signature"].split("|")[2].split("#")[0]  # doctest: +SKIP
    'clip_s:model=openai/clip-vit-base-patch32'
    >>> only = clip_score.compute(predictions=predictions, references=references, images=images,
    ...                           metrics="clip_s", clip_model="ViT-B/32")  # doctest: +SKIP
    >>> only["clip_s"] == result["clip_s"]  # doctest: +SKIP
    True

    Every image is required, and the options are checked before any model is loaded:

    >>> try:
    ...     clip_score.compute(predictions=predictions, references=references)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    clip_s, ref_clip_s need one image per prediction
    >>> try:
    ...     clip_score.compute(predictions=predictions, references=references, images=images, clip_dtype="bfloat16")
    ... except ValueError as err:
    ...     print(err)
    clip_dtype must be one of 'float32', 'float16', got 'bfloat16'; did you mean 'float16'?
    >>> try:
    ...     clip_score.compute(predictions=predictions, references=references, images=images,
    ...                        clip_model="/nowhere/ViT-B-32.pt")
    ... except FileNotFoundError as err:
    ...     print(err)
    clip_model: no such file or folder /nowhere/ViT-B-32.pt.
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClipScore(CaptionModule, evaluate.Metric):
    """CLIP-S and RefCLIP-S; see ``capeval.score(..., metrics="clip_s,ref_clip_s", images=...)``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/2104.08718"],
            codebase_urls=["https://github.com/jmhessel/clipscore"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        empty="error",
        **options,  # the clip_* options, each declared once (capeval.metric_options("clip_s"))
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
