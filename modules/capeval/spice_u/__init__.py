"""SPICE-U (Wang et al., ECCV 2020): SPICE with concept uniqueness.

* :mod:`capeval.spice_u.uniqueness` — the uniqueness table Un(c) and Eq. 6 / Eq. 7 of the paper;
* :mod:`capeval.spice_u.build` — building a table from any caption corpus (resumable);
* :mod:`capeval.spice_u.metric` — the ``spice_u`` metric on top of capeval's SPICE tuples.
"""
from capeval.spice_u.uniqueness import UniquenessTable, caption_uniqueness, spice_u_score

__all__ = ["UniquenessTable", "caption_uniqueness", "spice_u_score"]
