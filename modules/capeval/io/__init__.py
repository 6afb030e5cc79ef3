"""Readers for prediction and reference files used by ``capeval score``.

Supported inputs (detected from the content, not only the extension):

* **plain JSON**: predictions ``["a dog", ...]``; references ``[["ref 1", "ref 2"], ...]`` (or one
  string per item), paired by order.
* **COCO results** (predictions): ``[{"image_id": 1, "caption": "..."}, ...]``.
* **pycocoevalcap's dicts**: predictions ``{"391895": ["a man ..."]}`` (its ``res``: one caption per image id, or the
  caption itself), references ``{"391895": ["ref 1", ...]}`` (its ``gts``).
* **COCO annotations** (references): ``{"annotations": [{"image_id": 1, "caption": "..."}, ...]}``;
  also a ``{id: [captions]}`` mapping.
* **JSONL**: one JSON value per line: a string, a list of strings, or an object with an id field
  (``image_id``/``id``) and a text field (``caption``/``prediction``/``references``/``reference``).
* **CSV** (UTF-8, optional BOM): a header row; the text column is ``caption``/``prediction``/
  ``reference``/``references`` (or the only column); an ``image_id``/``id`` column pairs rows; for
  references, several rows with the same id, or several ``ref*`` columns on one row, give several
  references.

Image inputs (``capeval score --images`` / ``--image-dir``, for metrics that read images):
:func:`load_image_list` reads one path per prediction from a text or JSON list file; :func:`images_from_dir`
finds each prediction's image id in a folder (:func:`image_candidates`).

When both files carry ids they are paired by id (in prediction order); otherwise by position. Ids
are compared as strings, so ``1`` and ``"1"`` name the same image.

Nothing is guessed silently. A file that cannot be read exactly as one of these formats raises
:class:`InputFormatError` (a ``ValueError``) naming the file, the line or item, and the problem:
a CSV record with an unterminated quote or a line break inside a field, a row with more or fewer
fields than the header, an id that is not a string or an integer, a caption that is not a string,
some items with an id and others without, and two predictions for the same image id (see
:func:`split_by_occurrence` for files that hold several captioners' outputs per image). A JSON object that
names one key twice (``{"1": ["a dog"], "1": ["a cat"]}``) is refused naming the key (and the line of a JSON
Lines file), never read last-value-wins.

Only regular files are read: a directory, a FIFO, a device (``/dev/zero``) or a socket is refused at once (a
FIFO is opened without blocking), and so is a file above :data:`MAX_INPUT_BYTES` (1 GiB; the environment
variable ``CAPEVAL_MAX_INPUT_BYTES`` changes it); the read itself stops at the limit. Bytes that are not UTF-8
are refused naming the byte offset and the line.

This module reads files; which keyed forms they hold (COCO annotations, pycocoevalcap's dicts) and pairing by image
id (:func:`pair`) are :mod:`capeval.matching`'s, the rules :mod:`capeval.inputs` applies to the API's arguments.
"""
from __future__ import annotations

import csv
import io
import json
import os
import stat
from pathlib import Path
from typing import Any

from capeval.advice import Fix, Setting, with_words, words
from capeval.matching import is_annotations, match, unscored_ids

ID_FIELDS = ("image_id", "id", "image", "img_id")
PRED_FIELDS = ("caption", "prediction", "candidate", "hyp", "text")
REF_FIELDS = ("references", "reference", "refs", "caption", "captions", "text")


class InputFormatError(ValueError):
    """A prediction/reference file could not be read; the message says which line and why."""


#: The largest prediction / reference / image-list file read (bytes), unless ``$CAPEVAL_MAX_INPUT_BYTES`` says
#: otherwise: 1 GiB, several million captions (a million COCO results take about 80 MB).
MAX_INPUT_BYTES = 1 << 30


def max_input_bytes() -> int:
    """:data:`MAX_INPUT_BYTES`, or ``$CAPEVAL_MAX_INPUT_BYTES`` when set (a positive integer)."""
    text = os.environ.get("CAPEVAL_MAX_INPUT_BYTES", "").strip()
    if not text:
        return MAX_INPUT_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"CAPEVAL_MAX_INPUT_BYTES must be a positive number of bytes, got {text!r:.40}.")
    return value


class DuplicateKeyError(ValueError):
    """A JSON object names ``key`` twice (raised by :func:`loads`'s ``object_pairs_hook``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one JSON object")
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # a key twice: which one (the first repeated)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return obj


#: ``json.dumps(value, ensure_ascii=False)`` as one reusable encoder (``.encode(value)``: the same text; ``json.dumps``
#: with an option builds a new encoder per call).
JSON_UNESCAPED = json.JSONEncoder(ensure_ascii=False)
#: One decoder for :func:`loads` (``json.loads`` with a hook builds a new one per call).
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def loads(text: str | bytes) -> Any:
    """``json.loads`` that raises :class:`DuplicateKeyError` for an object naming a key twice (``json`` keeps the
    last value silently)."""
    if isinstance(text, (bytes, bytearray)):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    return _DECODER.decode(text)


def duplicate_key_message(where: str, key: str) -> str:
    """The one-line refusal of a duplicate JSON key at ``where`` (``path`` or ``path:line``)."""
    return (f"{where}: the key {_short(key)} appears twice in one JSON object; its second value would silently "
            "replace the first: give each key once.")


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (from ``os.stat``'s ``st_mode``)."""
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


def open_regular(path: str | Path, limit: int | None = None):
    """``path`` opened for reading in binary, after checking (on the open file, so that nothing can swap it in
    between) that it is a regular file of at most ``limit`` bytes (``None``: no size limit). A FIFO is opened
    without blocking and refused, as are devices, sockets and directories, in one line naming the file; a missing
    file is ``FileNotFoundError``."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} does not exist.") from None
    except IsADirectoryError:
        raise InputFormatError(f"{path} is a directory; give the path of a file.") from None
    except OSError as err:
        raise InputFormatError(f"{path}: cannot be read ({err.strerror or err}).") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputFormatError(f"{path} is a directory; give the path of a file.")
        if not stat.S_ISREG(info.st_mode):
            raise InputFormatError(f"{path} is {file_kind(info.st_mode)}, not a regular file; capeval reads "
                                   "regular files only (save the data to a file first).")
        if limit is not None and info.st_size > limit:
            raise InputFormatError(f"{path}: {info.st_size:,} bytes, above the limit of {limit:,} bytes for an input "
                                   "file (CAPEVAL_MAX_INPUT_BYTES raises it).")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), at most :func:`max_input_bytes` of them: a file
    that grows past the limit while it is read is refused too."""
    limit = max_input_bytes()
    with open_regular(path, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as err:
            raise InputFormatError(f"{path}: cannot be read ({err.strerror or err}).") from None
    if len(data) > limit:
        raise InputFormatError(f"{path}: more than {limit:,} bytes, the limit for an input file "
                               "(CAPEVAL_MAX_INPUT_BYTES raises it).")
    return data


def decode_utf8(data: bytes, where: str, first_line: int = 1) -> str:
    """``data`` as UTF-8 text (a BOM removed), or :class:`InputFormatError` naming ``where``, the byte offset and the
    line of the first invalid byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = first_line + data.count(b"\n", 0, err.start)
        raise InputFormatError(f"{where}: not UTF-8 text (invalid byte 0x{data[err.start]:02x} at byte offset "
                               f"{err.start:,}, line {line}).") from None


_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def _require_nonempty_list(data: Any, path: Path, what: str, expected: str) -> None:
    """``InputFormatError`` unless ``data`` (the parsed file) is a non-empty list of ``what``."""
    if not isinstance(data, list):
        raise InputFormatError(f"{path}: {what} must be {expected}, got {_kind(data)}.")
    if not data:
        raise InputFormatError(f"{path}: the list of {what} is empty.")


def _kind(value: Any) -> str:
    """``value``'s JSON type in words ("a list", "null" ...)."""
    return _JSON_TYPES.get(type(value), f"a {type(value).__name__}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_json_text(text: str, where: str, what: str = "JSON", hint: str = "") -> Any:
    """``text`` parsed by :func:`loads`; every refusal one :class:`InputFormatError` naming ``where`` (``path`` or
    ``path:line``): a key twice in an object, invalid JSON (``not <what> (...)<hint>``), nesting too deep."""
    try:
        return loads(text)
    except DuplicateKeyError as err:
        raise InputFormatError(duplicate_key_message(where, err.key)) from None
    except json.JSONDecodeError as err:
        raise InputFormatError(f"{where}: not {what} ({err.msg}){hint}.") from None
    except RecursionError:
        raise InputFormatError(f"{where}: JSON nested too deeply{hint}.") from None


def parse_json_lines(text: str, path: str | Path, hint: str = "") -> list[Any]:
    """Parse JSON Lines ``text`` (blank lines skipped); a bad line raises :class:`InputFormatError`
    naming ``path:line`` (plus ``hint``, e.g. the expected format)."""
    return [value for _, value in numbered_json_lines(text, path, hint)]


def numbered_json_lines(text: str, path: str | Path, hint: str = "") -> list[tuple[int, Any]]:
    """:func:`parse_json_lines` with each value's line number in the file (1-based, blank lines counted), so that
    messages name the line a user opens."""
    return [(n, parse_json_text(line, f"{path}:{n}", "a JSON line", hint))
            for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _read_text(path: Path) -> str:
    """The file's text (UTF-8, a BOM removed), or an error naming the file that says what is wrong."""
    return decode_utf8(read_bounded(path), str(path))


def _read_json_or_jsonl(path: Path) -> tuple[str, Any, list[str]]:
    """``(kind, data, labels)``: ``"json"`` and the parsed value, or ``"jsonl"`` and the list of its lines' values;
    ``labels[i]`` names entry ``i`` of a list in messages (``"item 3"`` of a JSON list, 0-based as Python indexes it;
    ``"line 5"`` of JSON Lines, the line in the file)."""
    kind, data = _parse_json_or_jsonl(path)
    if kind == "jsonl":
        return kind, [value for _, value in data], [f"line {n}" for n, _ in data]
    return kind, data, [f"item {i}" for i in range(len(data))] if isinstance(data, list) else []


def _parse_json_or_jsonl(path: Path) -> tuple[str, Any]:
    text = _read_text(path)
    stripped = text.strip()
    if not stripped:
        raise InputFormatError(f"{path}: file is empty.")
    try:
        return "json", loads(stripped)
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise InputFormatError(f"{path}: JSON nested too deeply.") from None
    except DuplicateKeyError as err:
        whole = InputFormatError(duplicate_key_message(str(path), err.key))
        if "\n" not in stripped:
            raise whole from None
        try:  # JSON Lines whose first line has it: named with its line
            parse_json_lines(text, path)
        except InputFormatError as line_err:
            if isinstance(line_err.__context__, DuplicateKeyError) or "appears twice" in str(line_err):
                raise line_err from None
        raise whole from None
    return "jsonl", numbered_json_lines(text, path, "; the file is neither JSON nor JSON Lines")


def _pick(obj: dict, fields: tuple[str, ...], path: Path, where: str) -> Any:
    for f in fields:
        if f in obj:
            return obj[f]
    keys = sorted(str(k) for k in obj)[:8]
    raise InputFormatError(f"{path}: {where} has none of the fields {list(fields)} (keys: {keys}).")


def _check_id(value: Any, path: Path, where: str) -> Any:
    """An image id must be a string or an integer (JSON numbers like 1.5, lists, objects are refused)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputFormatError(
            f"{path}: {where} is {_kind(value)} ({_short(value)}); image ids must be strings or integers."
        )
    return value


def _id_of(obj: dict, path: Path, where: str) -> Any:
    for f in ID_FIELDS:
        if f in obj:
            return _check_id(obj[f], path, f"{where} field {f!r}")
    return None


def _text(value: Any, path: Path, where: str) -> str:
    """A caption from a file: a string with at least one non-space character."""
    if not isinstance(value, str):
        raise InputFormatError(f"{path}: {where} is {_kind(value)} ({_short(value)}), not a caption string.")
    if not value.strip():
        raise InputFormatError(f"{path}: {where} is empty or whitespace only.")
    return value


def _prediction(value: Any, path: Path, where: str, allow_empty: bool) -> str:
    """A predicted caption from a file: like :func:`_text`; empty ones pass with ``allow_empty``."""
    if isinstance(value, str) and not value.strip():
        if allow_empty:
            return value
        raise with_words(InputFormatError, words("empty", f"{path}: {where} is empty or whitespace only (",
                                                 Setting("zero"), " scores empty predictions 0 with a warning)."))
    return _text(value, path, where)


def _read_csv(path: Path) -> list[tuple[int, dict[str, str]]]:
    """``[(line number, {column: value})]``; refuses anything the csv module would read as something else."""
    # lines end at \n, \r\n or \r only (as when csv reads a file opened with newline=""); a U+2028
    # or U+0085 inside a caption is text, not a line break
    return list(csv_records(io.StringIO(_read_text(path), newline=""), path))


def csv_records(lines, path: Path):
    """``(line number, {column: value})`` of each row of CSV ``lines`` (an iterable of lines that keep their line
    ends, split at ``\n``, ``\r\n`` and ``\r`` only), one at a time, with :func:`_read_csv`'s refusals."""
    reader = csv.reader(lines, strict=True)
    header: list[str] | None = None
    rows = 0
    line = 0  # last line consumed
    while True:
        start = line + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            raise InputFormatError(
                f"{path}:{start}: malformed CSV record starting on this line ({err}); an unterminated or "
                "stray quote? Quote a field that contains commas or quotes, and double the quotes inside it."
            ) from None
        line = reader.line_num
        if not record or all(not f.strip() for f in record):
            continue
        if line != start or any("\n" in f or "\r" in f for f in record):
            raise InputFormatError(
                f"{path}:{start}: a quoted field runs over {line - start + 1} lines (to line {line}); captions "
                "cannot contain line breaks — is a closing quote missing?"
            )
        if header is None:
            header = [h.strip() for h in record]
            dupes = sorted({h for h in header if header.count(h) > 1})
            if dupes or "" in header:
                raise InputFormatError(f"{path}:{start}: the header row has empty or repeated column names {dupes}.")
            continue
        if len(record) != len(header):
            raise InputFormatError(
                f"{path}:{start}: {len(record)} fields but the header has {len(header)} "
                f"({', '.join(header)}); quote captions that contain commas."
            )
        rows += 1
        yield start, dict(zip(header, record))
    if header is None:
        raise InputFormatError(f"{path}: CSV without a header row.")
    if not rows:
        raise InputFormatError(f"{path}: no rows after the header.")


def _two(first: str, second: str) -> str:
    """``"lines 3 and 7"`` from ``"line 3"`` and ``"line 7"`` (labels of one kind), else ``"<first> and <second>"``."""
    kind, _, a = first.rpartition(" ")
    other, _, b = second.rpartition(" ")
    return f"{kind}s {a} and {b}" if kind and kind == other else f"{first} and {second}"


def _check_unique(ids: list[Any], path: Path, labels: list[str]) -> None:
    """Refuse two predictions for one image (ids compared as strings); ``labels[i]`` names entry ``i``."""
    seen: dict[str, int] = {}
    for i, key in enumerate(ids):
        k = str(key)
        if k in seen:
            first = ids[seen[k]]
            same = (f"image ids {_short(first)} and {_short(key)} (the same image: ids are compared as strings)"
                    if type(first) is not type(key) else f"image id {_short(key)}")
            raise with_words(InputFormatError, words(
                "duplicate_ids",
                f"{path}: {_two(labels[seen[k]], labels[i])} are both predictions for {same}. Give one prediction per "
                "image; if the file holds several captioners' captions for each image, in the same order for "
                "every image, ", Fix("score each captioner separately (load_predictions(allow_duplicate_ids=True), "
                                     "then split_by_occurrence)"), "."))
        seen[k] = i


def load_predictions(
    path: str | Path, *, allow_duplicate_ids: bool = False, allow_empty: bool = False
) -> tuple[list[Any] | None, list[str]]:
    """Return ``(ids or None, predictions)``.

    Two predictions for one image id raise :class:`InputFormatError` unless ``allow_duplicate_ids``; an empty
    or whitespace-only caption raises unless ``allow_empty`` (then it is returned as it is).
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
        text_col, id_col = _prediction_columns(list(rows[0][1]), path)
        preds = [_prediction(r[text_col], path, f"line {n} column {text_col!r}", allow_empty) for n, r in rows]
        ids = None
        if id_col:
            ids = [r[id_col] for _, r in rows]
            for (n, _), key in zip(rows, ids):
                if not key.strip():
                    raise _empty_id(path, n, id_col)
            if not allow_duplicate_ids:
                _check_unique(ids, path, [f"line {n}" for n, _ in rows])
        return ids, preds
    kind, data, labels = _read_json_or_jsonl(path)
    if kind == "json" and isinstance(data, dict) and data and not is_annotations(data):  # pycocoevalcap's res
        return _keyed_predictions(data, path, allow_empty)
    _require_nonempty_list(data, path, "predictions", 'a list (of strings, or of {"image_id", "caption"} objects)')
    if isinstance(next((x for x in data if x is not None), None), str):  # captions; another item is named by its place
        return None, [_prediction(x, path, label, allow_empty) for label, x in zip(labels, data)]
    ids, preds = [], []
    for label, obj in zip(labels, data):
        key, pred = _prediction_entry(label, obj, path, allow_empty)
        ids.append(key)
        preds.append(pred)
    with_id = [i for i, x in enumerate(ids) if x is not None]
    if not with_id:
        return None, preds
    if len(with_id) != len(ids):
        raise _mixed_ids(path, labels[next(i for i, x in enumerate(ids) if x is None)], labels[with_id[0]])
    if not allow_duplicate_ids:
        _check_unique(ids, path, labels)
    return ids, preds


def _prediction_entry(label: str, obj: Any, path: Path, allow_empty: bool) -> tuple[Any, str]:
    """``(id or None, caption)`` of one item of a list of prediction objects (COCO results)."""
    if not isinstance(obj, dict):
        raise InputFormatError(
            f"{path}: {label} is {_kind(obj)} ({_short(obj)}); expected a caption string or an "
            "object with an image id and a caption (all items alike)."
        )
    return _id_of(obj, path, label), _prediction(_pick(obj, PRED_FIELDS, path, label), path, f"{label} caption",
                                                 allow_empty)


def _prediction_columns(cols: list[str], path: Path) -> tuple[str, str | None]:
    """``(text column, id column or None)`` of a predictions CSV file's header."""
    text_col = next((c for c in PRED_FIELDS if c in cols), cols[0] if len(cols) == 1 else None)
    if text_col is None:
        raise InputFormatError(f"{path}: no prediction column; name it one of {list(PRED_FIELDS)}.")
    return text_col, next((c for c in ID_FIELDS if c in cols), None)


def _empty_id(path: Path, n: int, id_col: str) -> InputFormatError:
    return InputFormatError(f"{path}:{n}: empty {id_col!r}.")


def _mixed_ids(path: Path, missing: str, with_id: str) -> InputFormatError:
    """The refusal of predictions where the item ``missing`` has no id but ``with_id`` (the first with one) has."""
    return InputFormatError(f"{path}: {missing} has no image id field ({list(ID_FIELDS)}) but {with_id} has one; "
                            "give every item an id, or none.")


def _keyed_predictions(data: dict, path: Path, allow_empty: bool) -> tuple[list[Any], list[str]]:
    """pycocoevalcap's ``res`` as a JSON object: ``{image_id: [caption]}`` or ``{image_id: caption}``."""
    return list(data), [_keyed_prediction(key, value, path, allow_empty) for key, value in data.items()]


def _keyed_prediction(key: str, value: Any, path: Path, allow_empty: bool) -> str:
    """The caption of one entry of pycocoevalcap's ``res``: ``[caption]``, ``caption`` or an object with one."""
    if isinstance(value, list):
        if len(value) != 1:
            raise InputFormatError(f"{path}: image {key!r} holds {len(value)} captions; a {{image_id: [caption]}} "
                                   "predictions file (pycocoevalcap's res) has exactly one per image.")
        value = value[0]
    if isinstance(value, dict):
        value = _pick(value, PRED_FIELDS, path, f"image {key!r}")
    return _prediction(value, path, f"image {key!r}", allow_empty)


def split_by_occurrence(ids: list[Any], predictions: list[str]) -> list[tuple[list[Any], list[str]]]:
    """Split predictions with repeated image ids into "systems": system k holds the k-th prediction
    of every image id that has at least k + 1 (ids compared as strings, order of first appearance kept).

    This is how files that list several captioners' outputs per image in a fixed order (e.g. SMURF's
    Karpathy-test ``karpathy_cand.json``: a held-out human caption, then three models) are scored one
    captioner at a time.
    """
    seen: dict[str, int] = {}
    systems: list[tuple[list[Any], list[str]]] = []
    for key, pred in zip(ids, predictions):
        k = seen.get(str(key), 0)
        seen[str(key)] = k + 1
        if k == len(systems):
            systems.append(([], []))
        systems[k][0].append(key)
        systems[k][1].append(pred)
    return systems


def _as_ref_list(value: Any, path: Path, where: str) -> list[str]:
    if isinstance(value, str):
        return [_text(value, path, where)]
    if isinstance(value, list):
        if not value:
            raise InputFormatError(f"{path}: {where} is an empty list; every item needs at least one reference.")
        return [_text(v, path, f"{where}[{j}]") for j, v in enumerate(value)]
    raise InputFormatError(
        f"{path}: {where} is {_kind(value)} ({_short(value)}); expected a reference string or a list of them."
    )


class _Groups:
    """References grouped by image id (compared as strings), in order of first appearance."""

    def __init__(self) -> None:
        self.ids: list[Any] = []
        self.refs: dict[str, list[str]] = {}

    def add(self, key: Any, refs: list[str]) -> None:
        k = str(key)
        if k not in self.refs:
            self.refs[k] = []
            self.ids.append(key)
        self.refs[k].extend(refs)

    def result(self) -> tuple[list[Any], list[list[str]]]:
        return self.ids, [self.refs[str(k)] for k in self.ids]


def _reference_columns(cols: list[str], path: Path) -> tuple[str | None, list[str]]:
    """``(id column or None, reference columns)`` of a references CSV file's header."""
    id_col = next((c for c in ID_FIELDS if c in cols), None)
    ref_cols = [c for c in cols if c.lower().startswith("ref")] or [
        c for c in REF_FIELDS if c in cols
    ][:1] or ([c for c in cols if c != id_col] if len(cols) <= 2 else [])
    if not ref_cols:
        raise InputFormatError(f"{path}: no reference column; name it 'reference' or 'ref1', 'ref2', ...")
    return id_col, ref_cols


def _csv_references(row: dict[str, str], n: int, id_col: str | None, ref_cols: list[str],
                    path: Path) -> tuple[str | None, list[str]]:
    """``(id or None, reference texts)`` of the references CSV row on line ``n`` (with an id, the texts may be none:
    the image's other rows may have them, :func:`_no_reference_text`)."""
    texts = [row[c] for c in ref_cols if row[c].strip()]
    if id_col:
        if not row[id_col].strip():
            raise _empty_id(path, n, id_col)
        return row[id_col], texts
    if not texts:
        raise InputFormatError(f"{path}:{n}: no reference text in {ref_cols}.")
    return None, texts


def _no_reference_text(path: Path, key: Any, ref_cols: list[str]) -> InputFormatError:
    return InputFormatError(f"{path}: image id {key!r} has no reference text in {ref_cols}.")


def _annotations_error(path: Path, annotations: Any) -> InputFormatError:
    return InputFormatError(f"{path}: 'annotations' must be a non-empty list of {{\"image_id\", \"caption\"}} objects, "
                            f"got {_short(annotations)}.")


def _annotation(i: int, ann: Any, path: Path) -> tuple[Any, list[str]]:
    """``(image id, [caption])`` of annotation ``i`` of a COCO annotations file."""
    if not isinstance(ann, dict):
        raise InputFormatError(f"{path}: annotation {i} is {_kind(ann)} ({_short(ann)}), not an object.")
    key = _check_id(_pick(ann, ID_FIELDS, path, f"annotation {i}"), path, f"annotation {i}")
    return key, [_text(_pick(ann, ("caption",), path, f"annotation {i}"), path, f"annotation {i} caption")]


def _empty_mapping(path: Path) -> InputFormatError:
    return InputFormatError(f"{path}: the {{id: [references]}} mapping is empty.")


def _reference_entry(label: str, obj: Any, path: Path) -> tuple[Any, list[str]]:
    """``(id or None, references)`` of one item of a list of reference objects."""
    if not isinstance(obj, dict):
        raise InputFormatError(
            f"{path}: {label} is {_kind(obj)} ({_short(obj)}); expected a list of reference "
            "strings or an object with an image id and references (all items alike)."
        )
    return _id_of(obj, path, label), _as_ref_list(_pick(obj, REF_FIELDS, path, label), path, f"{label} references")


def _some_without_ids(path: Path) -> InputFormatError:
    return InputFormatError(f"{path}: some items have an id field and some do not; give every item an id, or none.")


def load_references(path: str | Path) -> tuple[list[Any] | None, list[list[str]]]:
    """Return ``(ids or None, references)`` with one list of reference strings per item."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        rows = _read_csv(path)
        id_col, ref_cols = _reference_columns(list(rows[0][1]), path)
        groups = _Groups()
        plain: list[list[str]] = []
        for n, r in rows:
            key, texts = _csv_references(r, n, id_col, ref_cols, path)
            if id_col:
                groups.add(key, texts)
            else:
                plain.append(texts)
        if not id_col:
            return None, plain
        ids, refs = groups.result()
        for key, texts in zip(ids, refs):
            if not texts:
                raise _no_reference_text(path, key, ref_cols)
        return ids, refs
    kind, data, labels = _read_json_or_jsonl(path)
    if is_annotations(data):  # COCO annotations file
        annotations = data["annotations"]
        if not isinstance(annotations, list) or not annotations:
            raise _annotations_error(path, annotations)
        groups = _Groups()
        for i, ann in enumerate(annotations):
            groups.add(*_annotation(i, ann, path))
        return groups.result()
    if isinstance(data, dict):  # {id: [refs]}
        if not data:
            raise _empty_mapping(path)
        return list(data), [_as_ref_list(v, path, f"entry {k!r}") for k, v in data.items()]
    _require_nonempty_list(data, path, "references", "a list, a {id: [refs]} mapping or COCO annotations")
    if all(isinstance(x, (str, list)) for x in data):
        return None, [_as_ref_list(x, path, label) for label, x in zip(labels, data)]
    groups = _Groups()
    plain = []
    for label, obj in zip(labels, data):
        key, value = _reference_entry(label, obj, path)
        if key is None:
            plain.append(value)
        else:
            groups.add(key, value)
    if groups.ids and plain:
        raise _some_without_ids(path)
    return groups.result() if groups.ids else (None, plain)


def pair(
    pred_ids: list[Any] | None,
    predictions: list[str],
    ref_ids: list[Any] | None,
    references: list[list[str]],
) -> tuple[list[Any] | None, list[str], list[list[str]]]:
    """Align predictions with references by id when both have ids (as strings: :func:`capeval.matching.match`), else
    by position."""
    if pred_ids is None or ref_ids is None:
        return pred_ids, predictions, references
    positions, missing = match(pred_ids, ref_ids, exact_first=False)
    if missing:
        raise _no_references(len(missing), missing[:3])
    return pred_ids, predictions, [references[n] for n in positions]


def _no_references(count: int, examples: list[Any]) -> InputFormatError:
    """The refusal of ``count`` prediction ids without references (``examples``: the first three)."""
    return InputFormatError(f"{count} prediction id(s) have no references, e.g. {examples!r}; check that both files "
                            "use the same image ids.")


def unscored_reference_ids(pred_ids: list[Any] | None, ref_ids: list[Any] | None) -> list[Any]:
    """Reference image ids that no prediction names (they take no part in the scores): :func:`capeval.matching.unscored_ids`."""
    return unscored_ids(pred_ids, ref_ids)


def load_image_list(path: str | Path) -> list[str]:
    """Image paths from ``path``, one per prediction in prediction order (``capeval score --images``).

    The file is a JSON list of path strings, or else text with one path per line (surrounding whitespace
    stripped; blank lines at the end ignored, inside refused). Relative paths are resolved against the file's folder.
    Every path must name an existing file: the first that does not raises ``FileNotFoundError`` naming it
    and its line (or item).
    """
    path = Path(path)
    text = _read_text(path)
    try:
        data = loads(text)
    except (json.JSONDecodeError, RecursionError):
        data = None  # not JSON: one path per line
    except DuplicateKeyError as err:
        raise InputFormatError(duplicate_key_message(str(path), err.key)) from None
    if isinstance(data, dict):
        raise InputFormatError(f"{path}: expected a JSON list of image paths (or one path per line), got an object.")
    if isinstance(data, list):
        entries = [(f"item {i}", value) for i, value in enumerate(data)]
    else:
        lines = text.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        entries = [(f"line {n}", line.strip()) for n, line in enumerate(lines, 1)]
    if not entries:
        raise InputFormatError(f"{path}: no image paths.")
    images = []
    for where, value in entries:
        if not isinstance(value, str) or not value.strip():
            shown = "empty" if isinstance(value, str) else f"{_kind(value)} ({_short(value)})"
            raise InputFormatError(f"{path}: {where} is {shown}; give one image path per prediction.")
        file = path.parent / value.strip()
        try:
            mode = file.stat().st_mode  # following links: a link to /dev/zero is a device
        except OSError:
            raise FileNotFoundError(f"{path}: {where}: image file {file} does not exist.") from None
        if not stat.S_ISREG(mode):
            raise InputFormatError(f"{path}: {where}: {file} is {file_kind(mode)}, not an image file.")
        images.append(str(file))
    return images


def image_candidates(image_id: Any, folder: Path) -> list[Path]:
    """Where ``--image-dir`` looks for the image of ``image_id``: ``folder/<id>``, ``folder/<id>.jpg`` and, for an
    integer id (COCO; also a string of digits), ``folder/COCO_val2014_<id, 12 digits>.jpg``."""
    name = str(image_id).strip()
    paths = [folder / name, folder / f"{name}.jpg"]
    if isinstance(image_id, int) or name.isdigit():
        paths.append(folder / f"COCO_val2014_{int(name):012d}.jpg")
    return list(dict.fromkeys(paths))


def images_from_dir(ids: list[Any] | None, folder: str | Path, what: str = "the predictions") -> list[str]:
    """The image file of each id in ``folder`` (:func:`image_candidates`, first existing), in order.

    ``ids``: the prediction file's image ids (``None``: the file has none, ``ValueError``). The first id
    without a file raises ``FileNotFoundError`` naming it, the paths tried and how many others are missing.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"image folder {folder} is not a directory.")
    if ids is None:
        raise with_words(ValueError, words(
            "images", f"{what} carry no image ids (COCO results 'image_id', or an {'/'.join(ID_FIELDS)} field or "
            "column), so an image folder cannot be matched to them; ",
            Fix("give one image path per prediction instead (load_image_list)", key="images_by_position"), "."))
    images: list[str] = []
    missing: list[tuple[int, Any, list[Path]]] = []
    for i, key in enumerate(ids):
        tried = image_candidates(key, folder)
        found = next((p for p in tried if p.is_file()), None)
        if found is None:
            missing.append((i, key, tried))
        else:
            images.append(str(found))
    if missing:
        i, key, tried = missing[0]
        more = f" ({len(missing) - 1} more ids have no image)" if len(missing) > 1 else ""
        raise FileNotFoundError(f"no image in {folder} for prediction {i} (image id {key!r}): tried "
                                f"{', '.join(p.name for p in tried)}{more}.")
    return images


#: The photos bundled with capeval (``capeval/data/example/images``; public domain / CC0, see PROVENANCE.md there):
#: Chelsea the cat, the astronaut Eileen Collins, a cup of coffee (scikit-image's sample photos, re-encoded).
EXAMPLE_IMAGES = ("chelsea.jpg", "astronaut.jpg", "coffee.jpg")


def example_images() -> list[Path]:
    """Paths of the bundled example photos (:data:`EXAMPLE_IMAGES`), for metrics that read images (the critic)."""
    from importlib import resources

    root = resources.files("capeval") / "data" / "example" / "images"
    return [Path(str(root / name)) for name in EXAMPLE_IMAGES]
