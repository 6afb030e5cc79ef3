# Copyright 2024 The capeval authors. Apache-2.0.
"""PAC-S and RefPAC-S (Sarto et al., CVPR 2023: "Positive-Augmented Contrastive Learning for Image and Video
Captioning Evaluation") as a Hugging Face `evaluate` module.

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
_FAMILY = ("pac_s", "ref_pac_s")

_CITATION = """\
@inproceedings{sarto2023positive,
    title     = {Positive-Augmented Contrastive Learning for Image and Video Captioning Evaluation},
    author    = {Sara Sarto and Manuele Barraco and Marcella Cornia and Lorenzo Baraldi and Rita Cucchiara},
    booktitle = {Proc. of CVPR},
    pages     = {6914--6924},
    year      = {2023},
    url       = {https://arxiv.org/abs/2303.12112},
}
"""

_DESCRIPTION = """\
PAC-S and RefPAC-S (Sarto et al., CVPR 2023), computed as the authors' pac_score.py and compute_metrics.py compute
them: CLIP-S and RefCLIP-S (Hessel et al. 2021) with w = 2.0 instead of 2.5 and, instead of OpenAI's CLIP, the PAC-S
CLIP ViT-B/32 fine-tuned with positive-augmented contrastive learning on COCO (its training images and captions, plus
synthetic positives: generated captions of those images and generated images of their captions). PAC-S =
2.0 * max(cos(E_image, E_text("A photo depicts " + caption)), 0), in [0, 2]; RefPAC-S = the harmonic mean 2ab/(a+b)
of PAC-S (a) and the largest cosine between the caption and its references (b, same prompt, neither clipped nor
scaled), 0 where the reference divides by zero (a + b = 0). The corpus score is the mean over the captions. Texts
longer than CLIP's 77 tokens are cut as the reference cuts them (end-of-text kept), with one CaptionTruncatedWarning
naming them. Images are read by capeval's rules (EXIF orientation applied, transparency composited onto white, 16-bit
scaled), then preprocessed as the reference does: identical to it on ordinary RGB and greyscale files. The checkpoint
is the authors' clip_ViT-B-32.pth (the link in aimagelab/pacscore's README), looked for in
<capeval cache>/models/pac-s-clip-vit-b-32/ unless pac_model names it. Its starting point, OpenAI's CLIP, was trained
on 400M undisclosed pairs: its overlap with any benchmark is unknown.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with the PAC-S CLIP: PAC-S (image and caption) and RefPAC-S (image, caption and references).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them (read by ref_pac_s only, but always required).
    metrics (`list` of `str` or `str`, optional): "pac_s", "ref_pac_s" or both (a list or a comma-separated
        string; "pacscore" and "refpacscore" are aliases). Default: both. Names of other capeval modules' metrics
        are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        none of its own is named.
    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a numpy array or
        a `datasets.Image` value. Required (ValueError naming the metric without it). Give it to `compute`, not to
        `add_batch`.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `clip_model` for CLIP-S) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    pac_s (`float`): the mean PAC-S over the captions, 0 to 2, higher = closer to the image.
    ref_pac_s (`float`): the mean RefPAC-S over the captions; 0 to 1.33 (= 2 * 2 * 1 / 3) whenever the best
        reference cosine is not negative, as it nearly always is with CLIP's text features (the formula is
        unbounded where that cosine is negative and close to minus PAC-S; 0 where they sum to 0).
    per_caption (`dict`): for each key above, one float per prediction.
    signature (`str`): the model (the checkpoint's file name and a hash of its weights), w=2, the prompt, the
        dtype, the image preprocessing and, for ref_pac_s, "refs=max", e.g.
        "pac_s:model=clip_ViT-B-32.pth#1a2b3c4d,w=2,prefix=A%20photo%20depicts%20,dtype=float32,img=clip-reference-1".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list, a missing or bad image (`images[3] ...`), no `images`, a file that is not an OpenAI-format
        CLIP checkpoint, or an unknown option value.
    FileNotFoundError: a missing image file, a missing checkpoint (the default one included: the message says where
        to download it and where to put it). ImportError: naming the package to install when torch, torchvision,
        open_clip or transformers are missing.

Examples:
    >>> import evaluate
    >>> pac_score = evaluate.load("capeval/pac_score")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval: a cat, an astronaut, a coffee cup
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               "a cup of coffee with a spoon on a wooden table"]

    Scoring needs the PAC-S checkpoint (clip_ViT-B-32.pth, from the link in aimagelab/pacscore's README, put in
    capeval's cache folder or named with pac_model), so these lines are not run by the test suite:

    >>> result = pac_score.compute(predictions=predictions, references=references, images=images)  # doctest: +SKIP
    >>> sorted(result)  # doctest: +SKIP
    ['pac_s', 'per_caption', 'ref_pac_s', 'signature']
    >>> all(0 <= s <= 2 for s in result["per_caption"]["pac_s"])  # doctest: +SKIP
    True
    >>> result["signature"].split("|")[2].split("#")[0]  # doctest: +SKIP
    'pac_s:model=clip_ViT-B-32.pth'
    >>> named = pac_score.compute(predictions=predictions, references=references, images=images,
    ...                           metrics="pac_s", pac_model="checkpoints/clip_ViT-B-32.pth")  # doctest: +SKIP

    Every image is required, and the options are checked before any model is loaded:

    >>> try:
    ...     pac_score.compute(predictions=predictions, references=references)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    pac_s, ref_pac_s need one image per prediction
    >>> try:
    ...     pac_score.compute(predictions=predictions, references=references, images=images, pac_batch_size=0)
    ... except ValueError as err:
    ...     print(err)
    pac_batch_size must be an integer >= 1, got 0.
    >>> try:
    ...     pac_score.compute(predictions=predictions, references=references, images=images,
    ...                       pac_model="/nowhere/clip_ViT-B-32.pth")
    ... except FileNotFoundError as err:
    ...     print(err)
    pac_model: no such file or folder /nowhere/clip_ViT-B-32.pth.
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PacScore(CaptionModule, evaluate.Metric):
    """PAC-S and RefPAC-S; see ``capeval.score(..., metrics="pac_s,ref_pac_s", images=...)``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/2303.12112"],
            codebase_urls=["https://github.com/aimagelab/pacscore"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        empty="error",
        **options,  # the pac_* options, each declared once (capeval.metric_options("pac_s"))
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
