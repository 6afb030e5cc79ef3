"""What ``capeval critic train`` trains on: the corpus choice and its checks, as data.

* ``corpus="flickr8k"``: image features (``features``, a ``capeval features extract`` file) and the Flickr8k train /
  dev captions, Flickr8k test held out; ``text_corpus="coco-train2014"`` adds COCO train2014's captions as text-only
  examples (their caption-vector neighbour table for RC negatives), every reported benchmark's images held out.
* ``corpus="coco-train2014"``: COCO train2014's captions only, for critics whose context is the reference only (COCO's
  images are not here); no machine captions or image features belong to it.

:func:`read_captioner_output` reads a ``capeval captioner generate`` JSONL file (beam candidates or Monte-Carlo samples)
as ``{image file name: [captions]}``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capeval.advice import OPTION, Setting, with_words, words

__all__ = ["CORPORA", "CriticTrainingData", "critic_training_data", "read_captioner_output", "split_samples"]

CORPORA = ("flickr8k", "coco-train2014")


@dataclass
class CriticTrainingData:
    """``table`` (image features, or caption vectors for COCO), ``train`` / ``dev`` (``{image: [captions]}``),
    ``held_out`` (``{name: images}`` that training must not hold), ``text`` (the text-only corpus's keyword arguments
    of :func:`capeval.critic.train.train_critic`, empty without one) and ``report`` (one line for the log)."""

    table: Any
    train: dict[str, list[str]]
    dev: dict[str, list[str]]
    held_out: dict[str, Any]
    text: dict[str, Any] = field(default_factory=dict)
    report: str = ""


def read_captioner_output(path: str | os.PathLike | None) -> dict[str, list[str]] | None:
    """``{image file name: [captions]}`` of a ``capeval captioner generate`` JSONL file (``None`` without a path)."""
    if path is None:
        return None
    from capeval.rerank.mmi import read_candidates_jsonl

    return {Path(str(row["id"])).name: [c["caption"] for c in row["candidates"]] for row in read_candidates_jsonl(path)}


#: The corpora, as a setting of the ``corpus`` option in messages (``corpus='flickr8k'``, ``--corpus flickr8k``).
_FLICKR, _COCO = Setting("flickr8k", option="corpus"), Setting("coco-train2014", option="corpus")


def split_samples(path: str | os.PathLike | None, refs: Mapping[str, list[str]],
                  split: str) -> dict[str, list[str]] | None:
    """Monte-Carlo samples (``--samples``) of the images of ``refs`` (the ``split``, named in errors): every image with
    at least one non-empty sample and no image outside it (``ValueError`` naming one offender); ``None`` without a
    path."""
    if path is None:
        return None
    samples = {i: [c for c in caps if c.strip()] for i, caps in read_captioner_output(path).items()}
    foreign = sorted(set(samples) - set(refs))
    if foreign:
        raise with_words(ValueError, words("samples", OPTION, f" {path}: {len(foreign)} image(s) not in {split}, e.g. "
                                           f"{foreign[0]!r}."))
    missing = sorted(i for i in refs if not samples.get(i))
    if missing:
        raise with_words(ValueError, words("samples", OPTION, f" {path}: no sample for {len(missing)} image(s) of "
                                           f"{split}, e.g. {missing[0]!r}."))
    return samples


def critic_training_data(corpus: str = "flickr8k", *, context: str, features: str | os.PathLike | None = None,
                         text_corpus: str | None = None, machine_files: Mapping[str, Any] | None = None,
                         seed: int = 0, word_vectors: str | None = None) -> CriticTrainingData:
    """The training data of ``corpus`` for a critic of ``context`` (module docstring). ``machine_files``:
    ``{option name: path or None}`` of the machine-caption files given (``system``, ``samples``, ...): refused with
    ``coco-train2014``. ``ValueError`` naming the option for every combination that cannot train."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {', '.join(CORPORA)}, got {corpus!r}.")
    if text_corpus not in (None, "coco-train2014"):
        raise ValueError(f"the text corpus must be coco-train2014, got {text_corpus!r}.")
    given = [name for name, path in (machine_files or {}).items() if path is not None]
    if corpus == "coco-train2014":
        if text_corpus:
            raise with_words(ValueError, words("text_corpus", OPTION, " adds COCO's captions to ", _FLICKR, "; ",
                                               _COCO, " already trains on them."))
        if context != "reference":
            raise with_words(ValueError, words("context", _COCO, " has COCO's captions but not its images: it trains "
                                               "critics whose context is the reference only (", Setting("reference"),
                                               f"), not {context!r}."))
        for name in [*given, *(["features"] if features is not None else [])]:
            raise with_words(ValueError, words(name, OPTION, " belongs to ", _FLICKR, " (COCO has no machine captions "
                                               "or image features here)."))
        table, train, dev, held_out, report = _coco_captions(seed, word_vectors)
        return CriticTrainingData(table, train, dev, held_out, report=report)
    if features is None:
        raise with_words(ValueError, words("features", _FLICKR, " trains on image features: give ",
                                           Setting(shown="FILE"), " (`capeval features extract`)."))
    from capeval.corpora.captions import flickr8k_captions
    from capeval.models.feature_table import FeatureTable

    data = CriticTrainingData(FeatureTable.load(features), flickr8k_captions("train"), flickr8k_captions("dev"),
                              {"test": flickr8k_captions("test")})
    if text_corpus:
        neighbours, text_train, text_dev, text_held_out, data.report = _coco_captions(seed, word_vectors)
        data.text = {"text": text_train, "text_dev": text_dev, "text_neighbours": neighbours}
        data.held_out.update(text_held_out)
    return data


def _coco_captions(seed: int, word_vectors: str | None):
    """(caption-vector table, train, dev, held-out benchmark images, report) of COCO train2014's captions, every image
    of a reported benchmark left out."""
    from capeval.corpora.coco_train2014 import caption_neighbour_table, coco_training_corpus
    from capeval.corpora.held_out import benchmark_images

    benchmarks = benchmark_images()
    corpus = coco_training_corpus(benchmarks, seed=seed)
    report = (f"COCO train2014: {len(corpus.train)} train / {len(corpus.dev)} dev images; left out "
              f"{corpus.report['left_out'] or 'none'} (checked: {', '.join(corpus.report['benchmarks_checked'])})")
    table = caption_neighbour_table({**corpus.train, **corpus.dev}, word_vectors)
    held_out = {f"benchmark {b}": dict.fromkeys(names) for b, names in benchmarks.items()}
    return table, corpus.train, corpus.dev, held_out, report
