"""One chunk of :func:`capeval.score_dataset`: the run's settings (:class:`ScoringRun`), a chunk's rows checked
(bad rows raised or skipped, images read), scored with :func:`capeval.api.score_with_states`, and turned into its shard
(per-caption columns) and record (what the corpus values are merged from). Every engine scores a chunk with
:func:`score_chunk` and :func:`shard_of`, so the shards are the same whichever ran them.
"""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import Setting, words
from capeval.dataset_scoring import store
from capeval.dataset_scoring.sources import Source, open_source
from capeval.registry import metric_class
from capeval.validation import OptionError


@dataclass
class ScoringRun:
    """Everything a process needs to score its chunks (picklable: sent to spawned workers)."""

    data: Any
    split: str | None
    folder: Path
    selected: dict[str, list[str]]
    columns: dict[str, str | None]
    chunk_size: int
    on_error: str
    score_kwargs: dict[str, Any]
    options: dict[str, Any]
    language_check: bool
    progress: bool | None
    cider_table: bool = False
    #: Whether a selected metric refuses captions over ``max_caption_chars`` (checked per row).
    limits_length: bool = False
    source: Source | None = field(default=None, repr=False)

    def open(self) -> Source:
        if self.source is None:
            self.source = open_source(self.data, split=self.split)
        return self.source

    def __getstate__(self):
        state = dict(self.__dict__)
        state["source"] = None
        return state


def new_run(*, selected: dict[str, list[str]], options: dict[str, Any], **settings: Any) -> ScoringRun:
    """A :class:`ScoringRun` of ``selected`` metrics with ``options`` and the other fields as given (``data``,
    ``split``, ``folder``, ``columns``, ``chunk_size``, ``on_error``, ``score_kwargs``, ``language_check``,
    ``progress``); whether a first pass counts document frequencies and whether rows are checked for length follow
    from the metrics."""
    return ScoringRun(selected=selected, options=dict(options), **settings,
                      cider_table=any(counts_documents(metric_class(n), options) for n in selected),  # cider_d, spider
                      limits_length=any(metric_class(n).limits_length for n in selected))


def jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return f"{type(value).__name__}:{value!r:.200}"


def wanted_columns(run: ScoringRun) -> list[str]:
    return list(dict.fromkeys(c for c in run.columns.values() if c is not None))


def row_problem(pred: Any, refs: Any, image: Any, run: ScoringRun) -> tuple[str | None, list[str] | None]:
    """``(why the row cannot be scored or None, its references as a list)``."""
    limit = run.score_kwargs["max_caption_chars"]
    cols = run.columns
    if not isinstance(pred, str):
        return f"{cols['prediction']} is {type(pred).__name__}, not a string", None
    if not pred.strip() and run.score_kwargs["empty"] == "error":
        return f"{cols['prediction']} is empty (empty='zero' scores it 0)", None
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, (list, tuple)) or not refs:
        return f"{cols['references']} is {'an empty list' if isinstance(refs, (list, tuple)) else type(refs).__name__}" \
               ", not a reference string or a non-empty list of them", None
    for j, ref in enumerate(refs):
        if not isinstance(ref, str) or not ref.strip():
            return f"{cols['references']}[{j}] is {'empty' if isinstance(ref, str) else type(ref).__name__}", None
    if limit is not None and run.limits_length:
        longest = max([pred, *refs], key=len)
        if len(longest) > limit:
            return f"a caption of {len(longest):,} characters exceeds max_caption_chars={limit:,}", None
    if cols["image"] is not None and image is None:
        return f"{cols['image']} is missing", None
    return None, list(refs)


def chunk_multiples(selected: Iterable[str], options: dict[str, Any]) -> dict[str, int]:
    """``{option: value}`` of the options that the selected metrics say a chunk size must be a multiple of
    (:attr:`capeval.metric.CaptionMetric.chunk_multiple_of`), at the values ``options`` give or their defaults."""
    found = {}
    for name in selected:
        cls = metric_class(name)
        option = cls.chunk_multiple_of
        if option is not None:
            found[option] = int(options.get(option) or cls.option_defaults()[option])
    return found


def check_chunk_size(selected: Iterable[str], options: dict[str, Any], chunk_size: int) -> None:
    """``ValueError`` unless ``chunk_size`` is a multiple of every value :func:`chunk_multiples` names."""
    for option, value in chunk_multiples(selected, options).items():
        if chunk_size % value:
            names = [n for n in selected if metric_class(n).chunk_multiple_of == option]
            raise ValueError(f"{', '.join(names)} scores in batches of {value} ({option}) that a score depends on "
                             f"slightly; chunk_size must be a multiple of it (got {chunk_size}).")


def whole_set_only(selected: Iterable[str]) -> dict[str, str]:
    """``{metric: why}`` of the selected metrics that cannot be scored chunk by chunk."""
    return {name: metric_class(name).whole_set_only for name in selected if metric_class(name).whole_set_only}


def counts_documents(cls: type, options: dict[str, Any]) -> bool:
    """Whether the metric class reads document frequencies that a first pass must count over every row (its
    :attr:`~capeval.metric.CaptionMetric.document_frequency_option` at ``"references"``, its default)."""
    option = cls.document_frequency_option
    return option is not None and options.get(option, "references") == "references"


def chunk_rows(run: ScoringRun, k: int, batch: dict[str, list], base_dir: Path | None, decode: bool = False):
    """``(ids, predictions, references, images, skipped, rows)`` of chunk ``k``'s scorable rows (``rows``: their
    numbers in the input); a bad row raises with ``on_error="raise"``. With a metric that reads images, each row's
    image is read here (a missing file, a FIFO or device, a file over the limit is a bad row like the others, named by
    its row and id; skipped with ``on_error="skip"``), and with ``decode`` also decoded, so that one that is not a
    readable image is such a bad row too rather than an error inside a metric's batch. The metrics decode every image
    anyway, so :func:`_score_chunks` first reads only (one decode per image) and checks with ``decode`` the chunks
    whose scoring fails."""
    cols = run.columns
    n = len(batch[cols["prediction"]])
    first = k * run.chunk_size
    ids = batch[cols["id"]] if cols["id"] is not None else list(range(first, first + n))
    images = batch[cols["image"]] if cols["image"] is not None else [None] * n
    kept_ids, preds, refs, imgs, skipped, kept_rows = [], [], [], [], [], []
    for i in range(n):
        why, row_refs = row_problem(batch[cols["prediction"]][i], batch[cols["references"]][i], images[i], run)
        image = resolve_image(images[i], base_dir) if why is None and cols["image"] is not None else None
        if why is None and cols["image"] is not None:
            why = image_problem(image, first + i, cols["image"], decode)
        if why is not None:
            if run.on_error == "raise":
                raise OptionError(words("on_error", f"row {first + i} (id {ids[i]!r:.80}): {why}. ", Setting("skip"),
                                        " scores the other rows and lists this one in result.json.",
                                        item="rows", index=first + i))
            skipped.append({"row": first + i, "id": jsonable(ids[i]), "why": why})
            continue
        kept_ids.append(ids[i])
        kept_rows.append(first + i)
        preds.append(batch[cols["prediction"]][i])
        refs.append(row_refs)
        imgs.append(image)
    return kept_ids, preds, refs, (imgs if cols["image"] is not None else None), skipped, kept_rows


def image_problem(value: Any, row: int, column: str, decode: bool = True) -> str | None:
    """Why the image of input row ``row`` cannot be read (missing file, a FIFO or device, too large, and with
    ``decode`` not an image), with the image named by ``column`` instead of :mod:`capeval.models.images`'
    ``images[i]``; ``None`` when it reads (and decodes)."""
    from capeval.models.images import read_item

    try:
        item = read_item(value, row)  # regular files only, within the size limit (a FIFO is never opened blocking)
        if decode and item.data is not None:
            item.decode()
    except (ValueError, TypeError, OSError) as err:
        from capeval.models.images import ImageInputError

        text = err.named(f"{column} ({err.path})" if err.path else column) if isinstance(err, ImageInputError) \
            else str(err).replace(f"images[{row}]", column, 1)  # a missing file (FileNotFoundError)
        return " ".join(text.split()).rstrip(".")
    return None


def in_row_words(err: BaseException, rows: list[int], ids: list[Any], column: str | None) -> BaseException | None:
    """A metric's :class:`~capeval.models.images.ImageInputError` about its ``index``-th image (the ``index``-th
    scored row of a chunk) as an error naming the input row, its id and the column; ``None`` for any other error."""
    from capeval.models.images import ImageInputError

    if not isinstance(err, ImageInputError) or not 0 <= err.index < len(rows):
        return None
    i = err.index
    item = column or "image"
    text = err.named(f"{item} ({err.path})" if err.path else item)
    return ValueError(f"row {rows[i]} (id {ids[i]!r:.80}): {text}")


def resolve_image(value: Any, base_dir: Path | None) -> Any:
    """A relative image path against ``base_dir`` (the data files' folder) when the file is there (or nowhere else)."""
    if isinstance(value, str) and not os.path.isabs(value) and base_dir is not None:
        candidate = base_dir / value
        if candidate.exists() or not os.path.exists(value):
            return str(candidate)
    return value


def cider_table(run: ScoringRun):
    """The first pass's table: on disk (``cider-df.bin``), or in memory from a folder begun before that format."""
    from capeval.coco.dataset_pass import open_legacy_parquet_table, open_table

    if (run.folder / store.CIDER_DF).is_file():
        return open_table(run.folder / store.CIDER_DF)  # checked once per process
    return open_legacy_parquet_table(run.folder / store.CIDER_DF_PARQUET, store.META_KEY)


def options_with_table(run: ScoringRun) -> dict[str, Any]:
    """The metrics' options, the first pass's document-frequency table given to every metric that reads one."""
    from capeval.registry import metric_class

    options = dict(run.options)
    if run.cider_table:
        table = cider_table(run)
        for name in run.selected:
            option = metric_class(name).document_frequency_option
            if option is not None:
                options[option] = table
    return options


def score_chunk(run: ScoringRun, k: int, batch: dict[str, list], base_dir: Path | None, options: dict[str, Any],
                 caught: dict[type, list]) -> tuple:
    """``(ids, predictions, references, skipped, result, states)`` of chunk ``k`` (``result`` / ``states`` ``None``
    when no row is left to score). When the scoring fails and the chunk has images, its images are decoded one by
    one: a row whose image does not decode is named (or skipped) as any bad row and the rest scored again; if every
    image decodes, the metric's own error is raised in the rows' words."""
    ids, preds, refs, images, skipped, kept_rows = chunk_rows(run, k, batch, base_dir)
    result = states = None
    if preds:
        try:
            result, states = score_rows(run, preds, refs, images, options, caught)
        except (ValueError, TypeError, OSError) as err:
            if images is None:
                raise
            checked = chunk_rows(run, k, batch, base_dir, decode=True)
            if len(checked[4]) == len(skipped):  # no such image: the metric's own error, in row words
                renamed = in_row_words(err, kept_rows, ids, run.columns["image"])
                if renamed is None:
                    raise
                raise renamed from None
            ids, preds, refs, images, skipped, kept_rows = checked
            if preds:
                result, states = score_rows(run, preds, refs, images, options, caught)
    return ids, preds, refs, skipped, result, states


def shard_of(run: ScoringRun, k: int, rows: tuple, result: dict | None, states: dict | None,
              coverage_names: list[str]) -> tuple[dict[str, list], dict[str, Any]]:
    """``(columns, record)`` of chunk ``k``'s shard: the per-caption values by result key (and coverage), and what
    the corpus values are merged from (states, signature, reference counts, coverage counts, non-English rows)."""
    from capeval.language import non_english_positions

    ids, preds, refs, skipped = rows
    record: dict[str, Any] = {"chunk": k, "first_row": k * run.chunk_size, "rows": len(preds),
                              "skipped": skipped, "signature": None, "nrefs": [], "states": {},
                              "coverage": {}, "non_english": []}
    id_name = run.columns["id"] or "row"
    columns: dict[str, list] = {id_name: ids}
    if not preds:
        for keys in run.selected.values():
            for key in keys:
                columns[key] = []
        for name in coverage_names:
            columns[f"coverage_{name}"] = []
        return columns, record
    for name, keys in run.selected.items():
        for key in keys:
            columns[key] = [float(v) for v in result["per_caption"][key]]
        if states[name]["state"] is not None:
            record["states"][name] = states[name]["state"]
        else:
            check_mean(name, keys, result)
        if states[name]["coverage"] is not None:  # token counts: added up over the chunks
            record["coverage"][name] = states[name]["coverage"]
            columns[f"coverage_{name}"] = [None if v is None else float(v)  # None: no token
                                           for v in result["coverage_per_caption"][name]]
    record["signature"] = result["signature"]
    record["signature_fields"] = [list(field) for field in result["signature"].fields]
    record["nrefs"] = sorted({len(r) for r in refs})
    if run.language_check:
        positions = sorted({i for i, _ in non_english_positions(preds, refs)})
        record["non_english"] = [jsonable(ids[i]) for i in positions]
    return columns, record


def score_rows(run: ScoringRun, preds: list[str], refs: list[list[str]], images: list | None, options: dict,
                caught: dict[type, list]) -> tuple[dict, dict]:
    """``score_with_states`` of one chunk's scorable rows; its warnings are added to ``caught`` (said once per kind
    for the whole run), those of a failed call are dropped with it."""
    from capeval.api import score_with_states

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result, states = score_with_states(preds, refs, list(run.selected), images=images, progress=False,
                                           language_check=False, **run.score_kwargs, **options)
    for w in seen:
        caught.setdefault(w.category, []).append(str(w.message))
    return result, states


def check_mean(name: str, keys: list[str], result: dict) -> None:
    """A metric without a mergeable state must have corpus value = mean of per-caption values (else refuse)."""
    for key in keys:
        values = result["per_caption"][key]
        mean = math.fsum(values) / len(values)
        if abs(mean - result[key]) > 1e-9 * max(1.0, abs(mean)):
            raise ValueError(f"{key}'s corpus value is not the mean of its per-caption values ({result[key]!r} vs "
                             f"{mean!r}), and {name} keeps no mergeable corpus state: it cannot be scored chunk by "
                             "chunk. Score it with capeval.score on the whole set.")


def chunk_shard(run: ScoringRun, k: int, batch: dict[str, list], base_dir: Path | None, options: dict[str, Any],
                caught: dict[type, list]) -> tuple[dict[str, list], dict[str, Any]]:
    """``(columns, record)`` of chunk ``k`` (its rows ``batch``): scored with :func:`score_chunk`, turned into its
    shard with :func:`shard_of`; what every engine writes with :func:`capeval.dataset_scoring.store.write_shard`."""
    coverage_names = [name for name in run.selected if metric_class(name).reports_coverage]
    ids, preds, refs, skipped, result, states = score_chunk(run, k, batch, base_dir, options, caught)
    return shard_of(run, k, (ids, preds, refs, skipped), result, states, coverage_names)


def say_caught(caught: dict[type, list]) -> None:
    """The warnings the chunks caught (:func:`score_rows`), each kind said once for the whole run."""
    for category, messages in caught.items():
        more = f" (and {len(messages) - 1} more such warning(s) over the chunks)" if len(messages) > 1 else ""
        warnings.warn(f"{messages[0]}{more}", category, stacklevel=4)
