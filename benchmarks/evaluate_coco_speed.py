"""Tokenise + BLEU + ROUGE-L + CIDEr-D on 8,000 Karpathy-test candidates through evaluate.load("metrics/coco_caption"),
against pycocoevalcap 1.2 (PTBTokenizer + Bleu(4) + Rouge + Cider) in the same process (issue 30 item 6).

Usage: python benchmarks/evaluate_coco_speed.py   (from the repository root's parent layout: ../shared/data beside it)

Model of the timing: the module is loaded and warmed on 10 captions first; capeval's compute runs 3 times, pycocoevalcap's
pipeline twice; medians are printed with their ratio, with the largest differences between the two sides' scores and the
floor (the fastest of 3 runs of lower-casing and splitting every caption, what reading the strings alone costs).
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CAPEVAL_DATA_DIR", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT / "modules"))
rows = json.load(open(str(DATA / "coco_karpathy_test/karpathy_cand.json")))[:8000]
refmap = {}
for r in json.load(open(str(DATA / "coco_karpathy_test/karpathy_ref.json"))):
    refmap.setdefault(r["image_id"], []).append(r["caption"])
preds = [r["caption"] for r in rows]; refs = [refmap[r["image_id"]] for r in rows]
import evaluate
m = evaluate.load(str(ROOT / "metrics" / "coco_caption"))
m.compute(predictions=preds[:10], references=refs[:10], metrics=["bleu", "rouge_l", "cider_d"])
ours = []
for _ in range(3):
    t = time.perf_counter(); result = m.compute(predictions=preds, references=refs, metrics=["bleu", "rouge_l", "cider_d"]); ours.append(time.perf_counter() - t)
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.rouge.rouge import Rouge
from pycocoevalcap.cider.cider import Cider
theirs = []
for _ in range(2):
    t = time.perf_counter()
    gts = {i: [{"caption": c} for c in refs[i]] for i in range(len(preds))}
    res = {i: [{"caption": preds[i]}] for i in range(len(preds))}
    tok = PTBTokenizer(); gts = tok.tokenize(gts); res = tok.tokenize(res)
    scores = [s.compute_score(gts, res) for s in (Bleu(4), Rouge(), Cider())]
    theirs.append(time.perf_counter() - t)
(bleu_c, bleu_p), (rouge_c, rouge_p), (cider_c, cider_p) = scores
reference = {**{f"bleu_{k + 1}": (bleu_c[k], bleu_p[k]) for k in range(4)}, "rouge_l": (rouge_c, rouge_p),
             "cider_d": (cider_c, cider_p)}
diffs = {key: (abs(result[key] - corpus), max(abs(a - float(b)) for a, b in zip(result["per_caption"][key], per)))
         for key, (corpus, per) in reference.items()}
print("largest difference to pycocoevalcap (corpus, per caption): "
      + ", ".join(f"{k} {c:.1e} / {p:.1e}" for k, (c, p) in diffs.items()))
# the floor: every caption read once and split into lower-cased words, nothing counted
floor = []
for _ in range(3):
    t = time.perf_counter()
    words = [c.lower().split() for c in preds] + [c.lower().split() for r in refs for c in r]
    floor.append(time.perf_counter() - t)
print(f"floor (every caption lower-cased and split, {sum(map(len, words)):,} words): {min(floor):.3f} s")
print(f"evaluate coco_caption: {statistics.median(ours):.2f} s (runs {[round(x,2) for x in ours]}); pycocoevalcap: {statistics.median(theirs):.2f} s; ratio {statistics.median(theirs)/statistics.median(ours):.1f}x")
