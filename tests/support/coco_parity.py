"""Helpers for the pycocoevalcap parity tests: data sets, token strings, pycocoevalcap's own results."""
from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Sequence

import numpy as np

from capeval.batch import CaptionBatch


class Pretokenized:
    """A 'tokenizer' for text that is already tokenised: splits on single spaces (as pycocoevalcap's
    ROUGE does); the empty string is an empty caption."""

    name = "pretokenized"

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        return [t.split(" ") if t else [] for t in texts]


def pretokenized_batch(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> CaptionBatch:
    return CaptionBatch(hyps, refs, cleanup="none", tokenizer=Pretokenized(), progress=False)


def load_example(root) -> tuple[list[str], list[list[str]]]:
    """pycocoevalcap's example: 1,000 candidates with their COCO val2014 references."""
    from capeval.coco.captions import coco_captions

    results = json.loads((root / "pycocoevalcap_example" / "captions_val2014_fakecap_results.json").read_text())
    captions = coco_captions("val2014")
    return [r["caption"] for r in results], [captions[r["image_id"]] for r in results]


def load_karpathy(root) -> tuple[list[str], list[list[str]]]:
    """The 20,000 Karpathy-test candidates (4 per image) with their image's references (karpathy_ref.json)."""
    folder = root / "coco_karpathy_test"
    candidates = json.loads((folder / "karpathy_cand.json").read_text(encoding="utf-8"))
    by_image: dict[str, list[str]] = {}
    for ref in json.loads((folder / "karpathy_ref.json").read_text(encoding="utf-8")):
        by_image.setdefault(ref["image_id"], []).append(ref["caption"])
    return [c["caption"] for c in candidates], [by_image[c["image_id"]] for c in candidates]


def java_token_strings(preds: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[list[str], list[list[str]]]:
    """pycocoevalcap-style token strings (PTB tokens minus punctuation, joined by spaces)."""
    from capeval.text.ptb_java import JavaPTBTokenizer

    flat = list(preds) + [r for rs in refs for r in rs]
    tokens = [" ".join(t) for t in JavaPTBTokenizer().tokenize(flat)]
    hyps = tokens[: len(preds)]
    out, i = [], len(preds)
    for rs in refs:
        out.append(tokens[i : i + len(rs)])
        i += len(rs)
    return hyps, out


def pycoco_scores(hyps: Sequence[str], refs: Sequence[Sequence[str]], metrics=("bleu", "rouge_l", "cider_d")) -> dict:
    """pycocoevalcap's scorers on token strings: ``{key: (corpus, per-caption array)}``."""
    gts = {i: list(r) for i, r in enumerate(refs)}
    res = {i: [h] for i, h in enumerate(hyps)}
    out: dict = {}
    if "bleu" in metrics:
        from pycocoevalcap.bleu.bleu import Bleu

        with contextlib.redirect_stdout(io.StringIO()):  # BleuScorer prints its totals
            corpus, per = Bleu(4).compute_score(gts, res)
        for k in range(4):
            out[f"bleu_{k + 1}"] = (corpus[k], np.asarray(per[k]))
    if "rouge_l" in metrics:
        from pycocoevalcap.rouge.rouge import Rouge

        corpus, per = Rouge().compute_score(gts, res)
        out["rouge_l"] = (corpus, np.asarray(per))
    if "cider_d" in metrics:
        from pycocoevalcap.cider.cider import Cider

        corpus, per = Cider().compute_score(gts, res)
        out["cider_d"] = (corpus, np.asarray(per))
    if "meteor" in metrics:
        from pycocoevalcap.meteor.meteor import Meteor

        scorer = Meteor()
        try:
            corpus, per = scorer.compute_score(gts, res)
        finally:
            scorer.meteor_p.kill()
            scorer.meteor_p.wait()
        out["meteor"] = (corpus, np.asarray(per))
    return out


def pycoco_end_to_end(preds: Sequence[str], refs: Sequence[Sequence[str]], metrics) -> dict:
    """pycocoevalcap's full pipeline: its PTBTokenizer (temp file in site-packages) then its scorers."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    gts = {i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)}
    res = {i: [{"caption": p}] for i, p in enumerate(preds)}
    tokenizer = PTBTokenizer()
    gts_tok = tokenizer.tokenize(gts)
    res_tok = tokenizer.tokenize(res)
    keys = list(range(len(preds)))
    return pycoco_scores([res_tok[k][0] for k in keys], [gts_tok[k] for k in keys], metrics)


def assert_same(ours: dict, theirs: dict, tol: float = 1e-9) -> None:
    """Corpus and per-caption scores agree to ``tol`` for every key of ``theirs``."""
    for key, (corpus, per) in theirs.items():
        assert abs(ours[key] - corpus) <= tol, (key, ours[key], corpus)
        mine = np.asarray(ours["per_caption"][key])
        assert mine.shape == per.shape, key
        worst = int(np.argmax(np.abs(mine - per)))
        assert abs(mine[worst] - per[worst]) <= tol, (key, worst, mine[worst], per[worst])
