"""LongCap-Arena (Matsuda et al. 2025, "VELA", arXiv:2509.25818): 7,805 images of DCI (Densely Captioned Images)
with long candidate captions, their references and 32,246 human judgments of three aspects: descriptiveness
(``desc``), relevance (``rel``) and fluency (``flu``). Two test sets: Test-A, the DCI val split (``dci_val``), and
Test-B, the DCI test split (``dci_test``); one judgment set per (aspect, test set).

:func:`load_longcap_arena` reads one of them: ``aspect`` ``"desc"`` (default; also ``"descriptiveness"``),
``"rel"`` (``"relevance"``) or ``"flu"`` (``"fluency"``); ``split`` ``"test"`` (default: Test-B, DCI test; also
``"test-b"``, ``"testb"``, ``"dci_test"``) or ``"validation"`` (Test-A, DCI val; also ``"val"``, ``"test-a"``,
``"testa"``, ``"dci_val"``). The first of these that exists is read, in the folders ``<data dir>/longcap-arena/``
(capeval's ``<data dir>/<benchmark name>/``), ``longcaparena/`` and ``LongCap-Arena/`` (CaptionEvalKit's names):

1. CaptionEvalKit's CSV ``<aspect>_<dci split>.csv`` (``desc_dci_val.csv`` ... ``flu_dci_test.csv``), in the folder
   or its ``test/`` sub-folder: columns ``mt`` (else ``cand``: the candidate), ``refs`` (a Python list literal of
   strings), ``score``, the image's name in ``image`` (else ``image_path``, else ``imgid``; the first non-empty
   one; none of the three columns: no image) and an optional id in ``id`` (else ``imgid``, else the row's index);
2. the parquet shards of the Hub dataset ``Ka2ukiMatsuda/LongCap-Arena``'s split ``<dci split>.<aspect>``
   (``dci_val.desc`` ... ``dci_test.flu``) in the folder: ``<split>/*.parquet``, ``default/<split>/*.parquet``
   (its parquet-conversion branch ``refs/convert/parquet`` as ``hf download --revision refs/convert/parquet
   --local-dir`` writes it), ``data/<split>-*.parquet`` or ``<split>-*.parquet``; columns ``file_name``,
   ``image`` (a ``datasets.Image``: ``{"bytes", "path"}``), ``refs`` (list of strings), ``cand``, ``score``;
3. the same shards in the Hugging Face hub cache (the ``refs/convert/parquet`` revision, then ``main``), never
   downloaded; then (offline only: ``HF_HUB_OFFLINE=1``) the ``datasets`` cache
   (:mod:`capeval.judgments.hub_dataset`).

None of them: ``FileNotFoundError`` naming every place looked in, the format and the command that fetches it.

Where this follows, read from public code: YuigaWada/CaptionEvalKit-for-VLMs (commit 420a794),
``capevalkit/infrastructure/benchmarks/legacy.py``: ``HF_LONGCAP_ARENA_REPO = "Ka2ukiMatsuda/LongCap-Arena"``;
``LONGCAPARENA_BENCHMARKS`` maps ``longcaparena-testa-<aspect>`` to (``dci_val.<aspect>``, ``<aspect>``,
``<aspect>_dci_val.csv``) and ``longcaparena-testb-<aspect>`` to the ``dci_test`` ones; ``_load_local_longcaparena``
looks for the CSV in ``longcaparena/``, ``LongCap-Arena/`` (``test/`` sub-folder first) and reads it with
``_load_csv_benchmark`` (``csv.DictReader``; the id, image, candidate and ``refs`` columns above, ``refs`` through
``ast.literal_eval``, ``float(row["score"])``, text through ``" ".join(text.split())``; images in ``images/``, the
name as given or with ``.jpg`` / ``.jpeg`` / ``.png`` / ``.webp`` appended); ``_write_hf_longcaparena_cache``
reads the parquet conversion's ``default/<split>/*.parquet`` (``_hf_parquet_paths``), columns ``file_name``,
``image``, ``refs``, ``cand``, ``score``. The statistic, Kendall tau-c: ``kendall_correlations``
(``capevalkit/domain/evaluation/correlations.py``, tau-b and tau-c, times 100) and
``benchmarks/expected/vela/longcaparena-test{a,b}-<aspect>.json`` (VELA's Table 1 values, ``kendall_tau_c``).

Items. Candidate and references keep their text with whitespace runs collapsed (:func:`files.norm_space`). Empty
references are dropped (counted in the notes); an item left without a reference is skipped (counted in the notes,
the first indices named; CaptionEvalKit keeps empty ones). A malformed item, or a score that is not a finite
number, raises ``ValueError`` naming the file, ``items[<index>]`` (the row's position in the file or split, from 0)
and the field. ``CaptionRecord.source_id`` is ``"<dci split>.<aspect>/<index>"``, ``category`` the aspect.

Images. The CSV names them: ``<folder>/images/<name>`` (also ``<folder>/test/images/``; ``image_dir=`` another
folder), ``None`` where missing (:meth:`Benchmark.images` is then ``None``). The parquet shards carry them:
:meth:`Benchmark.images` returns their ``datasets.Image`` values (``{"bytes", "path"}``), read on first use.

Statistic: Kendall tau-c (in [-1, 1], CaptionEvalKit's times 100) between metric and human score, one row per item.
"""
from __future__ import annotations

import ast
import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.hub_cli import download_command
from capeval.judgments.files import find_with_suffixes, image_finder, kept_images, norm_space, resolve_root
from capeval.judgments.hub_dataset import (HubSplit, cached_snapshot, find_shards, offline, read_datasets_cache,
                                            read_parquet, shard_patterns)
from capeval.judgments.records import Benchmark, CaptionRecord

NAME = "longcap-arena"
REPO_ID = "Ka2ukiMatsuda/LongCap-Arena"
#: The Hub's parquet-conversion branch, whose ``default/<split>/`` folders hold the shards.
PARQUET_REVISION = "refs/convert/parquet"
#: The folders under the data directory looked in, in order: capeval's name, then CaptionEvalKit's two.
FOLDERS = ("longcap-arena", "longcaparena", "LongCap-Arena")
ASPECTS = ("desc", "rel", "flu")
#: Accepted ``aspect`` values -> the aspect they mean.
ASPECT_ALIASES = {"desc": "desc", "descriptiveness": "desc", "rel": "rel", "relevance": "rel", "flu": "flu",
                  "fluency": "flu"}
ASPECT_NAMES = {"desc": "descriptiveness", "rel": "relevance", "flu": "fluency"}
SPLITS = ("test", "validation")
#: Accepted ``split`` values -> the split they mean.
SPLIT_ALIASES = {"test": "test", "test-b": "test", "testb": "test", "dci_test": "test", "validation": "validation",
                 "val": "validation", "test-a": "validation", "testa": "validation", "dci_val": "validation"}
#: Split -> the DCI split it is, and the paper's name of that test set.
DCI_SPLITS = {"test": "dci_test", "validation": "dci_val"}
TEST_SETS = {"test": "Test-B", "validation": "Test-A"}
CSV_FORMAT = ("CaptionEvalKit's CSV with columns mt (or cand), refs (a Python list literal of strings), score, and "
              "the image's name in image (or image_path, or imgid)")
HUB_COLUMNS = ("file_name", "refs", "cand", "score")
HUB_IMAGE = "image"
HUB_FORMAT = "parquet columns file_name, image (a datasets Image), refs (a list of strings), cand, score"
#: Where a Hub split's shards lie under a folder, before :func:`find_shards`'s layouts (``{}``: the split).
SHARD_LAYOUTS = ("{}/*.parquet", "default/{}/*.parquet")
IMAGE_COLUMNS = ("image", "image_path", "imgid")
ID_COLUMNS = ("id", "imgid")
IMAGE_SUFFIXES = ("", ".jpg", ".jpeg", ".png", ".webp")
#: How many skipped items the note names.
_NAMED = 5


@dataclass
class _Source:
    """The rows of one source, before validation: ``candidate`` the column holding it, ``image_columns`` /
    ``id_columns`` those present that name the image / the item (CSV), ``image_names`` the embedded images' file
    names and ``images`` their values (parquet), ``folder`` the benchmark folder it was found in."""

    kind: str  # "csv", "hub-parquet", "hub-cache", "datasets-cache"
    where: str
    rows: list[Any]
    candidate: str
    folder: str | None = None
    files: list[Path] = field(default_factory=list)
    image_columns: tuple[str, ...] = ()
    id_columns: tuple[str, ...] = ()
    image_names: list[str | None] = field(default_factory=list)
    images: Callable[[], list[Any]] | None = None
    in_test_folder: bool = False


def canonical_aspect(aspect: str) -> str:
    """``"descriptiveness"`` → ``"desc"``...; ``ValueError`` naming the accepted values for anything else."""
    key = str(aspect).strip().lower()
    if key not in ASPECT_ALIASES:
        raise ValueError(f"aspect must be one of {', '.join(ASPECT_ALIASES)}, got {aspect!r}.")
    return ASPECT_ALIASES[key]


def canonical_split(split: str) -> str:
    """``"test-a"`` → ``"validation"``...; ``ValueError`` naming the accepted values for anything else."""
    key = str(split).strip().lower()
    if key not in SPLIT_ALIASES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_ALIASES)}, got {split!r}.")
    return SPLIT_ALIASES[key]


def load_longcap_arena(root: str | Path | None = None, *, aspect: str = "desc", split: str = "test",
                       image_dir: str | Path | None = None) -> Benchmark:
    """LongCap-Arena's judgments of ``aspect`` (``desc``, ``rel`` or ``flu``) on ``split`` (``test``: Test-B, DCI
    test; ``validation``: Test-A, DCI val) as a Benchmark; files, lookup order and items: the module docstring."""
    aspect, split = canonical_aspect(aspect), canonical_split(split)
    data_root = resolve_root(root)
    hub_split = f"{DCI_SPLITS[split]}.{aspect}"
    source = _find_source(data_root, aspect, split)
    find_image = None
    if source.images is None:
        defaults = (f"{source.folder}/images", *((f"{source.folder}/test/images",) if source.in_test_folder else ()))
        find_image = image_finder(data_root, image_dir, defaults)
    records: list[CaptionRecord] = []
    kept: list[int] = []
    skipped: list[int] = []
    dropped = 0
    for i, row in enumerate(source.rows):
        candidate, references, n_empty, score, image_name, item_id = _parse(row, i, source)
        dropped += n_empty
        if not references:
            skipped.append(i)
            continue
        kept.append(i)
        extra: dict[str, Any] = {"index": i, "dci_split": DCI_SPLITS[split], "empty_references_dropped": n_empty}
        if item_id is not None:
            extra["id"] = item_id
        records.append(CaptionRecord(
            benchmark=NAME, source_id=f"{hub_split}/{i}", image_id=image_name or f"{hub_split}/{i}",
            image_path=(find_with_suffixes(find_image, image_name, IMAGE_SUFFIXES) if find_image and image_name
                        else None), candidate=candidate,
            references=references, human_scores=(score,), category=aspect, system=None, extra=extra))
    if not records:
        raise ValueError(f"{source.where}: no item with a candidate and a non-empty reference.")
    return Benchmark(name=NAME, records=records, settings={"aspect": aspect, "split": split},
                     statistic="kendall_c", files=source.files,
                     notes=_notes(source, aspect, split, dropped, skipped, data_root),
                     embedded_images=kept_images(source.images, kept, len(source.rows)))


# -- finding the files -------------------------------------------------------------------------------------------
def _find_source(data_root: Path, aspect: str, split: str) -> _Source:
    """The first source that exists (module docstring); ``FileNotFoundError`` naming every place looked in."""
    dci = DCI_SPLITS[split]
    file_name, hub_split = f"{aspect}_{dci}.csv", f"{dci}.{aspect}"
    looked: list[str] = []
    for folder in FOLDERS:
        for relative in (file_name, f"test/{file_name}"):
            path = data_root / folder / relative
            if path.is_file():
                return _read_csv(path, folder, in_test_folder=relative != file_name)
            looked.append(str(path))
    for folder in FOLDERS:
        shards = local_shards(data_root / folder, hub_split)
        if shards:
            return _hub_source(read_parquet(shards, HUB_COLUMNS, HUB_IMAGE, "hub-parquet"), _shards_where(shards))
        looked += [str(data_root / folder / p.format(hub_split)) for p in SHARD_LAYOUTS]
        looked += shard_patterns(data_root / folder, hub_split)
    shards = _cached_shards(hub_split, looked)
    if shards:
        return _hub_source(read_parquet(shards, HUB_COLUMNS, HUB_IMAGE, "hub-cache"), _shards_where(shards))
    if offline():
        try:
            hub = read_datasets_cache(REPO_ID, hub_split, HUB_COLUMNS, HUB_IMAGE)
            return _hub_source(hub, f"{REPO_ID} {hub_split} split (datasets cache)")
        except FileNotFoundError as err:
            looked.append(f"the datasets cache of {REPO_ID} ({err})")
    else:
        looked.append(f"the datasets cache of {REPO_ID} (not read: online, load_dataset would download it; set "
                      "HF_HUB_OFFLINE=1 to read the cache)")
    command = download_command(f"{REPO_ID} --revision {PARQUET_REVISION}", repo_type="dataset",
                               local_dir=str(data_root / FOLDERS[0]))
    raise FileNotFoundError(
        f"{looked[0]} not found; expected {CSV_FORMAT}. Also looked for: {'; '.join(looked[1:])}. Fetch the Hub "
        f"dataset's parquet splits ({hub_split}: {HUB_FORMAT}): `{command}`, or put CaptionEvalKit's {file_name} "
        f"at {looked[0]}.")


def local_shards(folder: Path, hub_split: str) -> list[Path]:
    """The parquet shards of Hub split ``hub_split`` under ``folder`` (:data:`SHARD_LAYOUTS`, then
    :func:`find_shards`'s), sorted; ``[]`` if none."""
    for pattern in SHARD_LAYOUTS:
        shards = sorted(folder.glob(pattern.format(hub_split)))
        if shards:
            return shards
    return find_shards(folder, hub_split)


def _cached_shards(hub_split: str, looked: list[str]) -> list[Path]:
    """The shards of ``hub_split`` in the hub cache's parquet-conversion snapshot, else its ``main`` snapshot;
    ``[]`` (``looked`` extended with why) when neither has them."""
    for revision, (snapshot, why) in ((PARQUET_REVISION, _cached_revision(PARQUET_REVISION)),
                                      ("main", cached_snapshot(REPO_ID))):
        if snapshot is not None:
            shards = local_shards(snapshot, hub_split)
            if shards:
                return shards
            why = f"cached at {snapshot}, without {hub_split} shards"
        looked.append(f"the Hugging Face hub cache of {REPO_ID}, revision {revision} ({why})")
    return []


def _cached_revision(revision: str) -> tuple[Path | None, str]:
    """``(folder, why)``: the hub cache's snapshot of ``revision`` (never downloaded), or ``None`` and why."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None, 'huggingface_hub is not installed (pip install "capeval[bench]")'
    try:
        return Path(snapshot_download(REPO_ID, repo_type="dataset", revision=revision, local_files_only=True)), ""
    except Exception as err:  # noqa: BLE001 - not cached, a damaged cache: the caller reports every place
        return None, f"not cached ({type(err).__name__})"


def _shards_where(shards: Sequence[Path]) -> str:
    return str(shards[0]) if len(shards) == 1 else str(shards[0].parent / "*.parquet")


def _hub_source(hub: HubSplit, where: str) -> _Source:
    return _Source(hub.kind, where, hub.rows, "cand", files=hub.files, image_names=hub.image_names,
                   images=hub.images)


def _read_csv(path: Path, folder: str, *, in_test_folder: bool) -> _Source:
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        header = tuple(reader.fieldnames or ())
        candidate = "mt" if "mt" in header else "cand"
        missing = [name for name, present in (("mt or cand", candidate in header), ("refs", "refs" in header),
                                               ("score", "score" in header)) if not present]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)}; expected {CSV_FORMAT}.")
        rows = list(reader)
    return _Source("csv", str(path), rows, candidate, folder, [path],
                   image_columns=tuple(c for c in IMAGE_COLUMNS if c in header),
                   id_columns=tuple(c for c in ID_COLUMNS if c in header), in_test_folder=in_test_folder)


# -- one item ----------------------------------------------------------------------------------------------------
def _parse(row: Any, i: int, source: _Source
           ) -> tuple[str, tuple[str, ...], int, float, str | None, str | None]:
    """``(candidate, non-empty references, empty ones dropped, score, image name, item id)`` of item ``i``."""
    where = source.where
    if not isinstance(row, Mapping):
        raise ValueError(f"{where}: items[{i}] is a {type(row).__name__}, not a row.")
    candidate = row.get(source.candidate)
    if not isinstance(candidate, str) or not candidate.strip():
        raise ValueError(f'{where}: items[{i}]["{source.candidate}"] must be a non-empty caption, got {candidate!r}.')
    references, n_empty = _references(row.get("refs"), f'{where}: items[{i}]["refs"]')
    score = _score(row.get("score"), f'{where}: items[{i}]["score"]')
    if source.kind == "csv":  # the first non-empty image / id column
        image_name = next((row[c].strip() for c in source.image_columns if (row.get(c) or "").strip()), None)
        item_id = next((row[c].strip() for c in source.id_columns if (row.get(c) or "").strip()), str(i))
        return norm_space(candidate), references, n_empty, score, image_name, item_id
    name = row.get("file_name")
    if not isinstance(name, str) or not name.strip():
        path = source.image_names[i] if i < len(source.image_names) else None
        name = Path(path).name if path else None
    return norm_space(candidate), references, n_empty, score, name.strip() if name else None, None


def _references(value: Any, what: str) -> tuple[tuple[str, ...], int]:
    """The non-empty references of a list (a CSV's Python list literal too) and how many empty ones were dropped."""
    if isinstance(value, str):  # CaptionEvalKit's CSV: "['A long caption ...', ...]"
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"{what} must be a list of references, got the text {value[:80]!r}.") from None
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{what} must be a list of references, got {type(value).__name__}.")
    kept = []
    for j, ref in enumerate(value):
        if not isinstance(ref, str):
            raise ValueError(f"{what}[{j}] must be a string, got {ref!r:.80}.")
        if ref.strip():
            kept.append(norm_space(ref))
    return tuple(kept), len(value) - len(kept)


def _score(value: Any, what: str) -> float:
    """A human score: a finite number (a CSV's text parsed)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError(f"{what} must be a finite number, got the text {value!r:.80}.") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r:.80}.")
    return float(value)


# -- the benchmark -----------------------------------------------------------------------------------------------


def _notes(source: _Source, aspect: str, split: str, dropped: int, skipped: list[int], data_root: Path
           ) -> list[str]:
    hub_split = f"{DCI_SPLITS[split]}.{aspect}"
    where = Path(source.where)  # shown without this machine's folders
    if source.kind in ("hub-cache", "datasets-cache"):
        shown = f"the Hugging Face {source.kind.split('-')[0]} cache of {REPO_ID} ({hub_split})"
    else:
        shown = str(where.relative_to(data_root) if where.is_relative_to(data_root) else where)
    notes = [f"read from {shown} ({source.kind}): LongCap-Arena {TEST_SETS[split]} (DCI {DCI_SPLITS[split]}), "
             f"{ASPECT_NAMES[aspect]} judgments"]
    if source.kind == "csv" and not source.image_columns:
        notes.append(f"no image column ({', '.join(IMAGE_COLUMNS)}): no image files, each image id is the item's "
                     "source id")
    if dropped:
        notes.append(f"{dropped} empty reference(s) dropped")
    if skipped:
        named = ", ".join(f"items[{i}]" for i in skipped[:_NAMED]) + (", ..." if len(skipped) > _NAMED else "")
        notes.append(f"{len(skipped)} item(s) skipped: no non-empty reference ({named})")
    return notes


__all__ = ["ASPECTS", "ASPECT_ALIASES", "DCI_SPLITS", "FOLDERS", "NAME", "PARQUET_REVISION", "REPO_ID", "SPLITS",
           "SPLIT_ALIASES", "canonical_aspect", "canonical_split", "load_longcap_arena", "local_shards"]
