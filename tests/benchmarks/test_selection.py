"""The rule that picks each learned metric's default (BENCHMARKS.md, the defaults rule), on synthetic bench payloads."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capeval.meta_evaluation.selection import cells, render_selection, select

ROOT = Path(__file__).resolve().parents[2]


def _entry(value, model=None, dirty=False, ci=None):
    entry = {"headline": {"value": value, "ci": ci}, "contamination": ["overlap"] if dirty else []}
    if model is not None:
        entry["models"] = [model]
    return entry


def _pascal(**results):
    return {"benchmark": "pascal50s", "settings": {"refs": "expert"}, "results": results}


def _thumb(**results):
    return {"benchmark": "thumb", "settings": {}, "results": results}


def _composite(results):
    return {"benchmark": "composite", "settings": {"subset": "all"}, "results": results}  # as the loader says


def _subsets(values, model=None, dirty=()):
    return {"tau_b": 0.0, "models": [model] if model else [], "contamination": [],
            "subsets": {s: {"headline": {"value": v, "ci": None}, "contamination": ["x"] if s in dirty else []}
                        for s, v in values.items()}}


def test_eligible_candidate_beats_a_higher_ineligible_one():
    payloads = [
        _pascal(cider_d=_entry(80.0), lceval=_entry(82.0, "lceval-caption-flickr8k-coco")),
        _pascal(lceval=_entry(90.0, "lceval-flickr8k-coco")),
        _thumb(cider_d=_entry(.22), lceval=_entry(.30, "lceval-caption-flickr8k-coco")),
        _thumb(lceval=_entry(.20, "lceval-flickr8k-coco")),
    ]
    pick, verdicts = select(cells(payloads), "lceval")
    assert pick.model == "lceval-caption-flickr8k-coco" and pick.eligible
    loser = next(v for v in verdicts if v.model == "lceval-flickr8k-coco")
    assert not loser.eligible and loser.below == {"thumb": ["cider_d"]}


def test_contaminated_cells_do_not_count():
    payloads = [
        _pascal(cider_d=_entry(80.0), sentence_cosine=_entry(85.0),
                lceval_plus=_entry(86.0, "lceval-plus-caption-flickr8k-coco")),
        _composite({"cider_d": _subsets({"8k": .30, "coco": .40}),
                    "sentence_cosine": _subsets({"8k": .50, "coco": .45}, dirty=("8k",)),
                    "lceval_plus": _subsets({"8k": .20, "coco": .46}, "lceval-plus-caption-flickr8k-coco",
                                            dirty=("8k",))}),
    ]
    pick, _ = select(cells(payloads), "lceval_plus")
    assert pick.eligible  # below CIDEr-D only on the contaminated COMPOSITE-8k cell
    assert pick.cells["composite/8k"].clean is False


def test_metrics_that_must_beat_the_cosine():
    payloads = [_pascal(cider_d=_entry(80.0), sentence_cosine=_entry(85.0),
                        critic_plus=_entry(84.0, "critic-flickr8k-plus"), lceval=_entry(84.0, "lceval-x"))]
    table = cells(payloads)
    plus, _ = select(table, "critic_plus")
    assert not plus.eligible and plus.below == {"pascal50s": ["sentence_cosine"]}
    plain, _ = select(table, "lceval")
    assert plain.eligible  # lceval only has to reach CIDEr-D


def test_without_eligible_candidate_most_cells_at_or_above_cider_wins():
    payloads = [
        _pascal(cider_d=_entry(80.0), critic_ref=_entry(81.0, "critic-coco-ref")),
        _pascal(critic_ref=_entry(70.0, "critic-flickr8k-ref")),
        _thumb(cider_d=_entry(.22), critic_ref=_entry(.10, "critic-coco-ref")),
        _thumb(critic_ref=_entry(.15, "critic-flickr8k-ref")),
    ]
    pick, verdicts = select(cells(payloads), "critic_ref")
    assert not any(v.eligible for v in verdicts)
    assert pick.model == "critic-coco-ref" and pick.at_or_above == 1


def test_mean_rank_then_ties_and_rendering():
    payloads = [
        _pascal(cider_d=_entry(80.0, ci=[79.0, 81.0]), critic=_entry(82.0, "critic-flickr8k-joint", ci=[81.0, 83.0])),
        _pascal(critic=_entry(83.0, "critic-flickr8k-hard")),
        {"benchmark": "flickr8k-expert", "settings": {"protocol": "clipscore"},
         "results": {"cider_d": _entry(.44), "critic": _entry(.47, "critic-flickr8k-joint")}},
        {"benchmark": "flickr8k-expert", "settings": {"protocol": "clipscore"},
         "results": {"critic": _entry(.46, "critic-flickr8k-hard")}},
        {"benchmark": "flickr8k-expert", "settings": {"protocol": "cui"},  # not a cell of the rule
         "results": {"critic": _entry(.99, "critic-flickr8k-hard")}},
    ]
    table = cells(payloads)
    pick, verdicts = select(table, "critic")
    assert [v.mean_rank for v in verdicts] == [1.5, 1.5]
    assert pick.model == "critic-flickr8k-joint"  # equal mean rank, equal cells: the larger margin over CIDEr-D
    text = render_selection(table, ["critic", "critic_img"])
    assert "**critic-flickr8k-joint**" in text and "82.00 [81.00, 83.00]" in text
    assert "Pick: `critic-flickr8k-joint` (recommended)" in text and "No candidate was measured." in text


def test_legacy_payload_and_model_from_options():
    payload = {"benchmark": "pascal50s", "settings": {"refs": "expert",
                                                      "metric_options": {"critic_model": "critic-flickr8k-hard"}},
               "results": {"critic": {"avg": 81.0, "contamination": []}, "cider_d": {"avg": 80.0}}}
    table = cells([payload])
    assert ("critic", "critic-flickr8k-hard") in table and table[("critic", "critic-flickr8k-hard")][
        "pascal50s"].value == 81.0


def test_script_prints_the_selection(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_pascal(cider_d=_entry(80.0), lceval=_entry(81.0, "lceval-m"))))
    (tmp_path / "notes.json").write_text("[1, 2]")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "select_defaults.py"), str(tmp_path),
                           "--markdown", str(tmp_path / "sel.md")], capture_output=True, text=True, check=True)
    assert "Pick: `lceval-m` (recommended)" in done.stdout
    assert (tmp_path / "sel.md").read_text().startswith("### `critic`")


def test_script_refuses_an_empty_folder(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "select_defaults.py"), str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no capeval bench" in done.stderr


@pytest.mark.parametrize("protocol", ["cui"])
def test_non_rule_protocols_are_ignored(protocol):
    payload = {"benchmark": "flickr8k-expert", "settings": {"protocol": protocol},
               "results": {"critic": _entry(.5, "critic-flickr8k")}}
    assert cells([payload]) == {}
