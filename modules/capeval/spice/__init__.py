"""SPICE without Java: spaCy parses, SPICE's scene-graph rules, METEOR's WordNet synonyms.

Modules, in data-flow order: :mod:`~capeval.spice.depgraph` (spaCy doc -> CoreNLP-style UD graph),
:mod:`~capeval.spice.rules` (UD graph -> proposed tuples), :mod:`~capeval.spice.parser` (texts -> tuples,
batched and cached by :mod:`~capeval.spice.cache`), :mod:`~capeval.meteor.synonyms` (WordNet synsets, METEOR 1.5's data),
:mod:`~capeval.spice.graph` (scene graphs with synonym merging, scored tuples and their concept keys),
:mod:`~capeval.spice.scorer` (matching, P/R/F, categories), :mod:`~capeval.spice.metric` (``Spice``).
"""
