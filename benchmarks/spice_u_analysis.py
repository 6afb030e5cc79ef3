"""Why SPICE-U does (not) beat SPICE on PASCAL-50S: table coverage, tuple kinds, Eq. 6 behaviour.

Usage: PYTHONPATH=modules python benchmarks/spice_u_analysis.py [--refs expert|all]
Prints, for the candidates' and merged references' concepts: the share found in the uniqueness table
per tuple kind; pairwise accuracy of SPICE, SPICE-U and of uniqueness alone; and SPICE-U computed with
uniqueness over object concepts only (a diagnostic variant, not the paper's definition).
"""
from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from capeval.batch import CaptionBatch
from capeval.judgments import load_benchmark
from capeval.spice.metric import Spice
from capeval.spice.scorer import score_caption
from capeval.spice_u.concepts import concept_key
from capeval.spice_u.tables import load_table
from capeval.spice_u.uniqueness import caption_uniqueness, spice_u_score


def accuracy(records, a, b):
    out = {}
    for cat in ("HC", "HI", "HM", "MM"):
        idx = [i for i, r in enumerate(records) if r.category == cat]
        credit = [0.5 if a[i] == b[i] else float((a[i] > b[i]) == (records[i].preferred == 0)) for i in idx]
        out[cat] = 100 * float(np.mean(credit))
    out["avg"] = float(np.mean(list(out.values())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--refs", default="expert")
    args = ap.parse_args()
    bench = load_benchmark("pascal50s", references=args.refs if args.refs in ("expert", "all") else int(args.refs))
    spice = Spice()
    batch = CaptionBatch(bench.candidates(), bench.references())
    cand, ref = spice.graph_tuples(batch)
    table = load_table("coco-train2014")
    seen = Counter()
    total = Counter()
    f, su, uq, su_obj = [], [], [], []
    for c, r in zip(cand, ref):
        s = score_caption(c, r)["all"]
        ck, rk = [concept_key(t) for t in c], [concept_key(t) for t in r]
        for side, tuples in (("cand", c), ("ref", r)):
            for t in tuples:
                key = (side, t.kind)
                total[key] += 1
                seen[key] += concept_key(t) in table.counts
        u = caption_uniqueness(ck, rk, table.un)
        u_obj = caption_uniqueness([concept_key(t) for t in c if t.kind == "object"],
                                   [concept_key(t) for t in r if t.kind == "object"], table.un)
        f.append(s.f)
        uq.append(u)
        su.append(spice_u_score(s.precision, s.recall, u))
        su_obj.append(spice_u_score(s.precision, s.recall, u_obj))
    print(f"PASCAL-50S, refs={args.refs}: share of concepts present in the COCO train2014 table")
    for key in sorted(total):
        print(f"  {key[0]:4s} {key[1]:9s} {seen[key] / total[key]:6.1%} of {total[key]}")
    merged = sum(1 for rs in ref for t in rs if "/" in concept_key(t))
    print(f"  reference concepts holding a merged synonym element (x/y): {merged}")
    recs = bench.records
    for name, values in (("spice", f), ("spice_u", su), ("uniqueness", uq), ("spice_u, object-only uniqueness", su_obj)):
        arr = np.asarray(values)
        acc = accuracy(recs, arr[0::2], arr[1::2])
        print(f"  {name:32s} " + "  ".join(f"{k} {v:5.1f}" for k, v in acc.items()))


if __name__ == "__main__":
    main()
