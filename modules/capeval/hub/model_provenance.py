"""The provenance block of a model card: status, training data (inherited parts included) and the benchmarks the
model is not clean on, generated from :mod:`capeval.catalog` so that cards and code cannot disagree.

Each card in ``hub_cards/models/<name>.md`` holds the block between ``<!-- provenance:begin -->`` and
``<!-- provenance:end -->``, right after its title. ``python -m capeval.hub.model_provenance [--write]`` checks
(exit 1 when a card is stale, naming it) or rewrites them; the test suite checks them.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from capeval.meta_evaluation.contamination import contamination
from capeval.catalog import DEFAULTS, MODEL_OPTIONS, MODELS, VERDICTS, entry, training_sources
from capeval.paths import hub_cards_dir
from capeval.provenance import BENCHMARK_DATA

BEGIN, END = "<!-- provenance:begin -->", "<!-- provenance:end -->"
_STATUS_WORDS = {
    "recommended": "recommended",
    "paper": "a reproduction of the paper's model, kept for comparison; not recommended for ranking captions",
    "experimental": "experimental (measured, not recommended)",
    "component": "a component of other models",
    "pretrained": "a pretrained part, not trained by capeval",
}


def _defaults_of(name: str) -> list[str]:
    return [metric for metric, model in DEFAULTS.items() if model == name]


def block(name: str) -> str:
    """The markdown provenance block of catalog model ``name`` (markers included)."""
    model = entry(name)
    lines = [BEGIN, f"**Status in capeval's catalog**: {_STATUS_WORDS[model.status]}."]
    for metric in _defaults_of(model.name):
        if metric not in VERDICTS:
            lines.append(f"The default of `{metric}` (by definition, not by the selection rule).")
            continue
        recommended, why = VERDICTS[metric]
        word = "recommended" if recommended else "not recommended"
        lines.append(f"The default of `{metric}`, picked by the rule in BENCHMARKS.md; {word}: {why}.")
    if model.metric and model.name not in DEFAULTS.values():
        lines.append(f"Used with `{MODEL_OPTIONS.get(model.metric, 'model')}=\"{model.name}\"`.")
    lines.append("")
    lines.append("**Training data**, inherited parts included (`capeval.catalog.training_sources`):")
    lines.append("")
    for source, path in training_sources(model.name):
        via = f" (via {' → '.join(path[1:])})" if len(path) > 1 else ""
        lines.append(f"- {source.description}{via}")
    dirty = []
    for bench in BENCHMARK_DATA:
        if bench == "composite" or bench == "coco-karpathy-test":
            continue
        name_, _, subset = bench.partition("/")
        if model.metric is None and model.status != "pretrained":
            continue
        reasons = _model_contamination(model.name, name_, subset or None)
        if reasons:
            dirty.append(bench)
    lines.append("")
    if model.metric is None and model.status != "pretrained":
        lines.append("**Benchmarks**: not a metric; see the models that read it.")
    elif dirty:
        lines.append("**Not clean on** (its training data overlaps their images, captions or judgments; `capeval bench` "
                     f"marks these rows †): {', '.join(dirty)}.")
    else:
        lines.append("**Clean on** every benchmark capeval reports (Flickr8k-Expert / CrowdFlower, COMPOSITE's three "
                     "subsets, PASCAL-50S, ABSTRACT-50S, THumB, Nebula, Polaris, DetailCaps-4870, CapArena, "
                     "LongCap-Arena).")
    lines.append(END)
    return "\n".join(lines)


def _model_contamination(name: str, benchmark: str, subset: str | None) -> list[str]:
    """Contamination of the model itself (through a metric that reads it, or as a pretrained part)."""
    model = MODELS[name]
    if model.metric is not None:
        return contamination(model.metric, benchmark, subset, {MODEL_OPTIONS[model.metric]: name})
    if name == DEFAULTS.get("sentence_cosine"):
        return contamination("sentence_cosine", benchmark, subset)
    from capeval.provenance import SOURCES, benchmark_data, overlaps

    data = benchmark_data(benchmark, subset)
    return [s.key for s, _ in training_sources(name) for b in data.sources if overlaps(s, SOURCES[b], data.name)]


def sync_cards(folder: str | Path | None = None, write: bool = False) -> list[str]:
    """Card names whose provenance block is missing or stale (rewritten when ``write``)."""
    folder = Path(folder) if folder else hub_cards_dir("models")
    stale = []
    for card in sorted(folder.glob("*.md")):
        name = card.stem
        if name not in MODELS:
            continue
        text = card.read_text(encoding="utf-8")
        new = block(name)
        if BEGIN in text and END in text:
            updated = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: new, text, count=1, flags=re.S)
        else:  # after the title line
            updated = re.sub(r"^(# .*\n)", lambda m: m.group(1) + "\n" + new + "\n", text, count=1, flags=re.M)
        if updated != text:
            stale.append(name)
            if write:
                card.write_text(updated, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite stale blocks (default: only check)")
    parser.add_argument("--folder", type=Path, help="cards folder (default: hub_cards/models)")
    args = parser.parse_args(argv)
    stale = sync_cards(args.folder, write=args.write)
    for name in stale:
        print(f"{'rewrote' if args.write else 'stale'}: {name}", file=sys.stderr)
    return 1 if stale and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["BEGIN", "END", "block", "sync_cards"]
