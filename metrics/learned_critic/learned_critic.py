# Copyright 2024 The capeval authors. Apache-2.0.
"""The learned critic (Cui et al., CVPR 2018: "Learning to Evaluate Image Captioning") as a Hugging Face
`evaluate` module.

A thin wrapper: all logic is in ``capeval.critic`` (``pip install "capeval[evaluate,learned]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("critic", "critic_ref", "critic_img", "critic_plus")

_CITATION = """\
@inproceedings{cui2018learning,
    title     = {Learning to Evaluate Image Captioning},
    author    = {Yin Cui and Guandao Yang and Andreas Veit and Xun Huang and Serge Belongie},
    booktitle = {Proc. of CVPR},
    year      = {2018},
    url       = {https://arxiv.org/abs/1806.06422},
}
"""

_DESCRIPTION = """\
The learned critic of Cui et al. (CVPR 2018): a discriminator trained to tell human-written captions from
machine-generated and pathologically transformed ones (captions of other images, permuted words, random words).
The score of a candidate caption is the critic's probability that a human wrote it, in [0, 1], higher = more
human-like, averaged over every reference caption used as the context; the corpus score is the mean over the
captions. Three critics: "critic" reads the image and a reference (the paper's metric), "critic_ref" only a
reference (no image needed) and "critic_img" only the image (no reference read). Beyond the paper, "critic_plus"
combines the caption-level critic (image + reference) with the all-MiniLM-L6-v2 sentence cosine of candidate and
reference, by three weights fitted on Flickr8k dev (no vision-language model). The defaults were picked by
capeval's rule (BENCHMARKS.md): "critic" and "critic_ref" default to critic-flickr8k-joint (Flickr8k train's images
and COCO train2014's captions; recommended for both: at least CIDEr-D on every clean benchmark, for critic since the
rule's re-run with unseen words mapped from GloVe, not significantly above it on COMPOSITE-8k), "critic_img" to the paper's image-only critic (not recommended: at chance on
Flickr8k-Expert). The paper reproductions stay available by name, critic_model="critic-flickr8k" (P(human-written)
as the paper trains it; it judges machine style and is at chance on Flickr8k-Expert: not for ranking captions). Offline substitutions, recorded in each critic's config: the image features are
EfficientNet-Lite0 ImageNet features (1280-d, 224 x 224) instead of the paper's ResNet-152, and the word
embeddings start from GloVe 6B 50-d instead of 300-d; a critic trained with other features or vectors
(`capeval critic train`) is chosen with the `critic_model` options.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with a learned critic: P(the caption is human-written | image and/or reference).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them (critic_img reads none, but they are still required).
    metrics (`list` of `str` or `str`, optional): any of "critic" (image + reference), "critic_ref" (reference
        only), "critic_img" (image only) and "critic_plus" (the caption-level critic + the MiniLM sentence cosine,
        image + references), or a comma-separated string. Default: "critic" when `images` is
        given, "critic_ref" when it is not (the result key says which one was computed; asking for "critic",
        "critic_img" or "critic_plus" without `images` raises ValueError). Names of other capeval modules' metrics are
        accepted and left to those modules (`evaluate.combine`): this module returns {} (with a warning) when
        none of its own is named.
    images (`list`, optional): one image per prediction, in prediction order: a path, a `PIL.Image.Image`, a
        numpy array or a `datasets.Image` value. Required by critic, critic_img and critic_plus (ValueError
        naming the metric without it), ignored by critic_ref. Give it to `compute`, not to `add_batch`.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for SPICE) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    critic, critic_ref, critic_img (`float`): the selected ones: the mean over the captions of P(human) (raw) or
        of its readable value (the default for the shipped critics, see critic_scale), 0 to 1, higher = more
        human-like. critic_plus (`float`): the same for the combiner's probability, averaged over the references. A caption with no word token (only punctuation or emoji) scores 0.
    per_caption (`dict`): for each key above, one float per prediction.
    coverage (`dict`): per key above, the share (0 to 1) of the predictions' tokens the critic read (the first 15
        of each) that its vocabulary knows; the others share one unknown vector; None without a token.
        coverage_per_caption (`dict`): the same per prediction. reference_coverage (`dict`): the references' share,
        for a critic that reads them. An OutOfVocabularyWarning names the predictions with many unknown words (all of
        them, or clearly more than on the critic's training captions, 98.8 to 100 % known) and the unknown words.
    signature (`str`): the critic (the shipped name, or the folder name and a hash of its files), its context
        "refs=mean" and oov=, e.g.
        "nrefs:1|clean:none|critic:model=critic-flickr8k-joint,ctx=image+reference,refs=mean,oov=glove-map,
        scale=readable@<digest>|...".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list, a missing or bad image (`images[3] ...`), critic or critic_img without `images`, or an
        unknown option value. FileNotFoundError: a missing image file, or a critic folder that does not exist
        (also the shipped critics when capeval was installed without its weights).

Examples:
    >>> import evaluate
    >>> critic = evaluate.load("capeval/learned_critic")
    >>> from capeval.io import example_images
    >>> images = example_images()  # three small photos bundled with capeval
    >>> [path.name for path in images]
    ['chelsea.jpg', 'astronaut.jpg', 'coffee.jpg']
    >>> predictions = ["a tabby cat looking at the camera", "an astronaut in an orange suit",
    ...                "a cup of coffee on a saucer"]
    >>> references = [["a cat with stripes"], ["a smiling woman in a space suit in front of a flag"],
    ...               ["a cup of coffee with a spoon on a wooden table"]]
    >>> result = critic.compute(predictions=predictions, references=references, images=images)
    >>> sorted(result), all(0 <= p <= 1 for p in result["per_caption"]["critic"])
    (['coverage', 'coverage_per_caption', 'critic', 'per_caption', 'reference_coverage', 'signature'], True)
    >>> field = result["signature"].split("|")[2]  # the critic, its context, oov= and the scale (with its map's digest)
    >>> field.split(",scale=")[0], field.split(",scale=")[1][:9]
    ('critic:model=critic-flickr8k-joint,ctx=image+reference,refs=mean,oov=glove-map', 'readable@')

    Without images the default is the reference-only critic; the image critics must then be left out:

    >>> sorted(critic.compute(predictions=predictions, references=references))
    ['coverage', 'coverage_per_caption', 'critic_ref', 'per_caption', 'reference_coverage', 'signature']
    >>> try:
    ...     critic.compute(predictions=predictions, references=references, metrics="critic")
    ... except ValueError as err:
    ...     print(str(err).split(":")[0])
    critic needs one image per prediction

    All three, PIL images accepted as well as paths:

    >>> from PIL import Image
    >>> photos = [Image.open(path) for path in images]
    >>> every = critic.compute(predictions=predictions, references=references, images=photos,
    ...                        metrics=["critic", "critic_ref", "critic_img"], critic_img_model="critic-flickr8k-img")
    >>> [key for key in every if key.startswith("critic")]
    ['critic', 'critic_ref', 'critic_img']
    >>> round(every["critic"], 6) == round(result["critic"], 6)
    True

    critic_plus (beyond the paper): the caption-level critic and the all-MiniLM-L6-v2 sentence cosine, combined:

    >>> plus = critic.compute(predictions=predictions, references=references, images=images, metrics="critic_plus")
    >>> plus["signature"].split("|")[2].split(",scale=")[0]
    'critic_plus:model=critic-flickr8k-plus,critic=critic-flickr8k-caption,encoder=all-minilm-l6-v2,refs=mean,oov=glove-map'
    >>> [round(p, 1) for p in plus["per_caption"]["critic_plus"]]  # readable: among Flickr8k dev's human captions
    [0.6, 0.2, 0.9]
    >>> raw = critic.compute(predictions=predictions, references=references, images=images, metrics="critic_plus",
    ...                      critic_scale="raw")
    >>> [round(p, 1) for p in raw["per_caption"]["critic_plus"]]  # the combiner's probabilities: all three fit
    [1.0, 0.8, 1.0]
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class LearnedCritic(CaptionModule, evaluate.Metric):
    """The learned critic (critic / critic_ref / critic_img / critic_plus); see
    ``capeval.score(..., metrics="critic")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://arxiv.org/abs/1806.06422"],
            codebase_urls=["https://github.com/richardaecn/cvpr18-caption-eval"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        images=None,
        empty="error",
        **options,  # the critic_* options, each declared once (capeval.metric_options("critic"), ...)
    ):
        if metrics is None:  # the paper's critic when there are images, else the one that needs none
            metrics = ["critic"] if images is not None else ["critic_ref"]
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        # options of metrics that are not selected are ignored by capeval.score
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            images=images,
            empty=empty,
            **options,
        )
