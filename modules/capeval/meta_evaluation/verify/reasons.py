"""What ``capeval verify`` knows about the published numbers, as data: how ``published.json`` spells capeval's keys,
the example outputs, the digits the sources print, the published names that are no capeval metric, and every reason a
published number is no target whatever data and weights are here (:data:`REASONS`) with the rule saying which numbers
it applies to (:data:`RULES`, first match wins). Nothing here is computed: the planner (:mod:`.planning`) reads it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capeval.meta_evaluation.verify.records import Skip

#: published.json spelling -> capeval result key.
KEY_OF = {"refclip_s": "ref_clip_s", "refpac_s": "ref_pac_s"}
#: Published-only names whose THumB system scores are printed on their own scale (not × 100), as capeval's
#: image-reading metrics' are (:func:`capeval.meta_evaluation.verify.metric_facts.own_scale_metrics`): TIGEr, BERTScore.
OWN_SCALE_PUBLISHED = frozenset({"tiger", "bertscore"})
#: Example outputs of the reference repositories (``published.json`` benchmarks that are not ``capeval bench``'s).
EXAMPLES = {
    "clipscore-example": "clipscore_example",
    "pacscore-example": "pacscore_example",
    "pycocoevalcap-example": "pycocoevalcap_example",
}
#: Image folders (under the data directory) that hold re-encoded copies, not the images the papers scored.
RESIZED_IMAGE_DIRS = ("images-224",)
#: Published names that are not capeval metrics, with what they are.
NOT_IN_CAPEVAL = {
    "tiger": "TIGEr (Jiang et al. 2019: SCAN text-image grounding + references)",
    "bert_s_pp": "BERT-S++ (Yi et al. 2020: BERTScore re-weighted over the references)",
    "nubia": "NUBIA (Kane et al. 2020: a learned text-similarity metric)",
    "wmd": "WMD (word mover's distance; LCEval computes it only as one of its features)",
    "nneval": "NNEval (Sharif et al. 2018)",
    "bertscore": "BERTScore (Zhang et al. 2020)",
    "refonlyc": "RefOnlyC (Kasai et al. 2022)",
    "critic_no_da": "the critic trained without data augmentation (Cui et al. released no weights; capeval ships no "
                    "such model)",
}

#: Decimals the source prints where the JSON number lost trailing zeros: ``(source, where)`` -> decimals, or a dict
#: metric / field -> decimals.
PRINTED_DECIMALS: dict[tuple[str, str], int | dict[str, int]] = {
    ("cui2018", "Table 1"): 3,
    ("cui2018", "Table 2"): 3,
    ("sharif2019", "Table 4"): 3,
    ("sharif2019", "Table 4 (Pearson)"): 3,
    ("sharif2019", "Table 4 (Spearman)"): 3,
    ("sharif2019", "Table 13"): 2,
    ("wang2020", "Table 2"): {"HC": 1, "HI": 1, "HM": 1, "MM": 1, "avg": 2},
    ("kasai2022", "Table 4"): 2,
    ("kasai2022", "Table 2 (automatic metrics)"): {"bleu_4": 1, "rouge_l": 1, "spice": 1, "cider_d": 1,
                                                   "bertscore": 3, "clip_s": 3, "refclip_s": 3},
    ("kasai2022", "Table 2 (THumB 1.0)"): {"precision": 2, "recall": 2, "fluency": 3, "conciseness": 2,
                                           "inclusive": 2, "total": 2, "total_ci": 2},
    ("kasai2022", "Table 3"): 0,
    ("clipscore-readme", "README.md: Command Line"): 4,
    ("clipscore-readme", "README.md: MSCOCO dataset in pycocoevalcap"): 3,
    ("pacscore-readme", "README.md: Quick Start"): 4,
}
#: Relative slack of the tolerance comparison (float rounding of numbers exactly half a unit away).


@dataclass(frozen=True)
class Reason:
    """Why a published number is no target here: ``name`` (its handle), ``missing`` (the few words the summary
    groups it by) and ``text`` (the whole reason, a row's ``reason``); always of kind ``irreproducible``."""

    name: str
    missing: str
    text: str

    @property
    def skip(self) -> Skip:
        return Skip("irreproducible", self.text, self.missing)


#: Each reason a published number is no target whatever is here.
REASONS = (
    Reason('cui_protocol', "Cui et al.'s τ variant unknown",
           "Cui et al.'s τ is not reproducible: the paper does not name the τ variant and marks its n-gram "
           "values as differing from the SPICE paper's; no variant tried reproduces them (capeval, same pairs: "
           'CIDEr-D τ-b .466 vs .289; docs/benchmarks/measurements.md, "Agreement with human judgments")'),
    Reason('cui_critic', "Cui et al.'s critic weights never released",
           "Cui et al. released no critic weights; capeval's critic is retrained "
           '(docs/benchmarks/measurements.md, "Learned critic")'),
    Reason('lceval_split', "LCEval's COMPOSITE test split never released",
           "measured on the LCEval authors' 7,996-caption COMPOSITE test split, which was never released "
           '(capeval scores all 11,985 captions)'),
    Reason('composite_text', "COMPOSITE's original caption text unavailable",
           "COMPOSITE's original caption text is not available: capeval reads UMIC's decoding of its "
           'bert-base-cased WordPiece ids (lower-cased, most punctuation removed), so the scores are not the '
           "paper's (CIDEr-D τ-c 37.60 vs 37.7, BLEU-4 30.52 vs 30.6, METEOR 38.72 vs 38.9)"),
    Reason('wang_labels', "SPICE-U paper's PASCAL-50S labels differ",
           "the SPICE-U paper's PASCAL-50S labels evidently differ from the released ones (its CIDEr-D HC 53.0; "
           'pycocoevalcap gives 68.7 on these files with all references; docs/benchmarks/measurements.md, '
           '"Agreement with human judgments")'),
    Reason('lceval_refs', "LCEval paper's references and ties unstated",
           'the LCEval paper does not say which of the references it used, nor how ties count'),
    Reason('all_refs_ties', 'tie policy of the all-50-reference numbers unstated',
           "pycocoevalcap's all-50-reference numbers (68.7 / 99.2 / 91.9 / 68.2) do not state their tie policy: "
           '21 pairs are CIDEr-D ties with all 50 references (mostly MM), which alone move MM between 67.3 (ties'
           ' wrong) and 68.8 (ties right); capeval counts them ½ (68.75 / 99.2 / 91.95 / 68.05; '
           'docs/benchmarks/measurements.md, "Agreement with human judgments")'),
    Reason('random_draws', 'random reference draws not replicable',
           '5 references drawn at random (of the 48), accuracy averaged over 5 draws, ties broken at random: the'
           " paper's draws cannot be replicated (capeval's --refs 5 --seed ... draws its own)"),
    Reason('thumb_table4', 'THumB Table 4 computed on other data',
           "Kasai et al.'s Table 4 does not reproduce on the released THumB 1.0 file even with pycocoevalcap's "
           'own CIDEr-D (with Human total .224 vs .23, without Human P .278 vs .27; '
           'docs/benchmarks/measurements.md, "Agreement with human judgments"): it was computed on another version '
           'of the data (the '
           'pycocoevalcap-here rows are the targets)'),
    Reason('thumb_sacrebleu', "THumB's BLEU-4 / ROUGE-L are sacreBLEU's / HF's",
           "the paper's BLEU-4 is sacreBLEU's sentence BLEU and its ROUGE-L Hugging Face's rouge (§A.2); "
           "capeval's bleu_4 / rouge_l are the COCO implementations"),
    Reason('thumb_human', "THumB's Human captions changed after the paper",
           "the released file's Human captions are not the paper's: after THumB's 2022 data fix 39 of them "
           "appear verbatim in their own references (pycocoevalcap CIDEr-D 111.5 vs the paper's 86.8)"),
    Reason('thumb_typo', 'a typo in the THumB paper',
           "the paper's 0.02 is a typo: its §2.2.2 applies the 0.5 conciseness penalty to two Human captions, 2 "
           '× 0.5 / 500 = 0.002'),
    Reason('thumb_bootstrap', 'an unseeded bootstrap interval',
           "a bootstrap half-width: the paper's replicates and seed are unknown (capeval: 1,000 replicates over "
           'images, seed 12345; within .01 per side, tests/thumb/test_paper.py)'),
    Reason('thumb_worst', "THumB's 'strictly worst' undefined",
           "the paper's definition of 'strictly worst' is not reproducible: six definitions tried, none gives "
           "its row (docs/benchmarks/thumb.md); 'strictly best' is exact"),
    Reason('coco2015_captions', "COCO 2015 teams' captions unavailable",
           "the 12 teams' COCO 2015 val-set captions are not available (coco2015_challenge holds only the "
           "leaderboard's human judgments)"),
    Reason('detailcaps_average', "an average over DetailCaps-100 and DetailCaps-4870",
           "the CAPTURE README's consistency numbers are the average over DetailCaps-100 and DetailCaps-4870 (its "
           "table's own words); DetailCaps-100 is not released with the dataset, so capeval's detailcaps "
           "(DetailCaps-4870 alone) measures one of the two halves: its numbers are shown beside these, not "
           "compared"),
    Reason('spice_tiny', 'no SPICE fidelity target on 2 captions',
           'SPICE on a 2-caption example has no fidelity target: official SPICE (Stanford CoreNLP 3.6.0) cannot '
           "run here and one scene-graph tuple moves the score by ~.01; capeval's SPICE is checked on the "
           '1,000-caption pycocoevalcap example, THumB and Flickr8k-Expert (docs/benchmarks/spice.md)'),
)
REASON = {reason.name: reason for reason in REASONS}


@dataclass(frozen=True)
class Rule:
    """Which published numbers a :class:`Reason` applies to: every condition given must hold (an empty tuple or
    ``None`` is no condition). ``metrics`` / ``metrics_not``: capeval result keys; ``metric_prefix``: the key begins
    so; ``field`` / ``field_suffix``: the row's sub-key is, or ends with, that."""

    reason: str
    benchmarks: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    protocols: tuple[str, ...] = ()
    statistics: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    metrics_not: tuple[str, ...] = ()
    metric_prefix: str | None = None
    field: str | None = None
    field_suffix: str | None = None

    def applies(self, entry: Mapping[str, Any], key: str, field_: str | None) -> bool:
        """Whether the number of capeval metric ``key`` (sub-key ``field_``) of ``entry`` is one this rule names."""
        wanted = ((self.benchmarks, entry["benchmark"]), (self.sources, entry["source"]),
                  (self.protocols, entry.get("protocol")), (self.statistics, entry["statistic"]),
                  (self.metrics, key))
        if any(values and got not in values for values, got in wanted):
            return False
        if key in self.metrics_not or (self.metric_prefix and not key.startswith(self.metric_prefix)):
            return False
        if self.field is not None and field_ != self.field:
            return False
        return self.field_suffix is None or bool(field_ and field_.endswith(self.field_suffix))


_PAIRWISE = ("pascal50s", "abstract50s")
_THUMB = {"benchmarks": ("thumb",), "sources": ("kasai2022",)}
#: Which reason applies to which published numbers, in order: the first rule that applies decides.
RULES = (
    Rule("coco2015_captions", benchmarks=("coco2015",)),
    Rule("cui_critic", sources=("cui2018",), metric_prefix="critic"),
    Rule("cui_protocol", sources=("cui2018",)),
    Rule("lceval_split", benchmarks=("composite",), sources=("sharif2019",)),
    Rule("composite_text", benchmarks=("composite",)),
    Rule("wang_labels", benchmarks=_PAIRWISE, sources=("wang2020",)),
    Rule("lceval_refs", benchmarks=_PAIRWISE, sources=("sharif2019",)),
    Rule("all_refs_ties", benchmarks=_PAIRWISE, protocols=("all-50-refs",), sources=("pycocoevalcap-here",)),
    # CLIP-S reads no reference: any reference draw measures it
    Rule("random_draws", benchmarks=_PAIRWISE, protocols=("random-5-refs",), metrics_not=("clip_s",)),
    Rule("thumb_table4", statistics=("pearson",), **_THUMB),
    Rule("thumb_sacrebleu", statistics=("corpus_score",), metrics=("bleu_4", "rouge_l"), **_THUMB),
    Rule("thumb_human", statistics=("corpus_score",), field="Human", **_THUMB),
    Rule("thumb_typo", statistics=("rubric",), field="Human conciseness", **_THUMB),
    Rule("thumb_bootstrap", statistics=("rubric",), field_suffix=" total_ci", **_THUMB),
    Rule("thumb_worst", statistics=("strictly_best_worst",), field_suffix=" worst", **_THUMB),
    Rule("spice_tiny", benchmarks=("clipscore-example", "pacscore-example"), metrics=("spice",)),
    Rule("detailcaps_average", benchmarks=("detailcaps",), sources=("capture-readme",)),
)


def reason_for(entry: Mapping[str, Any], key: str, field_: str | None) -> Reason | None:
    """The :class:`Reason` of the first rule of :data:`RULES` that names the number of capeval metric ``key`` (sub-key
    ``field_``) of ``entry``, or ``None``: it is a target where the data and weights are here."""
    return next((REASON[rule.reason] for rule in RULES if rule.applies(entry, key, field_)), None)


#: The reason of a SPICE row under ``--fast``.
FAST = "--fast: SPICE is not measured (spaCy parses); leave --fast out to measure it"

#: The SPICE fidelity rule (docs/benchmarks/spice.md).
SPICE_RULE = ("capeval's Java-free SPICE vs official SPICE: the fidelity target of docs/benchmarks/spice.md "
              "(±1.0 on a ×100 scale, ±.005 for a 0-1 corpus score)")

#: Each reason's text, by its name in capitals (``CUI_PROTOCOL``: the reasons' handles before they were data).
CUI_PROTOCOL = REASON["cui_protocol"].text
CUI_CRITIC = REASON["cui_critic"].text
LCEVAL_SPLIT = REASON["lceval_split"].text
COMPOSITE_TEXT = REASON["composite_text"].text
WANG_LABELS = REASON["wang_labels"].text
LCEVAL_REFS = REASON["lceval_refs"].text
ALL_REFS_TIES = REASON["all_refs_ties"].text
RANDOM_DRAWS = REASON["random_draws"].text
THUMB_TABLE4 = REASON["thumb_table4"].text
THUMB_SACREBLEU = REASON["thumb_sacrebleu"].text
THUMB_HUMAN = REASON["thumb_human"].text
THUMB_TYPO = REASON["thumb_typo"].text
THUMB_BOOTSTRAP = REASON["thumb_bootstrap"].text
THUMB_WORST = REASON["thumb_worst"].text
COCO2015_CAPTIONS = REASON["coco2015_captions"].text
SPICE_TINY = REASON["spice_tiny"].text
#: The skip each reason text stands for.
STATIC: dict[str, Skip] = {reason.text: reason.skip for reason in REASONS}
