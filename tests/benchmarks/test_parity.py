"""End-to-end protocol check: loaders + stats reproduce published/known numbers with pycocoevalcap.

Scores come from pycocoevalcap 1.2's own BLEU and CIDEr-D on Java-PTB-tokenized text (the
pipeline CLIPScore's and THumB's numbers were computed with), so a mismatch points at the loaders
or the statistics. Numbers: the published ones of each benchmark's protocol, and pycocoevalcap's on these files.
"""
from __future__ import annotations

import numpy as np
import pytest

from capeval.judgments import load_benchmark
from support import require_data

pytestmark = [pytest.mark.slow, pytest.mark.java, pytest.mark.data]


def coco_scores(candidates, references, metric):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    from capeval.text.ptb_java import JavaPTBTokenizer

    tokenizer = JavaPTBTokenizer()
    flat = [r for refs in references for r in refs]
    tok = [" ".join(t) for t in tokenizer.tokenize(list(candidates) + flat)]
    cand_tok, ref_tok = tok[: len(candidates)], tok[len(candidates):]
    gts, res, k = {}, {}, 0
    for i, refs in enumerate(references):
        gts[i], k = ref_tok[k:k + len(refs)], k + len(refs)
        res[i] = [cand_tok[i]]
    if metric == "cider_d":
        return np.asarray(Cider().compute_score(gts, res)[1])
    return np.asarray(Bleu(4).compute_score(gts, res, verbose=0)[1][3])


def test_flickr8k_expert_clipscore_protocol_reproduces_published_tau_c(java):
    root = require_data("flickr8k", "ExpertAnnotations.txt").parents[1]
    bench = load_benchmark("flickr8k-expert", root)
    cider = bench.evaluate(coco_scores(bench.candidates(), bench.references(), "cider_d"))
    bleu = bench.evaluate(coco_scores(bench.candidates(), bench.references(), "bleu_4"))
    assert cider["rows"] == 16992
    assert round(100 * cider["value"], 1) == 43.9  # CLIPScore paper, CIDEr tau-c
    assert round(100 * bleu["value"], 1) == 30.8  # CLIPScore paper, BLEU-4 tau-c


def test_thumb_and_pascal_known_values(java):
    root = require_data("thumb", "mscoco_THumB-1.0.jsonl").parents[1]
    thumb = load_benchmark("thumb", root)
    cider = coco_scores(thumb.candidates(), thumb.references(), "cider_d")
    assert thumb.evaluate(cider)["value"] == pytest.approx(0.224, abs=5e-4)
    without = load_benchmark("thumb", root, include_human=False)
    keep = np.array([r.system != "Human" for r in thumb.records])
    assert without.evaluate(cider[keep])["value"] == pytest.approx(0.334, abs=5e-4)

    require_data("pascal50s", "cider-matlab", "pair_pascal.mat")
    pascal = load_benchmark("pascal50s", root)
    scores = coco_scores(pascal.candidates(), pascal.references(), "cider_d")
    out = pascal.evaluate(scores[0::2], scores[1::2])
    got = [out["categories"][c]["value"] for c in ("HC", "HI", "HM", "MM")]
    # REFERENCE.md: CIDEr-D with the EXPERT file's 5 references 65.4/98.6/90.1/65.4 (metric ties count half)
    assert got == pytest.approx([0.6545, 0.986, 0.901, 0.6535], abs=1e-9)
