"""THumB 1.0 transparent human evaluation (Kasai et al., NAACL 2022).

* :func:`score` — per-caption totals, system means, bootstrap intervals, strictly best/worst counts;
* :mod:`capeval.thumb.rubric` — validation and (re-)weighted totals;
* :mod:`capeval.thumb.aggregate` — bootstrap over images and strictly best/worst definition;
* :mod:`capeval.thumb.records` — reading THumB-format score files (JSONL/CSV);
* :mod:`capeval.thumb.agreement` — Cohen's κ and disagreement lists for two annotators;
* :mod:`capeval.thumb.sheets` — blinded annotation sheets, key files, collecting filled sheets.
* :mod:`capeval.thumb.checks` — attention checks: captions of other images mixed in, annotators' pass rates.
"""
from capeval.thumb.api import score
from capeval.thumb.rubric import RubricWeights, validate_ratings

__all__ = ["RubricWeights", "score", "validate_ratings"]
