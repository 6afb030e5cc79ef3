"""Reading a file of caption pairs for :func:`capeval.judges.arena.judge_pairs` (``capeval arena``).

The file is JSON (a list of objects, or ``{"pairs": [...]}``) or JSON Lines (one object a line; ``.jsonl``), each
object one pair:

* ``image`` (or CapArena's ``img``): the image file, relative to ``images_root`` when given, else to the file's
  folder (an absolute path as it is);
* ``caption_a`` or ``caption1``, ``caption_b`` or ``caption2``: the two captions;
* ``source_a`` / ``source_b`` or ``source1`` / ``source2`` (optional, both or neither): the systems that wrote them;
* ``reference`` (or CapArena's ``ref``, optional): a reference caption. The prompt with a reference is used when
  every pair has one; some pairs with and some without is an error.

So CapArena's annotation file (``caparena_annots_eval.json``) is read as it is released. Errors name the pair:
``pairs[3]: no caption_b (or caption2)``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FORMAT = ('a JSON list (or {"pairs": [...]}) or JSON Lines of {"image", "caption_a"|"caption1", '
          '"caption_b"|"caption2", optional "source_a"/"source_b"|"source1"/"source2", optional "reference"}')

_FIELDS = {
    "image": ("image", "img"),
    "caption_a": ("caption_a", "caption1"),
    "caption_b": ("caption_b", "caption2"),
    "source_a": ("source_a", "source1"),
    "source_b": ("source_b", "source2"),
    "reference": ("reference", "ref"),
}


@dataclass
class PairsFile:
    """The pairs of a file: ``images`` (resolved paths), ``captions_a``, ``captions_b``, ``sources`` (``None``
    when the file names no systems), ``references`` (``None`` when no pair has one)."""

    images: list[str]
    captions_a: list[str]
    captions_b: list[str]
    sources: list[tuple[str, str]] | None
    references: list[str] | None

    def __len__(self) -> int:
        return len(self.captions_a)


def _field(item: dict, name: str, index: int, required: bool) -> str | None:
    names = _FIELDS[name]
    found = [n for n in names if n in item]
    if not found:
        if required:
            raise ValueError(f"pairs[{index}]: no {names[0]} (or {names[1]}).")
        return None
    value = item[found[0]]
    if not isinstance(value, str):
        raise ValueError(f"pairs[{index}]: {found[0]} is {type(value).__name__}, not a string.")
    return value


def parse_pairs(items: list, base: Path, images_root: str | Path | None = None) -> PairsFile:
    """:class:`PairsFile` of already parsed pair objects; image paths resolved against ``images_root`` (else
    ``base``)."""
    if not isinstance(items, list):
        raise ValueError(f"expected {FORMAT}; got a JSON {type(items).__name__}.")
    if not items:
        raise ValueError("the file holds no pairs.")
    root = Path(images_root).expanduser() if images_root is not None else base
    images, a, b, sources, refs = [], [], [], [], []
    with_sources: bool | None = None
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"pairs[{i}]: expected an object, got {type(item).__name__}.")
        image = _field(item, "image", i, True)
        a.append(_field(item, "caption_a", i, True))
        b.append(_field(item, "caption_b", i, True))
        sa, sb = _field(item, "source_a", i, False), _field(item, "source_b", i, False)
        if (sa is None) != (sb is None):
            raise ValueError(f"pairs[{i}]: names one system (source_a / source_b); give both or neither.")
        named = sa is not None
        if with_sources is not None and named != with_sources:
            raise ValueError(f"pairs[{i}]: {'names' if named else 'does not name'} its systems (source_a / "
                             f"source_b) and pairs[0] {'does not' if named else 'does'}; give them for every pair "
                             "or for none.")
        with_sources = named
        sources.append((sa, sb))
        refs.append(_field(item, "reference", i, False))
        path = Path(image).expanduser()
        images.append(str(path if path.is_absolute() else root / path))
    have = [r is not None for r in refs]
    if any(have) and not all(have):
        missing = have.index(False)
        raise ValueError(f"pairs[{missing}]: no reference, while pairs[{have.index(True)}] has one; give a reference "
                         "for every pair (the prompt with a reference) or for none.")
    for i, path in enumerate(images):
        if not Path(path).is_file():
            raise FileNotFoundError(f"pairs[{i}]: image {path} not found"
                                    + ("" if images_root is not None else "; pass --images-root DIR") + ".")
    return PairsFile(images, a, b, sources if with_sources else None, refs if all(have) else None)  # type: ignore[arg-type]


def read_pairs_file(path: str | Path, images_root: str | Path | None = None) -> PairsFile:
    """The pairs of the JSON / JSON Lines file ``path`` (see the module docstring)."""
    from capeval.io import parse_json_lines

    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; expected {FORMAT}.")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = parse_json_lines(text, path, f"; expected {FORMAT}")
    else:
        try:
            items = json.loads(text)
        except json.JSONDecodeError as err:
            if path.suffix == ".json":
                raise ValueError(f"{path}: not valid JSON ({err.msg} at line {err.lineno}); expected {FORMAT}.") from None
            items = parse_json_lines(text, path, f"; expected {FORMAT}")
    if isinstance(items, dict) and isinstance(items.get("pairs"), list):
        items = items["pairs"]
    return parse_pairs(items, path.parent, images_root)
