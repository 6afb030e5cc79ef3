"""Agreement of capeval's pure-Python PTB tokenizer with the Java original (CoreNLP 3.4.1).

For every corpus the captions are tokenised, in their natural order and as one list (so captions
are consecutive lines, as in pycocoevalcap), by ``JavaPTBTokenizer`` and by ``PTBTokenizer``. The
script prints the share of captions with identical token lists (after COCO punctuation removal,
i.e. what the metrics see) and of identical raw output lines (before the removal), then lists the
differences clustered by the shape of the first differing tokens.

Corpora (``--corpus``): COCO 2014 train+val (616,767 captions, from pycocoevalcap's SPICE jar), the same captions
after capeval's default THumB clean-up, the Karpathy test split, Flickr8k, PASCAL-50S (expert
file and cider-py candidates), THumB 1.0 and COMPOSITE; on request also two seeded random stress
tests (``random-words``, ``random-chars``, ``random-sigma``). The data come from ``capeval.paths.data_dir()``;
missing corpora are skipped.

It also reports how many COCO captions get a different token list when the THumB clean-up
(strip, upper-case first letter, final period) is applied before tokenising, clustered the same way.

Usage::

    PYTHONPATH=modules python benchmarks/tokenizer_agreement.py            # all corpora
    PYTHONPATH=modules python benchmarks/tokenizer_agreement.py --corpus karpathy flickr8k
    PYTHONPATH=modules python benchmarks/tokenizer_agreement.py --limit 20000 --show 5
    PYTHONPATH=modules python benchmarks/tokenizer_agreement.py --corpus random-words random-chars random-sigma
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from capeval.paths import data_dir
from capeval.text import COCO_PUNCTUATION
from capeval.text.cleanup import thumb_cleanup
from capeval.text.ptb import PTBTokenizer
from capeval.text.ptb_java import JavaPTBTokenizer

# --------------------------------------------------------------------------------------------
# Corpora: each loader returns the captions of one corpus as a list of str, in file order.
# --------------------------------------------------------------------------------------------


def _coco() -> list[str]:
    from capeval.coco.captions import coco_captions

    return [c for split in ("train2014", "val2014") for caps in coco_captions(split).values() for c in caps]


def _coco_val() -> list[str]:
    from capeval.coco.captions import coco_captions

    return [c for caps in coco_captions("val2014").values() for c in caps]


def _coco_thumb() -> list[str]:
    return [thumb_cleanup(c) for c in _coco()]


def _json_captions(path: Path) -> list[str]:
    return [item["caption"] for item in json.loads(path.read_text())]


def _karpathy(root: Path) -> list[str]:
    folder = root / "coco_karpathy_test"
    return _json_captions(folder / "karpathy_ref.json") + _json_captions(folder / "karpathy_cand.json")


def _flickr8k(root: Path) -> list[str]:
    lines = (root / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[1] for line in lines if "\t" in line]


def _pascal50s(root: Path) -> list[str]:
    data = json.loads((root / "pascal50s" / "expert-processed" / "pascal_50s.json").read_text())
    out: list[str] = []
    for category in sorted(data):
        for item in data[category]:
            out.extend(item["captions"])
            out.extend(item["references"])
    for name in ("pascal_candsB.json", "pascal_candsC.json"):
        out.extend(_json_captions(root / "pascal50s" / "cider-py" / name))
    return out


def _thumb(root: Path) -> list[str]:
    folder = root / "thumb"
    out = [json.loads(line)["hyp"] for line in (folder / "mscoco_THumB-1.0.jsonl").read_text().splitlines() if line]
    # mscoco_references.json is JSON Lines despite its name.
    for line in (folder / "mscoco_references.json").read_text().splitlines():
        if line.strip():
            out.extend(json.loads(line)["refs"])
    return out


def _composite(root: Path) -> list[str]:
    folder = root / "composite"
    out: list[str] = []
    for name in ("8k", "30k", "coco"):
        path = folder / f"composite_{name}.jsonl"
        out.extend(json.loads(line)["caption"] for line in path.read_text().splitlines() if line)
    for name in ("8k", "30k", "coco"):
        refs = json.loads((folder / f"references_{name}.json").read_text())
        for image in refs.values():
            out.extend(r["caption"] for r in image)
    return out


def _random_chars(n: int = 50000, seed: int = 0) -> list[str]:
    """Seeded random strings: ASCII letters/digits/spaces/punctuation plus a few Unicode characters."""
    from capeval.testing import random_strings

    return random_strings(n, seed, any_codepoint_share=0.03)


def _random_words(n: int = 50000, seed: int = 0) -> list[str]:
    """Seeded caption-like strings: words with quotes, brackets, periods, contractions glued on."""
    import random

    rng = random.Random(seed)
    words = (
        "a an the man woman dog cat it's don't I'm St Dr Mr etc Inc Co no fig vs U.S A I x 10 3.5 1,000 "
        "2 1/2 5:30 am pm e.g i.e www x.com foo@bar.com co ed re pre non anti-war well x-ray 90s"
    ).split()
    pre = ["", "", "", "", '"', "'", "(", "[", "`", "``", "\u2018", "\u201c", "-", "$", "#", "@", "<", "*"]
    post = ["", "", "", "", ".", ",", "'", '"', ")", "]", "'s", "n't", "!", "?", ";", ":", "...", "..", "-",
            "/", "%", ".,", ".'", '."', "'.", "-a", "/b", "&c", "+", "*", ">"]
    out = []
    for _ in range(n):
        toks = [rng.choice(pre) + rng.choice(words) + rng.choice(post) for _ in range(rng.randint(1, 10))]
        out.append(" ".join(toks) if rng.random() < 0.8 else "".join(toks))
    return out


def _random_sigma(n: int = 20000, seed: int = 5) -> list[str]:
    """Seeded short strings around Greek capital sigma (Java's final-sigma rule uses word breaks)."""
    import random

    rng = random.Random(seed)
    pool = list("aZ19\u03a3\u0391\u03c9\u00e9\u732b\u3131\ud55c_-.'\u2019:\u00b7,/\u0301\u00ad@#$&")
    pool += ["\u2010", "\u1885", "\u2d0a", "\u0661"]
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(2, 8))) for _ in range(n)]
    return [t for t in texts if "\u03a3" in t]


CORPORA: dict[str, tuple[str, Callable[..., list[str]], bool]] = {
    # name: (description, loader, needs the data dir)
    "coco": ("COCO 2014 train+val captions (pycocoevalcap's SPICE jar)", _coco, False),
    "coco-val": ("COCO val2014 captions", _coco_val, False),
    "coco-thumb": ("COCO 2014 train+val after THumB clean-up", _coco_thumb, False),
    "karpathy": ("Karpathy test refs + candidates (coco_karpathy_test/karpathy_{ref,cand}.json)", _karpathy, True),
    "flickr8k": ("Flickr8k.token.txt", _flickr8k, True),
    "pascal50s": ("PASCAL-50S expert file + cider-py candsB/candsC", _pascal50s, True),
    "thumb": ("THumB 1.0 hypotheses + references", _thumb, True),
    "composite": ("COMPOSITE captions + references_{8k,30k,coco}", _composite, True),
    "random-words": ("50,000 seeded caption-like strings with glued punctuation (stress test)", _random_words, False),
    "random-chars": ("50,000 seeded random strings, ASCII + Unicode (stress test)", _random_chars, False),
    "random-sigma": ("seeded short strings containing a capital sigma (stress test)", _random_sigma, False),
}

# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------

_SHAPES = [(re.compile(r"[^\W\d_]+"), "a"), (re.compile(r"\d+"), "0")]


def shape(tokens: list[str]) -> str:
    """Shape of a token list for clustering: letter runs -> a, digit runs -> 0."""
    text = " ".join(tokens)
    for rx, rep in _SHAPES:
        text = rx.sub(rep, text)
    return text


def diff_key(left: list[str], right: list[str]) -> tuple[str, str, tuple[str, str]]:
    """(shape of left part, shape of right part, example) of the first differing block."""
    ops = difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag != "equal":
            a, b = left[i1:i2], right[j1:j2]
            return shape(a), shape(b), (" ".join(a), " ".join(b))
    return "", "", ("", "")


def _final(line: str) -> list[str]:
    return [w for w in line.rstrip().split(" ") if w and w not in COCO_PUNCTUATION]


def compare(name: str, captions: list[str], show: int) -> dict:
    t0 = time.perf_counter()
    java_lines = JavaPTBTokenizer().tokenize_lines(captions)
    t_java = time.perf_counter() - t0
    t0 = time.perf_counter()
    py_tokens = PTBTokenizer().tokenize(captions)
    t_py = time.perf_counter() - t0
    py_lines = PTBTokenizer().tokenize_lines(captions)
    n = len(captions)
    diffs = [i for i in range(n) if _final(java_lines[i]) != py_tokens[i]]
    raw_same = sum(java_lines[i] == py_lines[i] for i in range(n))
    print(f"\n== {name}: {CORPORA[name][0]}")
    print(
        f"   {n:,} captions; identical token lists: {n - len(diffs):,} ({100 * (n - len(diffs)) / n:.4f} %); "
        f"identical raw lines (before punctuation removal): {raw_same:,} ({100 * raw_same / n:.4f} %)"
    )
    print(f"   time: Java {t_java:.1f} s (one JVM), Python {t_py:.1f} s ({n / t_py:,.0f} captions/s)")
    clusters: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i in diffs:
        ka, kb, _ = diff_key(_final(java_lines[i]), py_tokens[i])
        clusters[(ka, kb)].append(i)
    for (ka, kb), idx in sorted(clusters.items(), key=lambda kv: -len(kv[1])):
        print(f"   [{len(idx)}] Java {ka!r} vs Python {kb!r}")
        for i in idx[:show]:
            print(f"       {captions[i]!r}\n         J: {_final(java_lines[i])}\n         P: {py_tokens[i]}")
    return {"n": n, "identical": n - len(diffs), "raw_identical": raw_same}


def thumb_effect(captions: list[str], show: int) -> None:
    """How many captions tokenise differently after THumB clean-up (Python tokenizer)."""
    tok = PTBTokenizer()
    before = tok.tokenize(captions)
    after = tok.tokenize([thumb_cleanup(c) for c in captions])
    clusters: dict[tuple[str, str], list[int]] = defaultdict(list)
    examples: dict[tuple[str, str], tuple[str, str]] = {}
    for i, (b, a) in enumerate(zip(before, after)):
        if a != b:
            ka, kb, ex = diff_key(b, a)
            clusters[(ka, kb)].append(i)
            examples.setdefault((ka, kb), ex)
    n_diff = sum(len(v) for v in clusters.values())
    print(f"\n== THumB clean-up effect on COCO 2014 ({len(captions):,} captions, Python tokenizer)")
    print(f"   captions whose token list changes: {n_diff:,} ({100 * n_diff / len(captions):.4f} %)")
    for (ka, kb), idx in sorted(clusters.items(), key=lambda kv: -len(kv[1])):
        print(f"   [{len(idx)}] raw {ka!r} -> cleaned {kb!r}")
        for i in idx[:show]:
            print(f"       {captions[i]!r}\n         raw:     {before[i]}\n         cleaned: {after[i]}")


def context_effect(name: str, captions: list[str], show: int) -> None:
    """Captions whose tokens change when the next caption is not taken into account."""
    with_context = PTBTokenizer().tokenize(captions)
    alone = PTBTokenizer(line_context=False).tokenize(captions)
    idx = [i for i, (a, b) in enumerate(zip(with_context, alone)) if a != b]
    print(f"   {name}: {len(idx):,} of {len(captions):,} captions depend on the next caption")
    for i in idx[:show]:
        nxt = captions[i + 1][:30] if i + 1 < len(captions) else None
        print(f"       {captions[i]!r} (next: {nxt!r})\n         in file: {with_context[i]}\n         alone:   {alone[i]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="*", default=[c for c in CORPORA if not c.startswith("random")],
                        choices=list(CORPORA), help="default: every real corpus (not the random stress tests)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N captions of each corpus")
    parser.add_argument("--show", type=int, default=3, help="examples printed per difference cluster")
    parser.add_argument("--no-thumb-effect", action="store_true", help="skip the THumB clean-up analysis")
    parser.add_argument("--context-effect", action="store_true",
                        help="count captions whose tokens depend on the next caption (raw and THumB-cleaned)")
    args = parser.parse_args(argv)
    root = data_dir()
    results = {}
    for name in args.corpus:
        _, loader, needs_data = CORPORA[name]
        if needs_data and root is None:
            print(f"\n== {name}: skipped (no data dir; set CAPEVAL_DATA_DIR)")
            continue
        captions = loader(root) if needs_data else loader()
        if args.limit:
            captions = captions[: args.limit]
        results[name] = compare(name, captions, args.show)
    if not args.no_thumb_effect and "coco" in args.corpus:
        captions = _coco()
        thumb_effect(captions[: args.limit] if args.limit else captions, args.show)
    if args.context_effect:
        print("\n== Captions whose tokens depend on the next caption (Python tokenizer, file order)")
        for name in args.corpus:
            _, loader, needs_data = CORPORA[name]
            if needs_data and root is None:
                continue
            captions = loader(root) if needs_data else loader()
            captions = captions[: args.limit] if args.limit else captions
            context_effect(name, captions, args.show)
            if not name.startswith(("coco-thumb", "random")):
                context_effect(name + " after THumB clean-up", [thumb_cleanup(c) for c in captions], args.show)
    print("\nSummary (identical token lists):")
    for name, r in results.items():
        print(f"   {name:11} {r['identical']:>9,} / {r['n']:>9,}  {100 * r['identical'] / r['n']:9.4f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
