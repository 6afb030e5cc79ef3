"""Apply BENCHMARKS.md's defaults rule to the `capeval bench --json` files of a folder and print each learned metric's pick.

    python benchmarks/select_defaults.py out/defaults [--markdown out/defaults/selection.md]

The rule itself is `capeval.meta_evaluation.selection` (tested); this script only reads the files and prints.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.meta_evaluation.selection import cells, render_selection

METRICS = ("critic", "critic_ref", "critic_img", "critic_plus", "lceval", "lceval_plus")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder of capeval bench --json outputs")
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    args = parser.parse_args(argv)
    payloads = []
    for path in sorted(args.folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and {"benchmark", "results"} <= set(data):
            payloads.append(data)
    if not payloads:
        print(f"no capeval bench --json files in {args.folder}", file=sys.stderr)
        return 2
    text = render_selection(cells(payloads), METRICS)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
