"""The files :mod:`capeval.io` reads, read one item at a time into an SQLite index on disk (``capeval score`` above
its in-memory limit), with the same checks and the same messages as :func:`capeval.io.load_predictions` and
:func:`capeval.io.load_references` (the per-item rules are theirs: this module calls them).

Memory stays bounded whatever the number of items: the text is decoded 1 MiB at a time (a non-UTF-8 byte is named
with its byte offset and line, as :func:`capeval.io.decode_utf8` names it), JSON Lines and CSV files are read line by
line, and a JSON document (a list, COCO results or annotations, pycocoevalcap's dicts) is walked value by value with
``json.JSONDecoder.raw_decode`` over a sliding window of its text. The first error reported is the one the in-memory
readers report (they parse the whole file before they check an item): a JSON document is read in two passes, the
first checking its syntax (and finding which form it holds), the second checking each item and writing it to the
index; a JSON Lines file is read once, its form taken from its first line, an item's refusal raised only once the
rest of the file has parsed (and read in two passes when the first line is null or a later one contradicts it). Two predictions for one image, and prediction ids without references, are found by SQL queries on the
index. One refusal is not streamed: a JSON document that names one key twice is read whole once more for its message
(:func:`capeval.io.load_predictions` words it, naming the key and, in JSON Lines, the line).

:class:`Index` holds the predictions (in file order) and the references (by image id as a string, the rows of one id
in file order, ids in order of first appearance; or in file order when they carry no ids), and pairs them as
:func:`capeval.io.pair` does.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capeval.io import (
    JSON_UNESCAPED,
    InputFormatError,
    _annotation,
    _annotations_error,
    _as_ref_list,
    _check_unique,
    _csv_references,
    _empty_id,
    _empty_mapping,
    _keyed_prediction,
    _mixed_ids,
    _no_reference_text,
    _no_references,
    _parse_json_or_jsonl,
    _prediction,
    _prediction_columns,
    _prediction_entry,
    _reference_columns,
    _reference_entry,
    _require_nonempty_list,
    _some_without_ids,
    _unique_pairs,
    csv_records,
    loads,
    max_input_bytes,
    open_regular,
    parse_json_text,
)

#: Bytes read (and characters decoded) at a time.
PIECE = 1 << 20
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_ANY_SPACE = re.compile(r"\s*")  # str.strip()'s whitespace
_CSV_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)")
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)
_JSONL_HINT = "; the file is neither JSON nor JSON Lines"


def _complete(data: bytes) -> int:
    """The length of ``data`` without a UTF-8 sequence cut at its end."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if byte < 0x80:
            return n
        if byte >= 0xC0:
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return n - back if need > back else n
    return n


def _utf8_error(path: Path, offset: int, newlines: int) -> InputFormatError:
    """:func:`capeval.io.decode_utf8`'s message for the invalid byte it names at ``offset`` (bytes; after a BOM, as
    ``bytes.decode`` counts it)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        byte = handle.read(1)[0]
    return InputFormatError(f"{path}: not UTF-8 text (invalid byte 0x{byte:02x} at byte offset {offset:,}, line "
                            f"{1 + newlines}).")


def text_pieces(path: str | Path) -> Iterator[str]:
    """The text of the regular file ``path`` (UTF-8, a BOM removed), :data:`PIECE` bytes at a time, with
    :func:`capeval.io.read_bounded`'s and :func:`capeval.io.decode_utf8`'s refusals."""
    path = Path(path)
    limit = max_input_bytes()
    with open_regular(path, limit) as handle:
        base = newlines = total = 0  # bytes decoded before ``pending`` and the line ends among them
        bom = None
        pending = b""
        while True:
            try:
                data = handle.read(PIECE)
            except OSError as err:
                raise InputFormatError(f"{path}: cannot be read ({err.strerror or err}).") from None
            total += len(data)
            if total > limit:
                raise InputFormatError(f"{path}: more than {limit:,} bytes, the limit for an input file "
                                       "(CAPEVAL_MAX_INPUT_BYTES raises it).")
            pending += data
            if bom is None:
                if len(pending) < 3 and data:
                    continue
                bom = 3 if pending.startswith(b"\xef\xbb\xbf") else 0
                pending, base = pending[bom:], bom
            cut = _complete(pending) if data else len(pending)
            try:
                text = pending[:cut].decode("utf-8")
            except UnicodeDecodeError as err:
                offset = base + err.start - bom
                before = newlines + pending[:max(0, err.start - bom)].count(b"\n")
                raise _utf8_error(path, offset, before) from None
            newlines += pending.count(b"\n", 0, cut)
            base += cut
            pending = pending[cut:]
            if text:
                yield text
            if not data:
                return


def _split_lines(pieces: Iterable[str], complete) -> Iterator[str]:
    """Lines (ends kept) of the text ``pieces``: ``complete(buffer)`` gives the complete lines of a buffer and the rest
    (a line whose end may still come)."""
    rest: list[str] = []
    for piece in pieces:
        if not rest and not piece:
            continue
        rest.append(piece)
        lines, tail = complete("".join(rest))
        yield from lines
        rest = [tail] if tail else []
    if rest:
        yield "".join(rest)


def _csv_complete(text: str) -> tuple[list[str], str]:
    lines = _CSV_LINE.findall(text)
    end = sum(map(len, lines))
    if lines and end == len(text) and lines[-1].endswith("\r"):  # a \r\n may be cut between two pieces
        return lines[:-1], lines[-1]
    return lines, text[end:]


def _text_complete(text: str) -> tuple[list[str], str]:
    lines = text.splitlines(keepends=True)
    if not lines:
        return [], ""
    last = lines[-1]
    if len(last.splitlines()[0] if last.splitlines() else "") == len(last) or last.endswith("\r"):
        return lines[:-1], last  # no line end yet, or a \r that a \n may follow
    return lines, ""


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the file's text as ``str.splitlines`` splits it (the in-memory readers' lines)."""
    for n, line in enumerate(_split_lines(text_pieces(path), _text_complete), 1):
        yield n, (line.splitlines() or [""])[0]


def csv_rows(path: str | Path) -> Iterator[tuple[int, dict[str, str]]]:
    """:func:`capeval.io.csv_records` of the file, streamed (lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only)."""
    return csv_records(_split_lines(text_pieces(path), _csv_complete), Path(path))


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line, as :func:`capeval.io.numbered_json_lines` parses it."""
    for n, line in text_lines(path):
        if line.strip():
            try:
                value = loads(line)
            except (ValueError, RecursionError):
                parse_json_text(line, f"{path}:{n}", "a JSON line", _JSONL_HINT)  # raises in the reader's words
                raise
            yield n, value


class _Undecided(Exception):
    """A JSON Lines file whose first line does not tell its form, or a later line contradicts it: read in two
    passes."""


def _lines_once(path: Path, add, fits) -> None:
    """``add(label, value)`` of each line of a JSON Lines file, in one pass. ``fits(value)``: whether a line keeps
    the form the first line decided (else :class:`_Undecided`). An item's refusal waits until the rest of the file
    has passed its syntax check (and fits), so that the first error is the in-memory reader's (which parses every
    line before it checks one)."""
    lines = _jsonl(path)
    for n, value in lines:
        if not fits(value):
            raise _Undecided()
        try:
            add(f"line {n}", value)
        except InputFormatError as refusal:
            for _, later in lines:
                if not fits(later):
                    raise _Undecided() from None
            raise refusal from None


class _Syntax(Exception):
    """Not one JSON document (the in-memory reader then reads JSON Lines)."""


class _Truncated(Exception):
    """A value runs past the window."""


@dataclass
class _Big:
    """A container too large for the window, checked but not kept."""
    kind: type
    n: int = 0


class _Window:
    """A JSON text read through a window of a few MiB: ``peek`` the next character, ``decode`` the next value."""

    def __init__(self, pieces: Iterable[str]) -> None:
        self.pieces = iter(pieces)
        self.buf = ""
        self.pos = 0
        self.eof = False

    def more(self) -> bool:
        if self.eof:
            return False
        piece = next(self.pieces, None)
        if piece is None:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + piece
        self.pos = 0
        return True

    def peek(self, space: re.Pattern = _JSON_SPACE) -> str:
        """The next character after whitespace ("" at the end)."""
        while True:
            self.pos = space.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def decode(self, grow: bool = True) -> Any:
        """The value at the position (duplicate keys refused); ``grow=False``: :class:`_Truncated` when it does not fit
        in the window."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                cut = err.pos >= len(self.buf) - 8 or err.msg.startswith("Unterminated string")
                if self.eof or not cut:
                    raise _Syntax() from None
                if not grow:
                    raise _Truncated() from None
                self.more()
                continue
            if (isinstance(value, (int, float)) and not isinstance(value, bool) and end >= len(self.buf) - 3
                    and not self.eof and self.more()):
                continue  # a number may go on in the next piece
            self.pos = end
            return value

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            raise _Syntax()
        self.pos += 1
        return c

    def items(self) -> Iterator[None]:
        """At ``[``: once before each item of the list (the caller reads it), until ``]``."""
        self.peek()
        self.pos += 1
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield None
            if self.expect(",]") == "]":
                return

    def entries(self) -> Iterator[str]:
        """At ``{``: each key of the object, the position after its ``:`` (the caller reads the value)."""
        self.peek()
        self.pos += 1
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise _Syntax()
            key = self.decode()
            self.expect(":")
            yield key
            if self.expect(",}") == "}":
                return

    def skip(self, seen=None) -> Any:
        """The next value, checked (syntax, keys named twice in an object, in the order ``json`` finds them); a
        container larger than the window is walked and :class:`_Big` returned. ``seen``: a set-like of the keys of
        the object (``add`` returns whether the key is new) for a large top-level object."""
        c = self.peek()
        if c not in ("[", "{"):
            return self.decode()
        if seen is None:
            try:
                return self.decode(grow=False)
            except _Truncated:
                pass
        if c == "[":
            big = _Big(list)
            for _ in self.items():
                self.skip()
                big.n += 1
            return big
        keys = seen if seen is not None else _KeySet()
        big, twice = _Big(dict), None
        for key in self.entries():
            self.skip()
            big.n += 1
            if not keys.add(key) and twice is None:
                twice = key
        if twice is not None:  # json's object_pairs_hook: when the object is complete
            from capeval.io import DuplicateKeyError

            raise DuplicateKeyError(twice)
        return big


class _KeySet:
    def __init__(self) -> None:
        self.keys: set[str] = set()

    def add(self, key: str) -> bool:
        new = key not in self.keys
        self.keys.add(key)
        return new


@dataclass
class Shape:
    """What the first pass over a JSON or JSON Lines file found: ``kind`` ``"json"`` or ``"jsonl"``; for a JSON
    document the top-level value's type (``top``), its number of items or entries (``n``), a small value itself
    (``value``), whether its first non-null item is a string and whether all its items are strings or lists, and
    for an object with an ``annotations`` key, that key's value (a :class:`_Big` when large)."""
    kind: str = "json"
    top: type = list
    n: int = 0
    value: Any = None
    first_str: bool | None = None
    all_str_list: bool = True
    annotations: Any = None
    has_annotations: bool = False

    def add(self, item: Any) -> None:
        self.n += 1
        kind = item.kind if isinstance(item, _Big) else type(item)
        if self.first_str is None and item is not None:
            self.first_str = kind is str
        self.all_str_list = self.all_str_list and kind in (str, list)


def scan(path: str | Path, keys=None, stop: int | None = None, lines: bool = True) -> Shape:
    """The first pass over a JSON / JSON Lines file (:class:`Shape`), with the in-memory reader's refusals of the whole
    file (empty, nested too deeply, a key named twice). ``keys``: where a large top-level object's keys are kept
    (:meth:`Index.key_set`); ``stop``: return once more than that many items were seen (a count, nothing checked);
    ``lines=False``: a JSON Lines file's lines are not read (``Shape(kind="jsonl")``, nothing counted)."""
    path = Path(path)
    window = _Window(text_pieces(path))
    if not window.peek(_ANY_SPACE):
        raise InputFormatError(f"{path}: file is empty.")
    shape = Shape()
    try:
        _scan_value(window, shape, keys, stop)
        if window.peek(_ANY_SPACE):
            shape.kind = "jsonl"  # more than one value
    except _Syntax:
        shape.kind = "jsonl"
    except RecursionError:
        raise InputFormatError(f"{path}: JSON nested too deeply.") from None
    except _Stop:
        pass
    except ValueError as err:  # a key twice: worded as the in-memory reader words it (file or line)
        from capeval.io import DuplicateKeyError

        if not isinstance(err, DuplicateKeyError):
            raise
        _parse_json_or_jsonl(path)
        raise
    if shape.kind == "jsonl":
        shape = Shape(kind="jsonl")
        for _, value in _jsonl(path) if lines else ():
            shape.add(value)
            if stop is not None and shape.n > stop:
                break
    return shape


class _Stop(Exception):
    pass


def _scan_value(window: _Window, shape: Shape, keys, stop: int | None) -> None:
    c = window.peek()
    if c == "[":
        for _ in window.items():
            shape.add(window.skip())
            if stop is not None and shape.n > stop:
                raise _Stop()
        return
    if c != "{":
        shape.top, shape.value = type(None), window.decode()
        shape.top = type(shape.value)
        return
    shape.top = dict
    seen = keys if keys is not None else _KeySet()
    twice = None
    for key in window.entries():
        if key == "annotations" and window.peek() == "[":
            inner = Shape()
            for _ in window.items():
                inner.add(window.skip())
                if stop is not None and inner.n > stop:
                    raise _Stop()
            value: Any = _Big(list, inner.n) if inner.n else []
        else:
            value = window.skip()
        if key == "annotations":
            shape.has_annotations, shape.annotations = True, value
        shape.n += 1
        if not seen.add(key) and twice is None:
            twice = key
        if stop is not None and shape.n > stop:
            raise _Stop()
    if twice is not None:
        from capeval.io import DuplicateKeyError

        raise DuplicateKeyError(twice)


def count_items(path: str | Path, stop: int) -> int:
    """The number of predictions in the file, counted up to ``stop + 1`` (what decides ``capeval score``'s route): CSV
    rows, JSON Lines lines, a JSON list's items or a JSON object's entries. A file that cannot be read counts what was
    read before the problem (the in-memory reader then says what it is)."""
    path = Path(path)
    n = 0
    try:
        if path.suffix.lower() == ".csv":
            for _ in csv_rows(path):
                n += 1
                if n > stop:
                    break
            return n
        return scan(path, stop=stop).n
    except (InputFormatError, OSError):
        return n


def _top_items(path: Path) -> Iterator[tuple[str, Any]]:
    """``("item i", value)`` of a JSON document's top-level list (its syntax already checked)."""
    window = _Window(text_pieces(path))
    window.peek(_ANY_SPACE)
    for i, _ in enumerate(window.items()):
        yield f"item {i}", window.decode()


def _top_entries(path: Path) -> Iterator[tuple[str, Any]]:
    """``(key, value)`` of a JSON document's top-level object (its syntax already checked)."""
    window = _Window(text_pieces(path))
    window.peek(_ANY_SPACE)
    for key in window.entries():
        yield key, window.decode()


def _annotations(path: Path) -> Iterator[Any]:
    """The items of the ``annotations`` list of a JSON document's top-level object (the rest walked past)."""
    window = _Window(text_pieces(path))
    window.peek(_ANY_SPACE)
    for key in window.entries():
        if key != "annotations":
            window.skip()
            continue
        for _ in window.items():
            yield window.decode()


def _values(path: Path, shape: Shape) -> Iterator[tuple[str, Any]]:
    """``(label, value)`` of each entry of a list-shaped file: a JSON list's items, JSON Lines' lines."""
    if shape.kind == "jsonl":
        return ((f"line {n}", value) for n, value in _jsonl(path))
    return _top_items(path)


def _list_or_refuse(path: Path, shape: Shape, what: str, expected: str) -> None:
    """:func:`capeval.io._require_nonempty_list` on what the file holds."""
    if shape.kind == "jsonl" or shape.top is list:
        _require_nonempty_list([None] * min(shape.n, 1), path, what, expected)
    else:
        _require_nonempty_list({} if shape.top is dict else shape.value, path, what, expected)


_PRED_EXPECTED = 'a list (of strings, or of {"image_id", "caption"} objects)'
_REF_EXPECTED = "a list, a {id: [refs]} mapping or COCO annotations"


def read_predictions(path: str | Path, index: Index, *, allow_empty: bool = False) -> bool:
    """The predictions of ``path`` into ``index`` (in file order), refused as
    :func:`capeval.io.load_predictions` refuses them (two for one image id included); whether they carry ids."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _csv_predictions(path, index, allow_empty)
    shape = scan(path, index.key_set(), lines=False)
    if shape.kind == "jsonl":
        try:
            return _prediction_lines_once(path, index, allow_empty)
        except _Undecided:
            index.clear()
        shape = scan(path)
    if shape.kind == "json" and shape.top is dict and shape.n and not shape.has_annotations:  # pycocoevalcap's res
        for key, value in _top_entries(path):
            index.add_prediction(f"image {key!r}", key, _keyed_prediction(key, value, path, allow_empty))
        return index.done()
    _list_or_refuse(path, shape, "predictions", _PRED_EXPECTED)
    if shape.first_str:  # captions
        for label, value in _values(path, shape):
            index.add_prediction(label, None, _prediction(value, path, label, allow_empty))
        return index.done() and False
    ids = _PredictionIds(path, index, allow_empty)
    for label, obj in _values(path, shape):
        ids.add(label, obj)
    return ids.done()


class _PredictionIds:
    """Prediction objects into the index (``add``), then whether they carry ids (``done``), refused as the in-memory
    reader refuses them (some with an id and some without, two for one image)."""

    def __init__(self, path: Path, index: Index, allow_empty: bool) -> None:
        self.path, self.index, self.allow_empty = path, index, allow_empty
        self.missing = self.with_id = None

    def add(self, label: str, obj: Any) -> None:
        key, caption = _prediction_entry(label, obj, self.path, self.allow_empty)
        if key is None:
            self.missing = self.missing or label
        else:
            self.with_id = self.with_id or label
        self.index.add_prediction(label, key, caption)

    def done(self) -> bool:
        self.index.done()
        if self.with_id is None:
            return False
        if self.missing is not None:
            raise _mixed_ids(self.path, self.missing, self.with_id)
        self.index.check_unique(self.path)
        return True


def _prediction_lines_once(path: Path, index: Index, allow_empty: bool) -> bool:
    """:func:`read_predictions` of a JSON Lines file in one pass (the form: the first line's); :class:`_Undecided`
    when its first line is null (the form is then the first non-null line's)."""
    first = next((value for _, value in _jsonl(path)), None)
    if first is None:
        raise _Undecided()
    if isinstance(first, str):  # captions
        _lines_once(path, lambda label, value: index.add_prediction(label, None, _prediction(value, path, label,
                                                                                             allow_empty)),
                    lambda value: True)
        return index.done() and False
    ids = _PredictionIds(path, index, allow_empty)
    _lines_once(path, ids.add, lambda value: True)
    return ids.done()


def _csv_predictions(path: Path, index: Index, allow_empty: bool) -> bool:
    first = None
    for _, row in csv_rows(path):  # the whole file's records first, as the in-memory reader reads them
        first = first or row
    text_col, id_col = _prediction_columns(list(first), path)
    empty = None
    for n, row in csv_rows(path):
        caption = _prediction(row[text_col], path, f"line {n} column {text_col!r}", allow_empty)
        key = row[id_col] if id_col else None
        if id_col and not key.strip() and empty is None:
            empty = _empty_id(path, n, id_col)  # after every caption's check, as in memory
        index.add_prediction(f"line {n}", key, caption)
    index.done()
    if empty is not None:
        raise empty
    if id_col:
        index.check_unique(path)
    return bool(id_col)


def read_references(path: str | Path, index: Index) -> bool:
    """The references of ``path`` into ``index``, refused as :func:`capeval.io.load_references` refuses them; whether
    they carry ids."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _csv_references_into(path, index)
    shape = scan(path, index.key_set(), lines=False)
    if shape.kind == "jsonl":
        try:
            return _reference_lines_once(path, index)
        except _Undecided:
            index.clear(predictions=False)
        shape = scan(path)
    if shape.kind == "json" and shape.has_annotations:
        value = shape.annotations
        if not isinstance(value, (list, _Big)) or not value or (isinstance(value, _Big) and value.kind is not list):
            if isinstance(value, _Big):  # too large to show here: the in-memory reader's words
                from capeval.io import load_references

                load_references(path)
            raise _annotations_error(path, value)
        for i, ann in enumerate(_annotations(path)):
            index.add_reference(*_annotation(i, ann, path))
        return index.done()
    if shape.kind == "json" and shape.top is dict:  # {id: [refs]}
        if not shape.n:
            raise _empty_mapping(path)
        for key, value in _top_entries(path):
            index.add_reference(key, _as_ref_list(value, path, f"entry {key!r}"))
        return index.done()
    _list_or_refuse(path, shape, "references", _REF_EXPECTED)
    if shape.all_str_list:
        for label, value in _values(path, shape):
            index.add_reference(None, _as_ref_list(value, path, label))
        return index.done() and False
    ids = _ReferenceIds(path, index)
    for label, obj in _values(path, shape):
        ids.add(label, obj)
    return ids.done()


class _ReferenceIds:
    """Reference objects into the index (``add``), then whether they carry ids (``done``; refused when some do and
    some do not)."""

    def __init__(self, path: Path, index: Index) -> None:
        self.path, self.index = path, index
        self.keyed = self.plain = False

    def add(self, label: str, obj: Any) -> None:
        key, value = _reference_entry(label, obj, self.path)
        if key is None:
            self.plain = True
        else:
            self.keyed = True
        self.index.add_reference(key, value)

    def done(self) -> bool:
        self.index.done()
        if self.keyed and self.plain:
            raise _some_without_ids(self.path)
        return self.keyed


def _reference_lines_once(path: Path, index: Index) -> bool:
    """:func:`read_references` of a JSON Lines file in one pass: reference lists when the first line is a string or
    a list (:class:`_Undecided` when a later line is neither), else reference objects."""
    first = next((value for _, value in _jsonl(path)), None)
    if type(first) in (str, list):
        _lines_once(path, lambda label, value: index.add_reference(None, _as_ref_list(value, path, label)),
                    lambda value: type(value) in (str, list))
        return index.done() and False
    ids = _ReferenceIds(path, index)
    _lines_once(path, ids.add, lambda value: True)
    return ids.done()


def _csv_references_into(path: Path, index: Index) -> bool:
    first = None
    for _, row in csv_rows(path):
        first = first or row
    id_col, ref_cols = _reference_columns(list(first), path)
    for n, row in csv_rows(path):
        index.add_reference(*_csv_references(row, n, id_col, ref_cols, path))
    index.done()
    if id_col:
        key = index.reference_without_text()
        if key is not None:
            raise _no_reference_text(path, key, ref_cols)
    return bool(id_col)


class _TableKeys:
    """A set of strings in an SQLite table (the keys of a large top-level JSON object)."""

    def __init__(self, db: sqlite3.Connection, table: str) -> None:
        self.db, self.table = db, table
        db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute(f"CREATE TABLE {table} (k TEXT PRIMARY KEY)")

    def add(self, key: str) -> bool:
        return self.db.execute(f"INSERT OR IGNORE INTO {self.table} VALUES (?)", (key,)).rowcount == 1


#: ``json.dumps`` (ASCII) as one reusable encoder.
_ASCII_JSON = json.JSONEncoder()


def _id_json(key: Any) -> str:
    """``json.dumps(key)`` of an image id (a string or an integer)."""
    return str(key) if type(key) is int else _ASCII_JSON.encode(key)


def _joined(lists: list[str]) -> str:
    """The JSON text of the concatenation of the non-empty JSON lists ``lists`` (written with ``", "`` between items,
    as ``JSON_UNESCAPED`` writes them)."""
    if len(lists) == 1:
        return lists[0]
    return "[" + ", ".join(text[1:-1] for text in lists) + "]"


class Index:
    """Predictions and references in an SQLite file (``path``, in a temporary folder), paired as
    :func:`capeval.io.pair` pairs them. Ids are kept as JSON (``1`` and ``"1"`` stay apart in the output) and compared
    as strings."""

    BATCH = 5000

    def __init__(self, path: str | Path) -> None:
        self.db = sqlite3.connect(str(path))
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-16000", "temp_store=FILE"):
            self.db.execute(f"PRAGMA {pragma}")
        self.db.executescript("""
            CREATE TABLE preds (pos INTEGER PRIMARY KEY, key TEXT, id TEXT, label TEXT, caption TEXT);
            CREATE TABLE refs (n INTEGER PRIMARY KEY, key TEXT, texts TEXT);
            CREATE TABLE ref_keys (key TEXT PRIMARY KEY, first INTEGER, id TEXT);
        """)
        self._preds: list[tuple] = []
        self._refs: list[tuple] = []
        self.n_preds = self.n_refs = 0

    def clear(self, predictions: bool = True) -> None:
        """Forget the references (and with ``predictions``, the predictions) added so far."""
        self._refs = []
        self.db.execute("DELETE FROM refs")
        self.db.execute("DELETE FROM ref_keys")
        self.n_refs = 0
        if predictions:
            self._preds = []
            self.db.execute("DELETE FROM preds")
            self.n_preds = 0

    def attach_references(self, path: str | Path, n_refs: int) -> None:
        """Take the references of the index another process wrote at ``path`` (``n_refs`` items) instead of this
        one's: its tables are attached, and the queries read them by their names."""
        self._refs = []
        self.db.execute("DROP TABLE refs")
        self.db.execute("DROP TABLE ref_keys")
        self.db.execute("ATTACH DATABASE ? AS refs_file", (str(path),))
        self.n_refs = n_refs

    def key_set(self) -> _TableKeys:
        return _TableKeys(self.db, "doc_keys")

    def add_prediction(self, label: str, key: Any, caption: str) -> None:
        self._preds.append((None if key is None else str(key), None if key is None else _id_json(key), label,
                            caption))
        if len(self._preds) >= self.BATCH:
            self._flush()

    def add_reference(self, key: Any, texts: list[str]) -> None:
        self._refs.append((None if key is None else str(key), JSON_UNESCAPED.encode(texts),
                           None if key is None else _id_json(key)))
        if len(self._refs) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._preds:
            self.db.executemany("INSERT INTO preds (key, id, label, caption) VALUES (?, ?, ?, ?)", self._preds)
            self.n_preds += len(self._preds)
            self._preds = []
        if self._refs:  # row n: the n-th reference item (1-based), as SQLite numbers them; a key's first kept
            first = self.n_refs + 1
            self.db.executemany("INSERT INTO refs (n, key, texts) VALUES (?, ?, ?)",
                                [(first + i, key, texts) for i, (key, texts, _) in enumerate(self._refs)])
            self.db.executemany("INSERT OR IGNORE INTO ref_keys VALUES (?, ?, ?)",
                                [(key, first + i, id_json) for i, (key, _, id_json) in enumerate(self._refs)
                                 if key is not None])
        self.n_refs += len(self._refs)
        self._refs = []

    def done(self) -> bool:
        """Writes what is pending and indexes it; ``True``."""
        self._flush()
        self.db.execute("CREATE INDEX IF NOT EXISTS preds_key ON preds (key, pos)")
        self.db.execute("CREATE INDEX IF NOT EXISTS refs_key ON refs (key, n)")
        self.db.commit()
        return True

    def check_unique(self, path: Path) -> None:
        """:func:`capeval.io.load_predictions`'s refusal of two predictions for one image id: the first repeated."""
        row = self.db.execute("SELECT a.id, a.label, b.id, b.label FROM preds b JOIN preds a ON a.key = b.key AND "
                              "a.pos < b.pos WHERE b.key IS NOT NULL ORDER BY b.pos, a.pos LIMIT 1").fetchone()
        if row:
            _check_unique([json.loads(row[0]), json.loads(row[2])], path, [row[1], row[3]])

    def reference_without_text(self) -> Any:
        """The first image id (in order of appearance) whose reference rows hold no text, or ``None``."""
        row = self.db.execute("SELECT id FROM ref_keys k WHERE NOT EXISTS (SELECT 1 FROM refs r WHERE r.key = k.key "
                              "AND r.texts != '[]') ORDER BY first LIMIT 1").fetchone()
        return None if row is None else json.loads(row[0])

    def reference_ids(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM ref_keys").fetchone()[0]

    def unscored(self) -> tuple[int, list[Any]]:
        """``(how many, the first three)`` reference ids no prediction names
        (:func:`capeval.io.unscored_reference_ids`)."""
        return self._first_three("SELECT id FROM ref_keys k WHERE NOT EXISTS (SELECT 1 FROM preds p WHERE "
                                 "p.key = k.key) ORDER BY first")

    def check_paired(self) -> None:
        """:func:`capeval.io.pair`'s refusal of prediction ids without references."""
        count, first = self._first_three("SELECT id FROM preds p WHERE NOT EXISTS (SELECT 1 FROM ref_keys k WHERE "
                                         "k.key = p.key) ORDER BY pos")
        if count:
            raise _no_references(count, first)

    def _first_three(self, query: str) -> tuple[int, list[Any]]:
        count, first = 0, []
        for (value,) in self.db.execute(query):
            count += 1
            if count <= 3:
                first.append(json.loads(value))
        return count, first

    def ids(self) -> Iterator[Any]:
        """The predictions' ids in file order."""
        return (json.loads(value) for (value,) in self.db.execute("SELECT id FROM preds ORDER BY pos"))

    def captions(self) -> Iterator[str]:
        return (caption for (caption,) in self.db.execute("SELECT caption FROM preds ORDER BY pos"))

    def paired(self, by_id: bool) -> Iterator[tuple[str, list[str]]]:
        """``(prediction, references)`` in prediction order: by image id, else by position (the counts checked
        before)."""
        return ((caption, json.loads(texts)) for caption, texts, _ in self.paired_texts(by_id))

    def paired_texts(self, by_id: bool) -> Iterator[tuple[str, str, str | None]]:
        """``(prediction, references, id)`` in prediction order, the references as the JSON text of their list
        (``JSON_UNESCAPED``'s, as stored: an image's reference rows joined into one list), the id as JSON text
        (``None`` without ids)."""
        if not by_id:
            refs = self.db.execute("SELECT texts FROM refs ORDER BY n")
            preds = self.db.execute("SELECT caption, id FROM preds ORDER BY pos")
            for (caption, id_json), (texts,) in zip(preds, refs):
                yield caption, texts, id_json
            return
        pos = caption = id_json = None
        parts: list[str] = []
        for p, c, i, texts in self.db.execute("SELECT p.pos, p.caption, p.id, r.texts FROM preds p JOIN refs r ON "
                                              "r.key = p.key ORDER BY p.pos, r.n"):
            if p != pos:
                if pos is not None:
                    yield caption, _joined(parts), id_json
                pos, caption, id_json, parts = p, c, i, []
            if texts != "[]":
                parts.append(texts)
        if pos is not None:
            yield caption, _joined(parts), id_json

    def close(self) -> None:
        self.db.close()
