# Copyright 2024 The capeval authors. Apache-2.0.
"""Polos (Wada et al., CVPR 2024: "Polos: Multimodal Metric Learning from Human Feedback for Image Captioning") as
a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.vision_language.polos`` (``pip install "capeval[evaluate,learned]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("polos",)

_CITATION = """\
@inproceedings{wada2024polos,
    title     = {Polos: Multimodal Metric Learning from Human Feedback for Image Captioning},
    author    = {Yuiga Wada and Kanta Kaneda and Daichi Saito and Komei Sugiura},
    booktitle = {Proc. of CVPR},
    pages     = {13559--13568},
    year      = {2024},
    url       = {https://arxiv.org/abs/2402.18091},
}
"""

_DESCRIPTION = """\
Polos (Wada et al., CVPR 2024), computed from the authors' released checkpoint as their code computes it: a score in
(0, 1) from a feed-forward network trained on Polaris's 131k human judgments. Its inputs, per reference: supervised
SimCSE (RoBERTa-base) sentence vectors of the candidate c and the reference r - the first token of the 13 hidden
layers mixed by learned weights after a layer norm whose mean and variance are those of the whole batch - with
|c - r| and c * r, and unnormalised CLIP ViT-B/32 features of the image v and of "A photo depicts " + candidate /
reference (t_c, t_r) with |v - t_c|, v * t_c, |t_r - t_c|, t_r * t_c; a sigmoid; the maximum over the references.
As in the reference, items are scored in input order in batches of 32, and a batch reads as many references per
item as its item with the fewest has. The corpus score is the mean. The checkpoint (reprod.zip from the link in
keio-smilab24/Polos's README) is looked for in <capeval cache>/models/polos/ and in the reference's cache; the
SimCSE tokenizer and configuration come from the Hugging Face cache (princeton-nlp/sup-simcse-roberta-base).
Verified against a transcription of the reference on random weights, not on the released checkpoint.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with Polos: the image, the caption and its references.

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption or a
        non-empty list of them.
    metrics (`list` of `str` or `str`, optional): "polos" (the default). Names of other capeval modules' metrics
        are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        "polos" is not named.
    images (`list`): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a numpy array or
        a `datasets.Image` value. Required (ValueError naming the metric without it). Give it to `compute`, not to
        `add_batch`.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules are accepted and passed over, because `evaluate.combine` sends every
    option to every module; an option no capeval module knows raises ValueError.

Returns:
    polos (`float`): the mean Polos over the captions, in (0, 1), higher = better.
    per_caption (`dict`): {"polos": one float per prediction}.
    signature (`str`): the checkpoint (its folder and file, a hash of its weights), the text encoder, the batch
        size, the reference rule, the prompt and the image preprocessing, e.g.
        "polos:model=reprod/reprod.ckpt#1a2b3c4d,text=princeton-nlp/sup-simcse-roberta-base,batch=32,refs=batch-min,
        prefix=A%20photo%20depicts%20,img=clip-reference-1".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty reference
        list, a missing or bad image (`images[3] ...`), no `images`, a file that is not a Polos checkpoint (or a
        pickle that would run code), or an unknown option value.
    FileNotFoundError: a missing image file or checkpoint (the default one included: the message says where to
        download it and where to put it). OSError: the text encoder's configuration is neither cached nor reachable
        (the message gives the command that fetches it). ImportError: naming the package to install when torch,
        torchvision, open_clip or transformers are missing.

Examples:
    >>> import evaluate
    >>> polos = evaluate.load("capeval/polos")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval: a cat, an astronaut, a coffee cup
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               "a cup of coffee with a spoon on a wooden table"]

    Scoring needs the released checkpoint (reprod.zip, from the link in keio-smilab24/Polos's README, unzipped into
    capeval's cache folder or named with polos_model), so these lines are not run by the test suite:

    >>> result = polos.compute(predictions=predictions, references=references, images=images)  # doctest: +SKIP
    >>> sorted(result)  # doctest: +SKIP
    ['per_caption', 'polos', 'signature']
    >>> all(0 < s < 1 for s in result["per_caption"]["polos"])  # doctest: +SKIP
    True

    Every image is required, and the options are checked before any model is loaded:

    >>> try:
    ...     polos.compute(predictions=predictions, references=references)
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    polos needs one image per prediction
    >>> try:
    ...     polos.compute(predictions=predictions, references=references, images=images, polos_batch_size=0)
    ... except ValueError as err:
    ...     print(err)
    polos_batch_size must be an integer >= 1, got 0.
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Polos(CaptionModule, evaluate.Metric):
    """Polos; see ``capeval.score(..., metrics="polos", images=...)``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/2402.18091"],
            codebase_urls=["https://github.com/keio-smilab24/Polos"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        empty="error",
        **options,  # the polos_* options, each declared once (capeval.metric_options("polos"))
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
