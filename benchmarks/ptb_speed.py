"""Speed of the pure-Python PTB tokenizer on three inputs (the timings quoted in docs/tokenizer.md "Speed").

1. a 500-word caption (plain, and with quotes and clitics): milliseconds for one ``tokenize`` call;
2. 10,000 (and 40,000) repetitions of each character or pattern that can make a scanner rule scan far:
   milliseconds for one call, and the 40,000 / 10,000 ratio (about 4 for linear work);
3. 20,000 generated plain captions: captions per second.

Each time is the best of ``--repeat`` runs (default 3), in seconds of wall clock (``time.perf_counter``).
The tests (tests/text/test_ptb_tokenizer.py) check the tokens and count the scanner's work; only this
script measures time.

Usage: ``PYTHONPATH=modules python benchmarks/ptb_speed.py [--repeat 3]``
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "modules"))

from capeval.text.ptb import PTBTokenizer  # noqa: E402

#: the units repeated in (2), as in tests/text/test_ptb_tokenizer.py
UNITS = ["a", ".", "-", "'", '"', ",", "&", "+", "<", "@", "1", "a,", "'a", "<!", "a@", "\x01", "\U0001F600"]


def best_seconds(tok: PTBTokenizer, texts: list[str], repeat: int) -> float:
    """Best wall-clock seconds of ``tok.tokenize(texts)`` over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        tok.tokenize(texts)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing; the best is printed (default 3)")
    args = parser.parse_args()
    tok = PTBTokenizer()

    plain = " ".join(("a man in a red shirt is riding a bike down the street , while the dog owner watches . " * 30).split()[:500])
    quoted = " ".join(("a man in a \"red\" shirt isn't riding a bike down the street , while the dog's owner watches . " * 30).split()[:500])
    print(f"500-word caption: {best_seconds(tok, [plain], args.repeat) * 1000:.2f} ms (plain), "
          f"{best_seconds(tok, [quoted], args.repeat) * 1000:.2f} ms (quotes and clitics)")

    for unit in UNITS:
        short = best_seconds(tok, [(unit * 10000)[:10000]], args.repeat)
        long = best_seconds(tok, [(unit * 40000)[:40000]], args.repeat)
        print(f"10,000 x {unit!r}: {short * 1000:.2f} ms; 40,000: {long * 1000:.2f} ms (ratio {long / short:.1f})")

    rng = random.Random(0)
    vocab = "a an the man woman dog cat sits on in with red blue street table plate of and is are".split()
    captions = [" ".join(rng.choice(vocab) for _ in range(rng.randint(6, 14))).capitalize() + "." for _ in range(20000)]
    print(f"20,000 plain captions: {len(captions) / best_seconds(tok, captions, args.repeat):,.0f} captions/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
