"""``capeval leaderboard``: one metric × benchmark table from ``capeval bench --json`` payloads.

**Columns**: one per (benchmark, protocol or reference variant, COMPOSITE subset, statistic) found in the payloads,
in a fixed order: Flickr8k-Expert (clipscore, then cui), CrowdFlower, COMPOSITE (all, then the 8k / 30k / COCO
subsets), PASCAL-50S (refs: expert, all, then k), ABSTRACT-50S, THumB (with Human). The header names the
statistic: Kendall τ-c / τ-b or Pearson r (unitless, in [-1, 1]; printed ``.472``), or ``avg %`` (PASCAL-50S /
ABSTRACT-50S mean pairwise accuracy over the categories, in percent; printed ``80.2``).

**Rows**: the metrics of the payloads' results (result keys, the union over the payloads; capeval's own and the
plug-ins registered through the ``capeval.metrics`` entry point alike; the same key from several files is one
row, and a cell given twice keeps the later file's value, with a note), then the published anchors of
``data/published.json`` (:data:`ANCHORS`): numbers printed in papers, never measured by capeval, each labelled with
the citation key(s) of the table(s) it comes from.

**A cell** reads a result's ``headline`` (``{"statistic", "value", "ci": [low, high] | null, "confidence",
"n_resamples"}``) when the payload has one; an older payload without it falls back to the benchmark's own field
(``primary`` / ``tau_c`` / ``tau_b`` / ``avg`` / ``with_human.total``) with no interval. ``contamination`` (a list of
reasons the metric's training data overlaps the benchmark; ``[]`` = clean) marks the cell ``†n`` (footnote n
gives the reason and every cell it marks; a reason beginning ``unknown:``, training data not declared, marks it
``?n``); a payload without the field marks it ``?`` (unknown); ``—`` = not measured; ``n/a`` = measured but not a
finite number. An older COMPOSITE payload falls back to τ-b, the statistic ``capeval bench`` now heads it with.
The best value of a column among the metrics known to be clean is bold in markdown (``best`` in JSON); a
contaminated or unknown value is never the best. An anchor whose published protocol differs from the column's is
marked ``‡n`` (the footnote says how).

**JSON** (:meth:`Leaderboard.to_json`, ``capeval leaderboard --json``)::

    {"columns": [{"key", "benchmark", "variant", "subset", "statistic", "label", "unit"}],
     "rows": [{"metric", "cells": {COLUMN_KEY: {"value", "ci", "confidence", "n_resamples",
                                                 "contamination", "best", "file"}}}],
     "anchors": [{"name", "metric", "reads_images", "kind", "citations",
                  "cells": {COLUMN_KEY: {"value", "printed", "scale", "source", "where", "via",
                                         "protocol", "protocol_matches", "mismatch"}},
                  "not_shown": [str]}],
     "footnotes": [{"id", "mark", "kind": "contamination" | "unknown" | "protocol", "text",
                    "cells": [{"row", "column"}]}],
     "citations": {KEY: str}, "files": [str], "notes": [str]}

``value``: the column's unit (correlations in [-1, 1], accuracies in %); ``ci``: ``[low, high]`` in the same unit or
null; ``contamination``: a list, or null when the payload does not say; ``printed`` / ``scale``: the anchor's number
as the paper prints it (``scale`` 100: τ × 100). ``files`` are the payloads read, in order.

The rooms: :mod:`.model` (columns, cells, the table), :mod:`.reading` (the payload files), :mod:`.building` (payloads
to the table), :mod:`.anchors` (the published rows), :mod:`.text` (text and markdown), :mod:`.plot` (the figure).
"""
from __future__ import annotations

from capeval.meta_evaluation.leaderboard.anchors import ANCHORS, anchor_row
from capeval.meta_evaluation.leaderboard.building import build_leaderboard, row_label
from capeval.meta_evaluation.leaderboard.model import (BENCHMARK_LABELS, CONTAMINATED, CORRELATION_STATISTICS,
                                                  HEADLINE_FALLBACK, NOT_MEASURED, PAIRWISE, PROTOCOL_MISMATCH,
                                                  STATISTIC_LABELS, SUBSET_ORDER, UNKNOWN, VARIANT_ORDER, AnchorCell,
                                                  AnchorRow, AnchorSpec, Cell, Column, Footnote, Leaderboard)
from capeval.meta_evaluation.leaderboard.plot import PLOT_STYLES, cell_kind, plot_leaderboard, plot_title
from capeval.meta_evaluation.leaderboard.reading import payload_problem, read_payloads
from capeval.meta_evaluation.leaderboard.text import format_anchor, format_cell, legend, render

__all__ = ["ANCHORS", "BENCHMARK_LABELS", "CONTAMINATED", "CORRELATION_STATISTICS", "HEADLINE_FALLBACK",
           "NOT_MEASURED", "PAIRWISE", "PLOT_STYLES", "PROTOCOL_MISMATCH", "STATISTIC_LABELS", "SUBSET_ORDER",
           "UNKNOWN", "VARIANT_ORDER", "AnchorCell", "AnchorRow", "AnchorSpec", "Cell", "Column", "Footnote",
           "Leaderboard", "anchor_row", "build_leaderboard", "cell_kind", "format_anchor", "format_cell", "legend",
           "payload_problem", "plot_leaderboard", "plot_title", "read_payloads", "render", "row_label"]
