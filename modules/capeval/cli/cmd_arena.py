"""``capeval arena``: judge caption pairs with a vision-language model, CapArena's protocol, each pair in both orders
(:mod:`capeval.judges.arena`); print the verdict counts and, when the pairs name their systems, the systems' ranking
(median bootstrap Elo with 95 % intervals, win rates)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from capeval.cli.output import (add_json_argument, add_progress_argument, check_output_path, for_terminal,
                                text_stream, write_json)

DESCRIPTION = """\
Judge caption pairs with a vision-language model as CapArena (Cheng et al. 2025) does: its system prompt (with the
reference-caption paragraph when every pair has a reference) and its message (the image, then Caption 1 / Caption 2),
the answer's 'Judgment:' line read as 1, 2 or tie. Each pair is asked in both orders (a shown first, then b shown
first): a pair goes to a when both orders favour a, to b when both favour b, and is a tie otherwise; an answer
without an accepted judgment makes the pair failed (counted, named in a warning, listed in --json). Greedy decoding:
the same pairs give the same verdicts.

PAIRS: a JSON list (or {"pairs": [...]}) or JSON Lines of {"image", "caption_a"|"caption1", "caption_b"|"caption2",
optional "source_a"/"source_b"|"source1"/"source2" (system names), optional "reference"}; CapArena's
caparena_annots_eval.json ("img", "caption1", "caption2", "source1", "source2", "ref") is read as it is.

Printed: the share of pairs won by a, by b, tied and failed; with system names, a table of systems ranked by median
bootstrap Elo (CapArena's cal_ranking.py: K 4, scale 400, start 1000; 1000 rounds, seed 42) with its 95 % interval,
win rate ((wins + ties / 2) / battles, in %), wins, losses, ties.

--json writes {judge, with_references, pairs: [{index, verdict, source_a, source_b, ab: {verdict, judgment, answer},
ba: {...}}], counts, win_rates, failures, ranking: [{rank, system, elo, ci_low, ci_high, elo_online, battles, wins,
losses, ties, win_rate}], input}.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("arena", help="judge caption pairs with a VLM (CapArena's protocol, both orders) and rank "
                                     "systems", description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pairs", type=Path, metavar="PAIRS", help="the pairs file (JSON or JSON Lines; see above)")
    p.add_argument("--judge-model", metavar="ID|DIR", default=None,
                   help="the judge: a Hub id or folder of a transformers vision-language model, or an original-layout "
                        "LLaVA-1.5 folder (default: llava-hf/llava-1.5-13b-hf)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when available)")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                   help="arithmetic (default auto: float16 on a GPU, float32 on the CPU)")
    p.add_argument("--batch-size", type=int, default=8, metavar="N",
                   help="prompts generated together (default 8; 1: one prompt per generate)")
    p.add_argument("--max-new-tokens", type=int, default=512, metavar="N",
                   help="the longest answer, in tokens (default 512)")
    p.add_argument("--images-root", type=Path, metavar="DIR",
                   help="folder the pairs' image paths are relative to (default: the pairs file's folder)")
    p.add_argument("--no-reference", action="store_true",
                   help="ask without the references even when the pairs have them (CapArena's prompt without "
                        "reference)")
    p.add_argument("--bootstrap-rounds", type=int, default=1000, metavar="N",
                   help="bootstrap rounds of the Elo intervals (default 1000, CapArena's)")
    p.add_argument("--seed", type=int, default=42, help="the bootstrap's seed (default 42, CapArena's)")
    p.add_argument("--force-cpu", action="store_true",
                   help="run a judge over 3 billion parameters on the CPU anyway")
    add_json_argument(p, "the per-pair verdicts, counts and ranking", dest="json_out")
    add_progress_argument(p)
    p.set_defaults(func=run)


def _percent(value: float) -> str:
    return "—" if value != value else f"{100 * value:.1f}"


def render(result, ranking) -> str:
    """The text ``capeval arena`` prints: the verdict shares, then the ranking table (when there is one)."""
    from capeval.render import text_table

    counts, rates = result.counts(), result.win_rates()
    rows = [[label, counts[key], _percent(rates[key])]
            for key, label in (("a", "a better"), ("b", "b better"), ("tie", "tie"), ("failed", "failed"))]
    lines = [f"judge: {result.judge}{' (with references)' if result.with_references else ''}; {len(result)} pair(s), "
             "each judged in both orders",
             text_table(["verdict", "pairs", "%"], rows)]
    if ranking is not None:
        lines.append("")
        if not ranking:
            lines.append("no battles to rank (every pair failed)")
        else:
            rows = [[r.rank, r.system, f"{r.elo:.0f}", f"{r.ci_low:.0f} to {r.ci_high:.0f}", _percent(r.win_rate),
                     r.wins, r.losses, r.ties] for r in ranking]
            lines.append(text_table(["rank", "system", "Elo", "95% CI", "win %", "wins", "losses", "ties"], rows))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from capeval.judges.arena import judge_pairs
    from capeval.judges.arena_inputs import read_pairs_file

    if args.json_out is not None:
        check_output_path(args.json_out)
    for flag, value, least in (("--batch-size", args.batch_size, 1), ("--max-new-tokens", args.max_new_tokens, 1),
                               ("--bootstrap-rounds", args.bootstrap_rounds, 1)):
        if value < least:
            raise ValueError(f"{flag} must be at least {least}, got {value}.")
    pairs = read_pairs_file(args.pairs, args.images_root)
    result = judge_pairs(pairs.images, pairs.captions_a, pairs.captions_b,
                         None if args.no_reference else pairs.references, judge_model=args.judge_model,
                         device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                         max_new_tokens=args.max_new_tokens, sources=pairs.sources, progress=bool(args.progress),
                         force_cpu=args.force_cpu)
    ranking = result.ranking(rounds=args.bootstrap_rounds, seed=args.seed) if pairs.sources is not None else None
    print(for_terminal(render(result, ranking)), file=text_stream(args.json_out))
    if args.json_out is not None:
        payload = result.to_json(ranking=False)
        if ranking is not None:
            payload["ranking"] = [r.to_json() for r in ranking]
        payload["input"] = {"pairs": str(args.pairs), "bootstrap_rounds": args.bootstrap_rounds, "seed": args.seed}
        write_json(args.json_out, payload)
    sys.stdout.flush()
    return 0
