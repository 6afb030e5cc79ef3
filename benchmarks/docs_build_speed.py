"""Wall-clock seconds of ``mkdocs build --strict`` of the documentation site (mkdocs.yml, docs/), best of ``--repeat``.

tests/docs/test_site.py builds the same site and checks what it holds; only this script times it.

Usage: ``python benchmarks/docs_build_speed.py [--repeat 1]`` (needs the ``docs`` extra: mkdocs, material, mkdocstrings).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_seconds(site: Path) -> float:
    """Seconds one strict build into ``site`` takes; raises ``RuntimeError`` with mkdocs' output if it fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError((proc.stdout + proc.stderr)[-4000:])
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="builds; the best is printed (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        best = min(build_seconds(Path(tmp) / f"site-{k}") for k in range(args.repeat))
    print(f"mkdocs build --strict: {best:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
