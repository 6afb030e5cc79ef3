"""SPICE-U (Wang et al., ECCV 2020): SPICE with concept uniqueness.

* :mod:`capeval.spiceu.uniqueness` — the uniqueness table Un(c) and Eq. 6 / Eq. 7 of the paper;
* :mod:`capeval.spiceu.build` — building a table from any caption corpus (resumable);
* :mod:`capeval.spiceu.metric` — the ``spice_u`` metric on top of capeval's SPICE tuples.
"""
from capeval.spiceu.uniqueness import UniquenessTable, caption_uniqueness, spice_u_score

__all__ = ["UniquenessTable", "caption_uniqueness", "spice_u_score"]
