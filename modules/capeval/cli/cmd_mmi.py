"""``capeval mmi rerank|tune``: MMI re-ranking of beam candidates (Wang et al., ECCV 2020, §5)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.cli.output import STDOUT, add_json_argument, check_output_path, text_stream, write_json

CANDIDATES_HELP = ('JSONL {"id", "candidates": [{"caption", "logp"}]} (logp = natural-log P(s|I)), or a JSON '
                   'transformers generate output {"sequences", "sequences_scores", "num_return_sequences", "ids"?} '
                   '(needs --tokenizer)')


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mmi", help="MMI re-ranking: log P(s|I) - lambda * log P(s)")
    inner = p.add_subparsers(dest="mmi_command", metavar="ACTION")
    r = inner.add_parser("rerank", help="re-rank beam candidates with a caption LM")
    r.add_argument("--candidates", type=Path, required=True, help=CANDIDATES_HELP)
    r.add_argument("--tokenizer", help="transformers tokenizer folder, to decode a generate output")
    r.add_argument("--lm", type=Path, help="saved caption LM folder (unigram, LSTM, interpolated, transformers)")
    r.add_argument("--unigram", type=Path, help="with --lstm and --alpha: interpolate two saved LMs")
    r.add_argument("--lstm", type=Path)
    r.add_argument("--alpha", type=float, default=0.5, help="weight of the unigram LM in the interpolation")
    r.add_argument("--lambda", dest="lam", type=float, default=0.5, help="MMI weight of log P(s)")
    r.add_argument("--out", default="-", help="output JSONL file, '-' for stdout")
    r.set_defaults(func=rerank_cmd)
    t = inner.add_parser("tune", help="grid-search lambda and alpha (0..1 step .1) on a dev split")
    t.add_argument("--candidates", type=Path, required=True, help=CANDIDATES_HELP)
    t.add_argument("--tokenizer", help="transformers tokenizer folder, to decode a generate output")
    t.add_argument("--references", type=Path, required=True, help="references with ids (see capeval score)")
    t.add_argument("--unigram", type=Path, required=True)
    t.add_argument("--lstm", type=Path, required=True)
    t.add_argument("--objective", default="geomean", help="'geomean' of --metrics or one result key")
    t.add_argument("--metrics", default="bleu_4,meteor,rouge_l,cider_d,spice,spice_u",
                   help="comma-separated result keys for the geometric mean")
    add_json_argument(t, "the best (lambda, alpha) and the grid", required=True)
    t.set_defaults(func=tune_cmd)
    b = inner.add_parser("table", help="Wang et al. 2020 Table 3 on Flickr8k test: beam vs MMI with each LM")
    add_json_argument(b, "{settings, rows: [{method, bleu_4, ..., geomean}]}", required=True)
    b.add_argument("--dev-candidates", type=Path, help="n-best JSONL of Flickr8k dev (default: generate them)")
    b.add_argument("--test-candidates", type=Path, help="n-best JSONL of Flickr8k test (default: generate them)")
    b.add_argument("--captioner", type=Path, help="captioner folder (default: capeval's shipped one)")
    b.add_argument("--features", type=Path, help="Flickr8k features file (default: encode the images, cached)")
    b.add_argument("--num-beams", type=int, default=10, help="beam size; all beams are the candidates")
    b.add_argument("--lm", action="append", metavar="NAME=DIR",
                   help="LM corpus name and a folder with unigram/ and lstm/ (repeatable; default: every shipped "
                        "caption LM, lm-flickr8k and lm-coco from the catalog)")
    b.add_argument("--metrics", default="bleu_4,meteor,rouge_l,cider_d,spice,spice_u")
    b.add_argument("--lambdas", default=",".join(f"{0.1 * i:.1f}" for i in range(11)),
                   help="lambda grid searched on dev (default 0..1 step .1)")
    b.add_argument("--alphas", default=",".join(f"{0.1 * i:.1f}" for i in range(11)),
                   help="alpha grid searched on dev; must hold 0 and 1 (default 0..1 step .1)")
    b.add_argument("--dev-images", type=int,
                   help="tune on the first N dev images (sorted by name) to save time; default all 1,000")
    b.set_defaults(func=table_cmd)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _items(args: argparse.Namespace) -> list[dict]:
    from capeval.rerank.mmi import from_generate_output, read_candidates_jsonl

    text = args.candidates.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None  # JSON Lines
    if isinstance(data, dict) and "sequences" in data:
        if not args.tokenizer:
            raise ValueError(f"{args.candidates}: a generate output needs --tokenizer to decode the sequences.")
        if "sequences_scores" not in data:
            raise ValueError(f"{args.candidates}: a generate output needs 'sequences_scores' (natural-log P(s|I)).")
        from transformers import AutoTokenizer

        return from_generate_output(data["sequences"], data["sequences_scores"], AutoTokenizer.from_pretrained(args.tokenizer),
                                    data.get("num_return_sequences", 1), data.get("ids"), data.get("skip_prefix", 0))
    return read_candidates_jsonl(args.candidates)


def _lm(args: argparse.Namespace):
    from capeval.models.caption_lm import InterpolatedLM
    from capeval.models.lm_loading import load_caption_lm

    if args.lm and not (args.unigram or args.lstm):
        return load_caption_lm(args.lm)
    if args.unigram and args.lstm and not args.lm:
        return InterpolatedLM(load_caption_lm(args.unigram), load_caption_lm(args.lstm), args.alpha)
    raise ValueError("give either --lm or both --unigram and --lstm.")


def rerank_cmd(args: argparse.Namespace) -> int:
    from capeval.rerank.mmi import rerank

    ranked = rerank(_items(args), _lm(args), args.lam)
    lines = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in ranked)
    if args.out == "-":
        sys.stdout.write(lines)
    else:
        Path(args.out).write_text(lines, encoding="utf-8")
    return 0


def tune_cmd(args: argparse.Namespace) -> int:
    from capeval.io import load_references
    from capeval.models.lm_loading import load_caption_lm
    from capeval.rerank.tune import tune

    check_output_path(args.json)  # before the grid search, not after
    items = _items(args)
    ref_ids, refs = load_references(args.references)
    if ref_ids is None:
        raise ValueError(f"{args.references}: references need ids to match the candidates.")
    by_id = {str(i): r for i, r in zip(ref_ids, refs)}
    missing = [it.get("id") for it in items if str(it.get("id")) not in by_id]
    if missing:
        raise ValueError(f"no references for candidate ids {missing[:5]}{' ...' if len(missing) > 5 else ''}.")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    result = tune(items, [by_id[str(it["id"])] for it in items], load_caption_lm(args.unigram),
                  load_caption_lm(args.lstm), args.objective, metrics=metrics)
    write_json(args.json, result, indent=1)
    if args.json != STDOUT:  # with --json - stdout holds the whole result already
        print(json.dumps({k: result[k] for k in ("lambda", "alpha", "objective", "value")}))
    return 0


def _lm_pairs(specs: list[str] | None) -> dict:
    from capeval.models.lm_loading import load_caption_lm
    from capeval.model_store import model_dir

    if not specs:
        specs = [f"{name[3:]}={model_dir(name)}" for name in ("lm-flickr8k", "lm-coco")]
    pairs = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"--lm {spec!r}: expected NAME=DIR (a folder with unigram/ and lstm/).")
        pairs[name] = (load_caption_lm(Path(folder) / "unigram"), load_caption_lm(Path(folder) / "lstm"))
    return pairs


def _split_candidates(path: Path | None, split: str, args: argparse.Namespace) -> tuple[list[dict], dict]:
    from capeval.corpora.captions import flickr8k_captions
    from capeval.rerank.mmi import read_candidates_jsonl

    refs = flickr8k_captions(split)
    if path is not None:
        return read_candidates_jsonl(path), refs
    from capeval.captioning.generate import beam_candidates
    from capeval.cli.cmd_captioner import _split_inputs

    ns = argparse.Namespace(model=args.captioner, features=args.features, images=None, split=split)
    model, tokenizer, table, refs = _split_inputs(ns)
    return beam_candidates(model, tokenizer, table, sorted(refs), num_beams=args.num_beams,
                           num_return_sequences=args.num_beams), refs


def table_cmd(args: argparse.Namespace) -> int:
    from capeval.rerank.table import mmi_table

    check_output_path(args.json)
    lms = _lm_pairs(args.lm)
    dev, dev_refs = _split_candidates(args.dev_candidates, "dev", args)
    if args.dev_images is not None:
        if args.dev_images < 1:
            raise ValueError(f"--dev-images must be >= 1, got {args.dev_images}.")
        dev = sorted(dev, key=lambda it: str(it["id"]))[:args.dev_images]
    test, test_refs = _split_candidates(args.test_candidates, "test", args)
    for items, refs, split in ((dev, dev_refs, "dev"), (test, test_refs, "test")):
        missing = [it["id"] for it in items if it["id"] not in refs]
        if missing:
            raise ValueError(f"{len(missing)} {split} candidates have no Flickr8k {split} references "
                             f"(e.g. {missing[0]!r}).")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    grid = {name: [float(x) for x in getattr(args, name).split(",") if x.strip()] for name in ("lambdas", "alphas")}
    out = mmi_table(dev, [dev_refs[it["id"]] for it in dev], test, [test_refs[it["id"]] for it in test], lms,
                    metrics=metrics, **grid)
    out["settings"].update({"captioner": str(args.captioner or "capeval:flickr8k-captioner"),
                            "num_beams": args.num_beams, "dev": f"flickr8k-dev (first {len(dev)} images)",
                            "test": "flickr8k-test"})
    write_json(args.json, out, indent=1)
    for row in out["rows"]:
        print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}),
              file=text_stream(args.json))
    return 0
