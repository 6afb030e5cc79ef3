# Copyright 2024 The capeval authors. Apache-2.0.
"""SPICE-U (Wang et al., ECCV 2020): SPICE with concept uniqueness, as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.spice_u`` (``pip install "capeval[spice]"``).
"""
import evaluate
from capeval import DEFAULT_MAX_CAPTION_CHARS
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("spice_u",)

_CITATION = """\
@inproceedings{wang2020spiceu,
  title     = {Towards Unique and Informative Captioning of Images},
  author    = {Wang, Zeyu and Feng, Berthy and Narasimhan, Karthik and Russakovsky, Olga},
  booktitle = {ECCV},
  year      = {2020}
}
"""

_DESCRIPTION = """\
SPICE-U is the harmonic mean of SPICE's F-score and a uniqueness term: how rare the candidate's
scene-graph concepts are (Un(c) = share of COCO train2014 images whose captions do not contain c),
relative to the best and worst choice of as many concepts from the candidate and reference graphs
(Eq. 6 of the paper). It rewards captions that name the distinctive things in an image. Built on
capeval's Java-free SPICE; the uniqueness table (82,783 COCO train2014 images, 414,113 captions) ships
with capeval.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions against reference captions with SPICE-U (SPICE and concept uniqueness).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them.
    metrics (`list` of `str` or `str`, optional): capeval metric names or result keys across every capeval
        module, as in `capeval.score`; this module computes "spice_u" (and "uniqueness") when they are named
        and returns {} (with a warning) when they are not. For `evaluate.combine`. Default: SPICE-U.
    cleanup (`str`, optional): "thumb" (default) or "none": clean-up of the text parsed with
        `spice_input="raw"` (tokens never see it).
    max_caption_chars (`int` or `None`, optional): captions longer than this are refused before parsing
        (default 5000; None: no limit).
    tokenizer (`str`, optional): "ptb" (default; pure Python) or "ptb-java".
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0 on every metric, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for SPICE) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    spice_u (`float`): corpus SPICE-U, the mean of per-caption scores, 0 to 1.
    uniqueness (`float`): mean per-caption uniqueness, 0 to 1.
    per_caption (`dict`): {"spice_u": [...], "uniqueness": [...]}.
    signature (`str`): settings string (SPICE parser, model, synonyms, uniqueness table).

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list, an unknown option value or an unreadable uniqueness table.
    ImportError: naming `pip install "capeval[spice]"` when spaCy or its model is missing.

Examples:
    >>> import evaluate
    >>> spice_u = evaluate.load("capeval/spice_u")
    >>> result = spice_u.compute(
    ...     predictions=["a man riding a horse on the beach", "a horse"],
    ...     references=[["a man rides a horse along the beach", "a person on a horse at the shore"]] * 2,
    ...     tokenizer="ptb-java",
    ... )
    >>> [round(x, 3) for x in result["per_caption"]["uniqueness"]]
    [0.307, 0.904]
    >>> [round(x, 3) for x in result["per_caption"]["spice_u"]]
    [0.4, 0.328]
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpiceU(CaptionModule, evaluate.Metric):
    """SPICE-U with the shipped COCO train2014 uniqueness table; see ``capeval.score(..., metrics="spice_u")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            codebase_urls=["https://github.com/princetonvisualai/SPICE-U"],
            reference_urls=["https://www.ecva.net/papers/eccv_2020/papers_ECCV/html/350_ECCV_2020_paper.php"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        cleanup="thumb",
        tokenizer="ptb",
        max_caption_chars=DEFAULT_MAX_CAPTION_CHARS,
        empty="error",
        **options,  # the spice_u_* and spice_* options, each declared once (capeval.metric_options("spice_u"))
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            cleanup=cleanup,
            tokenizer=tokenizer,
            max_caption_chars=max_caption_chars,
            empty=empty,
            **options,
        )
