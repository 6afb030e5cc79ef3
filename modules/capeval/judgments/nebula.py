"""Nebula (Matsuda, Wada & Sugiura, ACCV 2024, "DENEB: A Hallucination-Robust Automatic Evaluation Metric for Image
Captioning"): 32,978 images with candidate captions, references and human scores in [0, 1] from 805 annotators.

Splits (items): train 26,382, validation 3,298 (the Hub's ``valid``), test 3,298. Files under
``<data dir>/nebula/``, in this order of lookup (:mod:`capeval.judgments.judgment_sets`):

* ``nebula_test.json``: EXPERT's annotation file (hjkim811/EXPERT ``annotations/nebula_test.json``), a JSON list of
  ``{"imgid", "mt", "refs", "score"}``; images ``images/<imgid>.jpg``;
* ``nebula_test.csv``: DENEB's CSV (``mt``, ``refs``, ``score``, ``imgid``);
* the Hub dataset ``Ka2ukiMatsuda/Nebula`` (parquet ``data/{train,valid,test}-*.parquet``; columns as its card
  documents them: ``file_name`` (string), ``image`` (image), ``refs`` (list of strings), ``mt`` (the candidate),
  ``human_score`` (float64)), locally, in the hub cache, or (offline) in the ``datasets`` cache.

Statistic: Kendall tau-c between metric and human score over all items.

**Scores** (``scores=``): ``"original"`` (default) keeps each file's human scores as distributed;
``"corrected"`` replaces the test split's human scores by the corrections of the Pearl paper (Hirano, Wada,
Matsuda, Otsuki & Sugiura, AAAI 2026, arXiv:2512.21582, "LLM-Free Image Captioning Evaluation in
Reference-Flexible Settings"), which later papers correlate against (Pearl's own Table 1, CaptionEvalKit's
targets). Where this follows, read from public code (repository, path):

* YuigaWada/CaptionEvalKit-for-VLMs (by Polos's and Pearl's co-author Yuiga Wada),
  ``capevalkit/infrastructure/benchmarks/legacy.py`` (commit 420a794) and its earlier ``capevalkit/benchmarks.py``
  (commit 2c06c51): ``HF_SPICA_REPO = "hiranohachiman/Spica"`` (the Hub dataset of Pearl's first author),
  ``SPICA_SPLIT_FILES = ("spica_train.csv", "spica_val.csv", "spica_test.csv")``; ``_load_spica_score_lookup``
  reads all three CSVs (``csv.DictReader``, columns ``imgid``, ``mt``, ``score``), keys each row by
  ``f"{Path(imgid).stem}\\t{' '.join(mt.split())}"`` and averages ``float(score)`` over the rows of a key;
  ``_apply_nebula_score_corrections`` replaces each Nebula test item's score by
  ``lookup.get(key, item.score)``: **an item without a correction row keeps its original score**. It applies them
  to the Hub ``test`` split only (``splits == ("test",)``).
* the same repository's ``benchmarks/README.md``: "For the test split, scores are corrected from matching
  ``imgid + mt`` rows in Hugging Face ``hiranohachiman/Spica``, matching the arXiv:2512.21582 note that Nebula
  annotation errors were corrected"; ``benchmarks/expected/<metric>/nebula.json`` copy arXiv:2512.21582 Table 1.

capeval does the same: ``scores="corrected"`` reads ``spica_train.csv``, ``spica_val.csv`` and ``spica_test.csv``
(:data:`CORRECTION_FILES`, all three needed, as the reference reads all three) from ``<data dir>/nebula/``;
keys are (the image id without its extension, the caption with whitespace runs collapsed and stripped, as
``" ".join(text.split())``; no case folding); each test item whose key has rows gets their mean; the others keep
their original score and are counted (``settings["uncorrected_items"]``; ``settings["corrected_items"]`` the
rest). The correction scores are used as the files give them (finite numbers; the reference does not rescale
them). It applies to whichever source supplies the test split (EXPERT's JSON, DENEB's CSV or the Hub shards;
their ``imgid`` / ``file_name`` name the same images). ``settings["scores"]`` names the variant on every load.
"""
from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path

from capeval.judgments.files import norm_space, resolve_root
from capeval.judgments.judgment_sets import Columns, JudgmentSet, canonical_split, load_judgment_set
from capeval.judgments.records import Benchmark

#: The Hub's split names, the released sizes and the card's columns (candidate ``mt``, image named by ``file_name``).
NEBULA = JudgmentSet("nebula", "Ka2ukiMatsuda/Nebula", {"train": "train", "validation": "valid", "test": "test"},
                     {"train": 26_382, "validation": 3_298, "test": 3_298},
                     Columns("mt", "refs", "human_score", image_id="file_name", image="image"))
#: The ``scores`` variants: the files' scores, or Pearl's corrections of the test split.
SCORES = ("original", "corrected")
#: The Hub dataset that distributes Pearl's corrections, and its files (CaptionEvalKit's ``SPICA_SPLIT_FILES``).
CORRECTION_REPO = "hiranohachiman/Spica"
CORRECTION_FILES = ("spica_train.csv", "spica_val.csv", "spica_test.csv")
CORRECTION_COLUMNS = ("imgid", "mt", "score")


def correction_key(image_id: str, caption: str) -> tuple[str, str]:
    """``(image id without its extension, caption with whitespace runs collapsed)``: how a correction row and a
    Nebula item are matched (CaptionEvalKit's ``_item_score_key``)."""
    return Path(str(image_id).strip()).stem, norm_space(str(caption))


def read_corrections(folder: str | Path) -> dict[tuple[str, str], tuple[float, int]]:
    """``{correction_key: (mean score, rows)}`` over :data:`CORRECTION_FILES` in ``folder``.

    ``FileNotFoundError`` (one line) naming the missing file(s) and how to fetch them; ``ValueError`` naming the
    file and row for a missing column or a score that is not a finite number."""
    folder = Path(folder)
    missing = [name for name in CORRECTION_FILES if not (folder / name).is_file()]
    if missing:
        from capeval.hub_cli import download_command

        # the file names right after the repository: every huggingface_hub CLI reads them there
        command = download_command(f"{CORRECTION_REPO} {' '.join(CORRECTION_FILES)}", repo_type="dataset",
                                   local_dir=str(folder))
        raise FileNotFoundError(
            f"Nebula's corrected scores need {', '.join(missing)} in {folder}/ (Pearl's corrections: "
            f"{', '.join(CORRECTION_FILES)} of the Hub dataset {CORRECTION_REPO}); fetch them with `{command}`.")
    totals: dict[tuple[str, str], float] = {}
    counts: dict[tuple[str, str], int] = {}
    for name in CORRECTION_FILES:
        path = folder / name
        with path.open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            absent = [c for c in CORRECTION_COLUMNS if c not in (reader.fieldnames or ())]
            if absent:
                raise ValueError(f"{path}: no column {', '.join(absent)}; expected a CSV with columns "
                                 f"{', '.join(CORRECTION_COLUMNS)} (Pearl's Spica files).")
            for row in reader:
                try:
                    score = float(row["score"])
                except (TypeError, ValueError):
                    score = math.nan
                if not math.isfinite(score):
                    raise ValueError(f"{path}: line {reader.line_num}: score {row['score']!r} is not a finite number.")
                key = correction_key(row["imgid"] or "", row["mt"] or "")
                totals[key] = totals.get(key, 0.0) + score
                counts[key] = counts.get(key, 0) + 1
    return {key: (totals[key] / counts[key], counts[key]) for key in totals}


def check_scores(scores: str) -> str:
    """``scores`` if it is one of :data:`SCORES`; else ``ValueError`` naming the closest valid value."""
    if scores in SCORES:
        return scores
    from capeval.suggest import did_you_mean

    raise ValueError(f"scores must be one of {', '.join(SCORES)}, got {scores!r}"
                     f"{did_you_mean(str(scores), SCORES) or ''}.")


def apply_corrections(bench: Benchmark, corrections: Mapping[tuple[str, str], tuple[float, int]]) -> Benchmark:
    """``bench`` with each record's human score replaced by its correction's mean, where there is one (the others
    keep theirs); ``settings`` gain ``scores``, ``corrected_items`` and ``uncorrected_items``."""
    records, corrected = [], 0
    for record in bench.records:
        found = corrections.get(correction_key(record.image_id, record.candidate))
        if found is None:
            records.append(record)
            continue
        corrected += 1
        mean, rows = found
        extra = {**record.extra, "original_score": record.human_scores[0], "correction_rows": rows}
        records.append(dataclasses.replace(record, human_scores=(mean,), extra=extra))
    uncorrected = len(records) - corrected
    settings = {**bench.settings, "scores": "corrected", "corrected_items": corrected,
                "uncorrected_items": uncorrected}
    notes = [*bench.notes, f"human scores: Pearl's corrections ({', '.join(CORRECTION_FILES)}) replace {corrected:,} "
             f"of {len(records):,} items' scores (mean over the rows of the same image and caption); {uncorrected:,} "
             "item(s) without a correction row keep their original score, as CaptionEvalKit does"]
    return dataclasses.replace(bench, records=records, settings=settings, notes=notes)


def load_nebula(root: str | Path | None = None, *, split: str = "test", image_dir: str | Path | None = None,
                scores: str = "original") -> Benchmark:
    """Nebula's ``split`` (``train``, ``validation`` or ``test``, the default) as a Benchmark, its human scores as
    distributed (``scores="original"``) or Pearl's corrections of the test split (``scores="corrected"``; module
    docstring). Files and lookup order: :mod:`capeval.judgments.judgment_sets`."""
    scores = check_scores(scores)
    if scores == "corrected" and canonical_split(split) != "test":
        raise ValueError(f"scores='corrected' applies to Nebula's test split only (Pearl corrected the test "
                         f"scores), got split={split!r}.")
    folder = resolve_root(root) / NEBULA.name
    corrections = read_corrections(folder) if scores == "corrected" else None  # before reading the split
    bench = load_judgment_set(NEBULA, root, split=split, image_dir=image_dir)
    if corrections is None:
        return dataclasses.replace(bench, settings={**bench.settings, "scores": "original"})
    corrected = apply_corrections(bench, corrections)
    corrected.files = [*bench.files, *(folder / name for name in CORRECTION_FILES)]
    return corrected


__all__ = ["CORRECTION_FILES", "CORRECTION_REPO", "NEBULA", "SCORES", "apply_corrections", "check_scores",
           "correction_key", "load_nebula", "read_corrections"]
