"""CIDEr-D rewards for self-critical training: each sampled caption against its image's references.

Document frequencies come from the training references (one document per image), as in Rennie et al.
(CVPR 2017); references are PTB-tokenised once (lower-cased, punctuation removed) and the samples arrive as
word lists (the captioner's vocabulary is already PTB-normalised). The arithmetic is capeval's CIDEr-D
(:func:`capeval.coco.cider.cider_from_ngrams`, pycocoevalcap-identical): rewards are in [0, 10].
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from capeval.coco.cider import cider_from_ngrams
from capeval.coco.document_frequency import document_frequency_from_captions
from capeval.coco.ngrams import ngrams_of


class CiderReward:
    """``reward(samples, image_names) -> np.ndarray``: CIDEr-D of each word list against its image's references."""

    def __init__(self, references: Mapping[str, Sequence[str]]):
        from capeval.models.caption_tokenizer import normalise_captions

        if not references:
            raise ValueError("No references for the CIDEr-D reward.")
        names = sorted(references)
        flat = normalise_captions([c for n in names for c in references[n]])
        self.refs: dict[str, list[list[str]]] = {}
        pos = 0
        for n in names:
            k = len(references[n])
            self.refs[n] = [line.split() for line in flat[pos:pos + k]]
            pos += k
        self.df = document_frequency_from_captions(list(self.refs.values()))
        self.n_documents = len(names)

    def __call__(self, samples: Sequence[Sequence[str]], images: Sequence[str]) -> np.ndarray:
        if len(samples) != len(images):
            raise ValueError(f"{len(samples)} samples for {len(images)} images.")
        ng = ngrams_of([list(s) for s in samples], [self.refs[i] for i in images], 4)
        get = self.df.get
        grams = ng.table.gram_strings()
        df = np.fromiter((get(g, 0) for g in grams), dtype=np.float64, count=len(grams))
        return cider_from_ngrams(ng, df, self.n_documents)[1]
