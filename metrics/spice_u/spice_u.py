"""SPICE-U (Wang et al., ECCV 2020): SPICE with concept uniqueness, as a Hugging Face ``evaluate`` metric."""
import evaluate

import capeval
from capeval.hf import caption_features

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

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of candidate captions (str).
    references: per candidate, one reference string or a list of reference strings.
    cleanup: "thumb" (default) or "none": clean-up of the text parsed with spice_input="raw" (tokens
        never see it).
    max_caption_chars: captions longer than this are refused before parsing (default 5000; None: no limit).
    tokenizer: "ptb" (default) or "ptb-java".
    spice_u_table: "coco-train2014" (default, shipped) or the path of a table built with
        `capeval spice-u build-uniqueness`.
    spice_u_detailed: also return per-caption concepts with their uniqueness ("spice_u_details").
    Any SPICE option (spice_parser_model, spice_workers, spice_input, spice_synonyms, spice_cache).
Returns:
    spice_u: corpus SPICE-U, the mean of per-caption scores (0 to 1).
    uniqueness: mean per-caption uniqueness (0 to 1).
    per_caption: {"spice_u": [...], "uniqueness": [...]}.
    signature: settings string (SPICE parser, model, synonyms, uniqueness table).
Examples:
    >>> spice_u = evaluate.load("metrics/spice_u")
    >>> result = spice_u.compute(
    ...     predictions=["a man riding a horse on the beach", "a horse"],
    ...     references=[["a man rides a horse along the beach", "a person on a horse at the shore"]] * 2,
    ...     tokenizer="ptb-java",
    ... )
    >>> [round(x, 3) for x in result["per_caption"]["uniqueness"]]
    [0.307, 0.904]
    >>> [round(x, 3) for x in result["per_caption"]["spice_u"]]
    [0.4, 0.328]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SpiceU(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            codebase_urls=["https://github.com/princetonvisualai/SPICE-U"],
            reference_urls=["https://www.ecva.net/papers/eccv_2020/papers_ECCV/html/350_ECCV_2020_paper.php"],
        )

    def _compute(self, predictions, references, cleanup="thumb", tokenizer="ptb", **options):
        return capeval.score(predictions, references, metrics=["spice_u"], cleanup=cleanup, tokenizer=tokenizer,
                             **options)
