"""``capeval verify``: re-measure every published number capeval knows and say which ones reproduce.

Every number of :mod:`capeval.published` (``data/published.json``: the papers' tables, the leaderboard's anchors, the
clipscore / pacscore / pycocoevalcap example outputs) becomes one :class:`Row`. Each row is either

* ``reproduced``: measured with the published protocol, ``|measured - published| <= tolerance``;
* ``differs``: measured with the published protocol, further away than ``tolerance`` (``delta`` says by how much);
* ``skipped``: not compared, ``reason`` says why and ``skip_kind`` (:data:`SKIP_KINDS`) what kind of why, decided
  where the skip is (a :class:`Skip`): ``not_in_capeval`` (no registered metric produces it: TIGEr, BERT-S++ ...),
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

Measurements reuse ``capeval bench``'s harness (:func:`capeval.meta_evaluation.harness.run_benchmark`, with its score
cache, so a second run only reads the cache), :func:`capeval.thumb.score` for THumB's rubric tables and
:func:`capeval.score` for the example outputs; each benchmark run is made once with every metric its rows need.

The rooms: :mod:`.records` (the row model), :mod:`.reasons` (the published-number facts and the reasons a number is
no target, as data), :mod:`.metric_facts` (the metric sets, read from the registry), :mod:`.tolerance`,
:mod:`.planning` (which rows exist and which can be targets), :mod:`.availability` (what is here: weights, files,
images), :mod:`.measuring`, :mod:`.running` (:func:`verify`) and :mod:`.rendering` (text and markdown).
"""
from __future__ import annotations

from typing import Any

from capeval.meta_evaluation.verify.availability import Probe, weights_reason, weights_skip
from capeval.meta_evaluation.verify.measuring import measure
from capeval.meta_evaluation.verify.planning import plan, select, static_reason, static_skip
from capeval.meta_evaluation.verify.reasons import (ALL_REFS_TIES, COCO2015_CAPTIONS, COMPOSITE_TEXT, CUI_CRITIC,
                                               CUI_PROTOCOL, EXAMPLES, FAST, KEY_OF, LCEVAL_REFS, LCEVAL_SPLIT,
                                               NOT_IN_CAPEVAL, PRINTED_DECIMALS, RANDOM_DRAWS, REASONS,
                                               RESIZED_IMAGE_DIRS, RULES, SPICE_RULE, SPICE_TINY, STATIC,
                                               THUMB_BOOTSTRAP, THUMB_HUMAN, THUMB_SACREBLEU, THUMB_TABLE4,
                                               THUMB_TYPO, THUMB_WORST, WANG_LABELS, Reason, Rule)
from capeval.meta_evaluation.verify.records import REQUIRED_KEYS, SKIP_KINDS, STATUSES, Job, Row, Skip
from capeval.meta_evaluation.verify.rendering import (SHOW_CHOICES, render, show_set, skip_groups, summary_lines,
                                                 table_rows)
from capeval.meta_evaluation.verify.running import Report, verify
from capeval.meta_evaluation.verify.tolerance import compare, printed_decimals, tolerance_for

#: The metric sets that were kept by hand, now read from the registry (:mod:`.metric_facts`), by their old names.
_DERIVED = {"IMAGE_METRICS": "image_metrics", "CLIP_FAMILY": "clip_family", "JUDGES": "judges"}


def __getattr__(name: str) -> Any:
    """``IMAGE_METRICS``, ``CLIP_FAMILY``, ``JUDGES``: computed from the registry on first use."""
    if name in _DERIVED:
        from capeval.meta_evaluation.verify import metric_facts

        return getattr(metric_facts, _DERIVED[name])()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ALL_REFS_TIES", "COCO2015_CAPTIONS", "COMPOSITE_TEXT", "CUI_CRITIC", "CUI_PROTOCOL", "EXAMPLES", "FAST",
           "Job", "KEY_OF", "LCEVAL_REFS", "LCEVAL_SPLIT", "NOT_IN_CAPEVAL", "PRINTED_DECIMALS", "Probe",
           "RANDOM_DRAWS", "REASONS", "REQUIRED_KEYS", "RESIZED_IMAGE_DIRS", "RULES", "Reason", "Report", "Row",
           "Rule", "SHOW_CHOICES", "SKIP_KINDS", "SPICE_RULE", "SPICE_TINY", "STATIC", "STATUSES", "Skip",
           "THUMB_BOOTSTRAP", "THUMB_HUMAN", "THUMB_SACREBLEU", "THUMB_TABLE4", "THUMB_TYPO", "THUMB_WORST",
           "WANG_LABELS", "compare", "measure", "plan", "printed_decimals", "render", "select", "show_set",
           "skip_groups", "static_reason", "static_skip", "summary_lines", "table_rows", "tolerance_for", "verify",
           "weights_reason", "weights_skip"]
