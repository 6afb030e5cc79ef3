"""``capeval cache``: what capeval keeps in its cache folder (kind, files, size, age; and the leftovers: temporary
files of killed writers, damaged files moved aside), and ``capeval cache clear [KIND]`` to delete all of it or one
kind, ``capeval cache clear --leftovers`` only the leftovers (:func:`capeval.paths.cache_inventory`,
:func:`capeval.paths.clear_cache`, :func:`capeval.paths.remove_cache_leftovers`)."""
from __future__ import annotations

import argparse
import time

from capeval.cli.output import add_json_argument, text_stream, write_json

DESCRIPTION = """\
List what capeval has cached under its cache folder ($CAPEVAL_CACHE_DIR, else $XDG_CACHE_HOME/capeval, else
~/.cache/capeval): one row per kind (a sub-folder: meteor, cider_df, spice, scores, ...) with its files, size and
the age of its newest file. Everything there is rebuilt or fetched again when needed. `capeval cache clear` deletes
it all, `capeval cache clear KIND` one kind. Leftovers (temporary files of writers that were killed, damaged cache
files moved aside as NAME.corrupt-TIME) are counted on their own line; `capeval cache clear --leftovers` removes
only them (a temporary file of a writer still running is left alone). --json writes a list of {kind, description,
path, files, bytes, newest, age_s, leftovers, leftover_bytes}.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="what capeval has cached (kind, size, age); clear all or one kind",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    inner = p.add_subparsers(dest="cache_command", metavar="{clear}")
    c = inner.add_parser("clear", help="delete the cache, or one kind of it",
                         description="Delete everything under capeval's cache folder, or only KIND's folder (capeval "
                                     "cache lists the kinds). It is rebuilt or fetched again when needed.")
    c.add_argument("kind", nargs="?", metavar="KIND", help="one kind (default: all)")
    c.add_argument("--leftovers", action="store_true",
                   help="remove only temporary files of killed writers and damaged files moved aside (*.corrupt-*)")
    add_json_argument(c, "the kinds removed ([{kind, files, bytes, ...}])", dest="json_out")
    c.set_defaults(func=run_clear)
    add_json_argument(p, "[{kind, description, path, files, bytes, newest, age_s}]", dest="json_out")
    p.set_defaults(func=run)


def size_text(n: int) -> str:
    """Bytes for people: ``512 B``, ``3.4 kB``, ``164.2 MB``, ``1.3 GB`` (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def age_text(seconds: float | None) -> str:
    """An age for people: ``40 s``, ``12 min``, ``5 h``, ``3 d`` (``-`` when unknown)."""
    if seconds is None:
        return "-"
    seconds = max(0.0, seconds)
    for unit, scale in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.0f} {unit}"
    return f"{seconds:.0f} s"


def _rows() -> list[dict]:
    from capeval.paths import cache_inventory

    now = time.time()
    return [{**row, "age_s": None if row["newest"] is None else now - row["newest"]} for row in cache_inventory()]


def run(args: argparse.Namespace) -> int:
    from capeval.paths import cache_root
    from capeval.render import text_table

    rows = _rows()
    out = text_stream(args.json_out)
    if not rows:
        print(f"nothing cached in {cache_root()}", file=out)
    else:
        print(f"capeval's cache: {cache_root()}", file=out)
        table = [(r["kind"], r["files"], size_text(r["bytes"]), age_text(r["age_s"]), r["description"]) for r in rows]
        total = sum(r["bytes"] for r in rows)
        table.append(("all", sum(r["files"] for r in rows), size_text(total), age_text(min(
            (r["age_s"] for r in rows if r["age_s"] is not None), default=None)), "capeval cache clear [KIND]"))
        print(text_table(["kind", "files", "size", "age", "what"], table), file=out)
        count, size = sum(r.get("leftovers", 0) for r in rows), sum(r.get("leftover_bytes", 0) for r in rows)
        if count:
            # temporary files of killed writers, damaged copies moved aside (one line within 100 columns)
            print(f"leftovers: {count} file(s), {size_text(size)} of temporary and damaged files (capeval cache clear "
                  "--leftovers)", file=out)
    if args.json_out:
        write_json(args.json_out, rows)
    return 0


def run_clear(args: argparse.Namespace) -> int:
    from capeval.paths import cache_root, clear_cache

    if args.leftovers:
        return _clear_leftovers(args)
    removed = clear_cache(args.kind)
    out = text_stream(args.json_out)
    if not removed:
        what = f"of kind {args.kind} " if args.kind else ""
        print(f"nothing cached {what}in {cache_root()}", file=out)
    for row in removed:
        print(f"removed {row['kind']}: {row['files']} file(s), {size_text(row['bytes'])}", file=out)
    if args.json_out:
        write_json(args.json_out, removed)
    return 0


def _clear_leftovers(args: argparse.Namespace) -> int:
    """``capeval cache clear --leftovers [KIND]``: the temporary files of killed writers and the damaged copies moved
    aside, under the cache folder or KIND's folder; one line of what was removed."""
    from capeval.paths import cache_root, remove_cache_leftovers

    root = cache_root() / args.kind if args.kind else cache_root()
    removed = remove_cache_leftovers(root)
    out = text_stream(args.json_out)
    where = root if root.is_dir() else cache_root()
    if removed:
        size = size_text(sum(n for _, n in removed))
        print(f"removed leftovers: {len(removed)} file(s), {size} in {where}", file=out)
    else:
        print(f"no leftovers in {where}", file=out)
    if args.json_out:
        write_json(args.json_out, [{"path": str(p), "bytes": n} for p, n in removed])
    return 0
