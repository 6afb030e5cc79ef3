"""The option tables of the ``evaluate`` module cards (``metrics/<name>/README.md``), from the options' declarations.

Each card holds its metrics' keyword options between two marker lines (:data:`START`, :data:`END`); the table between
them is written from the one declaration of each option (:func:`capeval.metric_options`), never by hand, so a card
cannot name an option that does not exist, miss one that does, or state another default. ``python -m
capeval.hub.card_options`` rewrites the tables of every card; ``--check`` only says which are out of date (exit 1).
The module scripts' ``_FAMILY`` tuples say which metrics a card documents.
"""
from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["END", "START", "card_families", "has_options_block", "options_table", "refresh_card", "stale_cards"]

#: The line before a card's generated option table.
START = ("<!-- metric options: generated from their declarations by `python -m capeval.hub.card_options`; "
         "edit the declarations, not this table -->")
#: The line after it.
END = "<!-- end of the metric options -->"


def options_table(families: Sequence[str]) -> str:
    """A markdown table of the keyword options of the metric families ``families``, each option once, in declaration
    order: its name, default, what it takes and what it does, and (for several families) the metrics that take it."""
    from capeval.registry import metric_options

    declared = {family: metric_options(family) for family in families}
    several = len(families) > 1
    head = ["| option | default | what it takes and does |" + (" metrics |" if several else ""),
            "|---|---|---|" + ("---|" if several else "")]
    rows, seen = [], set()
    for family in families:
        for option, declaration in declared[family].items():
            if option in seen:
                continue
            seen.add(option)
            default = "—" if declaration.default is None else f"`{declaration.default!r}`"
            what = " ".join(declaration.help.split()).replace("|", "\\|")
            row = f"| `{option}` | {default} | {declaration.expected()}: {what} |"
            if several:
                row += " " + ", ".join(f"`{f}`" for f in families if option in declared[f]) + " |"
            rows.append(row)
    if not rows:
        return "No options of its own: the shared keywords above are all it takes."
    return "\n".join(head + rows)


def has_options_block(text: str) -> bool:
    """Whether the card ``text`` holds the two marker lines of a generated option table."""
    start = text.find(START)
    return start >= 0 and text.find(END, start) > start


def refresh_card(text: str, families: Sequence[str], where: str = "the card") -> str:
    """``text`` (a card) with the table between :data:`START` and :data:`END` written anew for ``families``;
    ``ValueError`` naming ``where`` when the markers are missing or out of order."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{where}: no metric-options block (a line {START!r}, the table, a line {END!r}).")
    return text[: start + len(START)] + "\n\n" + options_table(families) + "\n\n" + text[end:]


def card_families(script: Path) -> tuple[str, ...]:
    """The ``_FAMILY`` tuple of a module script (read, not imported: importing needs ``evaluate``)."""
    tree = ast.parse(script.read_text(encoding="utf-8"), str(script))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_FAMILY" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def _cards(metrics_dir: Path) -> list[tuple[Path, tuple[str, ...]]]:
    found = []
    for folder in sorted(p for p in metrics_dir.iterdir() if p.is_dir()):
        script, card = folder / f"{folder.name}.py", folder / "README.md"
        if script.is_file() and card.is_file():
            families = card_families(script)
            if families:
                found.append((card, families))
    return found


def stale_cards(metrics_dir: Path, write: bool = False) -> list[Path]:
    """The cards under ``metrics_dir`` whose option table is not what the declarations give (rewritten when
    ``write``)."""
    stale = []
    for card, families in _cards(metrics_dir):
        text = card.read_text(encoding="utf-8")
        fresh = refresh_card(text, families, str(card))
        if fresh != text:
            stale.append(card)
            if write:
                card.write_text(fresh, encoding="utf-8")
    return stale


def _source_metrics_dir() -> Path:
    """The source tree's ``metrics/`` folder (the module scripts ship with the source, not the wheel)."""
    path = Path(__file__).resolve().parents[3] / "metrics"
    if not path.is_dir():
        raise SystemExit(f"no metrics folder at {path}: give the path of capeval's metrics/ folder.")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m capeval.hub.card_options", description=__doc__.split("\n\n")[1])
    parser.add_argument("metrics_dir", nargs="?", type=Path, default=None, help="default: the source tree's metrics/")
    parser.add_argument("--check", action="store_true", help="only list the out-of-date cards (exit 1 if any)")
    args = parser.parse_args(argv)
    stale = stale_cards(args.metrics_dir or _source_metrics_dir(), write=not args.check)
    for card in stale:
        print(f"{'out of date' if args.check else 'rewritten'}: {card}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
