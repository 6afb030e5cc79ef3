"""Off-domain robustness without held-out data: the benchmarks with part of their vocabulary replaced by words the
critic never saw, scored with ``critic_oov="unk"`` and ``"glove-map"`` (issue 38 item 2; the criterion is in
BENCHMARKS.md, "Vocabulary shift", written before the first run).

    python benchmarks/vocabulary_shift.py [--benchmarks flickr8k-expert pascal50s] [--share 0.10] [--json out.json]

The shift, per benchmark: the critic's tokens of every candidate and reference (lower-cased words, the first 15 per
text); the word types that are in the critic's vocabulary, alphabetic and have a GloVe vector, in a seeded random order
(``random.Random(seed)``), are taken until their occurrences make ``share`` of all tokens; each is replaced,
everywhere (candidates and references alike), by its nearest GloVe neighbour (cosine, GloVe 6B 50-d) among the
100,000 most frequent GloVe words that are alphabetic, at least 3 letters long and outside the critic's vocabulary.
Texts are rebuilt from the critic's tokens (which the critic alone reads, so the unshifted rebuild scores as the
original). The statistic is the benchmark's own (Flickr8k-Expert: Kendall τ-c; PASCAL-50S: accuracy, 5 random
references, seed 0).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import warnings
from pathlib import Path

import numpy as np

METRIC = "critic_ref"
_TABLE: dict = {}
CANDIDATE_POOL = 100_000


def replacement_table(vocab, vectors) -> tuple[dict, np.ndarray, list[str]]:
    pool = [i for i, w in enumerate(vectors.words[:CANDIDATE_POOL])
            if w.isalpha() and len(w) >= 3 and w not in vocab.index]
    matrix = np.array(vectors.vectors[np.asarray(pool)], dtype=np.float32)
    matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return {}, matrix, [vectors.words[i] for i in pool]


def nearest(word: str, vectors, matrix: np.ndarray, names: list[str]) -> str:
    v = np.array(vectors[word], dtype=np.float32)
    v = v / np.linalg.norm(v)
    return names[int(np.argmax(matrix @ v))]


def shift(texts: list[str], vocab, vectors, share: float, seed: int) -> tuple[list[str], dict[str, str], float]:
    """The shifted texts, the replacement map and the share of tokens replaced."""
    from collections import Counter

    from capeval.critic.vocab import critic_tokens

    tokens = [critic_tokens(t)[:vocab.max_length] for t in texts]
    counts = Counter(t for ts in tokens for t in ts)
    total = sum(counts.values())
    types = sorted(w for w in counts if w in vocab.index and w.isalpha() and w in vectors.index)
    random.Random(seed).shuffle(types)
    matrix, names = _TABLE.get("t") or _TABLE.setdefault("t", replacement_table(vocab, vectors)[1:])
    chosen: dict[str, str] = {}
    replaced = 0
    for word in types:
        if replaced >= share * total:
            break
        chosen[word] = nearest(word, vectors, matrix, names)
        replaced += counts[word]
    shifted = [" ".join(chosen.get(t, t) for t in ts) for ts in tokens]
    return shifted, chosen, replaced / total


def statistic(bench, scores: list[float]) -> float:
    if bench.is_pairwise:
        return float(bench.evaluate(scores[0::2], scores[1::2])["value"])
    return float(bench.evaluate(scores)["value"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", nargs="+", default=["flickr8k-expert", "pascal50s"])
    parser.add_argument("--share", type=float, default=0.10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import capeval
    from capeval.judgments import load_benchmark
    from capeval.critic.stack import load_scorer
    from capeval.models.word_vectors import load_word_vectors

    scorer = load_scorer(None, "reference")
    vocab = scorer.members[0][1]
    vectors = load_word_vectors("glove-6b-50d")
    from capeval.critic.expansion import expansion_for

    expansion = expansion_for(*scorer.members[0])
    out: dict = {"metric": METRIC, "model": scorer.label(), "share": args.share, "seed": args.seed,
                 "map": {"fitted_words": expansion.fitted_words, "r2": round(expansion.r2, 4)}, "benchmarks": {}}
    print(f"map: fitted on {expansion.fitted_words:,} words, R² {expansion.r2:.4f}", file=sys.stderr)
    for name in args.benchmarks:
        bench = load_benchmark(name)
        cands, refs = bench.candidates(), bench.references()
        flat = [r for rs in refs for r in rs]
        shifted, table, replaced = shift(cands + flat, vocab, vectors, args.share, args.seed)
        it = iter(shifted[len(cands):])
        shifted_refs = [[next(it) for _ in rs] for rs in refs]
        row: dict = {"replaced_share": round(replaced, 4), "replaced_types": len(table),
                     "examples": dict(list(table.items())[:12]), "settings": bench.settings_string()}
        for data, (c, r) in (("original", (cands, refs)), ("shifted", (shifted[:len(cands)], shifted_refs))):
            for oov in ("unk", "glove-map"):
                start = time.perf_counter()
                result = capeval.score(c, r, metrics=METRIC, critic_oov=oov, language_check=False, progress=False)
                value = statistic(bench, result["per_caption"][METRIC])
                row[f"{data}/{oov}"] = {"statistic": round(value, 4), "coverage": round(result["coverage"][METRIC], 4),
                                        "seconds": round(time.perf_counter() - start, 1)}
                print(f"{name} {data} {oov}: {value:.4f} (coverage {result['coverage'][METRIC]:.4f})",
                      file=sys.stderr)
        out["benchmarks"][name] = row
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
