"""METEOR 1.5 (Denkowski & Lavie 2014) without Java: the jar's English ``-norm`` configuration in Python.

One concept per module, data flowing one way (text → normalised words → matches → alignment → statistics
→ scores):

* :mod:`~capeval.meteor.resources` — the jar's language data (function words, non-breaking prefixes,
  paraphrase file), read from pycocoevalcap's installation, never copied;
* :mod:`~capeval.meteor.normalize` — the ``-norm`` normaliser;
* :mod:`~capeval.meteor.synonyms` — WordNet synonym sets (also SPICE's);
* :mod:`~capeval.meteor.paraphrase` — the paraphrase table as compact cached arrays;
* :mod:`~capeval.meteor.align` — matchers and the beam search;
* :mod:`~capeval.meteor.stats` — sufficient statistics, segment and corpus scores;
* :mod:`~capeval.meteor.scorer` — :class:`PythonMeteorScorer`, the default backend;
* :mod:`~capeval.meteor.jar` — the original jar through persistent JVMs (``meteor_backend="java"``).

The metric itself (options, result keys) is :class:`capeval.coco.meteor.Meteor`.
"""
