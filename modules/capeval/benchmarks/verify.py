"""``capeval verify``: re-measure every published number capeval knows and say which ones reproduce.

Every number of :mod:`capeval.published` (``data/published.json``: the papers' tables, the leaderboard's anchors, the
clipscore / pacscore / pycocoevalcap example outputs) becomes one :class:`Row`. Each row is either

* ``reproduced``: measured with the published protocol, ``|measured - published| <= tolerance``;
* ``differs``: measured with the published protocol, further away than ``tolerance`` (``delta`` says by how much);
* ``skipped``: not compared, ``reason`` says why and ``skip_kind`` (:data:`SKIP_KINDS`) what kind of why, decided
  where the skip is (a :class:`Skip`): ``not_in_capeval`` (capeval has no such metric: TIGEr, BERT-S++ ...),
  ``irreproducible`` (the published protocol cannot be replicated with the data here, :func:`static_skip`: Cui et
  al.'s τ, the LCEval authors' unreleased COMPOSITE split ...) or, for a row that could be compared, ``weights`` (the
  model weights are not here, :func:`weights_skip`), ``data`` (the benchmark files or the images are not here,
  :class:`Probe`) or ``other`` (``--fast``, a missing Python package, a failed measurement). Nothing is dropped
  silently; a published ``null`` is no number and makes no row.

**Scale.** ``published``, ``measured``, ``delta`` and ``tolerance`` are on the scale the source prints (``scale`` 100:
τ × 100; PASCAL-50S accuracies in percent; THumB system scores × 100 for the n-gram metrics, CLIP-S on its own
0-2.5 scale as printed).

**Tolerance** (:func:`tolerance_for`), stated on every row with its rule (``tolerance_rule``):

* half a unit of the last printed digit (43.9 → ±0.05; .224 → ±0.0005; 0.8264 → ±0.00005), inclusive, since a
  value exactly half a unit away (65.45 for a printed 65.4) prints either way; the digits printed are the number's
  own, or :data:`PRINTED_DECIMALS` where the JSON number lost trailing zeros (Kasai et al. print ``.20``);
* SPICE against official SPICE (a Java program needing Stanford CoreNLP 3.6.0, which cannot run here) gets the
  fidelity target of capeval's Java-free SPICE set in ``docs/benchmarks/spice.md`` and checked by
  ``tests/spice/test_fidelity.py``: ±1.0 on a ×100 scale (τ-c, THumB system scores), ±.005 for a corpus score on
  the 1,000-caption pycocoevalcap example; on a 2-caption example there is no target (the row is skipped);
* the CLIP-based example scores printed to 4 decimals: one unit (±0.0001), because the clipscore README itself
  shows a CPU float32 run and a GPU float16 run a unit apart (0.8585 / 0.8584).

Measurements reuse ``capeval bench``'s harness (:func:`capeval.benchmarks.harness.run_benchmark`, with its score
cache, so a second run only reads the cache), :func:`capeval.thumb.score` for THumB's rubric tables and
:func:`capeval.score` for the example outputs; each benchmark run is made once with every metric its rows need.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from capeval.hub_cli import download_command
from capeval.published import citations
from capeval.published import entries as published_entries

#: The three statuses, and the keys every JSON row has.
STATUSES = ("reproduced", "differs", "skipped")
REQUIRED_KEYS = ("metric", "benchmark", "published", "measured", "tolerance", "status", "source")
#: Why a row is skipped (``skip_kind`` of every skipped JSON row), in the order the summary lists them: the model
#: weights are not here; the benchmark files or images are not here; the published number cannot be reproduced with
#: what exists (unreleased data, an unstated protocol); capeval has no such metric; anything else (``--fast``, a
#: missing Python package, a failed measurement).
SKIP_KINDS = ("weights", "data", "irreproducible", "not_in_capeval", "other")


@dataclass(frozen=True)
class Skip:
    """Why a row is not compared, as data, decided where the skip is: ``kind`` (:data:`SKIP_KINDS`), ``text`` (the
    whole reason: the row's ``reason``), ``missing`` (a few words naming what is missing or why: rows with the same
    ``kind`` and ``missing`` form one line of the summary) and ``fix`` (what makes the row run here, e.g. the command
    that fetches the weights; ``None`` where nothing here can)."""

    kind: str
    text: str
    missing: str = ""
    fix: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise ValueError(f"skip kind must be one of {', '.join(SKIP_KINDS)}, got {self.kind!r}")


#: published.json spelling -> capeval result key.
KEY_OF = {"refclip_s": "ref_clip_s", "refpac_s": "ref_pac_s"}
#: Metrics that read the image (capeval result keys and published-only names).
VISION_LANGUAGE = frozenset({"clip_s", "ref_clip_s", "pac_s", "ref_pac_s", "polos", "tiger", "fleur", "ref_fleur",
                             "expert"})
#: capeval's vision-language metrics, by model family.
CLIP_FAMILY = {"clip_s": "clip", "ref_clip_s": "clip", "pac_s": "pac", "ref_pac_s": "pac"}
#: capeval's metrics that read images and external weights: the CLIP family, Polos and the LLaVA judges.
IMAGE_METRICS = frozenset(CLIP_FAMILY) | {"polos", "fleur", "ref_fleur", "expert"}
#: The multimodal-LLM judges and the model their published numbers were measured with.
JUDGES = {"fleur": ("llava-hf/llava-1.5-13b-hf",), "ref_fleur": ("llava-hf/llava-1.5-13b-hf",),
          "expert": ("llava-hf/llava-1.5-13b-hf", "hjkim811/EXPERT-llava-13b-lora")}
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
    "spider": "SPIDEr (Liu et al. 2017: the mean of SPICE and CIDEr)",
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
_SLACK = 1e-9

_STAT_LABELS = {"tau": "τ", "tau_b": "τ-b", "tau_c": "τ-c", "pearson": "Pearson", "spearman": "Spearman",
                "accuracy": "accuracy %", "corpus_score": "corpus", "rubric": "mean", "strictly_best_worst": "count"}

# -- reasons a published number is not a target here ---------------------------------------------------------------

CUI_PROTOCOL = ("Cui et al.'s τ is not reproducible: the paper does not name the τ variant and marks its n-gram "
                "values as differing from the SPICE paper's; no variant tried reproduces them (capeval, same "
                "pairs: CIDEr-D τ-b .466 vs .289; docs/benchmarks/measurements.md §2)")
CUI_CRITIC = ("Cui et al. released no critic weights; capeval's critic is retrained "
              "(docs/benchmarks/measurements.md §10)")
LCEVAL_SPLIT = ("measured on the LCEval authors' 7,996-caption COMPOSITE test split, which was never released "
                "(capeval scores all 11,985 captions)")
COMPOSITE_TEXT = ("COMPOSITE's original caption text is not available: capeval reads UMIC's decoding of its "
                  "bert-base-cased WordPiece ids (lower-cased, most punctuation removed), so the scores are not the "
                  "paper's (CIDEr-D τ-c 37.60 vs 37.7, BLEU-4 30.52 vs 30.6, METEOR 38.72 vs 38.9)")
WANG_LABELS = ("the SPICE-U paper's PASCAL-50S labels evidently differ from the released ones (its CIDEr-D HC 53.0; "
               "pycocoevalcap gives 68.7 on these files with all references; docs/benchmarks/measurements.md §2)")
LCEVAL_REFS = "the LCEval paper does not say which of the references it used, nor how ties count"
ALL_REFS_TIES = ("pycocoevalcap's all-50-reference numbers (68.7 / 99.2 / 91.9 / 68.2) do not state their tie "
                 "policy: 21 pairs are CIDEr-D ties with all 50 references (mostly MM), which alone move MM between "
                 "67.3 (ties wrong) and 68.8 (ties right); capeval counts them ½ (68.75 / 99.2 / 91.95 / 68.05; "
                 "docs/benchmarks/measurements.md §2)")
RANDOM_DRAWS = ("5 references drawn at random (of the 48), accuracy averaged over 5 draws, ties broken at random: "
                "the paper's draws cannot be replicated (capeval's --refs 5 --seed ... draws its own)")
THUMB_TABLE4 = ("Kasai et al.'s Table 4 does not reproduce on the released THumB 1.0 file even with pycocoevalcap's "
                "own CIDEr-D (with Human total .224 vs .23, without Human P .278 vs .27; "
                "docs/benchmarks/measurements.md §2): it was computed on another version of the data (the "
                "pycocoevalcap-here rows are the targets)")
THUMB_SACREBLEU = ("the paper's BLEU-4 is sacreBLEU's sentence BLEU and its ROUGE-L Hugging Face's rouge (§A.2); "
                   "capeval's bleu_4 / rouge_l are the COCO implementations")
THUMB_HUMAN = ("the released file's Human captions are not the paper's: after THumB's 2022 data fix 39 of them appear "
               "verbatim in their own references (pycocoevalcap CIDEr-D 111.5 vs the paper's 86.8)")
THUMB_TYPO = ("the paper's 0.02 is a typo: its §2.2.2 applies the 0.5 conciseness penalty to two Human captions, "
              "2 × 0.5 / 500 = 0.002")
THUMB_BOOTSTRAP = ("a bootstrap half-width: the paper's replicates and seed are unknown (capeval: 1,000 replicates "
                   "over images, seed 12345; within .01 per side, tests/thumb/test_paper.py)")
THUMB_WORST = ("the paper's definition of 'strictly worst' is not reproducible: six definitions tried, none gives "
               "its row (docs/benchmarks/thumb.md); 'strictly best' is exact")
COCO2015_CAPTIONS = ("the 12 teams' COCO 2015 val-set captions are not available (coco2015_challenge holds only the "
                     "leaderboard's human judgments)")
SPICE_TINY = ("SPICE on a 2-caption example has no fidelity target: official SPICE (Stanford CoreNLP 3.6.0) cannot "
              "run here and one scene-graph tuple moves the score by ~.01; capeval's SPICE is checked on the "
              "1,000-caption pycocoevalcap example, THumB and Flickr8k-Expert (docs/benchmarks/spice.md)")
FAST = "--fast: SPICE is not measured (spaCy parses); leave --fast out to measure it"

#: The SPICE fidelity rule (docs/benchmarks/spice.md).
SPICE_RULE = ("capeval's Java-free SPICE vs official SPICE: the fidelity target of docs/benchmarks/spice.md "
              "(±1.0 on a ×100 scale, ±.005 for a 0-1 corpus score)")


# -- rows -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One measurement that serves several rows: ``kind`` ``"bench"`` (a ``capeval bench`` run of ``name`` with
    ``settings``), ``"thumb-rubric"`` (THumB's rubric aggregation) or ``"example"`` (an example output)."""

    kind: str
    name: str
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.settings)
        return f"{self.name}{f' ({extra})' if extra else ''}" + (" rubric" if self.kind == "thumb-rubric" else "")


@dataclass
class Row:
    """One published number and what became of it (see the module docstring for the fields' units)."""

    metric: str  #: capeval's result key where capeval has the metric, else the published name
    benchmark: str  #: ``capeval bench``'s name, or an example's (``clipscore-example`` ...)
    published: float
    source: str  #: citation key of the table the number is printed in
    where: str
    statistic: str
    protocol: str
    field: str | None = None  #: sub-key: PASCAL-50S category, THumB system or P/R/total, example set ...
    scale: int = 1
    decimals: int = 1
    tolerance: float | None = None
    tolerance_rule: str = ""
    measured: float | None = None
    status: str = "skipped"
    reason: str | None = None
    via: str | None = None  #: citation key of the transcription the number was read from, if not the paper
    published_as: str | None = None  #: the metric's spelling in published.json, where it differs from ``metric``
    scores: str | None = None  #: Nebula: the human scores the number was published on (``original`` / ``corrected``)
    job: Job | None = dc_field(default=None, repr=False)
    lookup: tuple = dc_field(default=(), repr=False)  #: path into the job's result
    factor: float = dc_field(default=1.0, repr=False)  #: measured = result × factor (the printed scale)
    error: bool = False  #: the measurement failed (``reason`` says how)
    skip: Skip | None = dc_field(default=None, repr=False)  #: why the row is skipped, as data (``reason`` its text)

    @property
    def delta(self) -> float | None:
        return None if self.measured is None else self.measured - self.published

    def skip_because(self, why: Skip | str | None) -> None:
        """Record why the row is not compared (a :class:`Skip`; a bare string, e.g. from a custom probe, is of kind
        ``other``); ``None`` changes nothing."""
        if why is None:
            return
        self.skip = why if isinstance(why, Skip) else Skip("other", str(why), str(why))
        self.reason = self.skip.text

    @property
    def skip_kind(self) -> str | None:
        """:data:`SKIP_KINDS` entry of a skipped row (``other`` where no :class:`Skip` was recorded), else ``None``."""
        if self.status != "skipped":
            return None
        return self.skip.kind if self.skip is not None else "other"

    @property
    def what(self) -> str:
        """``"clipscore τ-c"``, ``"expert-5-refs accuracy % HC"``, ``"test-corrected (corrected scores) τ-c"``:
        protocol, Nebula's scores variant, statistic and field."""
        parts = [self.protocol, *([f"({self.scores} scores)"] if self.scores else []),
                 _STAT_LABELS.get(self.statistic, self.statistic)]
        if self.field:
            parts.append(self.field)
        return " ".join(p for p in parts if p)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "benchmark": self.benchmark, "published": self.published,
                "measured": self.measured, "tolerance": self.tolerance, "status": self.status,
                "source": self.source, "where": self.where, "via": self.via, "field": self.field,
                "statistic": self.statistic, "protocol": self.protocol, "scale": self.scale,
                "delta": self.delta, "tolerance_rule": self.tolerance_rule, "reason": self.reason,
                "published_as": self.published_as, "scores": self.scores, "error": self.error,
                "skip_kind": self.skip_kind,
                "fix": self.skip.fix if self.skip is not None and self.status == "skipped" else None}


def _decimals(number: float) -> int:
    """Decimals of a JSON number as written (an integer: 0; ``21.0``: 1)."""
    if isinstance(number, int):
        return 0
    text = repr(float(number))
    return 0 if "e" in text or "." not in text else len(text.split(".")[1])


def printed_decimals(source: str, where: str, metric: str, field_: str | None, value: float) -> int:
    """The digits ``value`` is printed with: its own, or more where :data:`PRINTED_DECIMALS` says so."""
    declared = PRINTED_DECIMALS.get((source, where))
    if isinstance(declared, dict):  # per field (a category; THumB's "<system> <column>"), else per metric
        column = field_.rsplit(" ", 1)[-1] if field_ else None
        by_field = declared.get(field_ or "", declared.get(column or ""))
        declared = by_field if by_field is not None else declared.get(metric)
    return max(_decimals(value), declared or 0)


def tolerance_for(row: Row) -> tuple[float, str]:
    """``(tolerance, rule)`` of ``row`` on its printed scale (see the module docstring)."""
    half = 0.5 * 10 ** -row.decimals
    if row.metric == "spice" and row.source != "pycocoevalcap-here":
        if row.scale == 100 and row.statistic in ("tau_c", "tau_b", "corpus_score"):
            return 1.0, SPICE_RULE
        if row.scale == 1 and row.statistic == "corpus_score":
            return 0.005, SPICE_RULE
    if row.metric in CLIP_FAMILY and row.benchmark in EXAMPLES and row.decimals >= 4:
        return 10 ** -row.decimals, ("one unit of the last printed digit: the clipscore README shows CPU float32 and "
                                     "GPU float16 runs a unit apart (0.8585 / 0.8584)")
    return half, "half a unit of the last printed digit"


def compare(row: Row) -> Row:
    """Set ``row.status`` from ``row.measured`` (``reproduced`` / ``differs``); a row without a measurement stays
    ``skipped``."""
    if row.measured is None or row.tolerance is None:
        row.status = "skipped"
        return row
    if not math.isfinite(row.measured):
        row.status, row.reason = "differs", "the measurement is not a finite number"
        return row
    slack = _SLACK * max(1.0, abs(row.published))
    row.status = "reproduced" if abs(row.measured - row.published) <= row.tolerance + slack else "differs"
    return row


def _capeval_key(name: str) -> str | None:
    """The capeval result key ``name`` (a published.json spelling) stands for, or ``None``."""
    from capeval.registry import REGISTRY

    key = KEY_OF.get(name, name)
    return key if any(key in spec.keys for spec in REGISTRY.values()) else None


# -- the plan: one row per published number ---------------------------------------------------------------------------


def _job(entry: Mapping[str, Any], key: str | None) -> Job | None:
    bench, proto = entry["benchmark"], str(entry.get("protocol"))
    if entry["statistic"] in ("rubric", "strictly_best_worst"):
        return Job("thumb-rubric", "thumb")
    if bench in EXAMPLES:
        return Job("example", bench)
    if bench.startswith("flickr8k"):
        return Job("bench", bench, (("protocol", proto),)) if proto in ("clipscore", "cui") else None
    if bench == "pascal50s":
        refs = (entry.get("settings") or {}).get("refs")
        if proto == "random-5-refs" and key == "clip_s":
            refs = "expert"  # CLIP-S reads no reference: any reference setting measures it
        return Job("bench", bench, (("refs", refs),)) if refs in ("expert", "all") else None
    if bench == "nebula":  # published on the scores as released or on Pearl's corrected ones
        return Job("bench", bench, (("scores", _scores(entry)),))
    if bench in ("composite", "thumb", "polaris", "abstract50s"):
        return Job("bench", bench)
    return None  # coco2015: no scores to compute here


def _scores(entry: Mapping[str, Any]) -> str | None:
    """Which of Nebula's human scores a published number was measured on (``original`` / ``corrected``, the entry's
    ``settings["scores"]``; ``original`` for a Nebula entry without it), ``None`` for other benchmarks."""
    if entry["benchmark"] != "nebula":
        return None
    return str((entry.get("settings") or {}).get("scores", "original"))


def _lookup(entry: Mapping[str, Any], key: str, field_: str | None) -> tuple[tuple, float]:
    """Where a job's result holds the row's value, and the factor to the printed scale."""
    bench, stat, scale = entry["benchmark"], entry["statistic"], int(entry["scale"])
    if stat in ("rubric", "strictly_best_worst"):
        system, column = field_.split(" ", 1)  # type: ignore[union-attr]
        column = {"best": "strictly_best", "worst": "strictly_worst"}.get(column, column)
        return ("systems", system, column), 1.0
    if bench in EXAMPLES:
        return ((key, field_) if field_ else (key,)), 1.0
    if bench == "thumb":
        if stat == "corpus_score":
            vl = key in VISION_LANGUAGE or key == "bertscore"
            return (key, "system", field_), (1.0 if vl else float(scale))
        return (key, entry["protocol"], field_), 1.0
    if stat == "accuracy":
        return (key, field_), 1.0
    return (key, stat), float(scale)


def _irreproducible(text: str, missing: str) -> Skip:
    return Skip("irreproducible", text, missing)


#: Each reason a published number is no target whatever is here, with the few words the summary groups it by.
_STATIC: dict[str, Skip] = {text: _irreproducible(text, missing) for text, missing in (
    (CUI_PROTOCOL, "Cui et al.'s τ variant unknown"),
    (CUI_CRITIC, "Cui et al.'s critic weights never released"),
    (LCEVAL_SPLIT, "LCEval's COMPOSITE test split never released"),
    (COMPOSITE_TEXT, "COMPOSITE's original caption text unavailable"),
    (WANG_LABELS, "SPICE-U paper's PASCAL-50S labels differ"),
    (LCEVAL_REFS, "LCEval paper's references and ties unstated"),
    (ALL_REFS_TIES, "tie policy of the all-50-reference numbers unstated"),
    (RANDOM_DRAWS, "random reference draws not replicable"),
    (THUMB_TABLE4, "THumB Table 4 computed on other data"),
    (THUMB_SACREBLEU, "THumB's BLEU-4 / ROUGE-L are sacreBLEU's / HF's"),
    (THUMB_HUMAN, "THumB's Human captions changed after the paper"),
    (THUMB_TYPO, "a typo in the THumB paper"),
    (THUMB_BOOTSTRAP, "an unseeded bootstrap interval"),
    (THUMB_WORST, "THumB's 'strictly worst' undefined"),
    (COCO2015_CAPTIONS, "COCO 2015 teams' captions unavailable"),
    (SPICE_TINY, "no SPICE fidelity target on 2 captions"),
)}


def static_skip(entry: Mapping[str, Any], name: str, key: str | None, field_: str | None) -> Skip | None:
    """Why the published number ``entry["values"][name]`` (``field_``) is no target here whatever data and weights
    are present (a :class:`Skip` of kind ``not_in_capeval`` or ``irreproducible``), or ``None``: capeval has no such
    metric, or the published protocol cannot be replicated."""
    if name == "inter-human":
        return Skip("not_in_capeval", "not a metric: the agreement between Cui et al.'s annotators",
                    "inter-human agreement")
    if key is None:
        what = NOT_IN_CAPEVAL.get(name, name)
        return Skip("not_in_capeval", f"{what} is not a capeval metric", what.split(" (", 1)[0])
    text = _static_reason_text(entry, key, field_)
    return None if text is None else _STATIC[text]


def static_reason(entry: Mapping[str, Any], name: str, key: str | None, field_: str | None) -> str | None:
    """The text of :func:`static_skip` (``None``: the number is a target where the data and weights are here)."""
    skip = static_skip(entry, name, key, field_)
    return None if skip is None else skip.text


def _static_reason_text(entry: Mapping[str, Any], key: str, field_: str | None) -> str | None:
    """Which of the protocol reasons (:data:`_STATIC`) applies to a number of capeval metric ``key``, if any."""
    bench, source, proto = entry["benchmark"], entry["source"], entry.get("protocol")
    if bench == "coco2015":
        return COCO2015_CAPTIONS
    if source == "cui2018":
        return CUI_CRITIC if key.startswith("critic") else CUI_PROTOCOL
    if bench == "composite":
        return LCEVAL_SPLIT if source == "sharif2019" else COMPOSITE_TEXT
    if bench in ("pascal50s", "abstract50s"):
        if source == "wang2020":
            return WANG_LABELS
        if source == "sharif2019":
            return LCEVAL_REFS
        if proto == "all-50-refs" and source == "pycocoevalcap-here":
            return ALL_REFS_TIES
        if proto == "random-5-refs" and key != "clip_s":
            return RANDOM_DRAWS
    if bench == "thumb" and source == "kasai2022":
        if entry["statistic"] == "pearson":
            return THUMB_TABLE4
        if entry["statistic"] == "corpus_score":
            if key in ("bleu_4", "rouge_l"):
                return THUMB_SACREBLEU
            if field_ == "Human":
                return THUMB_HUMAN
        if entry["statistic"] == "rubric":
            if field_ == "Human conciseness":
                return THUMB_TYPO
            if field_ and field_.endswith(" total_ci"):
                return THUMB_BOOTSTRAP
        if entry["statistic"] == "strictly_best_worst" and field_ and field_.endswith(" worst"):
            return THUMB_WORST
    if key == "spice" and bench in ("clipscore-example", "pacscore-example"):
        return SPICE_TINY
    return None


def plan(entries: Iterable[Mapping[str, Any]]) -> list[Row]:
    """One :class:`Row` per published number of ``entries`` (``published.json``'s order), with its tolerance, its
    job and, where the number is no target here, ``reason`` (status ``skipped``)."""
    rows: list[Row] = []
    for entry in entries:
        stat = entry["statistic"]
        items: list[tuple[str, str | None, Any]] = []
        if stat in ("rubric", "strictly_best_worst"):
            items = [("thumb", f"{system} {column}", value) for system, columns in entry["values"].items()
                     for column, value in columns.items()]
        else:
            for name, value in entry["values"].items():
                if isinstance(value, Mapping):
                    items += [(name, sub, v) for sub, v in value.items()]
                else:
                    items.append((name, None, value))
        for name, field_, value in items:
            if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            original = (entry.get("original") or {}).get(name) or {}
            source, where = original.get("source", entry["source"]), original.get("where", entry.get("where", ""))
            key = "thumb" if name == "thumb" else _capeval_key(name)
            row = Row(metric=key or name, benchmark=entry["benchmark"], published=float(value), source=source,
                      where=where, statistic=stat, protocol=str(entry.get("protocol", "")), field=field_,
                      scale=int(entry.get("scale", 1)), via=entry["source"] if original else None,
                      published_as=name if key and key != name else None, scores=_scores(entry))
            row.decimals = printed_decimals(entry["source"], entry.get("where", ""), name, field_, value)
            row.tolerance, row.tolerance_rule = tolerance_for(row)
            row.skip_because(static_skip(entry, name, key, field_))
            row.job = _job(entry, key)
            if row.job is not None:
                row.lookup, row.factor = _lookup(entry, key or name, field_)
            if row.job is None and row.reason is None:
                row.skip_because(Skip("other", "capeval has no way to measure this number", "no way to measure"))
            rows.append(row)
    return rows


def select(rows: Sequence[Row], metrics: Sequence[str] | None = None,
           benchmarks: Sequence[str] | None = None) -> list[Row]:
    """The rows of ``metrics`` (result keys, aliases or published spellings) and ``benchmarks`` (``capeval bench``
    names, aliases or example names); ``ValueError`` for a name that matches no row."""
    out = list(rows)
    if metrics:
        from capeval.registry import ALIASES

        wanted = {ALIASES.get(m.strip().lower(), m.strip().lower()) for m in metrics if m.strip()}
        wanted |= {KEY_OF.get(m, m) for m in wanted}
        known = {r.metric for r in rows} | {r.published_as for r in rows if r.published_as}
        unknown = sorted(wanted - known - set(KEY_OF))
        if unknown:
            raise ValueError(f"--metrics: no published number for {', '.join(unknown)}; known: "
                             f"{', '.join(sorted({r.metric for r in rows}))}.")
        out = [r for r in out if r.metric in wanted or r.published_as in wanted]
    if benchmarks:
        names = {_benchmark_name(b) for b in benchmarks if b.strip()}
        unknown = sorted(names - {r.benchmark for r in rows})
        if unknown:
            raise ValueError(f"--benchmarks: no published number for {', '.join(unknown)}; known: "
                             f"{', '.join(dict.fromkeys(r.benchmark for r in rows))}.")
        out = [r for r in out if r.benchmark in names]
    return out


def _benchmark_name(name: str) -> str:
    from capeval.benchmarks import canonical_name

    key = name.strip().lower().replace("_", "-")
    if key in EXAMPLES or key in ("coco2015",):
        return key
    try:
        return canonical_name(key)
    except ValueError:
        return key


# -- availability: data, weights, images ----------------------------------------------------------------------------


def weights_reason(key: str) -> str | None:
    """Why the default weights of vision-language metric ``key`` are not here (``None``: they are); never downloads.
    The text of :func:`weights_skip`."""
    skip = weights_skip(key)
    return None if skip is None else skip.text


def weights_skip(key: str) -> Skip | None:
    """Why the default weights of vision-language metric ``key`` are not here, as a :class:`Skip` of kind
    ``weights`` whose ``fix`` says how to get them (``None``: they are here); never downloads."""
    from capeval.vision_language.metric import DEFAULT_CLIP_MODEL, PAC_CHECKPOINT_NAME, default_pac_checkpoint

    if key == "polos":
        return _polos_weights_skip()
    if key in JUDGES:
        for repo in JUDGES[key]:
            why = _hub_weights_skip(repo, "LLaVA-1.5-13B (llava-hf)" if "llava-hf" in repo else "EXPERT's LoRA")
            if why is not None:
                return why
        return None
    if CLIP_FAMILY.get(key) == "clip":
        missing = "CLIP ViT-B/32"
        try:
            import huggingface_hub

            huggingface_hub.snapshot_download(DEFAULT_CLIP_MODEL, local_files_only=True)
        except ImportError as err:
            return Skip("weights", f"{err}", missing, download_command(DEFAULT_CLIP_MODEL))
        except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
            return Skip("weights", f"weights not in the Hugging Face cache: {download_command(DEFAULT_CLIP_MODEL)}",
                        missing, download_command(DEFAULT_CLIP_MODEL))
        return None
    path = default_pac_checkpoint()
    if not path.is_file():
        return Skip("weights",
                    f"PAC-S weights not found at {path}: download {PAC_CHECKPOINT_NAME} (CLIP ViT-B/32) from the link "
                    "in aimagelab/pacscore's README and put it there",
                    f"PAC-S {PAC_CHECKPOINT_NAME}", f"save to {_short_path(path.parent)}/")
    return None


def _hub_weights_skip(repo: str, missing: str) -> Skip | None:
    """Why Hub model ``repo`` is not in the Hugging Face cache (``None``: it is); never downloads."""
    command = download_command(repo)
    try:
        import huggingface_hub

        huggingface_hub.snapshot_download(repo, local_files_only=True)
    except ImportError as err:
        return Skip("weights", f"{err}", missing, command)
    except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
        return Skip("weights", f"weights not in the Hugging Face cache: {command}", missing, command)
    return None


def _short_path(path: Path) -> str:
    """``path`` with the home directory written ``~`` (for the summary's short lines)."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError):
        return str(path)


def _polos_weights_skip() -> Skip | None:
    """Why the released Polos checkpoint or its text encoder's configuration is not here (``None``: both are)."""
    from capeval.vision_language.metric import polos_checkpoint_places, resolve_polos_model

    try:
        folder = resolve_polos_model(None)
    except FileNotFoundError as err:
        return Skip("weights", _one_line(err), "Polos reprod.zip",
                    f"unzip reprod/'s files to {_short_path(polos_checkpoint_places()[0])}/")
    from capeval.vision_language.polos import DEFAULT_TEXT_MODEL, read_checkpoint

    try:
        text_model = read_checkpoint(folder).text_model
    except (OSError, ValueError) as err:
        return Skip("weights", _one_line(err), "a readable Polos checkpoint")
    if Path(text_model).is_dir():
        return None
    command = download_command(text_model or DEFAULT_TEXT_MODEL)
    missing = f"Polos's text encoder ({text_model or DEFAULT_TEXT_MODEL})"
    try:
        import huggingface_hub

        huggingface_hub.snapshot_download(text_model, local_files_only=True)
    except ImportError as err:
        return Skip("weights", f"{err}", missing, command)
    except Exception:  # noqa: BLE001 - huggingface_hub raises several "not cached" errors
        return Skip("weights", "Polos's text encoder configuration and tokenizer are not in the Hugging Face cache: "
                    f"{command}", missing, command)
    return None


def _example_dir(name: str) -> Path:
    from capeval.paths import data_dir

    root = data_dir(required=True)
    assert root is not None
    return root / EXAMPLES[name]


def _example_sets(name: str, with_images: bool) -> dict[str | None, tuple[list[str], list[list[str]], list | None]]:
    """``{set name: (predictions, references, images)}`` of an example (``None``: a single set)."""
    folder = _example_dir(name)
    if name == "pycocoevalcap-example":
        from capeval.benchmarks.files import COCO_IMAGE_DIRS, image_finder
        from capeval.coco.captions import coco_captions

        path = folder / "captions_val2014_fakecap_results.json"
        results = json.loads(path.read_text(encoding="utf-8"))
        refs = coco_captions("val2014")
        images = None
        if with_images:
            find = image_finder(folder.parent, None, COCO_IMAGE_DIRS)
            images = [find(f"COCO_val2014_{r['image_id']:012d}.jpg") for r in results]
        return {None: ([r["caption"] for r in results], [refs[r["image_id"]] for r in results], images)}
    references = json.loads((folder / "refs.json").read_text(encoding="utf-8"))
    out = {}
    for kind in ("good", "bad"):
        cands = json.loads((folder / f"{kind}_captions.json").read_text(encoding="utf-8"))
        ids = list(cands)
        images = [(folder / "images" / f"{i}.jpg") for i in ids] if with_images else None
        out[kind] = ([cands[i] for i in ids], [references[i] for i in ids],
                     None if images is None else [p if p.is_file() else None for p in images])
    return out


class Probe:
    """The real availability checks: :meth:`__call__` ``(job, key) -> Skip | None``, loading each benchmark once."""

    def __init__(self) -> None:
        self._loaded: dict[Job, Any] = {}
        self._data: dict[Job, Skip | None] = {}
        self._images: dict[Job, Skip | None] = {}

    def benchmark(self, job: Job):
        """The job's :class:`Benchmark` (or the exception loading it raised)."""
        if job not in self._loaded:
            from capeval.benchmarks import load_benchmark

            kwargs = dict(job.settings)
            if "refs" in kwargs:
                kwargs["references"] = kwargs.pop("refs")
            try:
                self._loaded[job] = load_benchmark(job.name, **kwargs)
            except (FileNotFoundError, OSError, ValueError, ImportError) as err:
                self._loaded[job] = err
        return self._loaded[job]

    def data(self, job: Job) -> Skip | None:
        """Why the job's files are not here (``None``: they are)."""
        if job not in self._data:
            self._data[job] = self._data_skip(job)
        return self._data[job]

    def images(self, job: Job) -> Skip | None:
        """Why the job's images are not all here as the papers scored them (``None``: they are)."""
        if job not in self._images:
            self._images[job] = self._images_skip(job)
        return self._images[job]

    def _data_skip(self, job: Job) -> Skip | None:
        if job.kind == "bench":
            got = self.benchmark(job)
            if not isinstance(got, Exception):
                return None
            if isinstance(got, ImportError):
                return Skip("other", _one_line(got), f"a Python package for {job.name}")
            return Skip("data", f"benchmark data not found: {_one_line(got)}", f"{job.name} files",
                        _first_clause(got))
        if job.kind == "thumb-rubric":
            from capeval.paths import data_dir

            root = data_dir()
            path = None if root is None else root / "thumb" / "mscoco_THumB-1.0.jsonl"
            if path is not None and path.is_file():
                return None
            return Skip("data", f"benchmark data not found: {path or 'no data directory'} (THumB 1.0's "
                        "mscoco_THumB-1.0.jsonl)", "thumb files",
                        f"{path} not found" if path else "set CAPEVAL_DATA_DIR")
        try:
            _example_sets(job.name, with_images=False)
        except (FileNotFoundError, OSError, ValueError, KeyError, ImportError) as err:
            return Skip("data", f"example data not found: {_one_line(err)}", f"{job.name} files", _first_clause(err))
        return None

    def _images_skip(self, job: Job) -> Skip | None:
        if job.kind == "example":
            missing = [i for sets in _example_sets(job.name, True).values() for i, p in enumerate(sets[2]) if p is None]
            if missing:
                total = sum(len(s[0]) for s in _example_sets(job.name, False).values())
                where = f"{_example_dir(job.name).name}/images or coco_val2014_images"
                return Skip("data", f"{len(missing)} of {total} images of {job.name} are not under the data directory "
                            f"({where})", f"{job.name} images", f"put them in {where} under the data directory")
            return None
        bench = self.benchmark(job)
        images = bench.images()
        if images is None:
            missing = bench.missing_images()
            return Skip("data", f"{len(missing)} image(s) of {bench.name} are not under the data directory (e.g. "
                        f"{missing[0]!r})", f"{bench.name} images", f"{len(missing)} missing, e.g. {missing[0]}")
        resized = next((p for p in images
                        if isinstance(p, str) and any(d in Path(p).parts for d in RESIZED_IMAGE_DIRS)), None)
        if resized is not None:
            return Skip("data", f"only re-encoded copies of {bench.name}'s images are here ({Path(resized).parent}), "
                        "not the original images the published numbers were measured on: put the originals in "
                        "flickr8k/Flicker8k_Dataset/ under the data directory", f"{bench.name} original images",
                        "put them in flickr8k/Flicker8k_Dataset/ (only 224 × 224 copies are here)")
        return None

    def __call__(self, job: Job, key: str) -> Skip | None:
        if key in IMAGE_METRICS:
            from capeval.registry import metric_class

            try:
                metric_class(key).check_available()
            except ImportError as err:
                from capeval.dependencies import INSTALL_HINT

                return Skip("other", _one_line(err), f"Python packages for {key}", INSTALL_HINT)
            why = weights_skip(key)
            if why:
                return why
        why = self.data(job)
        if why or key not in IMAGE_METRICS:
            return why
        return self.images(job)


def _first_clause(err: BaseException) -> str:
    """The first clause of an error's one-line message (``<path> not found``), for the summary's short lines."""
    return _one_line(err).split("; ", 1)[0].split(". ", 1)[0]


def _one_line(err: BaseException) -> str:
    if isinstance(err, OSError) and err.filename is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return " ".join(str(err).split()) or type(err).__name__


# -- measuring ------------------------------------------------------------------------------------------------------


def measure(job: Job, keys: Sequence[str], *, use_cache: bool = True, show_progress: bool | None = None) -> dict:
    """The result of ``job`` for the result keys ``keys`` (what :attr:`Row.lookup` paths index)."""
    if job.kind == "bench":
        from capeval.benchmarks.harness import run_benchmark

        settings = dict(job.settings)
        return run_benchmark(job.name, list(keys), protocol=settings.get("protocol"), refs=settings.get("refs"),
                             scores=settings.get("scores"), use_cache=use_cache, show_progress=show_progress).results
    if job.kind == "thumb-rubric":
        from capeval import thumb
        from capeval.paths import data_dir

        path = data_dir(required=True) / "thumb" / "mscoco_THumB-1.0.jsonl"  # type: ignore[operator]
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        result = thumb.score([r["P"] for r in rows], [r["R"] for r in rows], [r["Fl"] for r in rows],
                             [r["Con"] for r in rows], [r["Inc"] for r in rows], systems=[r["SYS"] for r in rows],
                             images=[r["seg_id"] for r in rows], progress=show_progress)
        for entry in result["systems"].values():
            low, high = entry["total_ci"]
            entry["total_ci"] = (high - low) / 2  # the paper prints the ± half-width
        return result
    import warnings

    from capeval.api import score
    from capeval.coco.cider import SmallCorpusWarning

    with_images = any(k in IMAGE_METRICS for k in keys)
    out: dict[str, Any] = {}
    for name, (preds, refs, images) in _example_sets(job.name, with_images).items():
        extra = {"images": [str(p) for p in images]} if with_images and images is not None else {}
        with warnings.catch_warnings():  # the reference scripts take CIDEr-D's df from the 2 images' references too
            warnings.simplefilter("ignore", SmallCorpusWarning)
            result = score(preds, refs, metrics=list(keys), cleanup="none", progress=show_progress, **extra)
        for key in keys:
            if name is None:
                out[key] = result[key]
            else:
                out.setdefault(key, {})[name] = result[key]
    return out


def _extract(result: Mapping[str, Any], path: Sequence[Any]) -> float | None:
    value: Any = result
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class Report:
    """What :func:`verify` returns: the rows in ``published.json``'s order, and the jobs run with their time."""

    rows: list[Row]
    jobs: list[dict[str, Any]] = dc_field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Rows per status (:data:`STATUSES`)."""
        return {s: sum(r.status == s for r in self.rows) for s in STATUSES}

    def skip_counts(self) -> dict[str, int]:
        """Skipped rows per kind (:data:`SKIP_KINDS`, every kind, in that order); they sum to the skipped count."""
        return {k: sum(r.skip_kind == k for r in self.rows) for k in SKIP_KINDS}

    @property
    def ok(self) -> bool:
        """No row differs and no measurement failed (the exit code of ``capeval verify``)."""
        return not any(r.status == "differs" or r.error for r in self.rows)

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rows]


def verify(
    metrics: Sequence[str] | None = None,
    benchmarks: Sequence[str] | None = None,
    *,
    fast: bool = False,
    use_cache: bool = True,
    show_progress: bool | None = None,
    entries: Iterable[Mapping[str, Any]] | None = None,
    probe: Callable[[Job, str], Skip | str | None] | None = None,
    measure_job: Callable[[Job, Sequence[str]], Mapping[str, Any]] | None = None,
) -> Report:
    """Re-measure the published numbers (all of ``data/published.json``, or ``entries``) restricted to ``metrics`` /
    ``benchmarks``, and classify each (:class:`Row`).

    ``probe(job, key)`` says why ``key`` cannot be measured by ``job`` here, as a :class:`Skip` (default
    :class:`Probe`: benchmark files, the vision-language weights without downloading, the images; a bare string is a
    skip of kind ``other``); ``measure_job(job, keys)`` returns the job's result (default :func:`measure`). A job that
    raises marks its rows ``skipped`` with ``error`` set and the message in ``reason`` (and :attr:`Report.ok` false).
    ``fast``: SPICE is not measured.
    """
    import time

    from capeval.progress import progress

    rows = select(plan(published_entries() if entries is None else entries), metrics, benchmarks)
    probe = probe or Probe()
    measure_job = measure_job or (lambda job, keys: measure(job, keys, use_cache=use_cache,
                                                            show_progress=show_progress))
    by_job: dict[Job, list[Row]] = {}
    for row in rows:
        if row.job is None:
            continue
        if row.reason is None and fast and row.metric == "spice":
            row.skip_because(Skip("other", FAST, "SPICE (--fast)", "leave --fast out"))
        if row.reason is None:
            row.skip_because(probe(row.job, row.metric))
        by_job.setdefault(row.job, []).append(row)
    # a job runs when some row of it is a target; it then also measures the non-target rows of the same metrics
    # (their measured value is shown for information, their status stays skipped)
    plans = [(job, list(dict.fromkeys(r.metric for r in job_rows if r.reason is None)))
             for job, job_rows in by_job.items()]
    plans = [(job, keys) for job, keys in plans if keys]
    report = Report(rows)
    for job, keys in progress(plans, desc="capeval verify", enabled=show_progress):
        start = time.perf_counter()
        try:
            result = measure_job(job, keys)
        except Exception as err:  # noqa: BLE001 - one failed run must not hide the others' results
            for row in by_job[job]:
                if row.reason is None:
                    row.skip_because(Skip("other", f"measurement failed: {type(err).__name__}: {_one_line(err)}",
                                          f"{job.label}: measurement failed"))
                    row.error = True
            report.jobs.append({"job": job.label, "metrics": keys, "seconds": round(time.perf_counter() - start, 3),
                                "error": _one_line(err)})
            continue
        report.jobs.append({"job": job.label, "metrics": keys, "seconds": round(time.perf_counter() - start, 3)})
        for row in by_job[job]:
            if row.metric not in keys:
                continue
            value = _extract(result, row.lookup)
            row.measured = None if value is None else value * row.factor
            if row.reason is None:
                if row.measured is None:  # a target the run did not produce: a failure, not a pass
                    row.skip_because(Skip("other", f"{job.label} gave no value at {'/'.join(map(str, row.lookup))}",
                                          f"{job.label}: no value"))
                    row.error = True
                compare(row)
    for row in rows:
        if row.status != "skipped":
            continue
        if row.reason is None:
            row.skip_because(Skip("other", "not measured", "not measured"))
    return report


# -- rendering ------------------------------------------------------------------------------------------------------

#: What ``capeval verify --show`` lists row by row: a status (:data:`STATUSES`) or ``all`` (every row).
SHOW_CHOICES = ("differs", "reproduced", "skipped", "all")
#: Skip kinds whose rows cannot be made to run here: the summary gives each one line, whatever its reasons.
_NO_FIX_KINDS = ("irreproducible", "not_in_capeval")


def _number(value: float | None, decimals: int, sign: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:+.{decimals}f}" if sign else f"{value:.{decimals}f}"


def _source(row: Row, with_where: bool = True) -> str:
    """``hessel2021 Table 1 (via capevalkit)``: the citation key, the table (``with_where``) and the transcription."""
    text = f"{row.source} {row.where}".strip() if with_where else row.source
    return text + (f" (via {row.via})" if row.via else "")


def table_rows(report: Report) -> tuple[list[str], list[list[str]], list[str]]:
    """``(headers, rows, footnotes)`` of the full table (every row, ``--markdown``): skip reasons are numbered
    footnotes (each reason once), the status of a skipped row names its kind."""
    notes: dict[str, int] = {}
    body = []
    for r in report.rows:
        extra = r.decimals + 2
        status = r.status
        if r.reason and r.status == "skipped":
            number = notes.setdefault(r.reason, len(notes) + 1)
            status = f"skipped: {r.skip_kind} [{number}]"
        body.append([r.metric, r.benchmark, r.what, _number(r.published, r.decimals),
                     _number(r.measured, extra), _number(r.delta, extra, sign=True),
                     "—" if r.tolerance is None else f"±{r.tolerance:g}", status, _source(r)])
    headers = ["metric", "benchmark", "what", "published", "measured", "Δ", "tolerance", "status", "source"]
    return headers, body, [f"[{n}] {reason}" for reason, n in notes.items()]


def summary_lines(report: Report) -> list[str]:
    """The first lines of every rendering: the rows per status, then the skipped rows per kind (each under 100
    columns)."""
    counts, kinds = report.counts(), report.skip_counts()
    return [f"{len(report.rows)} published numbers: {counts['reproduced']} reproduced, {counts['differs']} differ, "
            f"{counts['skipped']} skipped",
            "skipped by kind: " + ", ".join(f"{n} {kind}" for kind, n in kinds.items())]


def skip_groups(report: Report) -> list[tuple[str, int, str]]:
    """The skipped rows one line per group, ``(kind, rows, what is missing: the fix)``, in :data:`SKIP_KINDS` order:
    rows that can be made to run (``weights``, ``data``, ``other``) grouped by what is missing and its fix (each
    group names them); the others one group per kind, naming what is missing or why, most rows first."""
    out: list[tuple[str, int, str]] = []
    for kind in SKIP_KINDS:
        rows = [r for r in report.rows if r.skip_kind == kind]
        if not rows:
            continue
        skips = [r.skip or Skip("other", r.reason or "not measured", r.reason or "not measured") for r in rows]
        if kind in _NO_FIX_KINDS:
            labels: dict[str, int] = {}
            for skip in skips:
                labels[skip.missing or skip.text] = labels.get(skip.missing or skip.text, 0) + 1
            ordered = sorted(labels, key=lambda k: -labels[k])
            what = (f"{len(ordered)} reasons: " if kind == "irreproducible" and len(ordered) > 1 else "") + \
                "; ".join(ordered)
            out.append((kind, len(rows), what))
            continue
        groups: dict[tuple[str, str | None], int] = {}
        for skip in skips:
            key = (skip.missing or skip.text, skip.fix)
            groups[key] = groups.get(key, 0) + 1
        for (missing, fix), n in groups.items():
            out.append((kind, n, f"{missing}: {fix}" if fix else missing))
    return out


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    from capeval.render import text_table

    return text_table(headers, rows, width=width)


def _skip_group_table(report: Report, width: int) -> str:
    """:func:`skip_groups` as a table within ``width``: a group that can be made to run wraps its line, one that
    cannot (:data:`_NO_FIX_KINDS`) is cut to one line (``--show skipped`` lists its reasons)."""
    from capeval.render import cut, wrap

    groups = skip_groups(report)
    headers = ["kind", "rows", "what is missing: how to get it"]
    kind_width = max([len(headers[0]), *(len(k) for k, _, _ in groups)])
    rows_width = max([len(headers[1]), *(len(str(n)) for _, n, _ in groups)])
    room = max(width - kind_width - rows_width - 4, 20) if width else 0
    body: list[list[str]] = []
    for kind, n, what in groups:
        if not room:
            body.append([kind, str(n), what])
        elif kind in _NO_FIX_KINDS:
            body.append([kind, str(n), cut(what, room)])
        else:
            lines = wrap(what, room, indent="  ")
            body += [[kind, str(n), lines[0]], *(["", "", line] for line in lines[1:])]
    return _table(headers, body, width)


def _wrapped(text: str, width: int, indent: str = "  ") -> list[str]:
    """``text`` within ``width`` columns (0: one line), its leading spaces kept, later lines indented by ``indent``."""
    from capeval.render import wrap

    body = text.lstrip(" ")
    return wrap(body, width, first=text[:len(text) - len(body)], indent=indent)


def _group_title(row: Row) -> str:
    """``thumb · kasai2022 Table 2 (THumB 1.0)``: a benchmark and the published table its rows come from."""
    return f"{row.benchmark} · {_source(row)}"


def _grouped_table(rows: Sequence[Row], headers: Sequence[str], cells: Callable[[Row], list[str]],
                   width: int) -> list[str]:
    """``rows`` one line each under a title per benchmark and published table (:func:`_group_title`), in one
    table whose columns line up across the groups; where that does not fit ``width``, one table with the benchmark
    and the source as columns (which :func:`capeval.render.text_table` wraps)."""
    from capeval.render import display_width

    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(_group_title(row), []).append(row)
    ordered = [r for group in groups.values() for r in group]
    lines = _table(headers, [cells(r) for r in ordered], 0).split("\n")
    if not width or max(display_width(line) for line in lines) + 2 <= width:
        out = ["  " + lines[0], "  " + lines[1]]
        body = iter(lines[2:])
        for title, group in groups.items():
            out += _wrapped(title, width, indent="    ")
            out += ["  " + next(body) for _ in group]
        return out
    flat = [[cells(r)[0], r.benchmark, *cells(r)[1:], _source(r, with_where=False)] for r in ordered]
    return _table([headers[0], "benchmark", *headers[1:], "source"], flat, width).split("\n")


def _differs_lines(rows: Sequence[Row], width: int) -> list[str]:
    return _grouped_table(rows, ["metric", "what", "published", "measured", "Δ", "tolerance"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2),
        _number(r.delta, r.decimals + 2, sign=True), "—" if r.tolerance is None else f"±{r.tolerance:g}"], width)


def _reproduced_lines(rows: Sequence[Row], width: int) -> list[str]:
    return _grouped_table(rows, ["metric", "what", "published", "measured"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2)], width)


def _skipped_lines(rows: Sequence[Row], width: int) -> list[str]:
    """Every skipped row, one line each (``--show skipped``) with its kind and the number of its reason, then the
    numbered reasons."""
    notes: dict[str, int] = {}
    for r in rows:
        notes.setdefault(r.reason or "not measured", len(notes) + 1)
    out = _grouped_table(rows, ["metric", "what", "published", "measured", "why"], lambda r: [
        r.metric, r.what, _number(r.published, r.decimals), _number(r.measured, r.decimals + 2),
        f"{r.skip_kind} [{notes[r.reason or 'not measured']}]"], width)
    out.append("")
    for reason, n in notes.items():
        out += _wrapped(f"[{n}] {reason}", width, indent="    ")
    return out


def show_set(show: str | Iterable[str] | None) -> set[str] | None:
    """The statuses ``--show`` names (``None``: the default view); ``ValueError`` naming the closest valid value for
    an unknown one."""
    if show is None:
        return None
    names = [s.strip() for s in show.split(",")] if isinstance(show, str) else [s.strip() for s in show]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in SHOW_CHOICES]
    if unknown or not names:
        from capeval.suggest import did_you_mean

        valid = f"; valid: {', '.join(SHOW_CHOICES)} (comma-separated)"
        if not unknown:
            raise ValueError(f"--show: nothing given{valid}")
        raise ValueError(f"--show: unknown {unknown[0]!r}" + (did_you_mean(unknown[0], SHOW_CHOICES) or valid))
    return set(STATUSES) if "all" in names else set(names)


def render(report: Report, fmt: str = "text", show: str | Iterable[str] | None = None,
           width: int | None = None) -> str:
    """``report`` for a reader.

    ``fmt="text"`` (the terminal, within ``width`` columns: default :func:`capeval.render.terminal_width`, 0 no
    limit): first the counts (:func:`summary_lines`: rows per status, skipped rows per kind), then by default the
    differing rows, the reproduced rows one short line each and the skipped rows one line per group
    (:func:`skip_groups`); ``show`` (statuses of :data:`SHOW_CHOICES`, a list or comma-separated) lists those rows one
    by one instead (``skipped``: every skipped row, with its kind and numbered reason). Then how to make skipped rows
    run, the tolerance rules, the runs and the references cited by the rows listed.

    ``fmt="markdown"``: the counts, then every row in one table with its numbered reason, the rules and references.
    """
    from capeval.render import markdown_table, terminal_width

    if fmt not in ("text", "markdown"):
        raise ValueError(f"fmt must be 'text' or 'markdown', got {fmt!r}")
    listed = show_set(show)
    width = terminal_width() if width is None else width
    md = fmt == "markdown"
    out = summary_lines(report)
    if md:
        headers, body, notes = table_rows(report)
        out = [out[0] + ".", "", out[1] + ".", "", markdown_table(headers, body)]
        if notes:
            out += ["", "Skipped because:", *("- " + n for n in notes)]
        shown = report.rows
    else:
        sections = ["differs", "reproduced"] if listed is None else [s for s in STATUSES if s in listed]
        shown = []
        for status in sections:
            rows = [r for r in report.rows if r.status == status]
            shown += rows
            out.append("")
            if status == "differs":
                out.append(f"Differs ({len(rows)}): measured further from the published number than its tolerance"
                           if rows else "Differs: none")
                out += _differs_lines(rows, width) if rows else []
            elif status == "reproduced":
                out.append(f"Reproduced ({len(rows)}): within the tolerance, by published table" if rows else
                           "Reproduced: none")
                out += _reproduced_lines(rows, width) if rows else []
            else:
                out.append(f"Skipped ({len(rows)}), by published table: the kind of why and the reason [n]" if rows
                           else "Skipped: none")
                out += _skipped_lines(rows, width) if rows else []
        skipped = report.counts()["skipped"]
        if listed is None and skipped:
            out += ["", f"Skipped ({skipped}), one line per group; every row: --show skipped",
                    _skip_group_table(report, width)]
        if skipped and (listed is None or "skipped" in listed):
            from capeval.paths import data_dir

            root = data_dir()
            out += [""] + _wrapped(
                "To run skipped rows: fetch the weights named (the command shown), put the benchmark files and "
                "images under the data directory (" + (f"now {root}; " if root else "none now: ") + "CAPEVAL_DATA_DIR "
                "sets it) and leave --fast out; irreproducible and not_in_capeval rows cannot run here. More: "
                "README.md, 'Reproducing published numbers'.", width)
    rules = list(dict.fromkeys(r.tolerance_rule for r in shown if r.tolerance_rule and r.status != "skipped"))
    if rules:
        out += [""] + (["Tolerance rules: " + "; ".join(rules) + "."] if md else
                       _wrapped("Tolerance rules: " + "; ".join(rules) + ".", width))
    failed = [r for r in report.rows if r.error]
    if failed:
        out += _wrapped(f"{len(failed)} row(s) could not be measured: 'measurement failed' in their reasons "
                        "(--show skipped).", 0 if md else width)
    if report.jobs:
        runs = "; ".join(f"{j['job']} [{', '.join(j['metrics'])}] {j['seconds']:.0f} s" +
                         (" (failed)" if "error" in j else "") for j in report.jobs)
        out += _wrapped(f"Runs ({sum(j['seconds'] for j in report.jobs):.0f} s): {runs}.", 0 if md else width)
    cites = citations()
    used = list(dict.fromkeys(k for r in shown for k in (r.source, r.via) if k))
    if used:
        out += ["", "References:"]
        for key in used:
            out += [f"- {key}: {cites.get(key, key)}"] if md else \
                _wrapped(f"  {key}: {cites.get(key, key)}", width, indent="      ")
    return "\n".join(out)


__all__ = ["EXAMPLES", "Job", "KEY_OF", "Probe", "REQUIRED_KEYS", "Report", "Row", "SHOW_CHOICES", "SKIP_KINDS",
           "STATUSES", "Skip", "compare", "measure", "plan", "render", "select", "show_set", "skip_groups",
           "static_reason", "static_skip", "summary_lines", "tolerance_for", "verify", "weights_reason",
           "weights_skip"]
