"""DetailCaps-4870 (Dong et al. 2024, "Benchmarking and Improving Detail Image Caption", the CAPTURE paper): 4,870
images with detailed reference captions and, per image, the detailed captions of three open models (CogVLM,
ShareCaptioner, LLaVA-1.5) with GPT-4's judgment of each against the references — the expert judgments CAPTURE's
consistency is measured on.

The release is the Hugging Face dataset ``foundation-multimodal-models/DetailCaps-4870``: one parquet file,
``DetailCaps-4870.parquet`` (split ``test``), read from ``<data dir>/detailcaps/`` (``hf download --repo-type
dataset foundation-multimodal-models/DetailCaps-4870 --local-dir <data dir>/detailcaps``) or from the Hugging Face
hub cache (never downloaded here). Columns (as the dataset card and the public code reading it name them):
``image`` (the image's identifier in its source: a COCO or Flickr path, a LAION / CC / SBU / Coyo URL, a SAM id),
``source`` (the source dataset), ``binary`` (the image's encoded bytes), ``GT_Caption_GPT4V``,
``GT_Caption_Gemini15Pro`` and (in later revisions) ``GT_Caption_GPT4O`` (the references), ``CogVLM``,
``ShareCaptioner``, ``LLaVA_v15`` (the candidates) and ``GPT4_Eval`` (a JSON object ``{"CogVLM": score,
"ShareCaptioner": score, "LLaVA_v15": score}``, or null for an image without judgments).

Items: one :class:`~capeval.judgments.records.CaptionRecord` per (image, model) with a judgment; ``system`` the
model, ``category`` the source dataset; candidate and references with whitespace runs collapsed. Images without
``GPT4_Eval`` are skipped (counted in the notes).

References (``references=``): ``"paper"`` (default): GPT-4V's and Gemini-1.5-Pro's, the two per image of the paper's
benchmark table (9,740 references for 4,870 images); ``"all"``: GPT-4o's too, where the revision has them.

Statistic: Pearson's r between metric and GPT-4 score over all (image, model) items, the paper's PCC ρ; its
Kendall τ is ``tau_b`` (scipy's ``kendalltau``) of the same rows, which ``capeval bench`` reports beside it.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from capeval.hub_cli import download_command
from capeval.judgments.files import norm_space, resolve_root
from capeval.judgments.records import Benchmark, CaptionRecord

REPO_ID = "foundation-multimodal-models/DetailCaps-4870"
FILE_NAME = "DetailCaps-4870.parquet"
FOLDER = "detailcaps"
MODELS = ("CogVLM", "ShareCaptioner", "LLaVA_v15")
REFERENCE_COLUMNS = {"paper": ("GT_Caption_GPT4V", "GT_Caption_Gemini15Pro"),
                     "all": ("GT_Caption_GPT4V", "GT_Caption_Gemini15Pro", "GT_Caption_GPT4O")}
FORMAT = (f"{FILE_NAME} ({REPO_ID}): parquet columns image, source, binary, GT_Caption_GPT4V, "
          "GT_Caption_Gemini15Pro, GT_Caption_GPT4O (optional), CogVLM, ShareCaptioner, LLaVA_v15, GPT4_Eval (JSON "
          "{model: score} or null)")


def find_file(base: Path) -> Path:
    """The parquet file: under ``base`` (the data directory's ``detailcaps/``), else in the hub cache;
    ``FileNotFoundError`` naming both places, the format and the download command."""
    from capeval.judgments.hub_dataset import cached_snapshot

    local = base / FILE_NAME
    if local.is_file():
        return local
    snapshot, why = cached_snapshot(REPO_ID)
    if snapshot is not None and (snapshot / FILE_NAME).is_file():
        return snapshot / FILE_NAME
    cached = why or f"the cached snapshot has no {FILE_NAME}"
    raise FileNotFoundError(f"{local} not found; expected {FORMAT}; also looked in the Hugging Face hub cache "
                            f"({cached}); download it with: "
                            f"{download_command(REPO_ID, repo_type='dataset', local_dir=str(base))}")


def _read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError('reading DetailCaps-4870 needs pyarrow: pip install "capeval[bench]"') from None
    present = pq.read_schema(path).names
    wanted = ["image", "source", *MODELS, "GPT4_Eval", *REFERENCE_COLUMNS["all"]]
    missing = [c for c in wanted if c not in present and c != "GT_Caption_GPT4O"]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(map(repr, missing))}; it has {', '.join(present)}.")
    return pq.read_table(path, columns=[c for c in wanted if c in present]).to_pylist(), present


def judgments_of(value: Any, where: str) -> dict[str, float] | None:
    """The GPT-4 scores of one row (``None`` for a row without judgments); ``ValueError`` naming ``where`` for
    anything but a JSON object of finite numbers per model."""
    if value is None:
        return None
    try:
        data = json.loads(value) if isinstance(value, (str, bytes)) else value
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: GPT4_Eval is not JSON ({err.msg}).") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: GPT4_Eval is {type(data).__name__}, not an object of scores per model.")
    scores = {}
    for model in MODELS:
        raw = data.get(model)
        try:
            score = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: GPT4_Eval[{model!r}] is {raw!r:.40}, not a number.") from None
        if not math.isfinite(score):
            raise ValueError(f"{where}: GPT4_Eval[{model!r}] is {score}, not a finite number.")
        scores[model] = score
    return scores


def _row_records(row: dict[str, Any], index: int, where: str, columns: tuple[str, ...]) -> list[CaptionRecord]:
    scores = judgments_of(row.get("GPT4_Eval"), where)
    if scores is None:
        return []
    references = tuple(norm_space(str(row[c])) for c in columns if row.get(c) and str(row[c]).strip())
    if not references:
        raise ValueError(f"{where}: no reference caption in {', '.join(columns)}.")
    out = []
    for model in MODELS:
        candidate = row.get(model)
        if not isinstance(candidate, str):
            raise ValueError(f"{where}: {model} is {type(candidate).__name__}, not a caption.")
        out.append(CaptionRecord(benchmark="detailcaps", source_id=f"{index}/{model}", image_id=str(row["image"]),
                                 image_path=None, candidate=norm_space(candidate), references=references,
                                 human_scores=(scores[model],), category=str(row.get("source") or ""),
                                 system=model, extra={"row": index}))
    return out


def load_detailcaps(root: str | Path | None = None, *, references: str = "paper") -> Benchmark:
    """DetailCaps-4870 (see the module docstring); ``root``: the data directory."""
    if references not in REFERENCE_COLUMNS:
        raise ValueError(f"references must be one of {', '.join(map(repr, REFERENCE_COLUMNS))}, got {references!r}.")
    path = find_file(resolve_root(root) / FOLDER)
    rows, present = _read(path)
    columns = tuple(c for c in REFERENCE_COLUMNS[references] if c in present)
    records, kept_rows, unjudged = [], [], 0
    for index, row in enumerate(rows):
        found = _row_records(row, index, f"{path.name}: items[{index}]", columns)
        unjudged += not found
        kept_rows += [index] * len(found)
        records += found
    notes = [f"{unjudged} image(s) without GPT4_Eval skipped"] if unjudged else []
    if references == "all" and "GT_Caption_GPT4O" not in present:
        notes.append("this revision has no GT_Caption_GPT4O: the references are GPT-4V's and Gemini-1.5-Pro's")

    def images() -> list[dict[str, Any]]:
        import pyarrow.parquet as pq

        column = pq.read_table(path, columns=["binary"]).column(0).to_pylist()
        return [{"bytes": column[i], "path": None} for i in kept_rows]

    return Benchmark(name="detailcaps", records=records, settings={"references": references}, statistic="pearson",
                     files=[path], notes=notes, embedded_images=images)


__all__ = ["FILE_NAME", "MODELS", "REFERENCE_COLUMNS", "REPO_ID", "find_file", "judgments_of", "load_detailcaps"]
