"""``SpiceU``: SPICE-U (Wang et al., ECCV 2020) as a capeval metric.

Per caption: SPICE precision and recall of the candidate graph against the merged reference graph
(capeval's SPICE, same options), uniqueness (Eq. 6) of the candidate's concepts against candidate ∪
reference concepts, and SPICE-U = harmonic mean of SPICE F and uniqueness (Eq. 7; 0 when precision,
recall or uniqueness is 0). Corpus scores are means over captions.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

from capeval.batch import CaptionBatch
from capeval.metric import CaptionMetric, MetricOutput
from capeval.options import Option
from capeval.spice.metric import Spice
from capeval.spice.scorer import score_caption
from capeval.spice_u.concepts import concept_key
from capeval.spice_u.tables import load_table, table_label
from capeval.spice_u.uniqueness import caption_uniqueness, spice_u_score

_SPICE_OPTIONS = {k: v for k, v in Spice.options.items() if k != "spice_detailed"}

#: SPICE-U's own options (besides SPICE's).
SPICE_U_OPTIONS: dict[str, Option] = {
    "spice_u_table": Option(
        default="coco-train2014", kind="path", metavar="NAME|FILE",
        help="the uniqueness table: coco-train2014 (the default, shipped: the 414,113 captions of the 82,783 COCO "
             "train2014 images) or the path of a table built by capeval spice_u build-uniqueness; enters the "
             "signature"),
    "spice_u_detailed": Option(
        default=False, kind="bool",
        help="add spice_u_details to the result: per caption, SPICE precision and recall, the uniqueness and every "
             "concept with its Un (default off)"),
}


class SpiceU(CaptionMetric):
    """SPICE-U and its uniqueness term.

    Options: every SPICE option (``spice_parser_model``, ``spice_workers``, ``spice_input``, ...) plus
    ``spice_u_table``: ``"coco-train2014"`` (default; shipped, built from the 82,783 COCO train2014
    images' 414,113 captions) or the path of a table built by ``capeval spice_u build-uniqueness``;
    ``spice_u_detailed``: add ``spice_u_details`` (per caption: P, R, uniqueness, concepts with Un).

    Result keys: ``spice_u`` and ``uniqueness`` (corpus means, in [0, 1]), per-caption lists.
    """

    name = "spice_u"
    trained_on_nothing = True  # nothing fitted to data: no benchmark can be in its training data
    whole_set_only: ClassVar[str | None] = "SPICE-U's uniqueness counts concepts over the whole set of captions at once"
    uses_tokens: ClassVar[bool] = True
    limits_length: ClassVar[bool] = True
    options: ClassVar[dict[str, Any]] = {**_SPICE_OPTIONS, **SPICE_U_OPTIONS}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.spice = Spice(**{k: self.config[k] for k in _SPICE_OPTIONS})
        self.uses_tokens = self.spice.uses_tokens
        self.reads_text = self.spice.reads_text
        self.table = load_table(str(self.config["spice_u_table"]))

    @classmethod
    def check_available(cls) -> None:
        Spice.check_available()
        load_table(cls.option_defaults()["spice_u_table"])

    def compute(self, batch: CaptionBatch) -> MetricOutput:
        cand_tuples, ref_tuples = self.spice.graph_tuples(batch)
        use_syn = bool(self.config["spice_synonyms"])
        un = self.table.un
        spice_u, uniq, details = [], [], []
        for cand, ref in zip(cand_tuples, ref_tuples):
            s = score_caption(cand, ref, use_syn)["all"]
            cand_keys = [concept_key(t) for t in cand]
            ref_keys = [concept_key(t) for t in ref]
            u = caption_uniqueness(cand_keys, ref_keys, un)
            uniq.append(u)
            spice_u.append(spice_u_score(s.precision, s.recall, u))
            if self.config["spice_u_detailed"]:
                details.append({"precision": s.precision, "recall": s.recall, "uniqueness": u,
                                "candidate_concepts": {k: un(k) for k in cand_keys},
                                "reference_concepts": {k: un(k) for k in ref_keys}})
        n = len(spice_u)
        extra = {"spice_u_details": details} if details else {}
        signature = f"{self.spice.signature_value()},table={table_label(str(self.config['spice_u_table']), self.table)}"
        return MetricOutput(
            corpus={"spice_u": math.fsum(spice_u) / n, "uniqueness": math.fsum(uniq) / n},
            per_caption={"spice_u": spice_u, "uniqueness": uniq},
            signature=signature,
            extra=extra,
        )

    def prepare(self, batch: CaptionBatch) -> list:
        """SPICE's per-item work (parsing, graphs): see :meth:`capeval.spice.metric.Spice.prepare`."""
        return self.spice.prepare(batch)

    def use_prepared(self, prepared) -> None:
        self.spice.use_prepared(prepared)

    def close(self) -> None:
        self.spice.close()
