"""Where the commands write, shared by every ``cmd_*`` module.

* ``--json FILE`` writes the result to FILE; ``--json -`` prints it on stdout, and then the human-readable
  text of the command goes to stderr, so that stdout is exactly one JSON document (``capeval score ... --json -
  | jq .cider_d``).
* ``--progress`` shows progress bars even when stderr is not a terminal (by default they show on a terminal,
  for work that lasts more than a second).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

#: The ``--json`` value that means stdout.
STDOUT = "-"


def json_target(value: str) -> Path | str:
    """``argparse`` type of ``--json``: ``"-"`` (stdout) or a file path."""
    return STDOUT if value == STDOUT else Path(value)


def add_json_argument(parser: argparse.ArgumentParser, what: str, *, required: bool = False,
                      dest: str | None = None) -> None:
    """``--json FILE|-``: ``what`` is the payload, e.g. ``"the result (same keys)"``."""
    kwargs = {"dest": dest} if dest else {}
    parser.add_argument("--json", type=json_target, metavar="FILE", required=required,
                        help=f"write {what} to FILE as JSON; '-' prints it on stdout (the tables go to stderr)",
                        **kwargs)


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--progress``: ``args.progress`` is True, else None (bars only on a terminal, after one second)."""
    parser.add_argument("--progress", action="store_const", const=True, default=None,
                        help="show progress bars on stderr even when it is not a terminal (default: only on a "
                             "terminal, for steps longer than a second)")


def add_signature_argument(parser: argparse.ArgumentParser) -> None:
    """``--signature short|full``: how the signature prints on the terminal (``args.signature``)."""
    parser.add_argument("--signature", choices=["short", "full"], default="short",
                        help="short (default): one line per metric, continued after a comma where it is wider than the "
                             "terminal; full: the whole "
                             "string on one line (as in --json)")


def print_signature(signature: str, args: argparse.Namespace, out: TextIO, label: str = "signature") -> None:
    """Print ``signature`` as ``--signature`` asks (:func:`capeval.signature.signature_lines` when short)."""
    from capeval.signature import signature_lines

    if getattr(args, "signature", "short") == "full":
        print(f"{label}: {signature}", file=out)
        return
    print("\n".join(signature_lines(signature, label=label)), file=out)


def for_terminal(text: str) -> str:
    """A command's text for the terminal (:func:`capeval.render.terminal_width`; ``--wide``: as it is): each
    ``signature: ...`` line as one short line per metric (:func:`capeval.signature.signature_lines`), every other
    line longer than the width wrapped between words (tables built with ``text_table`` already fit)."""
    from capeval.render import fit_text
    from capeval.signature import signature_lines

    out = []
    for line in text.split("\n"):
        if line.startswith("signature: "):
            out += signature_lines(line[len("signature: "):])
        else:
            out.append(line)
    return fit_text("\n".join(out))


def text_stream(*targets: Any) -> TextIO:
    """Where the human-readable output goes: stderr when one of ``targets`` is stdout (``--json -``)."""
    return sys.stderr if any(t == STDOUT for t in targets) else sys.stdout


def check_output_path(path: Path | str, flag: str = "--json") -> None:
    """Refuse an output path that cannot be written, before any scoring (a result is never lost)."""
    if path == STDOUT:
        return
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give a file name, e.g. {path / 'scores.json'}.")
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ValueError(f"{flag} {path}: {folder} is a file, not a directory.")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{flag} {path}: no permission to write in {folder}.")
            break
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{flag} {path}: the file exists and is not writable.")


def write_json(target: Path | str, payload: Any, *, indent: int = 2, default=None) -> None:
    """Write ``payload`` to ``target`` (a path, or :data:`STDOUT`); a file write is reported on stderr."""
    text = json.dumps(payload, indent=indent, ensure_ascii=False, default=default) + "\n"
    if target == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    try:
        if path.exists() and not path.is_file():  # a device or a pipe (/dev/stdout): written in place
            with path.open("w", encoding="utf-8") as handle:
                handle.write(text)
        else:  # all at once: a full disk or a kill leaves the old file (or none), never half a result
            from capeval.paths import write_bytes_atomic

            write_bytes_atomic(path, text.encode("utf-8"), fsync=False)
    except OSError as err:
        raise OSError(f"cannot write {path}: {err.strerror or err}") from None
    print(f"wrote {path}", file=sys.stderr)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The learned metrics' model flags: ``--critic-model`` / ``--critic-ref-model`` / ``--critic-img-model`` /
    ``--critic-plus-model`` (critic and combiner folders or shipped names) and ``--lceval-model`` /
    ``--lceval-released-model`` (LCEval model folders or shipped names); ``--sentence-cosine-encoder`` (alias
    ``--sentence-encoder``) and ``--sentence-cosine-reduce`` (the sentence_cosine metric's encoder and reduction);
    ``--sentence-rank-model`` (the sentence_rank metric's model folder)."""
    from capeval.catalog import DEFAULTS, MODELS, default_available

    for flag, what in (("--critic-model", "critic"), ("--critic-ref-model", "critic_ref"),
                       ("--critic-img-model", "critic_img")):
        parser.add_argument(flag, metavar="DIR|NAME", help=f"the {what} metric's model: a `capeval critic train` folder "
                                                           f"or a shipped critic's name (default: {DEFAULTS[what]})")
    parser.add_argument("--critic-plus-model", metavar="DIR|NAME",
                        help="the critic_plus metric's combiner: a `capeval critic fit-plus` folder or a shipped name "
                             f"(default: {DEFAULTS['critic_plus']})")
    parser.add_argument("--lceval-model", metavar="DIR|NAME",
                        help="the lceval metric's network: a `capeval lceval train` folder or a shipped name "
                             f"(default: {DEFAULTS['lceval']})")
    released = [name for name, model in MODELS.items() if model.metric == "lceval_released"]
    parser.add_argument("--lceval-released-model", metavar="DIR|NAME",
                        help=f"the lceval_released metric's layer: {' or '.join(released)} "
                             f"(default: {DEFAULTS['lceval_released']})")
    parser.add_argument("--lceval-plus-model", metavar="DIR|NAME",
                        help="the lceval_plus metric's network: a `capeval lceval train --plus` folder or a shipped name "
                             f"(default: {DEFAULTS['lceval_plus']})")
    parser.add_argument("--sentence-cosine-encoder", "--sentence-encoder", dest="sentence_cosine_encoder",
                        metavar="NAME|DIR",
                        help=f"the sentence_cosine metric's sentence encoder: {DEFAULTS['sentence_cosine']} (default, "
                             "offline), a transformers encoder folder or a Hub name (needs the network or the local HF "
                             "cache)")
    from capeval.sentence_cosine.scores import REDUCTIONS

    parser.add_argument("--sentence-cosine-reduce", choices=list(REDUCTIONS), default=None,
                        help="the sentence_cosine metric's reduction of the cosines over a caption's references "
                             "(default: mean)")
    shipped = ("" if default_available("sentence_rank") else
               ", not shipped yet: train one, see docs/benchmarks/measurements.md §12")
    parser.add_argument("--sentence-rank-model", metavar="DIR|NAME",
                        help="the sentence_rank metric's model (experimental): a `capeval sentence-rank train` folder "
                             f"or a shipped name (default: {DEFAULTS['sentence_rank']}{shipped})")
    from capeval.vision_language.metric import DEFAULT_CLIP_MODEL, DEFAULT_PAC_MODEL, PAC_CHECKPOINT_NAME

    parser.add_argument("--clip-model", metavar="ID|NAME|DIR|FILE",
                        help="clip_s / ref_clip_s: a Hub id (default: " + DEFAULT_CLIP_MODEL + ", read from the "
                             "Hugging Face cache), an OpenAI name (ViT-B/32), open_clip:NAME/TAG, a transformers "
                             "folder or an OpenAI-format checkpoint file")
    parser.add_argument("--pac-model", metavar="FILE|ID",
                        help=f"pac_s / ref_pac_s: the PAC-S checkpoint ({PAC_CHECKPOINT_NAME} as distributed) or a Hub "
                             f"repo holding it (default: {DEFAULT_PAC_MODEL}, looked for in capeval's cache folder)")
    parser.add_argument("--critic-oov", choices=["glove-map", "unk"], default=None,
                        help="the critics' words outside their vocabulary: glove-map (default: mapped into the "
                             "critic's embedding space from their GloVe vectors) or unk (one unknown vector, the "
                             "critic as trained)")
    parser.add_argument("--scale", choices=["auto", "readable", "raw"], default=None,
                        help="the learned metrics' scale (critic, critic_ref, critic_plus, lceval, lceval_plus): auto "
                             "(default for capeval score: the shipped default models' readable scale, the share of "
                             "human captions a caption beats; other models raw), readable, or raw (the model's "
                             "probability; what capeval bench reads unless told)")
    parser.add_argument("--polos-model", metavar="DIR|FILE",
                        help="polos: the released checkpoint's folder (reprod.ckpt + hparams.yaml) or the .ckpt / "
                             ".safetensors file (default: looked for in capeval's cache folder, models/polos/, then "
                             "in the reference's ~/.cache/torch/yuigawada/reprod/)")
    parser.add_argument("--polos-text-model", metavar="ID|DIR",
                        help="polos: the SimCSE encoder's configuration and tokenizer (default: the checkpoint's "
                             "pretrained_model, princeton-nlp/sup-simcse-roberta-base, from the Hugging Face cache)")
    parser.add_argument("--polos-batch-size", metavar="N", type=int, default=None,
                        help="polos: items per batch, in input order (default 32, the reference's evaluation; a "
                             "Polos score depends slightly on the other items of its batch)")
    parser.add_argument("--polos-device", metavar="DEVICE", default=None,
                        help="polos device: cpu, cuda, cuda:1 ... (default: CUDA when available)")
    from capeval.judges.judge import CPU_PARAMETER_LIMIT, DEFAULT_JUDGE, DTYPE_NAMES, MAX_NEW_TOKENS

    parser.add_argument("--fleur-model", metavar="ID|DIR",
                        help=f"fleur / ref_fleur: the judge, a Hub id or folder of a transformers vision-language "
                             f"model (default: {DEFAULT_JUDGE}, the paper's LLaVA-1.5-13B), or an original-layout "
                             "LLaVA-1.5 folder (liuhaotian/llava-v1.5-13b's)")
    parser.add_argument("--fleur-dtype", choices=list(DTYPE_NAMES), default=None,
                        help="fleur / ref_fleur arithmetic: auto (default: float16 on a GPU as the reference, float32 "
                             "on the CPU), float32, float16 or bfloat16")
    parser.add_argument("--fleur-device", metavar="DEVICE", default=None,
                        help="fleur / ref_fleur device: cpu, cuda, cuda:1 ... (default: CUDA when available)")
    parser.add_argument("--fleur-device-map", metavar="MAP", default=None,
                        help="fleur / ref_fleur: transformers' device_map (auto spreads a judge over several GPUs)")
    parser.add_argument("--fleur-batch-size", metavar="N", type=int, default=None,
                        help="fleur / ref_fleur: prompts generated together (default 8; 1 is the reference's one "
                             "prompt per generate)")
    parser.add_argument("--fleur-max-new-tokens", metavar="N", type=int, default=None,
                        help=f"fleur / ref_fleur: the longest answer (default {MAX_NEW_TOKENS}, the reference's)")
    parser.add_argument("--fleur-explain", action="store_true", default=None,
                        help="fleur / ref_fleur: also ask FLEUR's follow-up question (\"Why? Tell me the reason.\") "
                             "and keep the answers (in --json's fleur_explanations)")
    parser.add_argument("--fleur-force-cpu", action="store_true", default=None,
                        help=f"fleur / ref_fleur: run a judge over {CPU_PARAMETER_LIMIT / 1e9:g} billion parameters on "
                             "the CPU anyway (refused otherwise: tens of GB, minutes per caption)")
    parser.add_argument("--fleur-vision-tower", metavar="ID|DIR", default=None,
                        help="fleur / ref_fleur with an original-layout LLaVA folder: its CLIP vision model (default: "
                             "the folder's mm_vision_tower)")
    from capeval.judges.lora import EXPERT_ADAPTER

    parser.add_argument("--expert-model", metavar="ID|DIR",
                        help=f"expert: the base judge (default: {DEFAULT_JUDGE})")
    parser.add_argument("--expert-adapter", metavar="ID|DIR",
                        help=f"expert: the LLaVA LoRA adapter merged into the judge (default: {EXPERT_ADAPTER})")
    parser.add_argument("--expert-conversation", choices=["llava_v0", "llava_v1"], default=None,
                        help="expert: LLaVA's template (default llava_v0, what EXPERT's released expert.py runs; "
                             "llava_v1, what its --conv-mode default names)")
    parser.add_argument("--expert-dtype", choices=list(DTYPE_NAMES), default=None, help="expert: as --fleur-dtype")
    parser.add_argument("--expert-device", metavar="DEVICE", default=None, help="expert: as --fleur-device")
    parser.add_argument("--expert-device-map", metavar="MAP", default=None, help="expert: as --fleur-device-map")
    parser.add_argument("--expert-batch-size", metavar="N", type=int, default=None,
                        help="expert: as --fleur-batch-size")
    parser.add_argument("--expert-max-new-tokens", metavar="N", type=int, default=None,
                        help="expert: as --fleur-max-new-tokens")
    parser.add_argument("--expert-force-cpu", action="store_true", default=None, help="expert: as --fleur-force-cpu")
    for family in ("clip", "pac"):
        parser.add_argument(f"--{family}-dtype", choices=["float32", "float16"], default=None,
                            help=f"{family}_s / ref_{family}_s arithmetic: float32 (default, the reference's) or "
                                 "float16 (GPU only)")
        parser.add_argument(f"--{family}-device", metavar="DEVICE", default=None,
                            help=f"{family}_s / ref_{family}_s device: cpu, cuda, cuda:1 ... (default: CUDA when "
                                 "available)")


def model_options(args: argparse.Namespace) -> dict:
    """The metric options of :func:`add_model_arguments` that were given."""
    return {k: v for k, v in (("critic_model", args.critic_model), ("critic_ref_model", args.critic_ref_model),
                              ("critic_img_model", args.critic_img_model),
                              ("critic_plus_model", args.critic_plus_model), ("lceval_model", args.lceval_model),
                              ("lceval_released_model", args.lceval_released_model),
                              ("lceval_plus_model", args.lceval_plus_model),
                              ("sentence_cosine_encoder", getattr(args, "sentence_cosine_encoder", None)),
                              ("sentence_cosine_reduce", getattr(args, "sentence_cosine_reduce", None)),
                              ("sentence_rank_model", getattr(args, "sentence_rank_model", None)),
                              ("critic_oov", getattr(args, "critic_oov", None)),
                              *((option, getattr(args, "scale", None))
                                for option in ("critic_scale", "lceval_scale", "lceval_plus_scale")),
                              *((f"{family}_{what}", getattr(args, f"{family}_{what}", None))
                                for family in ("clip", "pac") for what in ("model", "dtype", "device")),
                              *((f"polos_{what}", getattr(args, f"polos_{what}", None))
                                for what in ("model", "text_model", "batch_size", "device")),
                              *((f"fleur_{what}", getattr(args, f"fleur_{what}", None))
                                for what in ("model", "dtype", "device", "device_map", "batch_size", "max_new_tokens",
                                             "explain", "force_cpu", "vision_tower")),
                              *((f"expert_{what}", getattr(args, f"expert_{what}", None))
                                for what in ("model", "adapter", "conversation", "dtype", "device", "device_map",
                                             "batch_size", "max_new_tokens", "force_cpu")))
            if v is not None}
