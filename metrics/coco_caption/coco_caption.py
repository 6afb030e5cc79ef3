# Copyright 2024 The capeval authors. Apache-2.0.
"""The COCO caption metrics (BLEU-1..4, METEOR 1.5, ROUGE-L, CIDEr-D, and SPIDEr on request) as a Hugging Face
`evaluate` module.

A thin wrapper: all logic is in ``capeval`` (``pip install capeval``); the numbers are pycocoevalcap 1.2's.
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
_FAMILY = ("bleu", "meteor", "rouge_l", "cider_d", "spider")
#: what it computes when ``metrics=`` is left out (SPIDEr needs SPICE's parser: capeval[spice])
_DEFAULT = ("bleu", "meteor", "rouge_l", "cider_d")
#: a metric it runs only as a part of one of its own: asked for alone, a ValueError names the module that computes it
_INSIDE = {"spice": ("spider", "capeval/spice")}

_CITATION = """\
@article{chen2015microsoft,
    title   = {Microsoft {COCO} Captions: Data Collection and Evaluation Server},
    author  = {Xinlei Chen and Hao Fang and Tsung-Yi Lin and Ramakrishna Vedantam and Saurabh Gupta and
               Piotr Doll{\\'a}r and C. Lawrence Zitnick},
    journal = {arXiv preprint arXiv:1504.00325},
    year    = {2015},
}
@inproceedings{papineni2002bleu,
    title     = {{BLEU}: a Method for Automatic Evaluation of Machine Translation},
    author    = {Kishore Papineni and Salim Roukos and Todd Ward and Wei-Jing Zhu},
    booktitle = {Proc. of ACL},
    year      = {2002},
}
@inproceedings{denkowski2014meteor,
    title     = {Meteor Universal: Language Specific Translation Evaluation for Any Target Language},
    author    = {Michael Denkowski and Alon Lavie},
    booktitle = {Proc. of the Ninth Workshop on Statistical Machine Translation},
    year      = {2014},
}
@inproceedings{lin2004rouge,
    title     = {{ROUGE}: A Package for Automatic Evaluation of Summaries},
    author    = {Chin-Yew Lin},
    booktitle = {Text Summarization Branches Out},
    year      = {2004},
}
@inproceedings{vedantam2015cider,
    title     = {{CIDEr}: Consensus-based Image Description Evaluation},
    author    = {Ramakrishna Vedantam and C. Lawrence Zitnick and Devi Parikh},
    booktitle = {Proc. of CVPR},
    year      = {2015},
}
@inproceedings{liu2017spider,
    title     = {Improved Image Captioning via Policy Gradient optimization of {SPIDEr}},
    author    = {Siqi Liu and Zhenhai Zhu and Ning Ye and Sergio Guadarrama and Kevin Murphy},
    booktitle = {Proc. of ICCV},
    year      = {2017},
}
"""

_DESCRIPTION = """\
The COCO caption evaluation metrics exactly as computed by pycocoevalcap 1.2 (the COCO caption
evaluation server's code): BLEU-1..4 ('closest' reference length), METEOR 1.5 (`-l en -norm`: the
original jar's algorithm in Python, reading the jar's language data; the jar's statistics and scores),
ROUGE-L (LCS F-measure, beta = 1.2) and CIDEr-D (n = 1..4, sigma = 6, clipped, x10). The same numbers
to 1e-9, but without Java (pure-Python PTB tokenizer and METEOR), no temporary files in site-packages
and no METEOR hangs. `meteor_backend="java"` runs the original jar instead, for verification.
On request, SPIDEr: the mean of CIDEr-D and SPICE, as aac-metrics computes it (needs capeval[spice]).
Tokens are computed from the captions as written, exactly as pycocoevalcap computes them, so the
default numbers are pycocoevalcap's (tested on all 20,000 Karpathy-test candidates).
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions against reference captions with the COCO caption metrics.

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them.
    metrics (`list` of `str` or `str`, optional): any of "bleu" (= bleu_1..bleu_4), "bleu_1".."bleu_4",
        "meteor", "rouge_l", "cider_d", "spider", or a comma-separated string. Default: all of them but
        "spider" (which parses captions with SPICE's spaCy pipeline: pip install "capeval[spice]"). Names of other
        capeval modules' metrics ("spice_u", ...) are accepted and left to those modules (`evaluate.combine`):
        this module computes only its own and returns {} (with a warning) when none is named. "spice" (or
        "spice_precision", "spice_recall") with none of this module's own raises ValueError naming the
        capeval/spice module: this module runs SPICE only inside "spider".
    cleanup (`str`, optional): "thumb" (default; strip, capitalise, end with one period) or "none".
        It applies to text that metrics read as text; these metrics read PTB tokens, which are always
        computed from the captions as written (pycocoevalcap's input), so it never changes their scores.
    tokenizer (`str`, optional): "ptb" (default; pure Python, same tokens as pycocoevalcap's Java
        PTBTokenizer) or "ptb-java" (that Java tokenizer itself).
    {metric options}
    max_caption_chars (`int` or `None`, optional): with METEOR or SPIDEr selected, captions longer than this
        are refused (ValueError naming the item) before they run. Default 5000; None: no limit.
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0 on every metric, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for SPICE) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    bleu_1, bleu_2, bleu_3, bleu_4 (`float`): corpus BLEU, 0 to 1.
    meteor (`float`): corpus METEOR (the jar's aggregate of all captions' statistics), 0 to 1.
    rouge_l (`float`): mean ROUGE-L, 0 to 1.
    cider_d (`float`): mean CIDEr-D, 0 to 10 (x10 as in pycocoevalcap; good COCO models reach 1.2-1.4).
    spider (`float`, when asked for): (CIDEr-D + SPICE) / 2 per caption and for the corpus, 0 to 5.5.
    per_caption (`dict`): for each key above, one float per prediction.
    signature (`str`): every setting that changes a number, e.g.
        "nrefs:2|clean:none|tok:...|bleu:closest|cider_d:df=refs,sigma=6|version:..." ("clean:none":
        no metric here read the cleaned text).

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list, a caption over max_caption_chars (METEOR) or an unknown option value.
    A caption with no word (only punctuation, emoji, zero-width characters) is scored as pycocoevalcap
    scores it (0 for a prediction), with a WordlessCaptionWarning naming it.

Examples:
    >>> import evaluate
    >>> coco = evaluate.load("capeval/coco_caption")
    >>> predictions = ["A dog runs across the grass.", "Two men ride horses on a beach."]
    >>> references = [
    ...     ["A brown dog running on a lawn.", "A dog runs through a grassy field."],
    ...     ["Two people riding horses along the shore.", "Men on horseback at the beach."],
    ... ]
    >>> results = coco.compute(predictions=predictions, references=references,
    ...                        metrics=["bleu", "rouge_l", "cider_d"])
    >>> {key: round(results[key], 3) for key in ("bleu_1", "bleu_4", "rouge_l", "cider_d")}
    {'bleu_1': 0.57, 'bleu_4': 0.0, 'rouge_l': 0.462, 'cider_d': 1.383}
    >>> [round(s, 3) for s in results["per_caption"]["rouge_l"]]
    [0.455, 0.468]
    >>> results["signature"].split("|")[-4:-1]
    ['bleu:closest', 'rouge_l:beta=1.2', 'cider_d:df=refs,sigma=6']

    One reference string per prediction, and METEOR (pure Python; the first use on a machine builds its
    paraphrase cache, about 5 s; later processes load it in a fraction of a second):

    >>> results = coco.compute(predictions=["A man rides a horse."],
    ...                        references=["A man riding a horse on a beach."],
    ...                        metrics="meteor")
    >>> round(results["meteor"], 3)
    0.363

    CIDEr-D of a single image is 0 with pycocoevalcap's document frequencies; use corpus ones:

    >>> coco.compute(predictions=predictions[:1], references=references[:1], metrics="cider_d")["cider_d"]
    0.0
    >>> one = coco.compute(predictions=predictions[:1], references=references[:1], metrics="cider_d",
    ...                    cider_df="coco-val2014")  # the first call computes and caches the table
    >>> round(one["cider_d"], 3), one["signature"].split("|")[-2]
    (1.703, 'cider_d:df=coco-val2014,sigma=6')
""", _FAMILY)



@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CocoCaption(CaptionModule, evaluate.Metric):
    """BLEU-1..4, METEOR, ROUGE-L and CIDEr-D as in pycocoevalcap, and SPIDEr; see ``capeval.score``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=[
                "https://arxiv.org/abs/1504.00325",
                "https://github.com/tylin/coco-caption",
                "https://github.com/salaniz/pycocoevalcap",
            ],
            codebase_urls=["https://github.com/salaniz/pycocoevalcap"],
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
        **options,  # the cider_df, meteor_* and spice_* options, each declared once (capeval.metric_options)
    ):
        keys = select_metrics(_DEFAULT if metrics is None else metrics, _FAMILY, inside=_INSIDE)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        # options of metrics that are not selected are ignored by capeval.score
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
