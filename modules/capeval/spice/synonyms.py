"""SPICE's WordNet synonyms: METEOR 1.5's synonym module (:mod:`capeval.meteor.synonyms`), which official SPICE
builds from the same jar data."""
from capeval.meteor.synonyms import SYNONYM_SOURCE, SynonymDictionary, default_synonyms

__all__ = ["SYNONYM_SOURCE", "SynonymDictionary", "default_synonyms"]
