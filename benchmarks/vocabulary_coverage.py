"""Vocabulary coverage of capeval's learned metrics: on each shipped critic's training captions (the baseline its
``OutOfVocabularyWarning`` compares with, written into the critic's ``training.json`` with ``--write``) and on the
benchmarks' candidates, their references apart, and how many candidates are low on their own (BENCHMARKS.md,
"Vocabulary coverage").

    python benchmarks/vocabulary_coverage.py [--write] [--json out.json]

Critics: their own tokens (lower-cased words, the first 15 of each text) against their vocabulary; a critic's baseline
is the lowest coverage over the human captions of its caption training sources (the catalog's ``sources``:
Flickr8k train, COCO train2014, COCO Karpathy test). LCEval: PTB tokens, stop words removed (the words WMD and MOWE
read), against GloVe 6B's 400,000 words.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from capeval.catalog import MODELS
from capeval.coverage import measure
from capeval.critic.vocab import CriticVocab, critic_tokens

BENCHMARKS = ("flickr8k-expert", "pascal50s", "composite", "thumb")


def caption_sources() -> dict:
    """Human captions of the training sources that hold captions, loaded lazily: ``{source: () -> [captions]}``."""
    from capeval.corpora.captions import coco_karpathy_test_captions, coco_train_captions, flickr8k_captions

    def flat(table):
        return [c for captions in table.values() for c in captions]

    return {"flickr8k-train": lambda: flat(flickr8k_captions("train")),
            "coco-train2014-captions": lambda: flat(coco_train_captions()),
            "coco-karpathy-test-pairs": lambda: flat(coco_karpathy_test_captions())}


def critic_folders() -> dict[str, Path]:
    """The catalog's critics whose files are here (bundled, or in the checkout's hub_models/)."""
    from capeval.model_store import model_dir

    found = {}
    for name, entry in MODELS.items():
        if entry.metric and entry.metric.startswith("critic") and entry.location in ("bundled", "hub"):
            try:
                folder = Path(model_dir(name))
            except FileNotFoundError:
                continue
            if (folder / "vocab.json").is_file():
                found[name] = folder
    return found


def critic_baselines(write: bool) -> dict:
    sources = caption_sources()
    loaded: dict[str, list[str]] = {}
    out = {}
    for name, folder in critic_folders().items():
        vocab = CriticVocab.load(folder)
        per_source = {}
        for source in MODELS[name].sources:
            if source not in sources:
                continue
            captions = loaded.setdefault(source, sources[source]())
            cov = measure([[critic_tokens(c)[:vocab.max_length]] for c in captions], vocab.index)
            per_source[source] = {"share": round(cov.share, 4), "known": cov.known, "tokens": cov.total,
                                  "captions": len(captions)}
        if not per_source:
            continue
        low = min(per_source, key=lambda s: per_source[s]["share"])
        record = {**per_source[low], "source": low, "by_source": per_source,
                  "measured_by": "benchmarks/vocabulary_coverage.py"}
        out[name] = record
        shares = ", ".join(f"{s} {v['share']:.4f}" for s, v in per_source.items())
        print(f"{name}: {record['share']:.4f} on {low} ({shares})", file=sys.stderr)
        if write:
            path = folder / "training.json"
            log = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
            log["vocabulary_coverage"] = record
            path.write_text(json.dumps(log, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def benchmark_table() -> dict:
    """Per benchmark: the candidates' coverage (what ``result["coverage"]`` reports), the references' (apart), and how
    many candidates are low on their own (``capeval.coverage.is_low_counts``: what the OutOfVocabularyWarning names)
    for the recommended critic as trained (``critic_oov="unk"``), with its default GloVe map, and for LCEval's GloVe."""
    from capeval.judgments import load_benchmark
    from capeval.critic.expansion import expansion_for
    from capeval.critic.stack import load_scorer
    from capeval.coverage import is_low
    from capeval.lceval.metric import GLOVE_BASELINE
    from capeval.lceval.stopwords import content_words
    from capeval.models.word_vectors import load_word_vectors
    from capeval.text import get_tokenizer

    folder = critic_folders()["critic-flickr8k-joint"]
    vocab = CriticVocab.load(folder)
    ((model, _),) = load_scorer("critic-flickr8k-joint", "reference").members
    mapped = expansion_for(model, vocab)
    baseline = json.loads((folder / "training.json").read_text(encoding="utf-8"))["vocabulary_coverage"]["share"]
    vectors = load_word_vectors("glove-6b-50d")
    tokenizer = get_tokenizer("ptb")
    rows = {}
    for name in BENCHMARKS:
        bench = load_benchmark(name)
        cands, refs = list(bench.candidates()), list(bench.references())
        items = [[critic_tokens(c)[:15], *(critic_tokens(r)[:15] for r in rs)] for c, rs in zip(cands, refs)]
        critic = measure(items, vocab.index, baseline=baseline)
        glove_map = measure(items, mapped.known, baseline=baseline)
        cand_tokens = tokenizer.tokenize(cands)
        ref_tokens = iter(tokenizer.tokenize([r for rs in refs for r in rs]))
        glove = measure([[content_words(" ".join(c)), *(content_words(" ".join(next(ref_tokens))) for _ in rs)]
                         for c, rs in zip(cand_tokens, refs)], vectors, baseline=GLOVE_BASELINE)
        row = {"candidates": len(cands)}
        for label, cov in (("critic", critic), ("critic_glove_map", glove_map), ("glove", glove)):
            low = cov.low_items
            row[label] = {"share": round(cov.share, 4), "tokens": cov.total,
                          "reference_share": round(cov.reference_share, 4), "reference_tokens": cov.reference_total,
                          "low_candidates": len(low), "call_low": is_low(cov),
                          "low_examples": [cands[i] for i in low[:5]],
                          "unknown": [w for w, _ in cov.unknown.most_common(8)]}
        rows[name] = row
        print(f"{name}: " + ", ".join(f"{label} {row[label]['share']:.4f} of {row[label]['tokens']:,} (refs "
                                      f"{row[label]['reference_share']:.4f}; {row[label]['low_candidates']} low)"
                                      for label in ("critic", "critic_glove_map", "glove")), file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record each critic's baseline in its training.json")
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    result = {"critics": critic_baselines(args.write), "benchmarks": benchmark_table()}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
